/*
 * report.c - `cosched report TRACE [-o FILE.svg|FILE.html] [--summary FILE.json|FILE.csv]`:
 * a picture of a run from its trace (cosched(1) REPORT, TRACE).
 *
 * The trace (engine/trace.[ch] writes it, and reads it back for this
 * command: cs_trace_read() checks it, sorts the jobs and classifies each
 * step's states as below) holds per step its epoch, start and end, and per job
 * live in it the state the mechanism reports (run, frozen, stuck), its cpus
 * and CPU time, and what the policy said of it (plan()'s third value, e.g.
 * "characterizing"); the job events give instances, exit status and, since
 * trace version 2, each job's thread count; version 2's first line names the
 * policy, quantum and managed cpus.  The picture, left to right:
 *
 *   title, legend, epoch marks (dashed lines, numbers where there is room)
 *   one row per job:  its state step by step          | its summary beside it
 *   one row per cpu:  which job ran there (job colour)
 *   time axis (seconds since the start of the run)
 *
 * The state of a job in a step, as drawn and summed:
 *   running         ran on as many cpus as it has threads (or more)
 *   folded          ran on fewer cpus than threads (thread folding);
 *                   a trace without thread counts (version 1): on fewer cpus
 *                   than the most it ever had in the trace
 *   frozen/waiting  live, but not run in the step (frozen, or started and
 *                   waiting for its first quantum)
 *   characterizing  ran while the policy said it was being characterized
 *                   (policies that measure jobs: fop, flca and their kin with
 *                   counters; others never say so)
 *   stuck           the mechanism disagreed with the plan (cosched(1) TRACE)
 * Consecutive steps in the same state are one rectangle.  Every rectangle
 * carries data-* attributes (job, cpu, state, t0, t1, steps) for tools and
 * tests, and a <title> that a browser shows on hover.
 *
 * Throughput is completed instances (job end events with exit status 0) per
 * second of the traced run (first step's start to the last record's time):
 * under --window, the paper's measure.
 *
 * Bad input is reported by the reader as FILE:LINE: what was expected (exit
 * 2).  The SVG uses no script, font file or link: the HTML page is the same
 * SVG inline, a table and a style.
 */
#include "config.h"
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "core/log.h"
#include "core/util.h"
#include "core/json.h"
#include "engine/trace.h"

static const char *const st_name[CS_TRACE_NSTATES] = { "running", "folded", "frozen", "characterizing", "stuck" };
static const char *const st_label[CS_TRACE_NSTATES] = { "running", "folded", "frozen / waiting", "characterizing", "stuck" };
static const char *const st_color[CS_TRACE_NSTATES] = { "#2e7d32", "#1e88e5", "#c8c8c8", "#fb8c00", "#d32f2f" };
/* job colours (cpu rows), then again: none of them near a state's colour
 * (green, blue, grey, orange, red), so the two panels cannot be confused */
static const char *const job_color[] = { "#9467bd", "#17becf", "#8c564b", "#e377c2", "#bcbd22",
                                         "#393b79", "#637939", "#7b4173", "#5254a3", "#8ca252" };
#define NJOBCOLORS (int)(sizeof job_color / sizeof job_color[0])

/* ------------------------------------------------------------ writing */

/* s for XML text and attributes: escaped, invalid UTF-8 and control characters as '?' */
static void xml(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        int n = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 : (*p & 0xf8) == 0xf0 ? 4 : 0;
        int ok = n > 0 && !(n == 2 && *p < 0xc2);
        for (int i = 1; ok && i < n; i++)
            ok = (p[i] & 0xc0) == 0x80;
        if (!ok) {
            fputc('?', f);
            p++;
            continue;
        }
        if (n > 1) {
            fwrite(p, 1, (size_t)n, f);
            p += n;
            continue;
        }
        switch (*p) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*p < 0x20 ? '?' : *p, f);
        }
        p++;
    }
}

static const char *jname(const struct cs_trace_job *j, char *buf, size_t len)
{
    if (j->name)
        return j->name;
    snprintf(buf, len, "job %d", j->id);
    return buf;
}

static double duration(const struct cs_trace *m)
{
    return m->t1 > m->t0 ? m->t1 - m->t0 : 0;
}

static double throughput(const struct cs_trace *m, const struct cs_trace_job *j)
{
    return duration(m) > 0 ? j->completed / duration(m) : 0;
}

/* layout */
#define LEFT 150.0
#define PLOTW 900.0
#define ROWH 20.0
#define BARH 16.0
#define SUMW 430.0

struct geom { double top_jobs, top_cpus, axis_y, height, width; int ncpus; int *cpu; };

static double xof(const struct cs_trace *m, double t)
{
    double d = duration(m);
    return LEFT + (d > 0 ? (t - m->t0) / d * PLOTW : 0);
}

static void rect(FILE *f, const struct cs_trace *m, double t0, double t1, double y, double h, const char *fill,
                 const char *cls, int job, int cpu, const char *state, int nsteps, const char *title)
{
    double x0 = xof(m, t0), x1 = xof(m, t1);
    if (x1 - x0 < 0.5)
        x1 = x0 + 0.5;   /* a step too short to see still shows */
    fprintf(f, "<rect class=\"%s\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
               "data-job=\"%d\"", cls, x0, y, x1 - x0, h, fill, job);
    if (cpu >= 0)
        fprintf(f, " data-cpu=\"%d\"", cpu);
    fprintf(f, " data-state=\"%s\" data-t0=\"%.6f\" data-t1=\"%.6f\" data-steps=\"%d\"><title>", state, t0, t1,
            nsteps);
    xml(f, title);
    fprintf(f, "</title></rect>\n");
}

/* Job rows: consecutive steps with the job in one state, one rectangle. */
static void job_rows(FILE *f, const struct cs_trace *m, const struct geom *g)
{
    for (int r = 0; r < m->njobs; r++) {
        const struct cs_trace_job *j = &m->jobs[r];
        char nb[32];
        double y = g->top_jobs + r * ROWH;
        int open = -1, n = 0, last = -2;
        double t0 = 0, t1 = 0;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" class=\"lbl\">", LEFT - 8, y + 13);
        xml(f, jname(j, nb, sizeof nb));
        fprintf(f, "</text>\n");
        for (int i = 0; i <= m->nsteps; i++) {
            int st = -1;
            if (i < m->nsteps)
                for (int k = 0; k < m->steps[i].n; k++)
                    if (m->steps[i].jobs[k].job == j->id)
                        st = m->steps[i].jobs[k].state;
            if (open >= 0 && (st != open || last != i - 1)) {
                char title[512];
                snprintf(title, sizeof title, "%s (job %d): %s, %.3f-%.3f s, %d step%s", jname(j, nb, sizeof nb),
                         j->id, st_label[open], t0, t1, n, n == 1 ? "" : "s");
                rect(f, m, t0, t1, y + (ROWH - BARH) / 2, BARH, st_color[open], "js", j->id, -1, st_name[open], n,
                     title);
                open = -1;
            }
            if (st < 0)
                continue;
            if (open < 0) {
                open = st;
                t0 = m->steps[i].start;
                n = 0;
            }
            t1 = m->steps[i].end;
            n++;
            last = i;
        }
    }
}

static double luminance(const char *hex);

/* What ran on cpu c in step i: the running jobs on it, as "id:state,..." */
static void cell(const struct cs_trace *m, int i, int c, char *sig, size_t len, int *ids, int *states, int *n)
{
    size_t k = 0;
    *n = 0;
    sig[0] = 0;
    if (i >= m->nsteps)
        return;
    const struct cs_trace_step *s = &m->steps[i];
    for (int x = 0; x < s->n; x++) {
        const struct cs_trace_sj *e = &s->jobs[x];
        if (e->state == CS_TRACE_FROZEN || e->state == CS_TRACE_STUCK || !hwloc_bitmap_isset(e->cpus, (unsigned)c))
            continue;
        if (*n < 64) {
            ids[*n] = e->job;
            states[*n] = e->state;
            (*n)++;
        }
        if (k < len)
            k += (size_t)snprintf(sig + k, len - k, "%d:%d,", e->job, e->state);
    }
}

/* Cpu rows: per cpu, the jobs running there (job colour); a cpu several
 * jobs share in a step (the linux policy) is split between them. */
/* Over cpu c's row (top y): per step, the share of the step the cpu sat idle
 * (cpu_idle), hatched from the bottom up over the bar but its top 4 px, which
 * keep the colour of the job whose cpu it was; shares under 5 % are not drawn. */
static void idle_marks(FILE *f, const struct cs_trace *m, int c, double y)
{
    for (int i = 0; i < m->nsteps; i++) {
        const struct cs_trace_step *s = &m->steps[i];
        for (int k = 0; k < s->nidle; k++) {
            if (s->idle[k].cpu != c || s->idle[k].share < 0.05)
                continue;
            double h = (BARH - 4) * s->idle[k].share, x0 = xof(m, s->start), x1 = fmax(xof(m, s->end), x0 + 0.5);
            fprintf(f, "<rect class=\"ci\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                       "fill=\"url(#idle)\" data-cpu=\"%d\" data-step=\"%llu\" data-idle=\"%.3f\"><title>cpu %d: "
                       "idle %.0f %% of step %llu (%.3f-%.3f s)</title></rect>\n",
                    x0, y + (ROWH - BARH) / 2 + BARH - h, x1 - x0, h, c, s->seq, s->idle[k].share, c,
                    100 * s->idle[k].share, s->seq, s->start, s->end);
        }
    }
}

static void cpu_rows(FILE *f, const struct cs_trace *m, const struct geom *g)
{
    for (int r = 0; r < g->ncpus; r++) {
        int c = g->cpu[r];
        double y = g->top_cpus + r * ROWH;
        char open[512] = "", sig[512];
        int ids[64], states[64], n = 0, oids[64], ostates[64], on = 0, nsteps = 0;
        double t0 = 0, t1 = 0;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" class=\"lbl\">cpu %d</text>\n", LEFT - 8, y + 13,
                c);
        for (int i = 0; i <= m->nsteps; i++) {
            cell(m, i, c, sig, sizeof sig, ids, states, &n);
            if (on > 0 && strcmp(sig, open) != 0) {
                for (int k = 0; k < on; k++) {
                    int ji = cs_trace_job_index(m, oids[k]);
                    char nb[32], title[512];
                    snprintf(title, sizeof title, "cpu %d: %s (job %d), %s, %.3f-%.3f s, %d step%s", c,
                             jname(&m->jobs[ji], nb, sizeof nb), oids[k], st_label[ostates[k]], t0, t1, nsteps,
                             nsteps == 1 ? "" : "s");
                    const char *col = job_color[ji % NJOBCOLORS];
                    double ry = y + (ROWH - BARH) / 2 + k * BARH / on;
                    rect(f, m, t0, t1, ry, BARH / on, col, "cs", oids[k], c, st_name[ostates[k]], nsteps, title);
                    /* the job's name inside, where it fits (below the rectangle's top 4 px,
                     * which stay the plain colour) */
                    const char *name = jname(&m->jobs[ji], nb, sizeof nb);
                    if (on == 1 && xof(m, t1) - xof(m, t0) >= 6.5 * strlen(name) + 8) {
                        fprintf(f, "<text class=\"in\" x=\"%.2f\" y=\"%.1f\" fill=\"%s\">", xof(m, t0) + 4,
                                ry + 13, luminance(col) > 0.5 ? "#111111" : "#ffffff");
                        xml(f, name);
                        fprintf(f, "</text>\n");
                    }
                }
                on = 0;
            }
            if (n == 0) {
                open[0] = 0;
                continue;
            }
            if (on == 0) {
                memcpy(oids, ids, sizeof ids);
                memcpy(ostates, states, sizeof states);
                on = n;
                snprintf(open, sizeof open, "%s", sig);
                t0 = m->steps[i].start;
                nsteps = 0;
            }
            t1 = m->steps[i].end;
            nsteps++;
        }
        idle_marks(f, m, c, y);
    }
}

/* relative luminance of #rrggbb, 0..1 (for the label colour) */
static double luminance(const char *hex)
{
    unsigned r = 0, g = 0, b = 0;
    sscanf(hex, "#%2x%2x%2x", &r, &g, &b);
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}

static double nice_step(double range, int want)
{
    double raw = range / want, p = pow(10, floor(log10(raw)));
    double r = raw / p;
    return (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * p;
}

static void geom_make(const struct cs_trace *m, struct geom *g)
{
    g->ncpus = hwloc_bitmap_weight(m->cpus);
    g->cpu = calloc((size_t)g->ncpus + 1, sizeof *g->cpu);
    int c, k = 0;
    hwloc_bitmap_foreach_begin(c, m->cpus) g->cpu[k++] = c;
    hwloc_bitmap_foreach_end();
    g->top_jobs = 96;
    g->top_cpus = g->top_jobs + m->njobs * ROWH + 30;
    g->axis_y = g->top_cpus + g->ncpus * ROWH + 6;
    g->height = g->axis_y + 46;
    g->width = LEFT + PLOTW + 36 + SUMW;
}

static void svg(FILE *f, const struct cs_trace *m, int standalone)
{
    struct geom g;
    geom_make(m, &g);

    if (standalone)
        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n", g.width, g.height, g.width, g.height);
    fprintf(f, "<style>.lbl{fill:#222}.hd{font-weight:bold;fill:#222}.ax{stroke:#444}.ep{stroke:#888;"
               "stroke-dasharray:3,3}.sm{fill:#222;font-family:monospace;white-space:pre}.in{font-size:10px}</style>\n");
    fprintf(f, "<defs><pattern id=\"idle\" width=\"5\" height=\"5\" patternUnits=\"userSpaceOnUse\" "
               "patternTransform=\"rotate(45)\"><rect width=\"5\" height=\"5\" fill=\"#ffffff\"/><line x1=\"0\" "
               "y1=\"0\" x2=\"0\" y2=\"5\" stroke=\"#666666\" stroke-width=\"2\"/></pattern></defs>\n");
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n", g.width, g.height);
    /* title and legend */
    fprintf(f, "<text x=\"10\" y=\"20\" class=\"hd\" font-size=\"14\">cosched report: ");
    xml(f, m->file);
    fprintf(f, "</text>\n<text x=\"10\" y=\"38\" class=\"lbl\">policy ");
    xml(f, m->policy ? m->policy : "(not in the trace)");
    if (m->quantum > 0)
        fprintf(f, ", quantum %g s", m->quantum);
    fprintf(f, ", %d cpu%s, %d job%s, %.2f s, %llu epoch%s, %d step%s", g.ncpus, g.ncpus == 1 ? "" : "s", m->njobs,
            m->njobs == 1 ? "" : "s", duration(m), m->nepochs, m->nepochs == 1 ? "" : "s", m->nsteps,
            m->nsteps == 1 ? "" : "s");
    if (m->nfallback)
        fprintf(f, ", %d fallback step%s (red marks)", m->nfallback, m->nfallback == 1 ? "" : "s");
    if (m->idle_steps)
        fprintf(f, ", idle while a job was frozen %.2f CPU-s (%.2f given to nobody, %.2f of running jobs)",
                m->idle_nobody + m->idle_held, m->idle_nobody, m->idle_held);
    fprintf(f, "</text>\n");
    double lx = 10;
    for (int s = 0; s < CS_TRACE_NSTATES; s++) {
        fprintf(f, "<rect class=\"legend\" x=\"%.1f\" y=\"48\" width=\"14\" height=\"14\" fill=\"%s\" "
                   "data-state=\"%s\"/><text x=\"%.1f\" y=\"59\" class=\"lbl\">%s</text>\n",
                lx, st_color[s], st_name[s], lx + 18, st_label[s]);
        lx += 18 + 7.5 * strlen(st_label[s]) + 16;
    }
    fprintf(f, "<rect class=\"legend\" x=\"%.1f\" y=\"48\" width=\"14\" height=\"14\" fill=\"url(#idle)\" "
               "stroke=\"#999999\" data-state=\"idle\"/><text x=\"%.1f\" y=\"59\" class=\"lbl\">idle cpu</text>\n",
            lx, lx + 18);
    lx += 18 + 7.5 * strlen("idle cpu") + 16;
    fprintf(f, "<text x=\"%.1f\" y=\"59\" class=\"lbl\">cpu rows: the colour of the job running there, hatched "
               "by the share of the step the cpu sat idle</text>\n", lx);
    /* epochs: a dashed line where one starts, its number where there is room */
    double lastlabel = -1e9;
    unsigned long long ep = ~0ULL;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" class=\"lbl\">epoch</text>\n", LEFT - 8,
            g.top_jobs - 10);
    for (int i = 0; i < m->nsteps; i++) {
        const struct cs_trace_step *s = &m->steps[i];
        double x = xof(m, s->start);
        if (s->fallback)
            fprintf(f, "<rect class=\"fallback\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"4\" fill=\"#d32f2f\">"
                       "<title>step %llu: the policy failed, every job ran everywhere</title></rect>\n",
                    x, g.top_jobs - 6, fmax(xof(m, s->end) - x, 1), s->seq);
        if (s->epoch == ep)
            continue;
        ep = s->epoch;
        fprintf(f, "<line class=\"ep\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" data-epoch=\"%llu\"/>\n", x,
                g.top_jobs - 8, x, g.axis_y, ep);
        if (x - lastlabel >= 28) {
            fprintf(f, "<text x=\"%.2f\" y=\"%.1f\" class=\"lbl\" font-size=\"10\">%llu</text>\n", x + 2,
                    g.top_jobs - 10, ep);
            lastlabel = x;
        }
    }
    fprintf(f, "<g class=\"jobs\">\n");
    job_rows(f, m, &g);
    fprintf(f, "</g>\n<text x=\"%.1f\" y=\"%.1f\" class=\"hd\">cpus</text>\n<g class=\"cpus\">\n", 10.0,
            g.top_cpus - 8);
    cpu_rows(f, m, &g);
    fprintf(f, "</g>\n");
    /* time axis */
    fprintf(f, "<line class=\"ax\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", LEFT, g.axis_y,
            LEFT + PLOTW, g.axis_y);
    double d = duration(m);
    if (d > 0) {
        double st = nice_step(d, 10);
        for (long k = (long)ceil(m->t0 / st - 1e-9); k * st <= m->t1 + st * 1e-9; k++) {
            double x = xof(m, k * st);
            fprintf(f, "<line class=\"ax\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\"/><text x=\"%.2f\" "
                       "y=\"%.1f\" text-anchor=\"middle\" class=\"lbl\">%g</text>\n",
                    x, g.axis_y, x, g.axis_y + 5, x, g.axis_y + 18, k * st);
        }
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" class=\"lbl\">time since the start of the run "
               "(s)</text>\n", LEFT + PLOTW / 2, g.axis_y + 36);
    /* per-job summary beside the job rows */
    double sx = LEFT + PLOTW + 36;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"sm\" xml:space=\"preserve\" font-weight=\"bold\">%4s %8s %7s  "
               "%s</text>\n", sx, g.top_jobs - 10, "done", "runs/s", "CPU s", "run/fold/froz/char %");
    for (int r = 0; r < m->njobs; r++) {
        const struct cs_trace_job *j = &m->jobs[r];
        double live = 0;
        for (int s = 0; s < CS_TRACE_NSTATES; s++)
            live += j->sec[s];
        fprintf(f, "<text class=\"sm\" xml:space=\"preserve\" x=\"%.1f\" y=\"%.1f\" data-job=\"%d\">%4d %8.3f %7.1f  "
                   "%3.0f/%3.0f/%3.0f/%3.0f</text>\n",
                sx, g.top_jobs + r * ROWH + 13, j->id, j->completed, throughput(m, j), j->cpu_s,
                live > 0 ? 100 * j->sec[CS_TRACE_RUN] / live : 0, live > 0 ? 100 * j->sec[CS_TRACE_FOLDED] / live : 0,
                live > 0 ? 100 * j->sec[CS_TRACE_FROZEN] / live : 0, live > 0 ? 100 * j->sec[CS_TRACE_CHAR] / live : 0);
    }
    fprintf(f, "</svg>\n");
    free(g.cpu);
}

static void html(FILE *f, const struct cs_trace *m)
{
    char nb[32];
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>cosched report: ");
    xml(f, m->file);
    /* the picture fits the window (scaled down, never up): a page wider
     * than the window would hide the per-job columns at its right; the
     * table scrolls on its own */
    fprintf(f, "</title>\n<style>body{font-family:sans-serif;margin:16px;color:#222}"
               "svg{display:block;max-width:100%%;height:auto}div.t{overflow-x:auto}"
               "table{border-collapse:collapse;margin-top:12px}td,th{border:1px solid #ccc;padding:3px 8px;"
               "text-align:right}td.n,th.n{text-align:left}</style>\n</head>\n<body>\n");
    svg(f, m, 0);
    fprintf(f, "<div class=\"t\"><table>\n<tr><th>id</th><th class=\"n\">job</th><th>threads</th><th>instances</th>"
               "<th>completed</th><th>runs/s</th><th>CPU s</th>");
    for (int s = 0; s < CS_TRACE_NSTATES; s++)
        fprintf(f, "<th>%s s</th>", st_name[s]);
    fprintf(f, "<th>characterized</th></tr>\n");
    for (int r = 0; r < m->njobs; r++) {
        const struct cs_trace_job *j = &m->jobs[r];
        fprintf(f, "<tr><td>%d</td><td class=\"n\">", j->id);
        xml(f, jname(j, nb, sizeof nb));
        fprintf(f, "</td><td>%s%d</td><td>%d</td><td>%d</td><td>%.4f</td><td>%.2f</td>", j->threads ? "" : "&#8805;",
                j->threads ? j->threads : j->maxcpus, j->instances, j->completed, throughput(m, j), j->cpu_s);
        for (int s = 0; s < CS_TRACE_NSTATES; s++)
            fprintf(f, "<td>%.2f</td>", j->sec[s]);
        fprintf(f, "<td>%d</td></tr>\n", j->characterized);
    }
    fprintf(f, "</table></div>\n<p>Throughput: completed instances per second of the traced run (%.2f s). ",
            duration(m));
    if (m->idle_steps)
        fprintf(f, "Idle while a job was frozen: <span class=\"idle\">%.2f</span> CPU-s, %.2f on cpus given to "
                   "nobody, %.2f on cpus of running jobs that left them idle. ",
                m->idle_nobody + m->idle_held, m->idle_nobody, m->idle_held);
    fprintf(f, "Made by cosched %s.</p>\n</body>\n</html>\n", PACKAGE_VERSION);
}

static void json_summary(FILE *f, const struct cs_trace *m)
{
    char nb[32];
    char *c = cs_bitmap_list(m->cpus);
    json_t *jobs = json_array();
    for (int r = 0; r < m->njobs; r++) {
        const struct cs_trace_job *j = &m->jobs[r];
        json_t *sec = json_object(), *steps = json_object();
        for (int s = 0; s < CS_TRACE_NSTATES; s++) {
            json_object_set_new(sec, st_name[s], cs_json_fixed(j->sec[s], 6));
            json_object_set_new(steps, st_name[s], json_integer(j->steps[s]));
        }
        json_array_append_new(jobs, json_pack("{s:i, s:o, s:o, s:i, s:i, s:i, s:o, s:o, s:i, s:o, s:o}", "id",
                                              j->id, "name", cs_json_text(jname(j, nb, sizeof nb)), "threads",
                                              j->threads ? json_integer(j->threads) : json_null(), "instances",
                                              j->instances, "completed", j->completed, "not_completed",
                                              j->other_ends, "throughput", cs_json_sig(throughput(m, j), 6), "cpu_s",
                                              cs_json_fixed(j->cpu_s, 6), "characterized", j->characterized,
                                              "seconds", sec, "steps", steps));
    }
    json_t *idle = m->idle_steps ? json_pack("{s:o, s:o, s:i}", "nobody", cs_json_fixed(m->idle_nobody, 6), "held",
                                             cs_json_fixed(m->idle_held, 6), "steps", m->idle_steps)
                                 : json_null();
    cs_json_put(f,
                json_pack("{s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:i, s:I, s:i, s:o, s:o}", "trace",
                          cs_json_text(m->file), "policy", cs_json_text(m->policy), "quantum",
                          m->quantum > 0 ? cs_json_sig(m->quantum, 6) : json_null(), "cpus", c, "start",
                          cs_json_fixed(m->t0, 6), "end", cs_json_fixed(m->t1, 6), "duration",
                          cs_json_fixed(duration(m), 6), "steps", m->nsteps, "epochs", (json_int_t)m->nepochs,
                          "fallback_steps", m->nfallback, "idle_frozen", idle, "jobs", jobs),
                0);
    free(c);
}

static void csv_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_summary(FILE *f, const struct cs_trace *m)
{
    char nb[32];
    fprintf(f, "id,name,threads,instances,completed,not_completed,throughput_per_s,cpu_s,characterized");
    for (int s = 0; s < CS_TRACE_NSTATES; s++)
        fprintf(f, ",%s_s", st_name[s]);
    for (int s = 0; s < CS_TRACE_NSTATES; s++)
        fprintf(f, ",%s_steps", st_name[s]);
    /* the run's idle-while-frozen totals, the same on every row (empty: not in the trace) */
    fprintf(f, ",run_idle_frozen_nobody_s,run_idle_frozen_held_s\n");
    for (int r = 0; r < m->njobs; r++) {
        const struct cs_trace_job *j = &m->jobs[r];
        fprintf(f, "%d,", j->id);
        csv_str(f, jname(j, nb, sizeof nb));
        j->threads ? fprintf(f, ",%d", j->threads) : fprintf(f, ",");
        fprintf(f, ",%d,%d,%d,%.6g,%.6f,%d", j->instances, j->completed, j->other_ends, throughput(m, j), j->cpu_s,
                j->characterized);
        for (int s = 0; s < CS_TRACE_NSTATES; s++)
            fprintf(f, ",%.6f", j->sec[s]);
        for (int s = 0; s < CS_TRACE_NSTATES; s++)
            fprintf(f, ",%d", j->steps[s]);
        if (m->idle_steps)
            fprintf(f, ",%.6f,%.6f\n", m->idle_nobody, m->idle_held);
        else
            fprintf(f, ",,\n");
    }
}

static void text_summary(FILE *f, const struct cs_trace *m)
{
    char nb[32];
    fprintf(f, "%s: policy %s, %.2f s, %llu epochs, %d steps%s\n", m->file, m->policy ? m->policy : "?",
            duration(m), m->nepochs, m->nsteps, m->nfallback ? " (some fallback)" : "");
    if (m->idle_steps)
        fprintf(f, "idle while a job was frozen: %.2f CPU-s (%.2f on cpus given to nobody, %.2f on cpus of a "
                   "running job)%s\n", m->idle_nobody + m->idle_held, m->idle_nobody, m->idle_held,
                m->idle_steps < m->nsteps ? ", in the steps that say it" : "");
    else
        fprintf(f, "idle while a job was frozen: not in the trace\n");
    fprintf(f, "%4s %-16s %7s %9s %8s %8s %8s %8s %8s %8s\n", "id", "job", "done", "runs/s", "CPU s", "running",
            "folded", "frozen", "charact.", "stuck");
    for (int r = 0; r < m->njobs; r++) {
        const struct cs_trace_job *j = &m->jobs[r];
        fprintf(f, "%4d %-16.16s %7d %9.4f %8.2f", j->id, jname(j, nb, sizeof nb), j->completed, throughput(m, j),
                j->cpu_s);
        for (int s = 0; s < CS_TRACE_NSTATES; s++)
            fprintf(f, " %7.2fs", j->sec[s]);
        fprintf(f, "\n");
    }
}

/* ------------------------------------------------------------ command */

static const char *suffix(const char *path)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    return dot && (!slash || dot > slash) ? dot + 1 : "";
}

static int write_out(const char *path, const struct cs_trace *m, void (*fn)(FILE *, const struct cs_trace *))
{
    FILE *f = cs_fopen_write(path);
    if (!f) {
        cs_err("report: cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    fn(f, m);
    if (ferror(f) | (fclose(f) != 0)) {
        cs_err("report: writing %s failed: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static void svg_file(FILE *f, const struct cs_trace *m)
{
    svg(f, m, 1);
}

enum { R_OUT = 256, R_SUMMARY, R_HELP };
static const struct cs_opt report_opts[] = {
    { 'o', "output", 1, R_OUT, "FILE", "the picture: FILE.svg (SVG) or FILE.html (a page with the SVG inline)" },
    { 0, "summary", 1, R_SUMMARY, "FILE", "the per-job summary: FILE.json or FILE.csv" },
    { 'h', "help", 0, R_HELP, NULL, "this text" },
    { 0 },
};

static void report_help(void)
{
    printf("usage: cosched report TRACE [-o FILE.svg|FILE.html] [--summary FILE.json|FILE.csv]\n\n"
           "A timeline of a run from its trace (cosched run --trace): jobs and cpus by time, coloured by state\n"
           "(running, folded, frozen/waiting, characterizing, stuck), epochs marked, per-job throughput beside it.\n"
           "Without -o or --summary the per-job summary is printed as text.\n\noptions:\n");
    cs_opt_help(stdout, report_opts, NULL);
    printf("\nSee cosched(1) REPORT.\n");
}

int cs_cmd_report(int argc, char **argv)
{
    const char *out = NULL, *sum = NULL;
    int c;
    struct cs_getopt g;

    cs_opt_start(&g, report_opts, 0);       /* options may follow TRACE */
    while ((c = cs_opt_next(&g, argc, argv)) != -1) {
        switch (c) {
        case R_OUT: out = optarg; break;
        case R_SUMMARY: sum = optarg; break;
        case R_HELP: report_help(); cs_opt_end(&g); return 0;
        case ':':
        default:
            cs_opt_refuse(&g, c, "report", "report");
            cs_opt_end(&g);
            return 2;
        }
    }
    cs_opt_end(&g);
    if (optind >= argc) {
        cs_err("report: which trace? usage: cosched report TRACE [-o FILE.svg|FILE.html] [--summary FILE.json|FILE.csv]");
        return 2;
    }
    if (argc - optind > 1) {
        cs_err("report: one trace at a time (got '%s' and '%s')", argv[optind], argv[optind + 1]);
        return 2;
    }
    if (out && strcmp(suffix(out), "svg") && strcmp(suffix(out), "html")) {
        cs_err("report: -o %s: unknown format '%s' (expected FILE.svg or FILE.html)", out, suffix(out));
        return 2;
    }
    if (sum && strcmp(suffix(sum), "json") && strcmp(suffix(sum), "csv")) {
        cs_err("report: --summary %s: unknown format '%s' (expected FILE.json or FILE.csv)", sum, suffix(sum));
        return 2;
    }
    struct cs_trace m;
    int status = 2;
    if (cs_trace_read(&m, argv[optind], "report") < 0)
        goto done;
    status = 0;
    if (out && write_out(out, &m, !strcmp(suffix(out), "svg") ? svg_file : html) < 0)
        status = 1;
    if (sum && write_out(sum, &m, !strcmp(suffix(sum), "json") ? json_summary : csv_summary) < 0)
        status = 1;
    if (!out && !sum)
        text_summary(stdout, &m);
done:
    cs_trace_free(&m);
    return status;
}
