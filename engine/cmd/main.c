/* ebb: the command line.
 *
 *   ebb simulate --snapshot FILE --policy FILE [--policy-dir DIR]... [--now TIME]
 *                [--cycles N] [--output table|json]
 *   ebb check    --policy FILE [--policy-dir DIR]...
 *   ebb version
 *   ebb --policy-config-file FILE [upstream's flags]   (as upstream's image is run)
 *
 * Exit status: 0 done, 2 the input is wrong (flags, policy, snapshot,
 * scripts; the message names the file, line and field), 1 anything else.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ebb.h"
#include "ebb/convert.h"
#include "ebb/flags.h"
#include "ebb/explain.h"
#include "ebb/record.h"
#include "ebb/reload.h"
#include "ebb/report.h"
#include "ebb/run.h"
#include "ebb/serve.h"
#include "ebb/simulate.h"
#include "ebb/str.h"
#include "ebb/testrun.h"
#include "ebb/lua.h"

#define EXIT_INPUT 2

struct opts {
    const char *snapshot;
    const char *policy;
    const char *dirs[64];   /* argv strings */
    int ndirs;
    int64_t now;
    int64_t interval_ns;    /* --interval; 0: not given */
    long cycles;
    bool json;
    bool stats;
    uint64_t script_timeout_ms;
    size_t script_memory;
    const char *prometheus_url, *prometheus_token_file;
    unsigned features;
    bool reschedule;
    const char *sched_config;
    int sched_version;
    bool seeded;
    uint64_t seed;
    const char *report;
};

static void usage(FILE *f)
{
    fputs("usage:\n"
          "  ebb simulate --snapshot FILE --policy FILE [--policy-dir DIR]... [--now TIME]\n"
          "               [--cycles N] [--output table|json] [--prometheus-url URL]\n"
          "               [--reschedule [--scheduler-config FILE] [--seed S] [--report FILE.html]]\n"
          "  ebb check    --policy FILE [--policy-dir DIR]...\n"
          "  ebb explain  NAMESPACE/POD --policy FILE (--snapshot FILE | --kubeconfig FILE)\n"
          "               [--output text|json]   (why the pod is or is not evicted)\n"
          "  ebb run      --policy FILE [--policy-dir DIR]... [--kubeconfig FILE] [--once] ...\n"
          "               (ebb run --help for the rest)\n"
          "  ebb record   -o FILE [--kubeconfig FILE]\n"
          "  ebb serve    --snapshot FILE [--listen 127.0.0.1:8001]\n"
          "  ebb test     [DIR] [--policy-dir DIR]... [--run PATTERN] [-v]\n"
          "               (strategy fixtures: DIR/<name>.lua + DIR/<name>_test.yaml)\n"
          "  ebb convert  FILE [--output yaml|json]   (a v1alpha1 policy as v1alpha2)\n"
          "  ebb version\n"
          "  ebb --policy-config-file FILE [--descheduling-interval D] [upstream's flags]\n"
          "               (as upstream's descheduler: `ebb run` with one cycle by default)\n"
          "\n"
          "  --snapshot FILE    a cluster recorded as `kubectl get ... -o json` (or YAML)\n"
          "  --policy FILE      a descheduler/v1alpha2 DeschedulerPolicy (v1alpha1 is converted)\n"
          "  --policy-dir DIR   a directory of Lua strategies (repeatable)\n"
          "  --now TIME         the clock for ages, RFC 3339 (default: now)\n"
          "  --cycles N         run N cycles on the snapshot; evicted pods stay gone (default 1)\n"
          "  --reschedule       evicted pods come back as their owners recreate them, placed by\n"
          "                     a model of kube-scheduler, and the snapshot's pending pods too;\n"
          "                     cycles run until one evicts nothing, at most 10 (or --cycles N;\n"
          "                     0: only place the pending pods)\n"
          "  --interval D       with --reschedule, the time between cycles (default 5m, as\n"
          "                     deploy/ runs ebb): the clock moves on by it each cycle, so ages,\n"
          "                     cooldowns and the replacements' own age count as they would live\n"
          "  --scheduler-config FILE  a kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration\n"
          "  --scheduler-version V    latest (default) or v1.25: where kube-scheduler versions differ\n"
          "  --seed S           break ties between nodes at random, reproducibly (default: the\n"
          "                     first in name order)\n"
          "  --report FILE      write an HTML report of the rescheduled run\n"
          "  --output FORMAT    table (default) or json\n"
          "  --prometheus-url URL  ask this Prometheus server the policy's queries (at --now)\n"
          "                     instead of the results the snapshot recorded\n"
          "  --prometheus-token-file F  the bearer token for it\n"
          "  --feature-gates K=V  EvictionsInBackground=true: pods annotated request-evict-only\n"
          "                     and eviction-in-progress are being evicted: they count against\n"
          "                     the limits and are not asked again\n"
          "  --stats            print load and cycle measurements to stderr\n"
          "  --script-timeout D time budget per call into a Lua plugin (10s; 0: none, for\n"
          "                     measuring what the budget costs)\n"
          "  --script-memory Q  memory cap of each Lua plugin instance (64Mi)\n"
          "  -v, --verbose      log more; -q, --quiet: errors only\n",
          f);
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int fail_input(const struct ebb_error *err)
{
    char buf[2048];
    ebb_error_format(err, buf, sizeof(buf));
    fprintf(stderr, "ebb: error: %s\n", buf);
    return EXIT_INPUT;
}

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        { "snapshot", required_argument, NULL, 's' },
        { "policy", required_argument, NULL, 'p' },
        { "policy-dir", required_argument, NULL, 'd' },
        { "now", required_argument, NULL, 'n' },
        { "cycles", required_argument, NULL, 'c' },
        { "output", required_argument, NULL, 'o' },
        { "stats", no_argument, NULL, 'S' },
        { "script-timeout", required_argument, NULL, 'T' },
        { "script-memory", required_argument, NULL, 'M' },
        { "prometheus-url", required_argument, NULL, 'P' },
        { "prometheus-token-file", required_argument, NULL, 'K' },
        { "feature-gates", required_argument, NULL, 'F' },
        { "reschedule", no_argument, NULL, 'R' },
        { "interval", required_argument, NULL, 'I' },
        { "scheduler-config", required_argument, NULL, 'C' },
        { "scheduler-version", required_argument, NULL, 'V' },
        { "seed", required_argument, NULL, 'E' },
        { "report", required_argument, NULL, 'H' },
        { "verbose", no_argument, NULL, 'v' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;

    memset(o, 0, sizeof(*o));
    o->now = EBB_TIME_NONE;
    o->cycles = -1;   /* not given */
    opterr = 0;
    optind = 2;
    while ((c = getopt_long(argc, argv, ":vqho:", longopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 's': o->snapshot = optarg; break;
        case 'p': o->policy = optarg; break;
        case 'd':
            if (o->ndirs == (int)EBB_ARRAY_LEN(o->dirs)) {
                fprintf(stderr, "ebb: error: --policy-dir: at most %d directories\n", o->ndirs);
                return EXIT_INPUT;
            }
            o->dirs[o->ndirs++] = optarg;
            break;
        case 'n':
            if (ebb_time_parse(optarg, &o->now) != 0) {
                fprintf(stderr, "ebb: error: --now: \"%s\" is not an RFC 3339 time "
                                "(e.g. 2026-01-02T03:04:05Z)\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case 'c':
            o->cycles = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || o->cycles < 0 || o->cycles > 100000) {
                fprintf(stderr, "ebb: error: --cycles: \"%s\" is not a number from 0 to 100000\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case 'R': o->reschedule = true; break;
        case 'I':
            if (ebb_duration_parse(optarg, &o->interval_ns) != 0 || o->interval_ns < 1000000000LL) {
                fprintf(stderr, "ebb: error: --interval: \"%s\" is not a duration of 1s or more "
                                "(e.g. 5m)\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case 'H': o->report = optarg; break;
        case 'C': o->sched_config = optarg; break;
        case 'V':
            if (strcmp(optarg, "latest") == 0) {
                o->sched_version = EBB_SCHED_LATEST;
            } else if (strcmp(optarg, "v1.25") == 0 || strcmp(optarg, "1.25") == 0) {
                o->sched_version = EBB_SCHED_V1_25;
            } else {
                fprintf(stderr, "ebb: error: --scheduler-version: \"%s\" is not latest or v1.25\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case 'E': {
            unsigned long long v;
            errno = 0;
            v = strtoull(optarg, &end, 10);
            if (*optarg == '\0' || *optarg == '-' || *end != '\0' || errno != 0) {
                fprintf(stderr, "ebb: error: --seed: \"%s\" is not a number from 0 to 2^64-1\n", optarg);
                return EXIT_INPUT;
            }
            o->seeded = true;
            o->seed = v;
            break;
        }
        case 'o':
            if (strcmp(optarg, "json") == 0) {
                o->json = true;
            } else if (strcmp(optarg, "table") != 0) {
                fprintf(stderr, "ebb: error: --output: \"%s\" is not table or json\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case 'S': o->stats = true; break;
        case 'T':
            if (!ebb_flag_script_timeout("--script-timeout", optarg, true, &o->script_timeout_ms))
                return EXIT_INPUT;
            break;
        case 'M':
            if (!ebb_flag_script_memory("--script-memory", optarg, &o->script_memory))
                return EXIT_INPUT;
            break;
        case 'P': o->prometheus_url = optarg; break;
        case 'K': o->prometheus_token_file = optarg; break;
        case 'F':
            if (!ebb_flag_feature_gates("--feature-gates", optarg, &o->features))
                return EXIT_INPUT;
            break;
        case 'v': ebb_log_level = EBB_LOG_DEBUG; break;
        case 'q': ebb_log_level = EBB_LOG_ERROR; break;
        case 'h': usage(stdout); exit(0);
        case ':':
        default:
            ebb_flag_getopt_error(c, argv, usage);
            return EXIT_INPUT;
        }
    }
    if (!ebb_flag_no_arguments(argc, argv))
        return EXIT_INPUT;
    if (!o->reschedule) {
        const char *needs = o->sched_config ? "--scheduler-config" : o->seeded ? "--seed"
                          : o->report ? "--report" : o->interval_ns ? "--interval" : o->cycles == 0 ? "--cycles 0" : NULL;
        if (needs != NULL) {
            fprintf(stderr, "ebb: error: %s needs --reschedule\n", needs);
            return EXIT_INPUT;
        }
        if (o->cycles < 0)
            o->cycles = 1;
    }
    return 0;
}

static int run(const struct opts *o, bool check)
{
    struct ebb_snapshot_stats stats = { 0 };
    struct ebb_sim_opts so = {
        .snapshot = check ? NULL : o->snapshot,
        .policy = o->policy,
        .dirs = o->dirs,
        .ndirs = o->ndirs,
        .now = o->now,
        .cycles = (int)o->cycles,
        .stats = &stats,
        .reschedule = o->reschedule && !check,
        .max_cycles = (int)o->cycles,
        .interval = o->interval_ns ? o->interval_ns / 1000000000LL : EBB_SIM_INTERVAL,
        .sched_config = o->sched_config,
        .sched_version = o->sched_version,
        .seeded = o->seeded,
        .seed = o->seed,
        .progress = o->reschedule && isatty(2) && ebb_log_level >= EBB_LOG_INFO,
        .time_budget_ms = o->script_timeout_ms,
        .mem_limit = o->script_memory,
        .prometheus_url = o->prometheus_url,
        .prometheus_token_file = o->prometheus_token_file,
        .features = o->features,
    };
    struct ebb_engine *e = NULL;
    struct ebb_error err = { 0 };

    if (ebb_simulate(&so, &e, &err) != 0)
        return fail_input(&err);
    if (o->stats && !check) {
        struct ebb_plugin_time t[64];
        size_t n = ebb_engine_plugin_times(e, t, 64);
        double cyc = (double)so.cycle_ns[0] / 1e9;
        fprintf(stderr, "stats: snapshot %.1f MB, %zu items (%zu nodes, %zu pods) in %.3f s: %.1f MB/s\n",
                (double)stats.bytes / 1e6, stats.items, stats.kinds[EBB_KIND_NODE],
                stats.kinds[EBB_KIND_POD], stats.seconds,
                stats.seconds > 0 ? (double)stats.bytes / 1e6 / stats.seconds : 0.0);
        fprintf(stderr, "stats: resident after load %.1f MB\n", (double)so.rss_after_load / 1048576.0);
        fprintf(stderr, "stats: interned strings: %zu, %.1f MB\n", ebb_str_count(),
                (double)ebb_str_bytes() / 1048576.0);
        int ran = ebb_engine_plan(e)->cycles;
        for (int i = 0; i < 8 && i < ran; i++)
            fprintf(stderr, "stats: cycle %d: %.1f ms\n", i + 1, (double)so.cycle_ns[i] / 1e6);
        if (so.whatif != NULL) {
            double place = (double)so.place_ns / 1e9;
            fprintf(stderr, "stats: scheduler model built in %.1f ms (%.1f ms of CPU), resident %.1f MB\n",
                    (double)so.sched_build_ns / 1e6, (double)so.sched_build_cpu_ns / 1e6,
                    (double)ebb_rss_bytes() / 1048576.0);
            double cpu = (double)so.place_cpu_ns / 1e9;
            double all = (double)(so.place_cpu_ns + so.replace_cpu_ns + so.cycles_cpu_ns) / 1e9;
            fprintf(stderr, "stats: %llu pods scheduled in %.1f ms (%.1f ms of CPU): %.0f a second of CPU; "
                            "%.0f nodes filtered and %.0f scored a pod\n",
                    (unsigned long long)so.placements, place * 1e3, cpu * 1e3,
                    cpu > 0 ? (double)so.placements / cpu : 0.0,
                    so.placements ? (double)so.nodes_filtered / (double)so.placements : 0.0,
                    so.placements ? (double)so.nodes_scored / (double)so.placements : 0.0);
            fprintf(stderr, "stats: %d cycles %.1f ms (%.1f ms of CPU), replacements made in %.1f ms of CPU; "
                            "cycles and placements: %.0f placements a second of CPU\n",
                    ran, (double)so.cycles_ns / 1e6, (double)so.cycles_cpu_ns / 1e6,
                    (double)so.replace_cpu_ns / 1e6, all > 0 ? (double)so.placements / all : 0.0);
        }
        if (so.predictions > 0) {
            double each = (double)(so.predict_ns - so.predict_build_ns) / (double)so.predictions;
            fprintf(stderr, "stats: LoopGuard: %llu bounce predictions in %.1f ms: %.1f us each, "
                            "%llu scheduler models built for them in %.1f ms\n",
                    (unsigned long long)so.predictions, (double)so.predict_ns / 1e6, each / 1e3,
                    (unsigned long long)so.predict_builds, (double)so.predict_build_ns / 1e6);
        }
        fprintf(stderr, "stats: calls into Lua: %llu in cycle 1, %llu in all%s\n",
                (unsigned long long)so.cycle_arms[0], (unsigned long long)ebb_budget_arms(),
                o->script_timeout_ms == EBB_BUDGET_OFF ? " (budget off)" : " (each armed a time budget)");
        for (size_t i = 0; i < n && i < 64; i++)
            fprintf(stderr, "stats:   %-45s %8.1f ms  %5.1f%%  %7.1f MB\n", t[i].plugin,
                    (double)t[i].last_ns / 1e6,
                    cyc > 0 ? (double)t[i].last_ns / 1e9 / cyc * 100.0 : 0.0,
                    (double)t[i].memory / 1048576.0);
    }
    if (check) {
        struct ebb_sources src = { o->policy, o->dirs, (size_t)o->ndirs };
        char hash[17] = "?";
        ebb_sources_hash(&src, hash, NULL);
        printf("%s: ok (generation hash %s, %zu plugin instances)\n", o->policy, hash,
               ebb_engine_plugin_count(e));
        if (o->stats)
            fprintf(stderr, "stats: generation built in %.1f ms\n", (double)so.build_ns / 1e6);
    } else {
        if (o->report != NULL && so.whatif != NULL) {
            struct ebb_report_opts ro = {
                .snapshot = o->snapshot, .policy = o->policy, .scheduler_config = o->sched_config,
                .scheduler_version = o->sched_version == EBB_SCHED_V1_25 ? "v1.25" : "latest",
                .now = o->now, .seeded = o->seeded, .seed = o->seed,
            };
            uint64_t t0 = mono_ms();
            if (ebb_report_write(so.whatif, ebb_engine_plan(e), &ro, o->report, &err) != 0) {
                ebb_whatif_destroy(so.whatif);
                ebb_engine_destroy(e);
                ebb_evmem_free(&so.memory);
                return fail_input(&err);
            }
            if (o->stats) {
                struct stat st;
                fprintf(stderr, "stats: report written in %llu ms, %.0f KB\n",
                        (unsigned long long)(mono_ms() - t0),
                        stat(o->report, &st) == 0 ? (double)st.st_size / 1024.0 : 0.0);
            }
        }
        ebb_log(EBB_LOG_INFO, "%s: %zu nodes, %zu pods, %zu items skipped, %.1f MB in %.2f s",
                o->snapshot, stats.kinds[EBB_KIND_NODE], stats.kinds[EBB_KIND_POD], stats.skipped,
                (double)stats.bytes / 1e6, stats.seconds);
        if (o->json) {
            char *s = so.whatif ? ebb_whatif_plan_json(so.whatif, ebb_engine_plan(e), true)
                                : ebb_plan_to_json(ebb_engine_plan(e), true);
            if (s == NULL) {
                ebb_whatif_destroy(so.whatif);
                ebb_engine_destroy(e);
                ebb_evmem_free(&so.memory);
                return 1;
            }
            puts(s);
            free(s);
        } else {
            ebb_plan_print_table(ebb_engine_plan(e), stdout);
            if (so.whatif)
                ebb_whatif_print_table(so.whatif, stdout);
        }
    }
    if (o->stats && !check) {
        struct rusage ru;
        if (getrusage(RUSAGE_SELF, &ru) == 0)
            fprintf(stderr, "stats: peak resident %.1f MB\n", (double)ru.ru_maxrss / 1024.0);
    }
    if (EBB_FREE_AT_EXIT) {   /* the engine is the last thing held */
        ebb_whatif_destroy(so.whatif);
        ebb_engine_destroy(e);
        ebb_evmem_free(&so.memory);
    }
    return 0;
}

static int cmd_simulate(int argc, char **argv)
{
    struct opts o;
    int rc;

    if ((rc = parse(argc, argv, &o)) != 0)
        return rc;
    if (o.snapshot == NULL || o.policy == NULL) {
        fprintf(stderr, "ebb: error: simulate needs --snapshot and --policy\n");
        return EXIT_INPUT;
    }
    return run(&o, false);
}

/* Flags and no command: upstream's image, Job, CronJob and Helm chart run
 * the descheduler so. That is `ebb run` with upstream's default interval,
 * 0: one cycle and exit, unless --descheduling-interval asks for a loop (a
 * later flag wins). `ebb run` reads upstream's flags itself. */
static int cmd_upstream(int argc, char **argv)
{
    char **args = calloc((size_t)argc + 3, sizeof(*args));
    int rc;

    if (args == NULL) {
        fprintf(stderr, "ebb: error: out of memory\n");
        return 1;
    }
    args[0] = argv[0];
    args[1] = "run";
    args[2] = "--descheduling-interval=0";
    memcpy(args + 3, argv + 1, (size_t)(argc - 1) * sizeof(*args));
    rc = ebb_run_main(argc + 2, args);
    free(args);
    return rc;
}

static int cmd_check(int argc, char **argv)
{
    struct opts o;
    int rc;

    if ((rc = parse(argc, argv, &o)) != 0)
        return rc;
    if (o.policy == NULL) {
        fprintf(stderr, "ebb: error: check needs --policy\n");
        return EXIT_INPUT;
    }
    if (o.snapshot != NULL) {
        fprintf(stderr, "ebb: error: check takes no --snapshot (use simulate)\n");
        return EXIT_INPUT;
    }
    return run(&o, true);
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_INPUT : 0;
    }
    if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
        printf("ebb %s\n", EBB_VERSION);
        return 0;
    }
    if (argv[1][0] == '-')
        return cmd_upstream(argc, argv);
    if (strcmp(argv[1], "simulate") == 0)
        return cmd_simulate(argc, argv);
    if (strcmp(argv[1], "check") == 0)
        return cmd_check(argc, argv);
    if (strcmp(argv[1], "serve") == 0)
        return ebb_serve_main(argc, argv);
    if (strcmp(argv[1], "run") == 0)
        return ebb_run_main(argc, argv);
    if (strcmp(argv[1], "record") == 0)
        return ebb_record_main(argc, argv);
    if (strcmp(argv[1], "explain") == 0)
        return ebb_explain_main(argc, argv);
    if (strcmp(argv[1], "test") == 0)
        return ebb_test_main(argc, argv);
    if (strcmp(argv[1], "convert") == 0)
        return ebb_convert_main(argc, argv);
    fprintf(stderr, "ebb: error: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return EXIT_INPUT;
}
