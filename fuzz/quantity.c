/* Quantities as the API parses them ("1.5Gi", "100m", "1e3"), in whole
 * units and in thousandths. A value that parses formats to text that
 * parses back to the same value, but for -2^63 bytes: the API prints it
 * "-8Ei" and reads "-8Ei" as -(2^63-1), binary quantities being capped at
 * 2^63-1 units (fuzz/corpus/quantity/min-int64-round-trip). */
#include "fuzz.h"
#include "ebb/quantity.h"

static void round_trip(const uint8_t *data, size_t size, bool milli)
{
    int64_t v, w;
    char buf[64];

    if (ebb_quantity_parse((const char *)data, size, milli, &v) != 0 || (!milli && v == INT64_MIN))
        return;
    ebb_quantity_format(v, milli, buf, sizeof(buf));
    if (ebb_quantity_parse(buf, strlen(buf), milli, &w) != 0 || w != v)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    round_trip(data, size, false);
    round_trip(data, size, true);
    return 0;
}
