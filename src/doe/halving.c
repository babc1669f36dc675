/* doe/halving.c: [search], rung arithmetic and selection (halving.h). */
#define _GNU_SOURCE
#include "doe/halving.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/check.h"

void gt_doe_search_init(gt_doe_search *s) {
    memset(s, 0, sizeof *s);
    s->strategy = GT_DOE_GRID;
    s->eta = 3;
    s->unit = GT_DOE_UNIT_STEPS;
    snprintf(s->metric, sizeof s->metric, "train.best_val_loss");
}

static int parse_num(const char *v, double *out) {
    char *end = NULL;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x)) return -1;
    *out = x;
    return 0;
}

int gt_doe_search_set(gt_doe_search *s, const char *key, const char *v, char *err, size_t en) {
    double x;
    if (!strcmp(key, "strategy")) {
        if (!strcmp(v, "grid")) s->strategy = GT_DOE_GRID;
        else if (!strcmp(v, "halving")) s->strategy = GT_DOE_HALVING;
        else return snprintf(err, en, "[search] strategy = '%s': grid or halving", v), -1;
    } else if (!strcmp(key, "eta")) {
        if (parse_num(v, &x) || x != floor(x) || x < 2 || x > 100)
            return snprintf(err, en, "[search] eta = '%s': an integer from 2 to 100", v), -1;
        s->eta = (int)x;
    } else if (!strcmp(key, "unit")) {
        if (!strcmp(v, "steps")) s->unit = GT_DOE_UNIT_STEPS;
        else if (!strcmp(v, "data")) s->unit = GT_DOE_UNIT_DATA;
        else return snprintf(err, en, "[search] unit = '%s': steps or data", v), -1;
    } else if (!strcmp(key, "min_budget") || !strcmp(key, "max_budget")) {
        if (parse_num(v, &x) || x <= 0) return snprintf(err, en, "[search] %s = '%s': a number > 0", key, v), -1;
        *(key[1] == 'i' ? &s->min_budget : &s->max_budget) = x;
    } else if (!strcmp(key, "per")) {
        snprintf(s->per, sizeof s->per, "%s", v);
    } else if (!strcmp(key, "metric")) {
        /* the rungs have what training writes: the validation loss (metrics.jsonl) */
        if (strcmp(v, "train.best_val_loss"))
            return snprintf(err, en, "[search] metric = '%s': the rungs rank by train.best_val_loss (the validation "
                                     "split's loss, the one metric every rung has); the report still shows the "
                                     "chosen configuration's test metrics", v),
                   -1;
        snprintf(s->metric, sizeof s->metric, "%s", v);
    } else {
        return snprintf(err, en, "unknown [search] key '%s' (strategy, eta, unit, min_budget, max_budget, metric, per)",
                        key),
               -1;
    }
    return 0;
}

int gt_doe_rungs(double min_budget, double max_budget, int eta, double *budget, int max_rungs) {
    int n = 0;
    /* within 0.1 % of max_budget is max_budget (min_budget = 0.111 with eta 3 reaches 1 in 2 steps) */
    for (double b = min_budget; b < max_budget * (1 - 1e-3); b *= eta) {
        if (n == max_rungs) return -1;
        budget[n++] = b;
    }
    if (n == max_rungs) return -1;
    budget[n++] = max_budget;
    return n;
}

int gt_doe_search_finish(gt_doe_search *s, int64_t max_steps, int64_t eval_every, char *err, size_t en) {
    if (s->strategy == GT_DOE_GRID) return 0;
    if (s->unit == GT_DOE_UNIT_STEPS) {
        if (s->max_budget == 0) s->max_budget = (double)max_steps;
        if (s->max_budget <= 0)
            return snprintf(err, en, "[search] unit = steps: give max_budget or a fixed train.max_steps"), -1;
        if (max_steps > 0 && s->max_budget != (double)max_steps)
            return snprintf(err, en, "[search] max_budget = %g differs from the fixed train.max_steps = %lld (the last "
                                     "rung is the full run: leave max_budget out)", s->max_budget, (long long)max_steps),
                   -1;
        if (max_steps <= 0)
            return snprintf(err, en, "[search] unit = steps needs a fixed train.max_steps (the full run's steps, the "
                                     "cosine schedule's length in every rung)"),
                   -1;
        if (s->min_budget == 0) return snprintf(err, en, "[search] min_budget is missing (steps of the first rung)"), -1;
        if (s->min_budget != floor(s->min_budget))
            return snprintf(err, en, "[search] min_budget = %g: whole steps", s->min_budget), -1;
        if (eval_every <= 0)
            return snprintf(err, en, "[search] unit = steps needs a fixed train.eval_every (a validation at the end of "
                                     "every rung; the grid sweep of the same matrix then validates at the same steps)"),
                   -1;
    } else {
        if (s->max_budget == 0) s->max_budget = 1;
        if (s->min_budget == 0) return snprintf(err, en, "[search] min_budget is missing (the first rung's fraction)"), -1;
        if (s->max_budget > 1 || s->min_budget > 1)
            return snprintf(err, en, "[search] unit = data: min_budget and max_budget are fractions in (0, 1]"), -1;
        if (s->max_budget != 1)
            return snprintf(err, en, "[search] unit = data: max_budget = %g: the last rung is the full run on every "
                                     "household/turbine (1, the default)", s->max_budget),
                   -1;
    }
    if (s->min_budget > s->max_budget)
        return snprintf(err, en, "[search] min_budget %g is above max_budget %g", s->min_budget, s->max_budget), -1;
    s->n_rungs = gt_doe_rungs(s->min_budget, s->max_budget, s->eta, s->budget, GT_DOE_MAX_RUNGS);
    if (s->n_rungs < 0)
        return snprintf(err, en, "[search] min_budget %g to max_budget %g at eta %d is more than %d rungs",
                        s->min_budget, s->max_budget, s->eta, GT_DOE_MAX_RUNGS),
               -1;
    if (s->unit == GT_DOE_UNIT_STEPS)
        for (int r = 0; r + 1 < s->n_rungs; r++)
            if (fmod(s->budget[r], (double)eval_every) != 0)
                return snprintf(err, en, "[search] rung %d ends at step %g, not a multiple of train.eval_every = %lld "
                                         "(the rung's validation loss is taken there)",
                                r, s->budget[r], (long long)eval_every),
                       -1;
    return 0;
}

int gt_doe_keep(int n, int eta) { return n / eta > 1 ? n / eta : 1; }

double gt_doe_ladder_steps(int n_configs, int seeds, const gt_doe_search *s, double *grid_steps) {
    double total = 0, prev = 0;
    int n = n_configs;
    for (int r = 0; r < s->n_rungs; r++) {
        total += (double)n * seeds * (s->budget[r] - prev);
        prev = s->budget[r];
        n = gt_doe_keep(n, s->eta);
    }
    if (grid_steps) *grid_steps = (double)n_configs * seeds * s->max_budget;
    return total;
}

typedef struct {
    const gt_doe_rank_in *in;
    int i, hb;
} rank_ref;
static int rank_cmp(const void *a, const void *b) {
    const rank_ref *x = a, *y = b;
    const double u = x->in[x->i].mean, v = y->in[y->i].mean;
    const int fu = isfinite(u), fv = isfinite(v);
    if (fu != fv) return fv - fu; /* values first */
    if (fu && u != v) return (x->hb ? u > v : u < v) ? -1 : 1;
    const int64_t p = x->in[x->i].first_cell, q = y->in[y->i].first_cell;
    return (p > q) - (p < q);
}

int gt_doe_select(const gt_doe_rank_in *in, int n, int keep, int higher_better, int *order, char *why, size_t wn) {
    rank_ref *r = GT_MALLOC(sizeof *r * (size_t)(n > 0 ? n : 1));
    int ranked = 0;
    for (int i = 0; i < n; i++) {
        r[i] = (rank_ref){in, i, higher_better};
        ranked += isfinite(in[i].mean);
    }
    qsort(r, (size_t)n, sizeof *r, rank_cmp);
    for (int i = 0; i < n; i++) order[i] = r[i].i;
    free(r);
    if (ranked < keep) {
        snprintf(why, wn, "%d of %d configurations have a result at this rung, fewer than the %d that advance: the "
                          "ladder stops here; rerun the rung (its failed cells are retried, finished ones skipped) "
                          "and then 'doe next' again",
                 ranked, n, keep);
        return -1;
    }
    return keep;
}

int64_t gt_doe_data_sample(const int64_t *ids, int64_t n, double fraction, int64_t seed, int64_t *out) {
    if (n <= 0) return 0;
    int64_t k = (int64_t)ceil(fraction * (double)n - 1e-9);
    if (k < 1) k = 1;
    if (k > n) k = n;
    /* rank by xxh64(seed, id): a permutation fixed by the seed alone */
    uint64_t *h = GT_MALLOC(sizeof *h * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        int64_t key[2] = {seed, ids[i]};
        h[i] = XXH64(key, sizeof key, 0x68616c76ULL);
    }
    /* the k smallest hashes (ties by position), kept in ids' order */
    uint64_t *sorted = GT_MALLOC(sizeof *sorted * (size_t)n);
    memcpy(sorted, h, sizeof *sorted * (size_t)n);
    for (int64_t i = 1; i < n; i++) { /* insertion sort: item counts are small (households, turbines) */
        uint64_t v = sorted[i];
        int64_t j = i - 1;
        for (; j >= 0 && sorted[j] > v; j--) sorted[j + 1] = sorted[j];
        sorted[j + 1] = v;
    }
    const uint64_t cut = sorted[k - 1];
    int64_t m = 0;
    for (int64_t i = 0; i < n && m < k; i++)
        if (h[i] <= cut) out[m++] = ids[i];
    free(sorted);
    free(h);
    return m;
}
