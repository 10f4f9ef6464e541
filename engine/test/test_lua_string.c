/* The sandbox's string.find, match, gmatch, gsub, format and rep answer as
 * Lua's own do, errors included (format's add what was wrong), on a few
 * thousand cases each (stdlib_cases.lua), long repetitions to the byte;
 * and they stop when the budget expires (that part is
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

/* Repetitions of several MiB, unit and separator lengths that do and do
 * not divide the pieces rep copies at a time: the exact bytes. */
static void rep_long(void **state)
{
    (void)state;
    same_as_lua("rep_long");
}

/* Long inputs past the pieces each function works in, strings and tables. */
static void long_inputs(void **state)
{
    (void)state;
    same_as_lua("long");
}

/* Each way a conversion can be wrong: the error says Lua's message and
 * what was wrong. */
static void format_errors(void **state)
{
    static const struct {
        const char *call, *says;
    } cases[] = {
        { "'%123d', 1", "'%123d' (a width has at most 2 digits)" },
        { "'%5.123f', 1", "'%5.123f' (a precision has at most 2 digits)" },
        { "'%#d', 1", "'%#d' (flag '#' is not allowed with %d, which takes '-', '+', '0', ' ')" },
        { "'%+x', 1", "(flag '+' is not allowed with %x, which takes '-', '#', '0')" },
        { "'%0s', 'x'", "(flag '0' is not allowed with %s, which takes '-')" },
        { "'%5-d', 1", "'%5-d' (flag '-' after the width or precision: flags come first)" },
        { "'%.2c', 65", "'%.2c' (%c takes no precision)" },
        { "'%5.5.5f', 1", "'%5.5.5f' ('.' after the precision)" },
        { "'ab%' .. string.rep('0', 30) .. 'd', 1",
          "invalid format (too long) (the conversion at byte 3 has 30 flags, digits and dots; at most 20)" },
        { "'%y', 1", "invalid conversion '%y' to 'format' (a conversion is one of %a %A %c %d" },
        { "'%F', 1", "invalid conversion '%F' to 'format' (a conversion is one of" },
        { "'%5q', 1", "specifier '%q' cannot have modifiers" },
    };
    struct ebb_vm_opts o = { .name = "format", .mem_limit = (size_t)64 << 20, .budget_ns = 10000000000ull };
    struct ebb_vm *vm = NULL;

    (void)state;
    assert_int_equal(ebb__vm_create(&o, &vm), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ebb_error err = { 0 };
        char src[256];
        const char *msg;
        snprintf(src, sizeof(src), "return select(2, pcall(string.format, %s))", cases[i].call);
        assert_int_equal(ebb__vm_dochunk(vm, src, strlen(src), "=format", &err), 0);
        msg = lua_tostring(vm->L, -1);
        if (msg == NULL || strstr(msg, cases[i].says) == NULL) {
            print_error("string.format(%s)\n  says:     %s\n  expected: ...%s...\n", cases[i].call,
                        msg ? msg : "(nothing)", cases[i].says);
            fail();
        }
        lua_pop(vm->L, 1);
    }
    ebb__vm_destroy(vm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(find_and_match),
        cmocka_unit_test(gmatch),
        cmocka_unit_test(gsub),
        cmocka_unit_test(format),
        cmocka_unit_test(format_errors),
        cmocka_unit_test(long_inputs),
        cmocka_unit_test(rep),
        cmocka_unit_test(rep_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
