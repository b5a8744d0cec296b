/*
 * bound.c - `cosched simulate --bound` (the configurations, the columns of
 * the linear programs, the optimum's schedule) and `--calibrate` (the
 * model's tables), from the model's steady rates.  sim/bound.h says what
 * they compute; lp.c solves the programs.
 */
#include "config.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim/bound.h"
#include "core/log.h"
#include "core/util.h"

const char *const cs_sim_lp_name[3] = { "total", "fair", "maxmin" };

/* The first (half 0) or second (half 1) half of the managed cores, in topology order. */
static hwloc_bitmap_t half_cpus(const struct cs_sim_bench *su, int half)
{
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    int nc = 0, k = 0;
    for (int c = 0; c < su->topo->ncores; c++)
        nc += hwloc_bitmap_intersects(su->topo->cores[c].pus, su->managed);
    for (int c = 0; c < su->topo->ncores; c++) {
        if (!hwloc_bitmap_intersects(su->topo->cores[c].pus, su->managed))
            continue;
        if ((k < (nc + 1) / 2) == (half == 0))
            hwloc_bitmap_or(b, b, su->topo->cores[c].pus);
        k++;
    }
    hwloc_bitmap_and(b, b, su->managed);
    return b;
}

struct columns {
    int n, ncols;
    double *r;                   /* [c * n + j] normalised */
    char **desc;
};

static void add_column(struct columns *cl, const double *r, char *desc)
{
    cl->r = realloc(cl->r, (size_t)(cl->ncols + 1) * cl->n * sizeof *cl->r);
    cl->desc = realloc(cl->desc, (cl->ncols + 1) * sizeof *cl->desc);
    memcpy(cl->r + (size_t)cl->ncols * cl->n, r, cl->n * sizeof *r);
    cl->desc[cl->ncols++] = desc;
}

/* A configuration of m jobs (0-based idx[], on cpus[]) at the model's steady rates. */
static void steady_column(struct columns *cl, struct cs_sim *s, struct cs_job **jobs, const double *standalone,
                          const int *idx, hwloc_const_bitmap_t const *cpus, int m)
{
    int ids[m];
    double rates[m], r[cl->n];
    size_t len = 0;
    char *desc = NULL;
    FILE *df = open_memstream(&desc, &len);

    memset(r, 0, sizeof r);
    for (int k = 0; k < m; k++)
        ids[k] = idx[k] + 1;
    cs_sim_steady(s, ids, cpus, m, rates);
    for (int k = 0; k < m; k++) {
        char *list = NULL;
        r[idx[k]] = rates[k] / standalone[idx[k]];
        hwloc_bitmap_list_asprintf(&list, cpus[k]);
        fprintf(df, "%s%s@%s", k ? " + " : "", jobs[idx[k]]->name, list ? list : "?");
        free(list);
    }
    fclose(df);
    add_column(cl, r, desc);
}

struct xsort { double x; int c; };

static int cmp_x(const void *a, const void *b)
{
    const struct xsort *p = a, *q = b;
    return p->x < q->x ? 1 : p->x > q->x ? -1 : p->c - q->c;
}

/* "FRACTION [CONFIG]; ..." of the configurations the optimum uses, largest first. */
static char *schedule_text(const struct columns *cl, const double *x)
{
    struct xsort *xs = calloc(cl->ncols ? cl->ncols : 1, sizeof *xs);
    int m = 0;
    size_t len = 0;
    char *text = NULL;
    FILE *f = open_memstream(&text, &len);

    for (int c = 0; c < cl->ncols; c++)
        if (x[c] > 1e-7)
            xs[m++] = (struct xsort){ x[c], c };
    qsort(xs, m, sizeof *xs, cmp_x);
    for (int k = 0; k < m && k < 16; k++)
        fprintf(f, "%s%.4f [%s]", k ? "; " : "", xs[k].x, *cl->desc[xs[k].c] ? cl->desc[xs[k].c] : "idle");
    if (m > 16)
        fprintf(f, "; and %d more", m - 16);
    fclose(f);
    free(xs);
    return text;
}

int cs_sim_bound(const struct cs_sim_bench *su, const struct cs_sim_run *res, int npols, struct cs_sim_bound *bd)
{
    int n = su->n;
    struct cs_job **jobs = su->make_jobs(su->arg);
    struct cs_sim *s = cs_sim_new(su->node, su->apps, su->model, su->seed, 0, su->topo);
    hwloc_bitmap_t h[2] = { half_cpus(su, 0), half_cpus(su, 1) };
    struct columns cl = { .n = n };
    double *x = NULL;
    char **keys = NULL;
    int nkeys = 0, rc = -1;

    for (int i = 0; i < n; i++)
        if (cs_sim_add_job(s, jobs[i], su->w[i].app, su->w[i].home) < 0)
            goto out;
    bd->n = n;
    bd->floor = 1.0 / n;
    bd->standalone = calloc(n > 0 ? (size_t)n : 1, sizeof *bd->standalone);
    for (int i = 0; i < n; i++) {
        int id = i + 1;
        hwloc_const_bitmap_t c[1] = { su->managed };
        cs_sim_steady(s, &id, c, 1, &bd->standalone[i]);
        if (bd->standalone[i] <= 0) {
            cs_err("bound: job %d (%s) makes no progress alone on the node", id, su->w[i].app->name);
            goto out;
        }
    }
    for (int i = 0; i < n; i++) {
        hwloc_const_bitmap_t c[3] = { su->managed, h[0], h[1] };
        for (int v = 0; v < 3; v++)
            steady_column(&cl, s, jobs, bd->standalone, &i, &c[v], 1);
    }
    for (int i = 0; i < n; i++)
        for (int k = i + 1; k < n; k++) {
            int idx[2] = { i, k };
            hwloc_const_bitmap_t folded[2] = { h[0], h[1] }, swapped[2] = { h[1], h[0] },
                                 shared[2] = { su->managed, su->managed };
            steady_column(&cl, s, jobs, bd->standalone, idx, folded, 2);
            steady_column(&cl, s, jobs, bd->standalone, idx, swapped, 2);
            steady_column(&cl, s, jobs, bd->standalone, idx, shared, 2);
        }
    if (n > 2) {
        int idx[n];
        hwloc_const_bitmap_t all[n];
        for (int i = 0; i < n; i++)
            idx[i] = i, all[i] = su->managed;
        steady_column(&cl, s, jobs, bd->standalone, idx, all, n);
    }
    /* every distinct configuration a policy went through, at the rates it had */
    for (int p = 0; p < npols; p++)
        for (int c = 0; c < res[p].ncfgs; c++) {
            const struct cs_sim_config *cf = &res[p].cfgs[c];
            int seen = 0;
            for (int k = 0; k < nkeys && !seen; k++)
                seen = strcmp(keys[k], cf->key) == 0;
            if (seen)
                continue;
            keys = realloc(keys, (nkeys + 1) * sizeof *keys);
            keys[nkeys++] = cf->key;
            double r[n];
            for (int j = 0; j < n; j++)
                r[j] = cf->runs[j] / bd->standalone[j];
            add_column(&cl, r, cs_strdup_printf("%s%s(%s)", cf->desc, *cf->desc ? " " : "", res[p].policy));
            bd->nrecorded++;
        }
    bd->ncols = cl.ncols;
    x = calloc(cl.ncols, sizeof *x);
    for (int k = 0; k < 3; k++) {
        double fl[n];
        for (int j = 0; j < n; j++)
            fl[j] = bd->floor;
        bd->lp[k].y = calloc(n, sizeof *bd->lp[k].y);
        if (cs_lp_bound((enum cs_lp_kind)k, n, cl.ncols, cl.r, fl, &bd->lp[k].value, x, bd->lp[k].y) < 0)
            goto out;
        bd->lp[k].sum = 0;
        for (int j = 0; j < n; j++)
            bd->lp[k].sum += bd->lp[k].y[j];
        bd->lp[k].schedule = schedule_text(&cl, x);
    }
    rc = 0;
out:
    free(x);
    free(keys);
    free(cl.r);
    for (int c = 0; c < cl.ncols; c++)
        free(cl.desc[c]);
    free(cl.desc);
    hwloc_bitmap_free(h[0]);
    hwloc_bitmap_free(h[1]);
    cs_sim_free(s);
    cs_jobs_free(jobs, n);
    return rc;
}

double cs_sim_recorded_total(const struct cs_sim_run *r, const struct cs_sim_bound *bd)
{
    double t = 0;
    if (r->virtual_s <= 0)
        return 0;
    for (int c = 0; c < r->ncfgs; c++)
        for (int j = 0; j < bd->n; j++)
            t += r->cfgs[c].seconds * r->cfgs[c].runs[j] / bd->standalone[j];
    return t / r->virtual_s;
}

/* ---------------------------------------------------------------- calibration */

int cs_sim_calibrate(const struct cs_sim_bench *su)
{
    int n = su->n;
    struct cs_job **jobs = su->make_jobs(su->arg);
    struct cs_sim *s = cs_sim_new(su->node, su->apps, su->model, su->seed, 0, su->topo);
    hwloc_bitmap_t h0 = half_cpus(su, 0), h1 = half_cpus(su, 1);
    double *full = calloc(n > 0 ? (size_t)n : 1, sizeof *full), *half = calloc(n > 0 ? (size_t)n : 1, sizeof *half);
    double sum[3][3] = { { 0 } }, cnt[3][3] = { { 0 } };
    /* per app: mean throughput / gang's over its co-runners, [TFT, linux] */
    double *asum = calloc(n > 0 ? 2 * (size_t)n : 1, sizeof *asum), *acnt = calloc(n > 0 ? (size_t)n : 1, sizeof *acnt);
    /* per class of the suffering app: [TFT, linux] sum, min, max, and the count */
    double gsum[3][2] = { { 0 } }, gmin[3][2], gmax[3][2] = { { 0 } }, gcnt[3] = { 0 };
    const char *cls = "SCN";
    int rc = -1;

    for (int i = 0; i < n; i++)
        if (cs_sim_add_job(s, jobs[i], su->w[i].app, su->w[i].home) < 0)
            goto out;
    for (int i = 0; i < n; i++) {
        int id = i + 1;
        hwloc_const_bitmap_t c[1] = { su->managed };
        cs_sim_steady(s, &id, c, 1, &full[i]);
        c[0] = h0;
        cs_sim_steady(s, &id, c, 1, &half[i]);
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++) {
            if (i == k || !su->w[i].app->cls || !su->w[k].app->cls)
                continue;
            int ids[2] = { i + 1, k + 1 };
            hwloc_const_bitmap_t c[2] = { h0, h1 };
            double r[2];
            cs_sim_steady(s, ids, c, 2, r);
            int a = (int)(strchr(cls, su->w[i].app->cls) - cls), b = (int)(strchr(cls, su->w[k].app->cls) - cls);
            sum[a][b] += r[0] > 0 ? half[i] / r[0] : 0;
            cnt[a][b]++;
            /* gang gives each of the pair half the time alone on all cores */
            double g[2] = { r[0] / (full[i] / 2), 0 };
            hwloc_const_bitmap_t all[2] = { su->managed, su->managed };
            cs_sim_steady(s, ids, all, 2, r);
            g[1] = r[0] / (full[i] / 2);
            for (int m = 0; m < 2; m++) {
                gsum[a][m] += g[m];
                if (!gcnt[a] || g[m] < gmin[a][m])
                    gmin[a][m] = g[m];
                if (g[m] > gmax[a][m])
                    gmax[a][m] = g[m];
                asum[i * 2 + m] += g[m];
            }
            gcnt[a]++;
            acnt[i]++;
        }
    printf("%-12s %5s %9s %9s %7s %9s %9s\n", "app", "class", "alone/s", "folded/s", "fold", "TFT/gang",
           "linux/gang");
    for (int i = 0; i < n; i++)
        printf("%-12s %5c %9.4f %9.4f %7.3f %9.3f %9.3f\n", jobs[i]->name,
               su->w[i].app->cls ? su->w[i].app->cls : '-', full[i], half[i], full[i] > 0 ? half[i] / full[i] : 0,
               acnt[i] ? asum[i * 2] / acnt[i] : NAN, acnt[i] ? asum[i * 2 + 1] / acnt[i] : NAN);
    printf("\nmean slowdown beside a co-runner, both folded (TFT); row suffers, column imposes\n%8s", "");
    for (int b = 0; b < 3; b++)
        printf(" %7c", cls[b]);
    printf("\n");
    for (int a = 0; a < 3; a++) {
        printf("%8c", cls[a]);
        for (int b = 0; b < 3; b++)
            printf(" %7.3f", cnt[a][b] ? sum[a][b] / cnt[a][b] : NAN);
        printf("\n");
    }
    printf("\nthroughput / gang's beside a co-runner (row: the app's class); folded (TFT), all cores (linux)\n"
           "%8s %7s %7s %7s %7s %7s %7s\n", "", "TFT", "min", "max", "linux", "min", "max");
    for (int a = 0; a < 3; a++) {
        printf("%8c", cls[a]);
        for (int m = 0; m < 2; m++)
            printf(" %7.3f %7.3f %7.3f", gcnt[a] ? gsum[a][m] / gcnt[a] : NAN, gcnt[a] ? gmin[a][m] : NAN,
                   gcnt[a] ? gmax[a][m] : NAN);
        printf("\n");
    }
    static const char *const hogs[] = { "stream", "jacobi", "3mm" };
    printf("\npace (IPC / IPC alone) sharing all cores with a co-runner under the linux model\n%-12s", "app");
    for (int h = 0; h < 3; h++)
        printf(" %8s", hogs[h]);
    printf("\n");
    for (int i = 0; i < n; i++) {
        printf("%-12s", jobs[i]->name);
        for (int h = 0; h < 3; h++) {
            int k = -1;
            for (int x = 0; x < n; x++)
                if (strcmp(su->w[x].app->name, hogs[h]) == 0)
                    k = x;
            if (k < 0 || k == i) {
                printf(" %8s", "-");
                continue;
            }
            int ids[2] = { i + 1, k + 1 };
            hwloc_const_bitmap_t c[2] = { su->managed, su->managed };
            double r[2];
            cs_sim_steady(s, ids, c, 2, r);
            /* both teams spread over all cores: each gets the CPU share of its threads */
            double share = (double)su->w[i].threads / (su->w[i].threads + su->w[k].threads);
            printf(" %8.3f", full[i] > 0 ? r[0] / full[i] / share : 0);
        }
        printf("\n");
    }
    rc = 0;
out:
    free(full);
    free(half);
    free(asum);
    free(acnt);
    hwloc_bitmap_free(h0);
    hwloc_bitmap_free(h1);
    cs_sim_free(s);
    cs_jobs_free(jobs, n);
    return rc;
}
