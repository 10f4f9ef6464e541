/* The sandbox's string.find, match, gmatch, gsub, format and rep answer as
 * Lua's own do, errors included, on a few thousand cases each
 * (stdlib_cases.lua); and they stop when the budget expires (that part is
 * spec/lua/sandbox_escape_spec.lua, through the whole engine). */
#include "stdlib_diff.h"

static void find_and_match(void **state)
{
    (void)state;
    same_as_lua("find");
}

static void gmatch(void **state)
{
    (void)state;
    same_as_lua("gmatch");
}

static void gsub(void **state)
{
    (void)state;
    same_as_lua("gsub");
}

static void format(void **state)
{
    (void)state;
    same_as_lua("format");
}

static void rep(void **state)
{
    (void)state;
    same_as_lua("rep");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(find_and_match),
        cmocka_unit_test(gmatch),
        cmocka_unit_test(gsub),
        cmocka_unit_test(format),
        cmocka_unit_test(rep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
