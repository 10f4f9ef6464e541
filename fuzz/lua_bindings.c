/* Every binding a strategy can call, with hostile values: each input is read
 * as choices of a small grammar that writes a Lua program (readable: set
 * EBB_FUZZ_PRINT=1 to see it), and the program runs as the plugins of one
 * profile in the real sandbox, on a real engine holding
 * spec/fixtures/demo-cluster.json, in a dry-run cycle:
 *
 *   FuzzStrategy (fuzz/lua_bindings/fuzz_strategy.lua)  deschedule, balance
 *   FuzzEvictor  (fuzz/lua_bindings/fuzz_evictor.lua)   the profile's evict
 *                plugin: its filter and its evict(ctx, pod, opts) with ctx.api
 *
 * The program calls every ebb.* function (ebb.native's and the Lua ones of
 * lua/ebb), every method of the objects they return (Pod, Node, PodList,
 * NodeList, Selector, AntiAffinityIndex, LoadSet, NodeUsage, TaintSet),
 * ctx.evictor:* and ctx.api:*, and the operators of those objects, with
 * integers at the edges, NaN and infinities, strings with NUL, invalid
 * UTF-8 and megabytes of text, deep, cyclic, sparse and huge tables, tables
 * whose metamethods answer differently on each call, raise or yield,
 * callbacks that raise, yield, spin or change the list being walked,
 * coroutines and objects of the wrong type (fuzz/lua_bindings/_hostile.lua).
 * Each plugin has a memory cap of 8 MiB and a time budget of 200 ms (its
 * pluginConfig limits); ASan, UBSan and LeakSanitizer watch the whole run.
 *
 * After each input, these must hold too (a failure aborts, naming the rule):
 *   metamethod  no metamethod of an argument ran while a binding ran: the
 *               engine reads a script's values raw (reported by the program
 *               through a plan note "ebb-fuzz: ...")
 *   result      no binding answered what it cannot (a PodList longer than
 *               any list of pods can be, an empty error message)
 *   protected   no protected pod (mirror, static, terminating, system-
 *               critical, DaemonSet, bare, local storage) in the plan, no pod
 *               twice, no pod the cluster does not have
 *   limit       the policy's eviction limits (per node, total) held
 *   request     an evict plugin's request body has no key twice and its
 *               spec.podRef, if any, is the evicted pod
 *   json        the plan's JSON text is valid UTF-8 and parses; its table
 *               has no control character
 *   log         every log line the cycle wrote is one ebb line ("ebb: ...")
 *               without control characters: a script cannot forge lines
 *   memory      the heap grew during the cycle by at most both plugins' caps
 *               and MEMORY_SLACK: what is made for a script is charged to it
 *   time        the cycle ended within TIME_BOUND_MS
 *   cycle       the cycle ran (a script cannot fail the engine)
 *   global      process-wide tables (resource names, interned strings) are
 *               as they were once the plugins are dropped
 *
 * EBB_FUZZ_IGNORE=rule,rule leaves rules out (while one is known broken);
 * EBB_FUZZ_SKIP=name,name leaves bindings out ("ebb.selector,PodList:sort":
 * while one crashes at once, to find what else does);
 * EBB_FUZZ_KEEP_GOING=1 prints each new failure and goes on (a survey);
 * EBB_FUZZ_CRASH_DIR=dir keeps findings and the programs a sanitizer stopped
 * there (for -fork=N -ignore_crashes=1, whose jobs' output is not kept);
 * EBB_FUZZ_SNAPSHOT=file another cluster; EBB_FUZZ_SEEDS=dir writes the
 * seed corpus (one input per binding) and exits. Run from the repository's
 * top. */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sanitizer/allocator_interface.h>
#include <sanitizer/common_interface_defs.h>

#include "fuzz.h"
#include "ebb.h"
#include "ebb/snapshot.h"
#include "ebb/lua.h"

#define SNAPSHOT "spec/fixtures/demo-cluster.json"
#define PLUGIN_DIR "fuzz/lua_bindings"
#define NOW "2026-11-22T12:00:00Z"
#define MEM_CAP ((size_t)8 << 20)
#define MEM_CAP_TEXT "8Mi"
#define BUDGET_MS 200
#define BUDGET_TEXT "200ms"
/* what loading the plugins may take (the engine's default budget, which
 * registration and each instance's setup run under): generous, so a busy
 * machine does not fail the fuzzer's own setup */
#define SETUP_BUDGET_MS 20000
#define MAX_PER_NODE 4
#define MAX_TOTAL 10
/* what the engine may allocate for itself during a cycle besides what the
 * plugins' caps hold (the plan, the evictor's tables, a pod.object read) */
#define MEMORY_SLACK ((size_t)16 << 20)
/* each of the plugins' calls may run its budget, and a plugin past it is
 * set aside for the rest of the cycle: a few budgets and the engine's own */
#define TIME_BOUND_MS (8 * BUDGET_MS + 1000)
#define MAX_STMTS 32
#define MAX_PROGRAM (64 << 10)

/* ---- the grammar ------------------------------------------------------------ */

struct in {
    const uint8_t *p;
    size_t n, i;
};

/* The next choice; 0 once the input is spent, so every choice's first
 * option is the plausible one and a short input is a plain call. */
static unsigned u8(struct in *in)
{
    return in->i < in->n ? in->p[in->i++] : 0;
}

static unsigned pick(struct in *in, unsigned n)
{
    return n ? u8(in) % n : 0;
}

static bool spent(const struct in *in)
{
    return in->i >= in->n;
}

struct buf {
    char *s;
    size_t n, cap;
};

static void out(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    int k;

    if (b->s == NULL && (b->s = malloc(b->cap = 256)) == NULL)
        abort();
    for (;;) {
        va_start(ap, fmt);
        k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k < 0)
            abort();
        if ((size_t)k < b->cap - b->n)
            break;
        b->cap = (b->cap + (size_t)k + 1) * 2;
        if ((b->s = realloc(b->s, b->cap)) == NULL)
            abort();
    }
    b->n += (size_t)k;
}

#define N(a) ((unsigned)EBB_ARRAY_LEN(a))
#define ONE(in, a) ((a)[pick(in, N(a))])

static const char *const INTS[] = {
    "0", "-1", "1", "2", "3", "7", "255", "256", "1025", "4096", "65535", "65536", "70000",
    "200001", "0x7fffffff", "0x80000000", "-0x80000000", "0xffffffff", "0x100000000",
    "(1 << 20)", "(1 << 53)", "(1 << 53) + 1", "(1 << 61)", "(1 << 62)", "-(1 << 61)",
    "math.maxinteger", "math.mininteger", "2147483647", "100", "600", "86400",
};
static const char *const FLOATS[] = {
    "50.5", "(0/0)", "(-(0/0))", "(1/0)", "(-1/0)", "0.5", "-0.0", "1e308", "1e400", "2^63",
    "-2^63", "2^53", "2^64", "3.0", "-1.5", "2^31", "1e-320", "99.999", "100.0",
};
static const char *const STRS[] = {
    "''", "'x'", "'\\0'", "'a\\0b'", "'podRef\\0x'", "'app\\0'", "'\\xff\\xfe'", "'\\xc0\\x80'",
    "'\\xed\\xa0\\x80'", "'\\xf4\\x90\\x80\\x80'", "'\\xe2\\x82'", "'a\\nebb: error: forged'",
    "'\\27[31mred\\27[0m'", "'\\r'", "'%s%n%d%99999999s'", "'%'", "'app'", "'web'", "'cpu'",
    "'memory'", "'pods'", "'ephemeral-storage'", "'nvidia.com/gpu'", "'kube-system'",
    "'default'", "'In'", "'NotIn'", "'Exists'", "'DoesNotExist'", "'Gt'", "'Lt'", "'all'",
    "'cycle'", "'active'", "'Running'", "'Failed'", "'required'", "'preferred'", "'priority'",
    "'age'", "'restarts'", "'key'", "'ReplicaSet'", "'DaemonSet'", "'Node'", "'Ready'",
    "'True'", "'100m'", "'1Gi'", "'1e400'", "'9223372036854775807'", "'-1'", "'0.1m'",
    "'1E'", "'123456789012345678901234567890'", "'app=web'", "'app in (a,b),!canary'",
    "'spread'", "'pack'", "'under'", "'over'", "'low'", "'high'", "'skipped'", "'metadata'",
    "'labels'", "'annotations'", "'spec'", "'podRef'", "'object'", "'__index'", "'iter'",
};
static const char *const REPS[] = {
    "63", "64", "127", "128", "253", "254", "255", "256", "1023", "1024", "1025", "4096",
    "4097", "65536", "(1 << 20) + 1", "(3 << 20) + 1",
};
static const char *const REP_UNITS[] = { "'x'", "'\\xff'", "'a\\0'", "'\\n'", "'\\xe2\\x82\\xac'", "'ab,'" };
static const char *const BIGS[] = { "3", "64", "65", "255", "256", "4097", "65535", "65536", "65537", "70000", "200001" };
static const char *const DEEPS[] = { "2", "31", "32", "33", "100", "200", "10000" };
static const char *const KINDS[] = { "pod", "node", "podlist", "nodelist", "selector", "anti",
                                     "loadset", "usage", "taintset", "evictor", "api" };
static const char *const WORDS[] = {
    "'cycle'", "'all'", "'low'", "'high'", "'both_low'", "'prod_low'", "'prod_high'",
    "'normal'", "'skipped'", "'spread'", "'pack'", "'under'", "'over'", "'none'", "'required'",
    "'preferred'", "'priority'", "'age'", "'restarts'", "'key'", "'error'", "'warn'", "'info'",
    "'debug'", "'KubernetesMetrics'", "'Prometheus'", "'descending'", "'ascending'",
};
static const char *const RESOURCES[] = { "'cpu'", "'memory'", "'pods'", "'ephemeral-storage'",
                                         "'nvidia.com/gpu'", "'example.com/foo'", "'hugepages-2Mi'" };
static const char *const QUANTITIES[] = {
    "'100m'", "'1Gi'", "'0'", "'1e3'", "'1e400'", "'9223372036854775807'", "'9223372036854775808'",
    "'-1'", "'1.5'", "'0.0001m'", "'1E'", "'8Ei'", "'123456789012345678901234567890'", "'1Ki'",
    "'.5'", "'+1'", "'1e-400'", "'0x10'", "'1m1'",
};
static const char *const POD_FIELDS[] = {
    "'annotations'", "'conditions'", "'container_statuses'", "'created'", "'deleted'", "'gone'",
    "'has_local_storage'", "'images'", "'init_restarts'", "'is_mirror'", "'is_static'", "'key'",
    "'labels'", "'name'", "'namespace'", "'node'", "'node_selector'", "'object'", "'owners'",
    "'phase'", "'priority'", "'priority_class'", "'pvcs'", "'qos'", "'ready'", "'reason'",
    "'requests'", "'restarts'", "'scheduler'", "'started'", "'terminating'", "'tolerations'",
    "'uid'", "'taints'", "'unschedulable'", "'allocatable'", "'capacity'",
};

struct gen {
    struct in *in;
    struct buf *b;
    char sec;                    /* 'D', 'B', 'F', 'E': the section written */
};

static void any(struct gen *g, int depth);
static void shape(struct gen *g, char c, int depth);

static void raw_string(struct gen *g)
{
    unsigned n = pick(g->in, 24);

    out(g->b, "'");
    for (unsigned i = 0; i < n; i++)
        out(g->b, "\\x%02x", u8(g->in));
    out(g->b, "'");
}

static void list_of(struct gen *g, char c, int depth, unsigned max)
{
    unsigned n = pick(g->in, max + 1);

    out(g->b, "{");
    for (unsigned i = 0; i < n; i++) {
        shape(g, c, depth + 1);
        out(g->b, ", ");
    }
    out(g->b, "}");
}

/* A key of a map literal: mostly strings, some of every other type. */
static void key(struct gen *g, int depth)
{
    switch (pick(g->in, 8)) {
    case 0: case 1: case 2: out(g->b, "[%s]", ONE(g->in, STRS)); break;
    case 3: out(g->b, "[%s]", ONE(g->in, INTS)); break;
    case 4: out(g->b, "[%s]", FLOATS[3 + pick(g->in, N(FLOATS) - 3)]); break;   /* no NaN key */
    case 5: out(g->b, "[true]"); break;
    case 6: out(g->b, "["); raw_string(g); out(g->b, "]"); break;
    default: out(g->b, "[{}]"); break;
    }
    (void)depth;
}

static void map_literal(struct gen *g, int depth)
{
    unsigned n = pick(g->in, 5);

    out(g->b, "{");
    for (unsigned i = 0; i < n; i++) {
        key(g, depth);
        out(g->b, " = ");
        any(g, depth + 1);
        out(g->b, ", ");
    }
    out(g->b, "}");
}

/* Any value at all. */
static void any(struct gen *g, int depth)
{
    unsigned c = pick(g->in, depth >= 3 ? 10 : 26);

    switch (c) {
    case 0: out(g->b, "nil"); break;
    case 1: out(g->b, pick(g->in, 2) ? "true" : "false"); break;
    case 2: out(g->b, "%s", ONE(g->in, INTS)); break;
    case 3: out(g->b, "%s", ONE(g->in, FLOATS)); break;
    case 4: out(g->b, "%s", ONE(g->in, STRS)); break;
    case 5: out(g->b, "string.rep(%s, %s)", ONE(g->in, REP_UNITS), ONE(g->in, REPS)); break;
    case 6: raw_string(g); break;
    case 7: out(g->b, "ebb.null"); break;
    case 8: out(g->b, "H.d.%s", ONE(g->in, KINDS)); break;
    case 9: out(g->b, "V[%u]", 1 + pick(g->in, 8)); break;
    case 10: list_of(g, 'v', depth, 4); break;
    case 11: map_literal(g, depth); break;
    case 12: out(g->b, "H.big(%s)", ONE(g->in, BIGS)); break;
    case 13: out(g->b, "H.bigmap(%s)", ONE(g->in, BIGS)); break;
    case 14: out(g->b, "H.deep(%s)", ONE(g->in, DEEPS)); break;
    case 15: out(g->b, "H.cyc()"); break;
    case 16: out(g->b, "H.sparse(%s)", ONE(g->in, INTS)); break;
    case 17: case 18:
        out(g->b, "H.meta(");
        if (pick(g->in, 2))
            list_of(g, 'v', depth, 3);
        else
            map_literal(g, depth);
        out(g->b, ", %u, %d)", 1 + pick(g->in, 10), pick(g->in, 4) ? -1 : (int)u8(g->in) << 6 | (int)u8(g->in));
        break;
    case 19:
        out(g->b, "H.flip(%s, ", ONE(g->in, STRS));
        any(g, depth + 1);
        out(g->b, ", ");
        any(g, depth + 1);
        out(g->b, ")");
        break;
    case 20: out(g->b, "H.cb(%u)", 1 + pick(g->in, 14)); break;
    case 21: out(g->b, "H.co(%u)", 1 + pick(g->in, 4)); break;
    case 22: out(g->b, "ctx"); break;
    case 23:
        out(g->b, "H.counted(");
        map_literal(g, depth);
        out(g->b, ")");
        break;
    case 24: out(g->b, "H.pod(%u)", 1 + u8(g->in)); break;
    default: out(g->b, "H.node(%u)", 1 + pick(g->in, 8)); break;
    }
}

/* A field of an options table: `name = <value of shape c>`, the value
 * sometimes any value at all. */
static void field(struct gen *g, const char *name, char c, int depth)
{
    out(g->b, "%s = ", name);
    shape(g, c, depth + 1);
    out(g->b, ", ");
}

/* An options table with some of `fields` ("name:c" each). */
static void options(struct gen *g, const char *const *fields, unsigned n, int depth)
{
    unsigned k = pick(g->in, 5);

    out(g->b, "{");
    for (unsigned i = 0; i < k; i++) {
        const char *f = fields[pick(g->in, n)];
        const char *colon = strchr(f, ':');
        char name[48];
        snprintf(name, sizeof(name), "%.*s", (int)(colon - f), f);
        field(g, name, colon[1], depth);
    }
    out(g->b, "}");
}

static const char *const POD_OPTS[] = {
    "phase:W", "namespaces:Z", "selector:s", "owner_kinds:Z", "older_than:i", "min_age:i",
    "min_restarts:i", "states:X", "reasons:X", "conditions:C", "exit_codes:I",
    "including_init:b", "including_ephemeral:b", "node_affinity:W", "off_node:b",
    "filter:b", "pre_eviction_filter:b", "evictable:b", "where:f",
};
static const char *const MEMORY_OPTS[] = {
    "namespace:x", "kind:x", "workload:x", "node:x", "plugin:x", "profile:x", "since:i",
    "limit:i",
};
static const char *const LOAD_OPTS[] = {
    "low:M", "high:M", "prod_low:M", "prod_high:M", "deviation:b", "expiration:i",
};
static const char *const USAGE_OPTS[] = { "resources:R", "source:U", "samples:G" };
static const char *const TOPO_OPTS[] = { "constraints:K", "node_fit:b" };
static const char *const DUP_OPTS[] = { "exclude_kinds:X", "details:b" };
static const char *const PROD_OPTS[] = { "prod:b", "ascending:b" };
static const char *const REMOVABLE_OPTS[] = { "prod:b", "selectors:J", "node_fit:b" };
static const char *const MOVE_OPTS[] = { "order:W", "target:b" };
static const char *const DELETE_OPTS[] = { "gracePeriodSeconds:i", "propagationPolicy:W" };
static const char *const REQUESTING[] = { "requesting:R" };

/* A plausible value of shape c (see the binding table), or now and then
 * any value at all. */
static void shape(struct gen *g, char c, int depth)
{
    unsigned r;

    if (depth > 4 || u8(g->in) >= 200) {
        any(g, depth);
        return;
    }
    r = u8(g->in);
    switch (c) {
    case 'N':   /* nodes: NodeList, Node, name, a list of those, nil */
        switch (r % 8) {
        case 0: out(g->b, "nil"); break;
        case 1: out(g->b, "H.d.nodelist"); break;
        case 2: out(g->b, "ebb.nodes('cycle')"); break;
        case 3: out(g->b, "H.node(%u)", 1 + pick(g->in, 8)); break;
        case 4: out(g->b, "H.nodename(%u)", 1 + pick(g->in, 8)); break;
        case 5: out(g->b, "{H.node(1), H.nodename(2), "); any(g, depth + 1); out(g->b, "}"); break;
        case 6: out(g->b, "H.meta({H.node(1), H.node(2)}, %u)", 1 + pick(g->in, 10)); break;
        default: list_of(g, 'n', depth, 3); break;
        }
        break;
    case 'n':   /* one node */
        switch (r % 4) {
        case 0: out(g->b, "H.node(%u)", 1 + pick(g->in, 8)); break;
        case 1: out(g->b, "H.nodename(%u)", 1 + pick(g->in, 8)); break;
        case 2: out(g->b, "H.d.node"); break;
        default: out(g->b, "%s", ONE(g->in, STRS)); break;
        }
        break;
    case 'P':   /* one pod: the call's own in filter/evict, any of the cluster's */
        if (r % 4 == 0 && (g->sec == 'E' || g->sec == 'F'))
            out(g->b, "A1");
        else
            out(g->b, "H.pod(%u)", 1 + u8(g->in));
        break;
    case 'A':   /* a pod or a list */
        shape(g, r % 2 ? 'P' : 'L', depth + 1);
        break;
    case 'L':   /* pods: PodList or a list */
        switch (r % 6) {
        case 0: out(g->b, "H.d.podlist"); break;
        case 1: out(g->b, "ebb.pods(nil, { phase = 'all' })"); break;
        case 2: list_of(g, 'P', depth, 4); break;
        case 3: out(g->b, "H.meta({H.pod(1), H.pod(2)}, %u, %u)", 1 + pick(g->in, 10), 1 + pick(g->in, 3)); break;
        case 4: out(g->b, "V[%u]", 1 + pick(g->in, 8)); break;
        default: out(g->b, "H.d.podlist:slice(%s, %s)", ONE(g->in, INTS), ONE(g->in, INTS)); break;
        }
        break;
    case 'S':   /* a label selector spec: string or table form */
        switch (r % 10) {
        case 0: out(g->b, "%s", ONE(g->in, STRS)); break;
        case 1: out(g->b, "'x notin (' .. table.concat(H.big(%s), ',') .. ')'", ONE(g->in, BIGS)); break;
        case 2: out(g->b, "{ matchLabels = { app = 'web' } }"); break;
        case 3: out(g->b, "{ matchLabels = H.bigmap(%s) }", ONE(g->in, BIGS)); break;
        case 4:
            out(g->b, "{ matchExpressions = { { key = %s, operator = %s, values = ", ONE(g->in, STRS),
                ONE(g->in, STRS));
            shape(g, 'X', depth + 1);
            out(g->b, " } } }");
            break;
        case 5: out(g->b, "{ matchExpressions = { { key = 'x', operator = 'NotIn', values = H.big(%s) } } }",
                    ONE(g->in, BIGS)); break;
        case 6: out(g->b, "H.flip('matchLabels', { app = 'web' }, H.bigmap(%s))", ONE(g->in, BIGS)); break;
        case 7: out(g->b, "H.flip('matchExpressions', {}, H.big(%s, { key = 'k', operator = 'Exists' }))",
                    ONE(g->in, BIGS)); break;
        case 8:
            out(g->b, "{ matchLabels = ");
            any(g, depth + 1);
            out(g->b, ", matchExpressions = ");
            any(g, depth + 1);
            out(g->b, " }");
            break;
        default:
            out(g->b, "{ matchExpressions = H.big(%s, { key = %s, operator = 'In', values = { 'a' } }) }",
                ONE(g->in, BIGS), ONE(g->in, STRS));
            break;
        }
        break;
    case 's': out(g->b, r % 2 ? "H.d.selector" : "ebb.selector('app')"); break;
    case 'l':   /* what a selector matches: a pod, a node, a labels table */
        switch (r % 4) {
        case 0: out(g->b, "H.pod(%u)", 1 + u8(g->in)); break;
        case 1: out(g->b, "H.node(%u)", 1 + pick(g->in, 8)); break;
        case 2: out(g->b, "{ app = 'web', tier = %s }", ONE(g->in, STRS)); break;
        default: out(g->b, "H.bigmap(%s)", ONE(g->in, BIGS)); break;
        }
        break;
    case 'q': options(g, POD_OPTS, N(POD_OPTS), depth); break;
    case 'a': options(g, LOAD_OPTS, N(LOAD_OPTS), depth); break;
    case 'O': options(g, MEMORY_OPTS, N(MEMORY_OPTS), depth); break;
    case 'u': options(g, USAGE_OPTS, N(USAGE_OPTS), depth); break;
    case 't': options(g, TOPO_OPTS, N(TOPO_OPTS), depth); break;
    case 'd': options(g, DUP_OPTS, N(DUP_OPTS), depth); break;
    case 'z': options(g, PROD_OPTS, N(PROD_OPTS), depth); break;
    case 'm': options(g, REMOVABLE_OPTS, N(REMOVABLE_OPTS), depth); break;
    case 'y': options(g, MOVE_OPTS, N(MOVE_OPTS), depth); break;
    case 'g': options(g, DELETE_OPTS, N(DELETE_OPTS), depth); break;
    case 'c':   /* requesting */
        options(g, REQUESTING, N(REQUESTING), depth);
        break;
    case 'Z':   /* {include = {...}} / {exclude = {...}} */
        out(g->b, "{ %s = ", r % 2 ? "include" : "exclude");
        shape(g, 'X', depth + 1);
        out(g->b, " }");
        break;
    case 'X':   /* a list of strings */
        switch (r % 4) {
        case 0: out(g->b, "{ 'a', 'b' }"); break;
        case 1: out(g->b, "H.big(%s)", ONE(g->in, BIGS)); break;
        case 2: list_of(g, 'x', depth, 4); break;
        default: out(g->b, "H.meta({ 'a', 'b' }, %u)", 1 + pick(g->in, 10)); break;
        }
        break;
    case 'I':   /* a list of integers */
        if (r % 2)
            list_of(g, 'i', depth, 4);
        else
            out(g->b, "H.meta({ 1, 2 }, %u)", 1 + pick(g->in, 10));
        break;
    case 'C':   /* pod conditions */
        out(g->b, "{ { type = %s, status = %s, reason = %s, minTimeSinceLastTransitionSeconds = %s } }",
            ONE(g->in, STRS), ONE(g->in, STRS), ONE(g->in, STRS), ONE(g->in, INTS));
        break;
    case 'W': out(g->b, "%s", ONE(g->in, WORDS)); break;
    case 'K':   /* topology constraints kinds */
        switch (r % 3) {
        case 0: out(g->b, "{ 'DoNotSchedule', 'ScheduleAnyway' }"); break;
        case 1: out(g->b, "{ %s }", ONE(g->in, STRS)); break;
        default: out(g->b, "H.big(%s, 'DoNotSchedule')", ONE(g->in, BIGS)); break;
        }
        break;
    case 'U': out(g->b, "%s", r % 4 == 0 ? "'metrics'" : r % 4 == 1 ? "'prometheus'" : r % 4 == 2 ? "'requests'" : ONE(g->in, STRS)); break;
    case 'G':   /* prometheus samples: {[node] = value} */
        switch (r % 3) {
        case 0: out(g->b, "{ [H.nodename(1)] = %s, [H.nodename(2)] = 0.5 }", ONE(g->in, FLOATS)); break;
        case 1: out(g->b, "H.meta({}, %u)", 1 + pick(g->in, 10)); break;
        default: out(g->b, "H.bigmap(%s, 0.5)", ONE(g->in, BIGS)); break;
        }
        break;
    case 'J':   /* a list of selectors */
        out(g->b, r % 2 ? "{ H.d.selector, ebb.selector('app=web') }" : "{ H.d.selector, 'app' }");
        break;
    case 'r': out(g->b, "%s", ONE(g->in, RESOURCES)); break;
    case 'V': out(g->b, "%s", ONE(g->in, QUANTITIES)); break;
    case 'R':   /* a list of resource names */
        switch (r % 4) {
        case 0: out(g->b, "{ 'cpu', 'memory', 'pods' }"); break;
        case 1: out(g->b, "H.big(%s)", ONE(g->in, BIGS)); break;
        case 2: list_of(g, 'r', depth, 4); break;
        default: out(g->b, "H.meta({ 'cpu', 'memory' }, %u)", 1 + pick(g->in, 10)); break;
        }
        break;
    case 'M':   /* {resource = percent} */
        switch (r % 5) {
        case 0: out(g->b, "{ cpu = %s, memory = %s }", ONE(g->in, INTS), ONE(g->in, FLOATS)); break;
        case 1: out(g->b, "{ cpu = 20, memory = 20, pods = 20 }"); break;
        case 2: out(g->b, "H.bigmap(%s, 50)", ONE(g->in, BIGS)); break;
        case 3: out(g->b, "H.meta({ cpu = 50 }, %u)", 1 + pick(g->in, 10)); break;
        default: out(g->b, "{ [%s] = %s }", ONE(g->in, RESOURCES), ONE(g->in, INTS)); break;
        }
        break;
    case 'w':   /* weights */
        switch (r % 3) {
        case 0: out(g->b, "{ cpu = 1, memory = 1 }"); break;
        case 1: out(g->b, "{ cpu = %s, memory = %s }", ONE(g->in, INTS), ONE(g->in, INTS)); break;
        default: out(g->b, "H.meta({ cpu = 1 }, %u)", 1 + pick(g->in, 10)); break;
        }
        break;
    case 'e': out(g->b, r % 2 ? "{ 'NoSchedule', 'NoExecute', 'PreferNoSchedule' }" : "{ %s }", ONE(g->in, STRS)); break;
    case 'f': out(g->b, "H.cb(%u)", 1 + pick(g->in, 14)); break;
    case 'i': out(g->b, "%s", r % 3 ? ONE(g->in, INTS) : ONE(g->in, FLOATS)); break;
    case 'b': out(g->b, r % 2 ? "true" : "false"); break;
    case 'x': out(g->b, "%s", ONE(g->in, STRS)); break;
    case 'Q':   /* a PromQL query */
        out(g->b, "%s", r % 2 ? "'up'" : ONE(g->in, STRS));
        break;
    case 'k':   /* a word some binding expects */
        out(g->b, "%s", ONE(g->in, WORDS));
        break;
    case 'T': out(g->b, "H.d.taintset"); break;
    case 'o':   /* eviction options */
        switch (r % 4) {
        case 0: out(g->b, "{ reason = %s }", ONE(g->in, STRS)); break;
        case 1: out(g->b, "{ reason = string.rep(%s, %s) }", ONE(g->in, REP_UNITS), ONE(g->in, REPS)); break;
        case 2: out(g->b, "%s", ONE(g->in, STRS)); break;
        default: out(g->b, "H.flip('reason', 'short', string.rep('r', 4096))"); break;
        }
        break;
    case 'p':   /* a merge patch of labels and annotations */
        out(g->b, "{ metadata = { %s = ", r % 2 ? "labels" : "annotations");
        switch (pick(g->in, 5)) {
        case 0: out(g->b, "{ [%s] = %s }", ONE(g->in, STRS), ONE(g->in, STRS)); break;
        case 1: out(g->b, "{ drain = ebb.null, [%s] = 'x' }", ONE(g->in, STRS)); break;
        case 2: out(g->b, "H.bigmap(%s)", ONE(g->in, BIGS)); break;
        case 3: out(g->b, "H.meta({ a = 'b' }, %u)", 1 + pick(g->in, 10)); break;
        default: map_literal(g, depth + 1); break;
        }
        out(g->b, " } }");
        break;
    case 'Y':   /* a create body */
        switch (r % 6) {
        case 0:
            out(g->b, "{ metadata = { name = 'pmj-' .. (A1 and A1.uid or 'x') }, spec = { podRef = "
                      "{ name = A1 and A1.name, namespace = A1 and A1.namespace } } }");
            break;
        case 1:
            /* a second podRef under a key C would cut at its NUL */
            out(g->b, "{ metadata = { name = 'pmj-a' }, spec = { podRef = { name = A1 and A1.name, "
                      "namespace = A1 and A1.namespace }, ['podRef\\0x'] = { name = H.podname(%u), "
                      "namespace = H.podns(%u) } } }", 1 + u8(g->in), 1 + u8(g->in));
            break;
        case 2:
            out(g->b, "{ metadata = { name = %s, namespace = %s, generateName = %s }, kind = %s, "
                      "apiVersion = %s, spec = ", ONE(g->in, STRS), ONE(g->in, STRS), ONE(g->in, STRS),
                ONE(g->in, STRS), ONE(g->in, STRS));
            any(g, depth + 1);
            out(g->b, " }");
            break;
        case 3:
            out(g->b, "{ metadata = { name = 'pmj-b', ['name\\0'] = 'other' }, spec = { podRef = "
                      "{ name = H.podname(%u), namespace = H.podns(%u) } } }", 1 + u8(g->in), 1 + u8(g->in));
            break;
        case 4:
            out(g->b, "{ metadata = { name = 'pmj-c' }, spec = H.meta({ podRef = { name = 'x' } }, %u) }",
                1 + pick(g->in, 10));
            break;
        default:
            out(g->b, "{ metadata = { name = 'pmj-d' }, spec = { podRef = { name = A1 and A1.name }, "
                      "payload = ");
            shape(g, 'j', depth + 1);
            out(g->b, " } }");
            break;
        }
        break;
    case 'j':   /* a value written as JSON */
        switch (r % 6) {
        case 0: out(g->b, "H.big(%s)", ONE(g->in, BIGS)); break;
        case 1: out(g->b, "H.deep(%s)", ONE(g->in, DEEPS)); break;
        case 2: out(g->b, "{ [%s] = %s }", ONE(g->in, STRS), ONE(g->in, STRS)); break;
        case 3: out(g->b, "{ n = %s, m = %s }", ONE(g->in, INTS), ONE(g->in, FLOATS)); break;
        default: any(g, depth + 1); break;
        }
        break;
    case 'h':   /* an ebb.args schema */
        switch (r % 9) {
        case 0: out(g->b, "ebb.args.uint()"); break;
        case 1: out(g->b, "ebb.args.list(ebb.args.string())"); break;
        case 2: out(g->b, "ebb.args.label_selector()"); break;
        case 3: out(g->b, "ebb.args.quantity(%s)", ONE(g->in, RESOURCES)); break;
        case 4: out(g->b, "ebb.args.duration()"); break;
        case 5: out(g->b, "ebb.args.object({ a = ebb.args.int32(), b = ebb.args.map(ebb.args.number()) })"); break;
        case 6: out(g->b, "ebb.args.namespaces()"); break;
        case 7: out(g->b, "ebb.args.string({ enum = { 'a', 'b' } })"); break;
        default: any(g, depth + 1); break;
        }
        break;
    default: any(g, depth); break;
    }
}

/* What can be called: an ebb.* function (recv NULL) or a method of the
 * default object of kind `recv`, with parameters of the shapes in `params`
 * (see shape()). `lua`: written in Lua (lua/ebb), its metamethod calls are
 * the language's. `where`: the sections it is tried in. */
struct binding {
    const char *name;
    const char *recv;
    const char *fn;
    const char *params;
    bool lua;
    const char *where;
};

static const struct binding BINDINGS[] = {
    { "ebb.pods", NULL, "ebb.pods", "Nq", false, "DBEF" },
    { "ebb.pod", NULL, "ebb.pod", "xx", false, "DBEF" },
    { "ebb.node", NULL, "ebb.node", "n", false, "DBEF" },
    { "ebb.nodes", NULL, "ebb.nodes", "k", false, "DBEF" },
    { "ebb.selector", NULL, "ebb.selector", "S", false, "DBEF" },
    { "ebb.namespace_labels", NULL, "ebb.namespace_labels", "x", false, "DB" },
    { "ebb.priority_class", NULL, "ebb.priority_class", "x", false, "DB" },
    { "ebb.quantity", NULL, "ebb.quantity", "Vr", false, "DB" },
    { "ebb.now", NULL, "ebb.now", "", false, "DB" },
    { "ebb.log", NULL, "ebb.log", "kx", false, "DBEF" },
    { "ebb.note", NULL, "ebb.note", "xn", false, "DBEF" },
    { "ebb.evictions", NULL, "ebb.evictions", "O", false, "DBEF" },
    { "ebb.taint_set", NULL, "ebb.taint_set", "nf", false, "DB" },
    { "ebb.fits", NULL, "ebb.fits", "Pn", false, "DBE" },
    { "ebb.fits_any_other", NULL, "ebb.fits_any_other", "PN", false, "DB" },
    { "ebb.fits_any", NULL, "ebb.fits_any", "PN", false, "DB" },
    { "ebb.node_usage", NULL, "ebb.node_usage", "Nu", false, "DB" },
    { "ebb.metrics_provider", NULL, "ebb.metrics_provider", "k", false, "DB" },
    { "ebb.topology_balance", NULL, "ebb.topology_balance", "LNt", false, "DB" },
    { "ebb.topology_domains", NULL, "ebb.topology_domains", "LNt", false, "DB" },
    { "ebb.duplicates", NULL, "ebb.duplicates", "LNd", false, "DB" },
    { "ebb.anti_affinity_index", NULL, "ebb.anti_affinity_index", "LN", false, "DB" },
    { "ebb.best_preferred_weight", NULL, "ebb.best_preferred_weight", "PN", false, "DB" },
    { "ebb.better_preferred_node", NULL, "ebb.better_preferred_node", "PiN", false, "DB" },
    { "ebb.node_loads", NULL, "ebb.node_loads", "Na", false, "DB" },
    { "ebb.koord_class", NULL, "ebb.koord_class", "P", false, "DB" },
    { "ebb.json", NULL, "ebb.json", "j", false, "DBE" },
    { "ebb.rfc3339", NULL, "ebb.rfc3339", "i", false, "DBE" },
    { "ebb.prometheus_query", NULL, "ebb.prometheus_query", "Q", false, "DB" },
    { "ebb.set", NULL, "ebb.set", "X", true, "DB" },
    { "ebb.keys", NULL, "ebb.keys", "v", true, "DB" },
    { "ebb.args.decode", NULL, "ebb.args.decode", "hv", true, "DB" },
    { "ebb.args.join", NULL, "ebb.args.join", "xv", true, "DB" },
    { "ebb.args.list", NULL, "ebb.args.list", "hv", true, "DB" },
    { "Pod:label", "pod", "label", "x", false, "DBEF" },
    { "Pod:annotation", "pod", "annotation", "x", false, "DBEF" },
    { "Pod:has_owner_kind", "pod", "has_owner_kind", "x", false, "DBEF" },
    { "Pod:tolerates", "pod", "tolerates", "ne", false, "DB" },
    { "Pod:tolerates_all", "pod", "tolerates_all", "T", false, "DB" },
    { "Pod:matches_node_selector", "pod", "matches_node_selector", "n", false, "DB" },
    { "Pod:preferred_weight", "pod", "preferred_weight", "n", false, "DB" },
    { "Pod:has_node_affinity", "pod", "has_node_affinity", "k", false, "DB" },
    { "Pod:request", "pod", "request", "r", false, "DBEF" },
    { "Node:label", "node", "label", "x", false, "DB" },
    { "Node:annotation", "node", "annotation", "x", false, "DB" },
    { "Node:allocatable_of", "node", "allocatable_of", "r", false, "DB" },
    { "PodList:iter", "podlist", "iter", "", false, "DB" },
    { "PodList:sort", "podlist", "sort", "fb", false, "DB" },
    { "PodList:sort", "podlist", "sort", "kb", false, "DB" },
    { "PodList:filter", "podlist", "filter", "f", false, "DB" },
    { "PodList:slice", "podlist", "slice", "ii", false, "DB" },
    { "PodList:reverse", "podlist", "reverse", "", false, "DB" },
    { "PodList:append", "podlist", "append", "A", false, "DB" },
    { "PodList:keys", "podlist", "keys", "", false, "DB" },
    { "PodList:by_node", "podlist", "by_node", "", false, "DB" },
    { "PodList:requests", "podlist", "requests", "", false, "DB" },
    { "NodeList:iter", "nodelist", "iter", "", false, "DB" },
    { "NodeList:names", "nodelist", "names", "", false, "DB" },
    { "NodeList:filter", "nodelist", "filter", "f", false, "DB" },
    { "Selector:matches", "selector", "matches", "l", false, "DB" },
    { "AntiAffinityIndex:violation", "anti", "violation", "P", false, "DB" },
    { "AntiAffinityIndex:remove", "anti", "remove", "P", false, "DB" },
    { "AntiAffinityIndex:candidates", "anti", "candidates", "n", false, "DB" },
    { "LoadSet:nodes", "loadset", "nodes", "k", false, "DB" },
    { "LoadSet:skipped", "loadset", "skipped", "", false, "DB" },
    { "LoadSet:class", "loadset", "class", "n", false, "DB" },
    { "LoadSet:resources", "loadset", "resources", "", false, "DB" },
    { "LoadSet:usage", "loadset", "usage", "n", false, "DB" },
    { "LoadSet:overutilized", "loadset", "overutilized", "nz", false, "DB" },
    { "LoadSet:score", "loadset", "score", "nwz", false, "DB" },
    { "LoadSet:sort", "loadset", "sort", "Nwz", false, "DB" },
    { "LoadSet:available", "loadset", "available", "Nz", false, "DB" },
    { "LoadSet:removable", "loadset", "removable", "nLNm", false, "DB" },
    { "LoadSet:order", "loadset", "order", "nLwz", false, "DB" },
    { "LoadSet:evicted", "loadset", "evicted", "nPMz", false, "DB" },
    { "LoadSet:pod_usage", "loadset", "pod_usage", "P", false, "DB" },
    { "LoadSet:pod_score", "loadset", "pod_score", "nPwz", false, "DB" },
    { "NodeUsage:count", "usage", "count", "", false, "DB" },
    { "NodeUsage:nodes", "usage", "nodes", "", false, "DB" },
    { "NodeUsage:skipped", "usage", "skipped", "", false, "DB" },
    { "NodeUsage:set_thresholds", "usage", "set_thresholds", "MMb", false, "DB" },
    { "NodeUsage:thresholds", "usage", "thresholds", "", false, "DB" },
    { "NodeUsage:classify", "usage", "classify", "k", false, "DB" },
    { "NodeUsage:class", "usage", "class", "n", false, "DB" },
    { "NodeUsage:move", "usage", "move", "kky", false, "DB" },
    { "NodeUsage:continues", "usage", "continues", "n", false, "DB" },
    { "NodeUsage:tolerated", "usage", "tolerated", "P", false, "DB" },
    { "NodeUsage:candidates", "usage", "candidates", "Lc", false, "DB" },
    { "NodeUsage:pod_usage", "usage", "pod_usage", "P", false, "DB" },
    { "NodeUsage:measures_pods", "usage", "measures_pods", "", false, "DB" },
    { "NodeUsage:take", "usage", "take", "P", false, "DB" },
    { "NodeUsage:explain", "usage", "explain", "n", false, "DB" },
    { "NodeUsage:usage", "usage", "usage", "n", false, "DB" },
    { "NodeUsage:available", "usage", "available", "n", false, "DB" },
    { "NodeUsage:percent", "usage", "percent", "n", false, "DB" },
    { "NodeUsage:budget", "usage", "budget", "", false, "DB" },
    { "Evictor:evict", "evictor", "evict", "Po", false, "DBEF" },
    { "Evictor:filter", "evictor", "filter", "P", false, "DBEF" },
    { "Evictor:pre_eviction_filter", "evictor", "pre_eviction_filter", "P", false, "DBEF" },
    { "Evictor:evicted", "evictor", "evicted", "n", false, "DBE" },
    { "Evictor:node_limit_reached", "evictor", "node_limit_reached", "n", false, "DBE" },
    { "Evictor:total_limit_reached", "evictor", "total_limit_reached", "", false, "DBE" },
    { "EvictorApi:evict", "api", "evict", "g", false, "E" },
    { "EvictorApi:delete", "api", "delete", "g", false, "E" },
    { "EvictorApi:patch", "api", "patch", "p", false, "E" },
    { "EvictorApi:create", "api", "create", "Y", false, "E" },
    { "EvictorApi:create", "api", "create", "PY", false, "E" },
    { "EvictorApi:delete", "api", "delete", "Pg", false, "E" },
};

/* A call of binding b with its parameters, some left out or one more. */
static void call(struct gen *g, const struct binding *b)
{
    size_t np = strlen(b->params);
    unsigned how = pick(g->in, 8);
    int recv = -1;

    out(g->b, "H.%s(\"%s\", ", b->lua ? "lcall" : "call", b->name);
    if (b->recv != NULL) {
        out(g->b, "H.m(\"%s\", \"%s\"), ", b->recv, b->fn);
        recv = (int)pick(g->in, 8);
        if (recv < 6)
            out(g->b, "H.d.%s", b->recv);
        else if (recv == 6)
            out(g->b, "V[%u]", 1 + pick(g->in, 8));
        else
            any(g, 1);
    } else {
        out(g->b, "%s", b->fn);
    }
    if (how == 6 && np > 0)
        np--;                                 /* one argument short */
    for (size_t i = 0; i < np; i++) {
        out(g->b, ", ");
        shape(g, b->params[i], 0);
    }
    if (how == 7) {                           /* one argument more */
        out(g->b, ", ");
        any(g, 0);
    }
    out(g->b, ")");
}

static char skipped[1024];   /* EBB_FUZZ_SKIP: bindings left out, ",a,b," */

static bool skipping(const struct binding *b)
{
    char k[80];

    snprintf(k, sizeof(k), ",%s,", b->name);
    return skipped[0] != '\0' && strstr(skipped, k) != NULL;
}

static const struct binding *binding_for(struct gen *g)
{
    unsigned i = pick(g->in, N(BINDINGS));

    /* a binding not meant for this section is still called now and then:
     * the engine must refuse it there, not misbehave */
    for (unsigned k = 0; k < N(BINDINGS) && !strchr(BINDINGS[i].where, g->sec) && pick(g->in, 4); k++)
        i = (i + 1) % N(BINDINGS);
    for (unsigned k = 0; k < N(BINDINGS) && skipping(&BINDINGS[i]); k++)
        i = (i + 1) % N(BINDINGS);
    return &BINDINGS[i];
}

static void statement(struct gen *g)
{
    unsigned kind = pick(g->in, 16);
    unsigned slot = 1 + pick(g->in, 8);

    switch (kind) {
    case 10: {   /* the same call many times: what accumulates, what the budget stops */
        static const char *const times[] = { "100", "10000", "1000000" };
        out(g->b, "for _ = 1, %s do ", ONE(g->in, times));
        call(g, binding_for(g));
        out(g->b, " end\n");
        break;
    }
    case 11: {   /* an operator on a value */
        static const char *const ops[] = { "len", "eq", "lt", "le", "concat", "tostring", "call",
                                           "get", "set", "iter", "pairs", "close" };
        const char *op = ONE(g->in, ops);
        out(g->b, "V[%u] = H.op('%s', ", slot, op);
        if (pick(g->in, 2))
            out(g->b, "H.d.%s", ONE(g->in, KINDS));
        else
            any(g, 1);
        out(g->b, ", ");
        if (strcmp(op, "get") == 0 && pick(g->in, 2))
            out(g->b, "%s", ONE(g->in, POD_FIELDS));
        else
            any(g, 1);
        out(g->b, ", ");
        any(g, 1);
        out(g->b, ")\n");
        break;
    }
    case 12:     /* in a coroutine of the script: yields land there */
        out(g->b, "H.inco(function() V[%u] = ", slot);
        call(g, binding_for(g));
        out(g->b, " end)\n");
        break;
    case 13:     /* a value changed between two reads */
        out(g->b, "pcall(function() V[%u][", slot);
        any(g, 2);
        out(g->b, "] = ");
        any(g, 1);
        out(g->b, " end)\n");
        break;
    case 14:     /* an eviction of any pod (protected ones too) */
        out(g->b, "V[%u] = H.call(\"Evictor:evict\", H.m(\"evictor\", \"evict\"), ctx.evictor, H.pod(%u), ",
            slot, 1 + u8(g->in));
        shape(g, 'o', 0);
        out(g->b, ")\n");
        break;
    case 15:     /* a field of a pod or a node */
        out(g->b, "V[%u] = H.op('get', %s(%u), %s)\n", slot, pick(g->in, 2) ? "H.pod" : "H.node",
            1 + u8(g->in), ONE(g->in, POD_FIELDS));
        break;
    default:
        out(g->b, "V[%u] = ", slot);
        call(g, binding_for(g));
        out(g->b, "\n");
        break;
    }
}

/* The program for one input: sections per extension point, each
 * statement's section chosen by the input. */
static char *program(const uint8_t *data, size_t size)
{
    static const char secs[] = { 'D', 'D', 'D', 'D', 'B', 'E', 'E', 'F' };
    struct in in = { data, size, 0 };
    struct buf sec[4] = { { 0 } };   /* D B E F */
    struct buf all = { 0 };
    unsigned head = u8(&in);
    int n = 0;

    while (!spent(&in) && n++ < MAX_STMTS) {
        char s = secs[pick(&in, 8)];
        int k = s == 'D' ? 0 : s == 'B' ? 1 : s == 'E' ? 2 : 3;
        struct gen g = { &in, &sec[k], s };
        if (sec[k].n > MAX_PROGRAM)
            break;
        statement(&g);
    }
    for (int k = 0; k < 4; k++)
        out(&sec[k], "%s", "");
    out(&all, "local H, PHASE, ctx, A1, A2 = ...\nlocal ebb, V = H.ebb, H.V\n");
    out(&all, "if PHASE == 'deschedule' then\n%s  return\nend\n", sec[0].s);
    out(&all, "if PHASE == 'balance' then\n%s  return\nend\n", sec[1].s);
    out(&all, "if PHASE == 'evict' then\n%s  return H.evret(%u, ctx)\nend\n", sec[2].s, head % 8);
    out(&all, "if PHASE == 'filter' then\n%s  return %s\nend\n", sec[3].s,
        (head >> 3) % 4 == 0 ? "true" : (head >> 3) % 4 == 1 ? "H.pod(1) ~= A1" :
        (head >> 3) % 4 == 2 ? "V[1]" : "H.meta({}, 'raise')");
    for (int k = 0; k < 4; k++)
        free(sec[k].s);
    return all.s;
}

/* ---- the engine ---------------------------------------------------------------- */

static struct ebb_engine *engine;
static char **protected_pods, **known_pods, **pod_nodes;
static size_t nprotected, nknown;
static int resources_before;
static size_t strings_before;
static bool keep_going, print_programs;
static char ignored[256];

/* The heap, as ASan sees it: live bytes and their peak since `reset`. */
static atomic_size_t heap_live, heap_peak;

static void on_malloc(const volatile void *p, size_t size)
{
    size_t now = atomic_fetch_add(&heap_live, size) + size, peak = atomic_load(&heap_peak);
    (void)p;
    while (now > peak && !atomic_compare_exchange_weak(&heap_peak, &peak, now))
        ;
}

static void on_free(const volatile void *p)
{
    if (p != NULL)
        atomic_fetch_sub(&heap_live, __sanitizer_get_allocated_size((const void *)p));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool in_set(char **set, size_t n, const char *key)
{
    return n > 0 && bsearch(&key, set, n, sizeof(*set), cmp_str) != NULL;
}

/* What no policy with DefaultEvictor's defaults may evict, decided here
 * from the cluster alone: mirror, static and terminating pods, system-
 * critical priority, bare pods, pods with local storage, DaemonSet pods
 * (unless the descheduler.alpha.kubernetes.io/evict annotation says so). */
static bool is_protected(const struct ebb_pod *p)
{
    if (p->flags & EBB_POD_EVICT_ANNOTATION)
        return false;
    if (p->flags & (EBB_POD_MIRROR | EBB_POD_STATIC | EBB_POD_TERMINATING | EBB_POD_LOCAL_STORAGE))
        return true;
    if ((p->flags & EBB_POD_HAS_PRIORITY) && p->priority >= 2000000000)
        return true;
    if (p->nowners == 0)
        return true;
    for (uint16_t i = 0; i < p->nowners; i++)
        if (p->owners[i].kind != NULL && strcmp(p->owners[i].kind, "DaemonSet") == 0)
            return true;
    return false;
}

static void list_pods(struct ebb_cache *c)
{
    uint32_t slots = ebb_cache_pod_slots(c);

    protected_pods = calloc(slots + 1, sizeof(char *));
    known_pods = calloc(slots + 1, sizeof(char *));
    pod_nodes = calloc(slots + 1, sizeof(char *));
    if (protected_pods == NULL || known_pods == NULL || pod_nodes == NULL)
        abort();
    for (uint32_t i = 0; i < slots; i++) {
        struct ebb_pod *p = ebb_cache_pod_at(c, i);
        char key[600];
        if (p == NULL)
            continue;
        snprintf(key, sizeof(key), "%s/%s", p->ns, p->name);
        if ((known_pods[nknown++] = strdup(key)) == NULL)
            abort();
        if (is_protected(p) && (protected_pods[nprotected++] = strdup(key)) == NULL)
            abort();
    }
    qsort(known_pods, nknown, sizeof(char *), cmp_str);
    qsort(protected_pods, nprotected, sizeof(char *), cmp_str);
}

static bool ignoring(const char *rule)
{
    const char *p = ignored;
    size_t n = strlen(rule);

    while ((p = strstr(p, rule)) != NULL) {
        if ((p == ignored || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return true;
        p += n;
    }
    return false;
}

static const char *current_program;
static FILE *saved_stderr;   /* while the cycle's log is captured */

/* Where a survey keeps what it found (EBB_FUZZ_CRASH_DIR; NULL: stderr
 * only): findings.PID, and program.PID for the program a sanitizer
 * stopped (with ASAN_OPTIONS=log_path=DIR/asan its report is asan.PID). */
static const char *crash_dir;

static FILE *crash_file(const char *what)
{
    char path[4096];

    if (crash_dir == NULL)
        return NULL;
    snprintf(path, sizeof(path), "%s/%s.%d", crash_dir, what, (int)getpid());
    return fopen(path, "a");
}

/* A sanitizer stops the process: say what the program was. */
static void on_death(void)
{
    FILE *f;

    if (current_program == NULL)
        return;
    fprintf(saved_stderr ? saved_stderr : stderr, "--- the program that ran:\n%s---\n", current_program);
    if ((f = crash_file("program")) != NULL) {
        fputs(current_program, f);
        fclose(f);
    }
}

/* A rule broke: say which and how, with the program, then stop (or, with
 * EBB_FUZZ_KEEP_GOING, go on once each distinct failure was printed). */
static void broke(const char *rule, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void broke(const char *rule, const char *fmt, ...)
{
    static char *seen[4096];
    static size_t nseen;
    char msg[1024];
    va_list ap;
    FILE *f;

    if (ignoring(rule))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (keep_going) {
        /* one report per rule and kind of message: digits (sizes,
         * counts) and what follows a quote or "..." (the example) left out */
        char k[160];
        size_t n = 0;
        for (const char *s = msg; *s && *s != '"' && strncmp(s, "...", 3) != 0 && n + 1 < sizeof(k); s++)
            if (*s < '0' || *s > '9')
                k[n++] = *s;
        k[n] = '\0';
        for (size_t i = 0; i < nseen; i++)
            if (strcmp(seen[i], k) == 0)
                return;
        if (nseen < EBB_ARRAY_LEN(seen))
            seen[nseen++] = strdup(k);
    }
    fprintf(stderr, "lua_bindings: %s: %s\n--- the program:\n%s---\n", rule, msg,
            current_program ? current_program : "");
    if ((f = crash_file("findings")) != NULL) {
        fprintf(f, "lua_bindings: %s: %s\n--- the program:\n%s---\n", rule, msg,
                current_program ? current_program : "");
        fclose(f);
    }
    if (!keep_going)
        abort();
}

/* ---- the checks -------------------------------------------------------------- */

/* Valid UTF-8 as RFC 3629 has it: no overlong forms, no surrogates, nothing
 * past U+10FFFF. Returns the offset of the first bad byte, or len. */
static size_t utf8_valid(const unsigned char *s, size_t len)
{
    size_t i = 0;

    while (i < len) {
        unsigned c = s[i], n, cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) n = 1, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef) n = 2, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4) n = 3, cp = c & 0x07;
        else return i;
        if (i + n >= len)
            return i;
        for (unsigned k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return i;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return i;
        i += n + 1;
    }
    return len;
}

/* No C0 control character but newline and tab, no DEL. */
static const char *control_char(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
            return s + i;
    }
    return NULL;
}

/* A key twice in one object of the tree (cJSON keeps both; the API server
 * takes the last one, so what was checked is not what is sent). */
static const char *duplicate_key(const cJSON *j)
{
    for (const cJSON *a = j ? j->child : NULL; a != NULL; a = a->next) {
        const char *d;
        if (cJSON_IsObject(j))
            for (const cJSON *b = a->next; b != NULL; b = b->next)
                if (a->string && b->string && strcmp(a->string, b->string) == 0)
                    return a->string;
        if ((d = duplicate_key(a)) != NULL)
            return d;
    }
    return NULL;
}

static void check_request(const struct ebb_plan_eviction *ev)
{
    cJSON *j, *ref;
    const char *dup, *slash = strchr(ev->pod, '/');

    if (ev->request == NULL)
        return;
    if ((j = cJSON_Parse(ev->request)) == NULL) {
        broke("request", "the request for %s is not JSON: %.200s", ev->pod, ev->request);
        return;
    }
    if ((dup = duplicate_key(j)) != NULL)
        broke("request", "the request for %s has the key \"%s\" twice: %.300s", ev->pod, dup,
              ev->request);
    ref = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "spec"), "podRef");
    if (ref != NULL && slash != NULL) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(ref, "name");
        const cJSON *ns = cJSON_GetObjectItemCaseSensitive(ref, "namespace");
        if (!cJSON_IsString(name) || strcmp(name->valuestring, slash + 1) != 0 ||
            (ns != NULL && (!cJSON_IsString(ns) || strlen(ns->valuestring) != (size_t)(slash - ev->pod) ||
                            strncmp(ns->valuestring, ev->pod, (size_t)(slash - ev->pod)) != 0)))
            broke("request", "the request evicting %s names another pod in spec.podRef: %.300s",
                  ev->pod, ev->request);
    }
    cJSON_Delete(j);
}

static void check_plan(const struct ebb_plan *p)
{
    char *seen[MAX_TOTAL * 8 + 64];
    size_t nseen = 0;
    char *json, *table = NULL;
    size_t tlen = 0, bad;
    FILE *f;

    for (size_t i = 0; i < p->nevictions; i++) {
        const struct ebb_plan_eviction *ev = &p->evictions[i];
        size_t on_node = 0;
        if (!in_set(known_pods, nknown, ev->pod))
            broke("protected", "evicted %s, a pod the cluster does not have", ev->pod);
        if (in_set(protected_pods, nprotected, ev->pod))
            broke("protected", "evicted the protected pod %s (by %s)", ev->pod,
                  ev->plugin ? ev->plugin : "?");
        for (size_t k = 0; k < nseen; k++)
            if (strcmp(seen[k], ev->pod) == 0)
                broke("protected", "evicted %s twice in one cycle", ev->pod);
        if (nseen < EBB_ARRAY_LEN(seen))
            seen[nseen++] = ev->pod;
        for (size_t k = 0; k <= i; k++)
            on_node += p->evictions[k].node && ev->node && strcmp(p->evictions[k].node, ev->node) == 0;
        if (on_node > MAX_PER_NODE)
            broke("limit", "%zu evictions on node %s, the limit is %d", on_node, ev->node, MAX_PER_NODE);
        check_request(ev);
    }
    if (p->nevictions > MAX_TOTAL)
        broke("limit", "%zu evictions in one cycle, the limit is %d", p->nevictions, MAX_TOTAL);
    for (size_t i = 0; i < p->nnotes; i++) {
        const char *m = p->notes[i].message;
        if (m != NULL && strncmp(m, "ebb-fuzz: ", 10) == 0)
            broke(strstr(m, "the engine called") ? "metamethod" : "result", "%s", m + 10);
    }
    for (size_t i = 0; i < p->nerrors; i++) {
        const char *m = p->errors[i].message;
        if (m != NULL && strstr(m, "ebb-fuzz: the program does not compile")) {
            fprintf(stderr, "lua_bindings: the generator wrote a program Lua refuses (%s):\n%s\n", m,
                    current_program);
            abort();
        }
    }
    if ((json = ebb_plan_to_json(p, false)) == NULL) {
        broke("json", "the plan could not be written as JSON");
    } else {
        size_t len = strlen(json);
        cJSON *j;
        if ((bad = utf8_valid((const unsigned char *)json, len)) != len)
            broke("json", "the plan's JSON is not UTF-8 at byte %zu: ...%.60s", bad,
                  json + (bad > 30 ? bad - 30 : 0));
        if ((j = cJSON_ParseWithLengthOpts(json, len + 1, NULL, true)) == NULL)
            broke("json", "the plan's JSON does not parse near: %.80s", cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "?");
        cJSON_Delete(j);
        free(json);
    }
    if ((f = open_memstream(&table, &tlen)) == NULL)
        abort();
    ebb_plan_print_table(p, f);
    fclose(f);
    if (table != NULL) {
        const char *c = control_char(table, tlen);
        if (c != NULL)
            broke("json", "the plan's table has the control character 0x%02x: ...%.60s",
                  (unsigned char)*c, c > table + 30 ? c - 30 : table);
    }
    free(table);
}

/* Every line a cycle logged is one line of ebb's: "ebb: LEVEL: ...". */
static void check_log(const char *log, size_t len)
{
    const char *p = log, *end = log + len;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *c;
        if (strncmp(p, "ebb: ", n < 5 ? n : 5) != 0 || n < 5)
            broke("log", "a log line that is not ebb's: \"%.*s\"", (int)(n > 120 ? 120 : n), p);
        else if ((c = control_char(p, n)) != NULL)
            broke("log", "a log line with the control character 0x%02x: \"%.*s\"", (unsigned char)*c,
                  (int)(n > 120 ? 120 : n), p);
        p += n + 1;
    }
}

/* ---- setup ------------------------------------------------------------------- */

static const char NULL_POLICY[] =
    "{\"apiVersion\": \"descheduler/v1alpha2\", \"kind\": \"DeschedulerPolicy\", "
    "\"profiles\": [{\"name\": \"fuzz\", \"pluginConfig\": [{\"name\": \"DefaultEvictor\"}], "
    "\"plugins\": {\"filter\": {\"enabled\": [\"DefaultEvictor\"]}}}]}";

/* Bind a policy of the fuzzer's; a few tries, as setting up a plugin runs
 * under its 200 ms budget and a machine busy elsewhere can take that. */
static void bind(const char *text, size_t len)
{
    struct ebb_policy *policy = NULL;
    struct ebb_error err = { 0 };
    char msg[1200];

    for (int attempt = 0; attempt < 5; attempt++) {
        policy = NULL;
        if (ebb_policy_parse(text, len, "fuzz-policy.json", &policy, &err) != 0)
            break;
        if (ebb_engine_set_policy(engine, policy, &err) == 0)
            return;
        ebb_policy_free(policy);
        if (strstr(err.msg, "time budget") == NULL)
            break;
    }
    ebb_error_format(&err, msg, sizeof(msg));
    fprintf(stderr, "lua_bindings: the fuzzer's policy is refused: %s\n%s\n", msg,
            current_program ? current_program : "");
    abort();
}

static void setup(void)
{
    struct ebb_engine_opts eo = {
        .home = ".",
        .mode = EBB_MODE_DRY_RUN,
        .mem_limit = MEM_CAP,
        .time_budget_ms = SETUP_BUDGET_MS,
        .quarantine_after = -1,
        .scripts = ebb_lua_plugins(),
    };
    const char *snap = getenv("EBB_FUZZ_SNAPSHOT") ? getenv("EBB_FUZZ_SNAPSHOT") : SNAPSHOT;
    const char *ign = getenv("EBB_FUZZ_IGNORE");
    struct ebb_cache *cache = NULL;
    struct ebb_error err = { 0 };
    char msg[1200];

    keep_going = getenv("EBB_FUZZ_KEEP_GOING") != NULL;
    snprintf(skipped, sizeof(skipped), ",%s,", getenv("EBB_FUZZ_SKIP") ? getenv("EBB_FUZZ_SKIP") : "");
    if (strcmp(skipped, ",,") == 0)
        skipped[0] = '\0';
    crash_dir = getenv("EBB_FUZZ_CRASH_DIR");
    print_programs = getenv("EBB_FUZZ_PRINT") != NULL;
    snprintf(ignored, sizeof(ignored), "%s", ign ? ign : "");
    if (access(snap, R_OK) != 0 || access(PLUGIN_DIR "/_hostile.lua", R_OK) != 0) {
        fprintf(stderr, "lua_bindings: run from the repository's top (no %s or %s)\n", snap, PLUGIN_DIR);
        abort();
    }
    if (ebb_time_parse(NOW, &eo.now) != 0 || ebb_engine_create(&eo, &engine, &err) != 0 ||
        ebb_engine_load_builtins(engine, &err) != 0 ||
        ebb_engine_register_lua_dir(engine, PLUGIN_DIR, &err) != 0 || ebb_cache_create(&cache) != 0 ||
        ebb_snapshot_load(cache, snap, NULL, &err) != 0) {
        ebb_error_format(&err, msg, sizeof(msg));
        fprintf(stderr, "lua_bindings: setup failed: %s\n", msg);
        abort();
    }
    list_pods(cache);
    if (print_programs)
        fprintf(stderr, "lua_bindings: %s: %zu pods, %zu of them protected\n", snap, nknown, nprotected);
    ebb_engine_set_cache(engine, cache);
    bind(NULL_POLICY, strlen(NULL_POLICY));
    if (ebb_engine_run_cycle(engine) != 0)
        abort();
    ebb_plan_clear(ebb_engine_plan(engine));
    resources_before = ebb_resource_count();
    strings_before = ebb_str_count();
    __sanitizer_set_death_callback(on_death);
    if (__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free) == 0) {
        fprintf(stderr, "lua_bindings: no room for a malloc hook\n");
        abort();
    }
}

static void write_seeds(const char *dir);

static uint64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The policy: one profile, FuzzStrategy at deschedule and balance, and
 * FuzzEvictor its evict plugin, both given the program. */
static char *policy_for(const char *prog)
{
    cJSON *doc = cJSON_CreateObject(), *prof, *cfg, *pl, *args, *item, *limits;
    const char *names[] = { "FuzzStrategy", "FuzzEvictor" };
    char *text;

    cJSON_AddStringToObject(doc, "apiVersion", "descheduler/v1alpha2");
    cJSON_AddStringToObject(doc, "kind", "DeschedulerPolicy");
    cJSON_AddNumberToObject(doc, "maxNoOfPodsToEvictPerNode", MAX_PER_NODE);
    cJSON_AddNumberToObject(doc, "maxNoOfPodsToEvictTotal", MAX_TOTAL);
    prof = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(doc, "profiles"), prof);
    cJSON_AddStringToObject(prof, "name", "fuzz");
    cfg = cJSON_AddArrayToObject(prof, "pluginConfig");
    for (int i = 0; i < 2; i++) {
        item = cJSON_CreateObject();
        cJSON_AddStringToObject(item, "name", names[i]);
        args = cJSON_AddObjectToObject(item, "args");
        cJSON_AddStringToObject(args, "program", prog);
        limits = cJSON_AddObjectToObject(item, "limits");
        cJSON_AddStringToObject(limits, "memory", MEM_CAP_TEXT);
        cJSON_AddStringToObject(limits, "timeout", BUDGET_TEXT);
        cJSON_AddItemToArray(cfg, item);
    }
    pl = cJSON_AddObjectToObject(prof, "plugins");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(cJSON_AddObjectToObject(pl, "deschedule"), "enabled"),
                         cJSON_CreateString("FuzzStrategy"));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(cJSON_AddObjectToObject(pl, "balance"), "enabled"),
                         cJSON_CreateString("FuzzStrategy"));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(cJSON_AddObjectToObject(pl, "evict"), "enabled"),
                         cJSON_CreateString("FuzzEvictor"));
    if ((text = cJSON_PrintUnformatted(doc)) == NULL)
        abort();
    cJSON_Delete(doc);
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *prog, *policy, *log = NULL;
    size_t loglen = 0, base, grown;
    struct ebb_plugin_time times[8];
    FILE *saved, *capture;
    uint64_t t0, ms;
    int rc;

    if (engine == NULL) {
        if (getenv("EBB_FUZZ_SEEDS") != NULL) {
            write_seeds(getenv("EBB_FUZZ_SEEDS"));
            _exit(0);   /* not a finding: libFuzzer takes exit() for one */
        }
        setup();
    }
    prog = program(data, size);
    current_program = prog;
    if (print_programs)
        fprintf(stderr, "--- program (%zu bytes of input)\n%s", size, prog);
    policy = policy_for(prog);
    bind(policy, strlen(policy));
    free(policy);
    ebb_plan_clear(ebb_engine_plan(engine));

    /* the cycle, its log captured (ASan writes to fd 2 itself) */
    if ((capture = open_memstream(&log, &loglen)) == NULL)
        abort();
    saved_stderr = saved = stderr;
    stderr = capture;
    ebb_log_level = EBB_LOG_DEBUG;
    base = atomic_load(&heap_live);
    atomic_store(&heap_peak, base);
    t0 = ms_now();
    rc = ebb_engine_run_cycle(engine);
    ms = ms_now() - t0;
    grown = atomic_load(&heap_peak) - base;
    ebb_log_level = -1;
    stderr = saved;
    saved_stderr = NULL;
    fclose(capture);

    if (rc != 0)
        broke("cycle", "the cycle failed: %s", ebb_strerror(rc));
    if (ms > TIME_BOUND_MS)
        broke("time", "the cycle took %llu ms; the bound is %d ms", (unsigned long long)ms, TIME_BOUND_MS);
    if (grown > 2 * MEM_CAP + MEMORY_SLACK)
        broke("memory", "the heap grew by %zu MiB during the cycle, past the plugins' caps "
                        "(2 x %zu MiB) and %zu MiB for the engine", grown >> 20, MEM_CAP >> 20,
              MEMORY_SLACK >> 20);
    for (size_t i = 0, n = ebb_engine_plugin_times(engine, times, 8); i < n && i < 8; i++)
        if (times[i].memory > MEM_CAP)
            broke("memory", "plugin %s holds %zu bytes, past its cap of %zu", times[i].plugin,
                  times[i].memory, MEM_CAP);
    if (print_programs) {
        char *j = ebb_plan_to_json(ebb_engine_plan(engine), true);
        fprintf(stderr, "--- its log (%llu ms, heap +%zu B of %zu KiB)\n%.*s--- the plan\n%s\n",
                (unsigned long long)ms, grown, atomic_load(&heap_live) >> 10, (int)(loglen > 20000 ? 20000 : loglen), log ? log : "",
                j ? j : "?");
        free(j);
    }
    check_log(log, loglen);
    free(log);
    check_plan(ebb_engine_plan(engine));
    ebb_plan_clear(ebb_engine_plan(engine));

    /* the plugins dropped, nothing they made stays in process-wide tables */
    bind(NULL_POLICY, strlen(NULL_POLICY));
    if (ebb_resource_count() != resources_before)
        broke("global", "the resource registry grew from %d to %d names", resources_before,
              ebb_resource_count());
    if (ebb_str_count() > strings_before)
        broke("global", "%zu interned strings stay once the plugins are gone",
              ebb_str_count() - strings_before);
    current_program = NULL;
    free(prog);
    return 0;
}

/* ---- seeds --------------------------------------------------------------------- */

/* One input per binding (its plausible call in a section it belongs to),
 * and one per statement kind: the grammar reads a 0 as the first choice,
 * so these are short. */
static void write_seeds(const char *dir)
{
    char path[4096];
    int n = 0;

    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        perror(dir);
        exit(1);
    }
    for (unsigned b = 0; b < N(BINDINGS); b++) {
        bool evict = strchr(BINDINGS[b].where, 'D') == NULL;
        /* head, [an eviction so that evict runs], section, kind 0, slot, binding */
        uint8_t seed[16];
        size_t len = 0;
        seed[len++] = 0;
        if (evict) {
            seed[len++] = 0;             /* D */
            seed[len++] = 14;            /* an eviction */
            seed[len++] = 0;             /* slot */
            seed[len++] = 19;            /* H.pod(20): one the demo cluster lets go */
            seed[len++] = 0;             /* its options: { reason = '' } */
            seed[len++] = 0;
            seed[len++] = 0;
        }
        seed[len++] = evict ? 5 : 0;     /* E or D */
        seed[len++] = 0;                 /* a call */
        seed[len++] = 0;                 /* V[1] */
        seed[len++] = (uint8_t)b;        /* the binding */
        snprintf(path, sizeof(path), "%s/binding-%03u", dir, b);
        FILE *f = fopen(path, "wb");
        if (f == NULL || fwrite(seed, 1, len, f) != len || fclose(f) != 0) {
            perror(path);
            exit(1);
        }
        n++;
    }
    for (unsigned k = 10; k < 16; k++) {
        uint8_t seed[] = { 0, 0, (uint8_t)k, 0, 0, 0, 0, 0, 0 };
        snprintf(path, sizeof(path), "%s/statement-%02u", dir, k);
        FILE *f = fopen(path, "wb");
        if (f == NULL || fwrite(seed, 1, sizeof(seed), f) != sizeof(seed) || fclose(f) != 0) {
            perror(path);
            exit(1);
        }
        n++;
    }
    fprintf(stderr, "lua_bindings: %d seeds in %s\n", n, dir);
    fflush(stderr);
}
