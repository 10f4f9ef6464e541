/* The sandbox's table.concat, insert, remove, move, unpack and sort answer as Lua's
 * own do (stdlib_cases.lua), metamethods and errors included; sort is a
 * stable merge sort, so the cases have no ties. */
#include "stdlib_diff.h"

static void concat(void **state)
{
    (void)state;
    same_as_lua("concat");
}

static void insert_remove(void **state)
{
    (void)state;
    same_as_lua("insert_remove");
}

static void move(void **state)
{
    (void)state;
    same_as_lua("move");
}

static void unpack(void **state)
{
    (void)state;
    same_as_lua("unpack");
}

static void sort(void **state)
{
    (void)state;
    same_as_lua("sort");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(concat),
        cmocka_unit_test(insert_remove),
        cmocka_unit_test(move),
        cmocka_unit_test(unpack),
        cmocka_unit_test(sort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
