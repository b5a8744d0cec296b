/*
 * lp.c - the linear programs of `cosched simulate --bound` (sim.h), solved
 * by GLPK's simplex (glp_simplex, with its presolver).  Only this file knows
 * GLPK; built without it (configure: X_AC_GLPK), cs_lp_available() says so
 * and cs_lp_bound() fails, and nothing else changes.
 *
 * The program, for nj jobs and nc configurations (r[c * nj + j] >= 0):
 *
 *   columns   x_1 .. x_nc >= 0        time fraction of each configuration
 *             t (free)                only for CS_LP_MAXMIN
 *   row 0     sum_c x_c = 1
 *   row 1+j   sum_c r_cj x_c (- t)    free (TOTAL), >= floor[j] (FAIR), >= 0 (MAXMIN)
 *   objective sum_c (sum_j r_cj) x_c  (TOTAL, FAIR), or t (MAXMIN); maximised
 *
 * cs_lp_fair() is the FAIR program for policies (cosched.fair_lp, through
 * cs_policy_set_lp(), which cli/main.c calls): the same program, no message
 * on failure (the policy is told and chooses another plan).
 *
 * GLPK writes to stdout, which belongs to the JSON document: its terminal
 * output is turned off.  Its tolerances are the defaults (primal 1e-7): an
 * optimum is within about 1e-7 of the exact one.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "sim/sim.h"
#include "core/log.h"

#ifdef HAVE_GLPK
#include <glpk.h>

int cs_lp_available(char *why, size_t len)
{
    snprintf(why, len, "GLPK %s", glp_version());
    return 1;
}

/* The program of kind; y may be NULL; quiet: no message on failure. */
static int solve(enum cs_lp_kind kind, int nj, int nc, const double *r, const double *floor_, double *value,
                 double *x, double *y, int quiet)
{
    int maxmin = kind == CS_LP_MAXMIN, ncols = nc + maxmin, rc = -1;
    size_t nz = (size_t)nc * (nj + 1) + (maxmin ? nj : 0);
    int *ia = calloc(nz + 1, sizeof *ia), *ja = calloc(nz + 1, sizeof *ja);
    double *ar = calloc(nz + 1, sizeof *ar);
    glp_prob *lp = glp_create_prob();
    glp_smcp parm;
    size_t k = 0;

    glp_term_out(GLP_OFF);
    glp_set_obj_dir(lp, GLP_MAX);
    glp_add_rows(lp, nj + 1);
    glp_add_cols(lp, ncols);
    glp_set_row_bnds(lp, 1, GLP_FX, 1.0, 1.0);
    for (int j = 0; j < nj; j++) {
        if (kind == CS_LP_FAIR)
            glp_set_row_bnds(lp, 2 + j, GLP_LO, floor_[j], 0.0);
        else if (maxmin)
            glp_set_row_bnds(lp, 2 + j, GLP_LO, 0.0, 0.0);
        else
            glp_set_row_bnds(lp, 2 + j, GLP_FR, 0.0, 0.0);
    }
    for (int c = 0; c < nc; c++) {
        double sum = 0;
        glp_set_col_bnds(lp, 1 + c, GLP_LO, 0.0, 0.0);
        k++, ia[k] = 1, ja[k] = 1 + c, ar[k] = 1.0;
        for (int j = 0; j < nj; j++) {
            k++, ia[k] = 2 + j, ja[k] = 1 + c, ar[k] = r[(size_t)c * nj + j];
            sum += r[(size_t)c * nj + j];
        }
        glp_set_obj_coef(lp, 1 + c, maxmin ? 0.0 : sum);
    }
    if (maxmin) {
        glp_set_col_bnds(lp, ncols, GLP_FR, 0.0, 0.0);
        glp_set_obj_coef(lp, ncols, 1.0);
        for (int j = 0; j < nj; j++)
            k++, ia[k] = 2 + j, ja[k] = ncols, ar[k] = -1.0;
    }
    glp_load_matrix(lp, (int)k, ia, ja, ar);
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_ON;
    int err = glp_simplex(lp, &parm);
    if (err == GLP_ENOPFS || (!err && glp_get_status(lp) == GLP_NOFEAS)) {
        if (!quiet)
            cs_err("bound: the linear program has no feasible solution (a job cannot get its floor)");
        goto out;
    }
    if (err || glp_get_status(lp) != GLP_OPT) {
        rc = -2;
        if (!quiet)
            cs_err("bound: GLPK's simplex failed (glp_simplex %d, status %d)", err, glp_get_status(lp));
        goto out;
    }
    *value = glp_get_obj_val(lp);
    for (int c = 0; c < nc; c++)
        x[c] = glp_get_col_prim(lp, 1 + c);
    for (int j = 0; y && j < nj; j++) {
        y[j] = 0;
        for (int c = 0; c < nc; c++)
            y[j] += x[c] * r[(size_t)c * nj + j];
    }
    rc = 0;
out:
    glp_delete_prob(lp);
    free(ia);
    free(ja);
    free(ar);
    return rc;
}

int cs_lp_bound(enum cs_lp_kind kind, int nj, int nc, const double *r, const double *floor_, double *value,
                double *x, double *y)
{
    return solve(kind, nj, nc, r, floor_, value, x, y, 0);
}

int cs_lp_fair(int nj, int nc, const double *r, const double *floor_, double *x)
{
    double value;

    return solve(CS_LP_FAIR, nj, nc, r, floor_, &value, x, NULL, 1);
}

#else

int cs_lp_available(char *why, size_t len)
{
    snprintf(why, len, "this cosched was built without GLPK (install libglpk-dev and run configure again)");
    return 0;
}

int cs_lp_bound(enum cs_lp_kind kind, int nj, int nc, const double *r, const double *floor_, double *value,
                double *x, double *y)
{
    cs_err("bound: this cosched was built without GLPK (install libglpk-dev and run configure again)");
    return -1;
}

int cs_lp_fair(int nj, int nc, const double *r, const double *floor_, double *x)
{
    (void)nj, (void)nc, (void)r, (void)floor_, (void)x;
    return -2;
}

#endif
