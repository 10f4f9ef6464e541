/* engine/base/nearest.c: "did you mean". Table-driven: every kind of slip
 * (drop, insert, substitute, swap of neighbours, case) within the limit for
 * the name's length gets the name; past it, or on a tie, nothing. */
#include "fixtures.h"

#include "ebb/common.h"

static const char *const NAMES[] = {
    "RemoveDuplicates", "RemoveFailedPods", "PodLifeTime", "LowNodeUtilization",
    "HighNodeUtilization", "DefaultEvictor", "AnnotatedPodLifeTime", "Ab", "Abc", "Abd",
};

struct row {
    const char *typo;
    const char *want;   /* NULL: no guess */
};

static const struct row ROWS[] = {
    { "RemoveDuplicate", "RemoveDuplicates" },        /* a letter dropped */
    { "RemoveDuplicatess", "RemoveDuplicates" },      /* a letter added */
    { "RemoveDuplicatez", "RemoveDuplicates" },       /* a letter wrong */
    { "RemoevDuplicates", "RemoveDuplicates" },       /* neighbours swapped */
    { "removeduplicates", "RemoveDuplicates" },       /* case only */
    { "REMOVEDUPLICATES", "RemoveDuplicates" },
    { "RmoveDuplicatz", "RemoveDuplicates" },         /* two slips in 14 */
    { "RmvDuplicatez", NULL },                        /* four */
    { "PodLifetime", "PodLifeTime" },
    { "PodLifeTim", "PodLifeTime" },
    { "PodLfTm", NULL },                              /* four from 11 */
    { "annotatedpodlifetime", "AnnotatedPodLifeTime" },
    { "DefaultEvicter", "DefaultEvictor" },
    { "Ac", NULL },                                   /* Ab, Abc, Abd all one away: a tie */
    { "Abe", NULL },                                  /* Abc and Abd tie */
    { "Foo", NULL },
    { "NodeUtilization", "LowNodeUtilization" },      /* 3 from 15; High is 4 */
    { "", NULL },
    { "RemoveDuplicates", NULL },                     /* itself: nothing to suggest */
};

static void every_slip(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(ROWS) / sizeof(ROWS[0]); i++) {
        const char *got = ebb_nearest_name(ROWS[i].typo, NAMES, sizeof(NAMES) / sizeof(NAMES[0]));
        if ((got == NULL) != (ROWS[i].want == NULL) || (got && strcmp(got, ROWS[i].want) != 0))
            fail_msg("\"%s\": got %s, want %s", ROWS[i].typo, got ? got : "NULL",
                     ROWS[i].want ? ROWS[i].want : "NULL");
    }
}

static void odd_inputs(void **state)
{
    char long_name[300];
    const char *with_null[] = { NULL, "PodLifeTime" };

    (void)state;
    memset(long_name, 'a', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    assert_null(ebb_nearest_name(NULL, NAMES, 3));
    assert_null(ebb_nearest_name(long_name, NAMES, 3));
    assert_null(ebb_nearest_name("PodLifeTime", NULL, 0));
    assert_string_equal(ebb_nearest_name("PodLifetme", with_null, 2), "PodLifeTime");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_slip),
        cmocka_unit_test(odd_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
