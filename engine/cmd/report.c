/* The HTML report of a what-if run: inline CSS and SVG, aggregated so that
 * a run over thousands of nodes stays small. See ebb/report.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ebb/report.h"
#include "ebb/sched.h"
#include "base/map.h"

#define BARS_MAX 120                 /* sorted bars up to this many nodes, heatmaps past it */
#define TOP_PAIRS 25
#define TOP_NODES 15
#define TOP_MESSAGES 30
#define TOP_LOOPS 100

/* Sequential blues for 0-100%, then red for over 100%. */
static const char *const heat[11] = { "#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6",
                                      "#4292c6", "#2171b5", "#08519c", "#08306b", "#041c40",
                                      "#d62728" };
static const char *const cat[10] = { "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                     "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac" };

static int bucket(double u)
{
    if (u > 100.0)
        return 10;
    if (!(u >= 0.0))
        return 0;   /* negative (from negative quantities) or NaN: no conversion of it */
    int b = (int)(u / 10.0);
    return b > 9 ? 9 : b;
}

/* Every text of the report goes out through here: names, messages and
 * paths from the snapshot, the policy and the command line, escaped for
 * HTML (EBB_ESC_HTML: valid UTF-8, no control byte, & < > " ' as
 * references), whatever they hold. */
static void esc(FILE *f, const char *s)
{
    char *t;

    if (s == NULL)
        return;
    t = ebb_escape_dup(s, strlen(s), EBB_ESC_HTML, 0, NULL);
    fputs(t ? t : "", f);
    free(t);
}

/* A node name that fits a label: long ones keep their last 43 bytes, from
 * the first character that starts there (never half a character). */
static void label_name(FILE *f, const char *name)
{
    size_t n = strlen(name);

    if (n > 44) {
        const char *p = name + n - 43;
        while (*p != '\0' && ((unsigned char)*p & 0xC0) == 0x80)
            p++;
        fputs("&hellip;", f);
        name = p;
    }
    esc(f, name);
}

static const char *const css =
    "*{box-sizing:border-box}"
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1d2733;"
    "background:#f4f6f8;margin:0;padding:24px 32px 48px}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:0 0 4px}"
    ".sub{color:#5b6b7c;margin:0 0 18px}.note{color:#5b6b7c;margin:2px 0 12px;font-size:13px}"
    "section{background:#fff;border:1px solid #dde3ea;border-radius:8px;padding:16px 20px;margin:0 0 18px}"
    ".cards{display:flex;flex-wrap:wrap;gap:12px;background:none;border:0;padding:0}"
    ".card{background:#fff;border:1px solid #dde3ea;border-radius:8px;padding:10px 16px;min-width:140px}"
    ".card b{display:block;font-size:22px}.card span{color:#5b6b7c;font-size:12px}"
    ".row{display:flex;flex-wrap:wrap;gap:20px;align-items:flex-start}"
    "svg.chart{font:11px system-ui,sans-serif;display:block;max-width:100%;height:auto}"
    "svg .axis{stroke:#9aa7b4;stroke-width:1}svg .grid{stroke:#e6ebf0;stroke-width:1}"
    "svg text{fill:#334}"
    "table{border-collapse:collapse;width:100%;font-size:13px}"
    "th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eef1f4;vertical-align:top}"
    "th{color:#5b6b7c;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    ".legend{display:flex;flex-wrap:wrap;gap:10px;font-size:12px;color:#334;margin-top:6px}"
    ".legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;"
    "vertical-align:-2px}"
    ".ok{color:#2e7d32}.warn{color:#c62828}code{font-size:12px}";

static double util(const struct ebb_whatif_state *st, size_t node, int res)
{
    return st->util[node * 3 + (size_t)res];
}

/* ---- head and cards ------------------------------------------------------------ */

static size_t total_evictions(const struct ebb_whatif *w)
{
    size_t n = 0;
    for (size_t i = 0; i < w->nstates; i++)
        n += w->states[i].evicted;
    return n;
}

static void head(FILE *f, const struct ebb_whatif *w, const struct ebb_report_opts *o)
{
    int cycles = w->nstates ? w->states[w->nstates - 1].cycle : 0;

    fputs("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
          "<title>ebb what-if", f);
    if (o->policy) {
        fputs(": ", f);
        esc(f, o->policy);
    }
    fprintf(f, "</title><style>%s</style></head>\n<body>\n<h1>What-if: ", css);
    esc(f, o->policy ? o->policy : "policy");
    fputs(" on ", f);
    esc(f, o->snapshot ? o->snapshot : "the snapshot");
    fprintf(f, "</h1>\n<p class=\"sub\">%zu nodes &middot; %d cycle%s, %s &middot; scheduler: ",
            w->nnodes, cycles, cycles == 1 ? "" : "s",
            w->converged ? "<span class=\"ok\">converged</span> (the last cycle evicted nothing)"
                         : "<span class=\"warn\">not converged</span>");
    esc(f, o->scheduler_config ? o->scheduler_config : "kube-scheduler defaults");
    fprintf(f, " (%s)", o->scheduler_version ? o->scheduler_version : "latest");
    if (o->seeded)
        fprintf(f, ", seed %llu", (unsigned long long)o->seed);
    if (o->now != EBB_TIME_NONE) {
        char t[32];
        time_t now = (time_t)o->now;
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", &tm);
        fprintf(f, " &middot; clock %s", t);
    }
    fputs("</p>\n", f);
}

static void card(FILE *f, const char *value, const char *label)
{
    fprintf(f, "<div class=\"card\"><b>%s</b><span>%s</span></div>", value, label);
}

static void cards(FILE *f, const struct ebb_whatif *w)
{
    char v[64];
    size_t placed = 0, moved = 0;

    for (size_t i = 0; i < w->nplacements; i++) {
        placed += w->placements[i].status == EBB_SCHED_PLACED;
        moved += w->placements[i].from != NULL && w->placements[i].node != NULL &&
                 w->placements[i].from != w->placements[i].node;
    }
    fputs("<section class=\"cards\">", f);
    snprintf(v, sizeof(v), "%zu", total_evictions(w));
    card(f, v, "evictions");
    snprintf(v, sizeof(v), "%zu", placed);
    card(f, v, "pods placed");
    snprintf(v, sizeof(v), "%zu", moved);
    card(f, v, "moved to another node");
    snprintf(v, sizeof(v), "%zu", w->npending);
    card(f, v, "still pending");
    snprintf(v, sizeof(v), "%zu", w->nloops);
    card(f, v, w->nloops == 1 ? "loop" : "loops");
    if (w->nstates > 0) {
        const struct ebb_whatif_spread *a = w->states[0].spread, *b = w->states[w->nstates - 1].spread;
        snprintf(v, sizeof(v), "%.1f &rarr; %.1f", a[0].stddev, b[0].stddev);
        card(f, v, "cpu spread (std. dev., points)");
        snprintf(v, sizeof(v), "%.1f &rarr; %.1f", a[0].max, b[0].max);
        card(f, v, "busiest node's cpu (%)");
    }
    fputs("</section>\n", f);
}

/* ---- node utilization ------------------------------------------------------------- */

static const struct ebb_whatif_state *sort_state;
static int sort_res;

static int cmp_after(const void *a, const void *b)
{
    double x = util(sort_state, *(const size_t *)a, sort_res);
    double y = util(sort_state, *(const size_t *)b, sort_res);
    return x > y ? -1 : x < y;
}

static void bars(FILE *f, const struct ebb_whatif *w, const struct ebb_whatif_state *before,
                 const struct ebb_whatif_state *after, int res, const char *id, size_t *order)
{
    const int label = 290, width = 360, row = 15, top = 22;
    int height = top + (int)w->nnodes * row + 8;

    for (size_t i = 0; i < w->nnodes; i++)
        order[i] = i;
    sort_state = after;
    sort_res = res;
    qsort(order, w->nnodes, sizeof(*order), cmp_after);
    fprintf(f, "<svg class=\"chart\" id=\"%s\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
               "aria-label=\"%s by node\">",
            id, label + width + 50, height, label + width + 50, height, res == 0 ? "cpu" : "memory");
    for (int t = 0; t <= 100; t += 25) {
        int x = label + width * t / 100;
        fprintf(f, "<line class=\"grid\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
                   "<text x=\"%d\" y=\"12\" text-anchor=\"middle\">%d%%</text>",
                x, top - 4, x, height - 6, x, t);
    }
    for (size_t k = 0; k < w->nnodes; k++) {
        size_t i = order[k];
        int y = top + (int)k * row;
        double ub = util(before, i, res), ua = util(after, i, res);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", label - 6, y + 10);
        label_name(f, w->nodes[i]);
        fprintf(f, "</text><rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"5\" fill=\"#c6dbef\"/>"
                   "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"6\" fill=\"%s\"/>",
                label, y + 1, fmin(ub, 120) * width / 100.0, label, y + 7,
                fmin(ua, 120) * width / 100.0, ua > 100 ? heat[10] : "#2171b5");
    }
    fputs("</svg>", f);
}

static void heatmap(FILE *f, const struct ebb_whatif *w, const struct ebb_whatif_state *st, int res,
                    const char *id, const char *title)
{
    size_t cols = (size_t)ceil(sqrt((double)w->nnodes * 2.0)), rows;
    const int cell = 6, pitch = 7, top = 18;

    if (cols < 10)
        cols = 10;
    rows = (w->nnodes + cols - 1) / cols;
    int wd = (int)cols * pitch, ht = top + (int)rows * pitch;
    fprintf(f, "<svg class=\"chart\" id=\"%s\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
               "aria-label=\"%s\"><text x=\"0\" y=\"12\">%s</text>",
            id, wd, ht, wd, ht, title, title);
    /* one path per color: a run of cells is a few bytes each */
    for (int b = 0; b <= 10; b++) {
        bool open = false;
        for (size_t i = 0; i < w->nnodes; i++) {
            if (bucket(util(st, i, res)) != b)
                continue;
            if (!open) {
                fprintf(f, "<path fill=\"%s\" d=\"", heat[b]);
                open = true;
            }
            fprintf(f, "M%zu %zuh%dv%dh-%dz", (i % cols) * pitch, top + (i / cols) * pitch, cell, cell, cell);
        }
        if (open)
            fputs("\"/>", f);
    }
    fputs("</svg>", f);
}

static void heat_legend(FILE *f)
{
    fputs("<div class=\"legend\">", f);
    for (int b = 0; b <= 10; b++) {
        if (b < 10)
            fprintf(f, "<span><i style=\"background:%s\"></i>%d&ndash;%d%%</span>", heat[b], b * 10, b * 10 + 10);
        else
            fprintf(f, "<span><i style=\"background:%s\"></i>over 100%%</span>", heat[b]);
    }
    fputs("</div>", f);
}

static int nodes_section(FILE *f, const struct ebb_whatif *w)
{
    const struct ebb_whatif_state *before = &w->states[0], *after = &w->states[w->nstates - 1];
    size_t *order;

    fputs("<section id=\"nodes\"><h2>Node utilization, before and after</h2>", f);
    if (w->nnodes <= BARS_MAX) {
        if ((order = calloc(w->nnodes + 1, sizeof(*order))) == NULL)
            return EBB_ENOMEM;
        fputs("<p class=\"note\">Requests in % of allocatable, nodes sorted by what they hold after the last "
              "cycle: the light bar is the snapshot, the dark one after the last cycle's replacements.</p>"
              "<div class=\"row\"><div><b>cpu</b>", f);
        bars(f, w, before, after, 0, "chart-nodes-cpu", order);
        fputs("</div><div><b>memory</b>", f);
        bars(f, w, before, after, 1, "chart-nodes-memory", order);
        fputs("</div></div>", f);
        free(order);
    } else {
        fputs("<p class=\"note\">Requests in % of allocatable, one cell per node (the same place in every map, "
              "nodes in name order).</p><div class=\"row\">", f);
        heatmap(f, w, before, 0, "chart-nodes-cpu", "cpu, snapshot");
        heatmap(f, w, after, 0, "chart-nodes-cpu-after", "cpu, after the last cycle");
        heatmap(f, w, before, 1, "chart-nodes-memory", "memory, snapshot");
        heatmap(f, w, after, 1, "chart-nodes-memory-after", "memory, after the last cycle");
        fputs("</div>", f);
        heat_legend(f);
    }
    fputs("</section>\n", f);
    return 0;
}

/* ---- spread per cycle --------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(const double *v, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    return i + 1 < n ? v[i] + (v[i + 1] - v[i]) * (pos - (double)i) : v[n - 1];
}

static const char *state_name(const struct ebb_whatif_state *st, char *buf, size_t len)
{
    if (st->cycle < 0)
        snprintf(buf, len, "snap");
    else
        snprintf(buf, len, "%d", st->cycle);
    return buf;
}

static int boxplots(FILE *f, const struct ebb_whatif *w, int res, const char *id, const char *title)
{
    const int left = 36, step = 44, top = 24, h = 180;
    int wd = left + step * (int)w->nstates + 10, ht = top + h + 28;
    double *v = malloc((w->nnodes + 1) * sizeof(*v)), top_value = 100;

    if (v == NULL)
        return EBB_ENOMEM;
    for (size_t s = 0; s < w->nstates; s++)
        if (w->states[s].spread[res].max > top_value)
            top_value = ceil(w->states[s].spread[res].max / 25.0) * 25.0;
#define Y(u) (top + h - (u) * h / top_value)
    fprintf(f, "<svg class=\"chart\" id=\"%s\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
               "aria-label=\"%s\"><text x=\"0\" y=\"12\">%s</text>",
            id, wd, ht, wd, ht, title, title);
    for (double t = 0; t <= top_value; t += 25)
        fprintf(f, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
                   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f%%</text>",
                left, Y(t), wd - 6, Y(t), left - 4, Y(t) + 4, t);
    for (size_t s = 0; s < w->nstates && w->nnodes > 0; s++) {
        const struct ebb_whatif_state *st = &w->states[s];
        char name[16];
        double x = left + step * (double)s + step / 2.0;
        for (size_t i = 0; i < w->nnodes; i++)
            v[i] = util(st, i, res);
        qsort(v, w->nnodes, sizeof(*v), cmp_double);
        double lo = v[0], hi = v[w->nnodes - 1], q1 = quantile(v, w->nnodes, 0.25);
        double med = quantile(v, w->nnodes, 0.5), q3 = quantile(v, w->nnodes, 0.75);
        fprintf(f, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                   "<rect x=\"%.1f\" y=\"%.1f\" width=\"24\" height=\"%.1f\" fill=\"#9ecae1\" stroke=\"#2171b5\"/>"
                   "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#08306b\" stroke-width=\"2\"/>"
                   "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"#e15759\"/>"
                   "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>",
                x, Y(hi), x, Y(lo), x - 12, Y(q3), fmax(Y(q1) - Y(q3), 1), x - 12, Y(med), x + 12, Y(med),
                x, Y(st->spread[res].mean), x, top + h + 16, state_name(st, name, sizeof(name)));
    }
#undef Y
    fputs("</svg>", f);
    free(v);
    return 0;
}

static int spread_section(FILE *f, const struct ebb_whatif *w)
{
    static const char *const ids[3] = { "chart-spread-cpu", "chart-spread-memory", "chart-spread-pods" };
    static const char *const titles[3] = { "cpu requests, % of allocatable", "memory requests, % of allocatable",
                                           "pods, % of allocatable slots" };
    int rc;

    fputs("<section id=\"spread\"><h2>Utilization across nodes, cycle by cycle</h2>"
          "<p class=\"note\">For the snapshot, after its pending pods were placed (0), and after each cycle: "
          "min to max, the middle half (box), the median (line) and the mean (dot).</p><div class=\"row\">", f);
    for (int r = 0; r < 3; r++)
        if ((rc = boxplots(f, w, r, ids[r], titles[r])) != 0)
            return rc;
    fputs("</div></section>\n", f);
    return 0;
}

/* ---- evictions per cycle and plugin ------------------------------------------------- */

/* Invariant: the evictions axis is labelled with integers computed as
 * integers, 0, step, 2 step, ... top: step is 1, 2 or 5 times a power of
 * ten, the finest that keeps to 5 intervals, and top is the first multiple
 * of step at or above max. No label is rounded from a fraction, so none
 * repeats and none is skipped (max 5 once gave 0 1 2 4 5). Counts past
 * 10^18 are not evictions of one cycle; they are drawn as 10^18. */
size_t ebb__report_ticks(size_t max, size_t ticks[EBB_REPORT_TICKS_MAX])
{
    const size_t intervals = EBB_REPORT_TICKS_MAX - 1;
    size_t step = 1, scale = 1, n;

    if (max < 1)
        max = 1;
    if (max > (size_t)1000000000000000000ULL)
        max = (size_t)1000000000000000000ULL;
    for (int i = 0; (max + step - 1) / step > intervals; i = (i + 1) % 3) {
        static const size_t mult[3] = { 2, 5, 10 };
        step = mult[i] * scale;
        if (i == 2)
            scale = step;
    }
    n = (max + step - 1) / step + 1;
    for (size_t i = 0; i < n; i++)
        ticks[i] = i * step;
    return n;
}

static void evictions_section(FILE *f, const struct ebb_whatif *w)
{
    const int left = 40, step = 36, top = 16, h = 160;
    size_t ncycles = w->ncounted_cycles > 1 ? w->ncounted_cycles - 1 : 0, max = 1;

    fputs("<section id=\"evictions\"><h2>Evictions per cycle and plugin</h2>", f);
    for (size_t c = 1; c <= ncycles; c++) {
        size_t sum = 0;
        for (size_t p = 0; p < w->nplugins; p++)
            sum += w->per_cycle[c * w->nplugins + p];
        if (sum > max)
            max = sum;
    }
    int wd = left + step * (int)(ncycles ? ncycles : 1) + 10, ht = top + h + 24;
    fprintf(f, "<svg class=\"chart\" id=\"chart-evictions\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
               "role=\"img\" aria-label=\"evictions per cycle and plugin\">",
            wd, ht, wd, ht);
    size_t ticks[EBB_REPORT_TICKS_MAX], nticks = ebb__report_ticks(max, ticks);
    double axis = (double)ticks[nticks - 1];
    for (size_t t = 0; t < nticks; t++) {
        double y = top + h - h * (double)ticks[t] / axis;
        fprintf(f, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
                   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%zu</text>",
                left, y, wd - 6, y, left - 4, y + 4, ticks[t]);
    }
    for (size_t c = 1; c <= ncycles; c++) {
        double y = top + h, x = left + step * (double)(c - 1) + 6;
        for (size_t p = 0; p < w->nplugins; p++) {
            size_t n = w->per_cycle[c * w->nplugins + p];
            double bh = (double)n * h / axis;
            if (n == 0)
                continue;
            y -= bh;
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"24\" height=\"%.1f\" fill=\"%s\"><title>cycle %zu, ",
                    x, y, bh, cat[p % 10], c);
            esc(f, w->plugins[p]);
            fprintf(f, ": %zu</title></rect>", n);
        }
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%zu</text>", x + 12, top + h + 14, c);
    }
    fputs("</svg><div class=\"legend\">", f);
    for (size_t p = 0; p < w->nplugins; p++) {
        size_t n = 0;
        for (size_t c = 1; c <= ncycles; c++)
            n += w->per_cycle[c * w->nplugins + p];
        fprintf(f, "<span><i style=\"background:%s\"></i>", cat[p % 10]);
        esc(f, w->plugins[p]);
        fprintf(f, " (%zu)</span>", n);
    }
    if (w->nplugins == 0)
        fputs("<span>no evictions</span>", f);
    fputs("</div></section>\n", f);
}

/* ---- moves ------------------------------------------------------------------------------ */

struct pair {
    ebb_str from, to;
    size_t n;
};

static int cmp_pair(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    int c = strcmp(x->from, y->from);
    return c ? c : strcmp(x->to, y->to);
}

static size_t node_index(const struct ebb_whatif *w, const char *name)
{
    size_t lo = 0, hi = w->nnodes;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(w->nodes[mid], name);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return SIZE_MAX;
}

static const long *net_sort;

static int cmp_net(const void *a, const void *b)
{
    long x = net_sort[*(const size_t *)a], y = net_sort[*(const size_t *)b];
    return x > y ? -1 : x < y;
}

static void net_bars(FILE *f, const struct ebb_whatif *w, const long *net, const size_t *idx, size_t n,
                     long max)
{
    const int label = 290, half = 160, row = 15;
    int ht = 8 + (int)n * row;

    fprintf(f, "<svg class=\"chart\" id=\"chart-net\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
               "aria-label=\"pods gained and lost per node\"><line class=\"axis\" x1=\"%d\" y1=\"0\" x2=\"%d\" y2=\"%d\"/>",
            label + 2 * half + 40, ht, label + 2 * half + 40, ht, label + half, label + half, ht);
    for (size_t k = 0; k < n; k++) {
        size_t i = idx[k];
        int y = 4 + (int)k * row;
        double bw = (double)labs(net[i]) * half / (double)(max ? max : 1);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", label - 6, y + 10);
        label_name(f, w->nodes[i]);
        fprintf(f, "</text><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"10\" fill=\"%s\"/>"
                   "<text x=\"%.1f\" y=\"%d\">%+ld</text>",
                net[i] >= 0 ? label + half : label + half - bw, y + 1, bw, net[i] >= 0 ? "#59a14f" : "#e15759",
                net[i] >= 0 ? label + half + bw + 4 : (double)label + half + 4, y + 10, net[i]);
    }
    fputs("</svg>", f);
}

static int moves_section(FILE *f, const struct ebb_whatif *w)
{
    struct ebb_map m;
    struct pair *pairs = NULL;
    size_t npairs = 0, back = 0, moves = 0;
    long *net = calloc(w->nnodes + 1, sizeof(*net)), max = 0;
    size_t *idx = calloc(w->nnodes + 1, sizeof(*idx)), nidx = 0;
    int rc = 0;

    if (net == NULL || idx == NULL) {
        free(net);
        free(idx);
        return EBB_ENOMEM;
    }
    ebb__map_init(&m);
    for (size_t i = 0; i < w->nplacements; i++) {
        const struct ebb_whatif_placement *p = &w->placements[i];
        size_t a, b;
        if (p->from == NULL || p->node == NULL)
            continue;
        moves++;
        back += p->from == p->node;
        if ((a = node_index(w, p->from)) != SIZE_MAX)
            net[a]--;
        if ((b = node_index(w, p->node)) != SIZE_MAX)
            net[b]++;
        uintptr_t n = (uintptr_t)ebb__map_get(&m, p->from, p->node);
        if ((rc = ebb__map_put(&m, p->from, p->node, (void *)(n + 1), NULL)) != 0)
            goto out;
    }
    if ((pairs = calloc(m.live + 1, sizeof(*pairs))) == NULL) {
        rc = EBB_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < m.cap; i++)
        if (ebb__map_live(&m, i))
            pairs[npairs++] = (struct pair){ m.s[i].a, m.s[i].b, (size_t)(uintptr_t)m.s[i].v };
    qsort(pairs, npairs, sizeof(*pairs), cmp_pair);
    fprintf(f, "<section id=\"moves\"><h2>Moves</h2><p class=\"note\">%zu replacement%s placed, %zu of them back "
               "on the node the evicted pod left.</p><div class=\"row\"><div style=\"flex:1;min-width:420px\">"
               "<table><tr><th>from</th><th>to</th><th>pods</th></tr>",
            moves, moves == 1 ? "" : "s", back);
    for (size_t i = 0; i < npairs && i < TOP_PAIRS; i++) {
        fputs("<tr><td>", f);
        esc(f, pairs[i].from);
        fputs("</td><td>", f);
        esc(f, pairs[i].to);
        fprintf(f, "</td><td class=\"n\">%zu</td></tr>", pairs[i].n);
    }
    if (npairs > TOP_PAIRS)
        fprintf(f, "<tr><td colspan=\"3\">and %zu more pairs of nodes</td></tr>", npairs - TOP_PAIRS);
    fputs("</table></div><div>", f);
    /* the nodes that gained and lost the most pods */
    for (size_t i = 0; i < w->nnodes; i++)
        if (net[i] != 0)
            idx[nidx++] = i;
    net_sort = net;
    qsort(idx, nidx, sizeof(*idx), cmp_net);
    if (nidx > 2 * TOP_NODES) {
        memmove(idx + TOP_NODES, idx + nidx - TOP_NODES, TOP_NODES * sizeof(*idx));
        nidx = 2 * TOP_NODES;
    }
    for (size_t k = 0; k < nidx; k++)
        if (labs(net[idx[k]]) > max)
            max = labs(net[idx[k]]);
    fputs("<b>pods gained and lost, per node</b>", f);
    if (nidx == 0)
        fputs("<p class=\"note\">Every node holds as many pods as before.</p>", f);
    else
        net_bars(f, w, net, idx, nidx, max);
    fputs("</div></div></section>\n", f);
out:
    ebb__map_free(&m);
    free(pairs);
    free(net);
    free(idx);
    return rc;
}

/* ---- pending and loops --------------------------------------------------------------- */

static int cmp_pending(const void *a, const void *b)
{
    const struct ebb_whatif_pending *x = *(struct ebb_whatif_pending *const *)a;
    const struct ebb_whatif_pending *y = *(struct ebb_whatif_pending *const *)b;
    return strcmp(x->message ? x->message : "", y->message ? y->message : "");
}

struct group {
    const struct ebb_whatif_pending *first;
    size_t start, n;
};

static int cmp_group(const void *a, const void *b)
{
    const struct group *x = a, *y = b;
    return x->n != y->n ? (x->n > y->n ? -1 : 1) : (x->start < y->start ? -1 : 1);
}

static int pending_section(FILE *f, const struct ebb_whatif *w)
{
    const struct ebb_whatif_pending **v = calloc(w->npending + 1, sizeof(*v));
    struct group *g = calloc(w->npending + 1, sizeof(*g));
    size_t ng = 0;

    if (v == NULL || g == NULL) {
        free(v);
        free(g);
        return EBB_ENOMEM;
    }
    for (size_t i = 0; i < w->npending; i++)
        v[i] = &w->pending[i];
    qsort(v, w->npending, sizeof(*v), cmp_pending);
    for (size_t i = 0; i < w->npending; i++) {
        if (ng > 0 && cmp_pending(&v[i], &g[ng - 1].first) == 0) {
            g[ng - 1].n++;
            continue;
        }
        g[ng++] = (struct group){ v[i], i, 1 };
    }
    qsort(g, ng, sizeof(*g), cmp_group);
    fprintf(f, "<section id=\"pending\"><h2>Pending pods</h2><p class=\"note\">%zu pod%s waiting after the last "
               "cycle, by the scheduler's message.</p>",
            w->npending, w->npending == 1 ? "" : "s");
    if (ng > 0) {
        fputs("<table><tr><th>pods</th><th>message</th><th>for example</th></tr>", f);
        for (size_t i = 0; i < ng && i < TOP_MESSAGES; i++) {
            fprintf(f, "<tr><td class=\"n\">%zu</td><td>", g[i].n);
            esc(f, g[i].first->message);
            fputs("</td><td>", f);
            for (size_t k = 0; k < g[i].n && k < 3; k++) {
                if (k)
                    fputs("<br>", f);
                fputs("<code>", f);
                esc(f, v[g[i].start + k]->pod);
                fputs("</code>", f);
            }
            fputs("</td></tr>", f);
        }
        if (ng > TOP_MESSAGES)
            fprintf(f, "<tr><td colspan=\"3\">and %zu more messages</td></tr>", ng - TOP_MESSAGES);
        fputs("</table>", f);
    }
    fputs("</section>\n", f);
    free(v);
    free(g);
    return 0;
}

static void loops_section(FILE *f, const struct ebb_whatif *w)
{
    fprintf(f, "<section id=\"loops\"><h2>Loops</h2><p class=\"note\">A workload with a pod evicted in one cycle and "
               "one of its pods evicted again by the same plugin in a later cycle: %zu.</p>",
            w->nloops);
    if (w->nloops > 0) {
        fputs("<table><tr><th>workload</th><th>plugin</th><th>cycles</th><th>nodes</th></tr>", f);
        for (size_t i = 0; i < w->nloops && i < TOP_LOOPS; i++) {
            const struct ebb_whatif_loop *l = &w->loops[i];
            fputs("<tr><td>", f);
            esc(f, l->owner);
            fputs("</td><td>", f);
            esc(f, l->plugin);
            fputs("</td><td>", f);
            for (size_t k = 0; k < l->ncycles; k++)
                fprintf(f, "%s%d", k ? ", " : "", l->cycles[k]);
            fputs("</td><td>", f);
            for (size_t k = 0; k < l->nnodes && k < 6; k++) {
                if (k)
                    fputs(", ", f);
                esc(f, l->nodes[k]);
            }
            if (l->nnodes > 6)
                fprintf(f, " and %zu more", l->nnodes - 6);
            fputs("</td></tr>", f);
        }
        if (w->nloops > TOP_LOOPS)
            fprintf(f, "<tr><td colspan=\"4\">and %zu more</td></tr>", w->nloops - TOP_LOOPS);
        fputs("</table>", f);
    }
    fputs("</section>\n", f);
}

/* LoopGuard's refusals per cycle (only when it refused any: a policy
 * without it gets the report it always had). */
static void guard_section(FILE *f, const struct ebb_whatif *w, const struct ebb_plan *plan)
{
    size_t total = 0, shown = 0;

    for (size_t i = 0; i < w->nstates; i++)
        total += w->states[i].guarded[0] + w->states[i].guarded[1] + w->states[i].guarded[2];
    if (total == 0)
        return;
    fprintf(f, "<section id=\"loopguard\"><h2>LoopGuard</h2><p class=\"note\">Evictions LoopGuard "
               "refused: %zu. <b>futile</b>: the scheduler model puts the replacement back where "
               "the plugin would evict it again; <b>cooldown</b>: the workload was evicted too "
               "recently; <b>unavailable</b>: the workload has as many pods down as it may.</p>",
            total);
    fputs("<table><tr><th>cycle</th><th>futile</th><th>cooldown</th><th>unavailable</th></tr>", f);
    for (size_t i = 0; i < w->nstates; i++) {
        const struct ebb_whatif_state *st = &w->states[i];
        if (st->cycle > 0)
            fprintf(f, "<tr><td>%d</td><td>%zu</td><td>%zu</td><td>%zu</td></tr>", st->cycle,
                    st->guarded[0], st->guarded[1], st->guarded[2]);
    }
    fputs("</table><table><tr><th>cycle</th><th>pod</th><th>refused</th><th>why</th></tr>", f);
    for (size_t i = 0; plan != NULL && i < plan->nrefusals && shown < TOP_LOOPS; i++) {
        const struct ebb_plan_refusal *r = &plan->refusals[i];
        if (strcmp(r->why, "futile") != 0 && strcmp(r->why, "cooldown") != 0 &&
            strcmp(r->why, "unavailable") != 0)
            continue;
        fprintf(f, "<tr><td>%d</td><td>", r->cycle);
        esc(f, r->pod);
        fprintf(f, "</td><td>%s</td><td>", r->why);
        esc(f, r->detail ? r->detail : "");
        fputs("</td></tr>", f);
        shown++;
    }
    if (total > shown)
        fprintf(f, "<tr><td colspan=\"4\">and %zu more</td></tr>", total - shown);
    fputs("</table></section>\n", f);
}

/* ---- the file --------------------------------------------------------------------------- */

int ebb_report_write(const struct ebb_whatif *w, const struct ebb_plan *plan,
                     const struct ebb_report_opts *o, const char *path, struct ebb_error *err)
{
    char tmp[4096];
    FILE *f;
    int rc;

    if (w == NULL || o == NULL || path == NULL || w->nstates == 0)
        return EBB_EINVAL;
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if ((f = fopen(tmp, "w")) == NULL)
        return ebb_error_set(err, EBB_EIO, path, 0, NULL, "cannot write the report: %s", strerror(errno));
    head(f, w, o);
    cards(f, w);
    if ((rc = nodes_section(f, w)) == 0 && (rc = spread_section(f, w)) == 0) {
        evictions_section(f, w);
        if ((rc = moves_section(f, w)) == 0 && (rc = pending_section(f, w)) == 0) {
            loops_section(f, w);
            guard_section(f, w, plan);
        }
    }
    fputs("<p class=\"note\">Written by ebb simulate --reschedule.</p>\n</body></html>\n", f);
    if (rc == 0 && (ferror(f) || fflush(f) != 0))
        rc = EBB_EIO;
    if (fclose(f) != 0 && rc == 0)
        rc = EBB_EIO;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = EBB_EIO;
    if (rc != 0) {
        remove(tmp);
        return ebb_error_set(err, rc, path, 0, NULL, "cannot write the report: %s",
                             rc == EBB_EIO ? strerror(errno) : ebb_strerror(rc));
    }
    return 0;
}
