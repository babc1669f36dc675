/* doe/ladder.c: successive halving over a matrix's cells (run.h, the rung
 * ladder; the arithmetic and the selection are doe/halving.c). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "core/timer.h"
#include "doe/halving.h"
#include "doe/report.h"
#include "doe/run.h"
#include "doe/run_int.h"

/* ---------------------------------------------------------------- paths -- */

static void cell_dir(const gt_doe_matrix *m, const gt_doe_cell *c, char *b, size_t n) {
    snprintf(b, n, "%s/cells/%s", m->dir, c->id);
}
static void record_path(const gt_doe_matrix *m, int rung, const gt_doe_cell *c, char *b, size_t n) {
    snprintf(b, n, "%s/rungs/%d/%s.json", m->dir, rung, c->id);
}
/* rungs/<rung> below the sweep directory, no component a symbolic link; the
 * path that failed in bad[] */
static int make_rung_dir(const gt_doe_matrix *m, int rung, char *bad, size_t bad_bytes) {
    char rel[64];
    snprintf(rel, sizeof rel, "rungs/%d", rung);
    return gt_mkdir_out_below(m->dir, rel, bad, bad_bytes);
}

/* the seed factor (train.seed) or -1 */
static int seed_factor(const gt_doe_matrix *m) {
    for (int f = 0; f < m->n_factors; f++)
        if (!strcmp(m->factors[f].key, "train.seed")) return f;
    return -1;
}
static int factor_named(const gt_doe_matrix *m, const char *name) {
    for (int f = 0; f < m->n_factors; f++)
        if (!strcmp(m->factors[f].name, name) || !strcmp(m->factors[f].key, name)) return f;
    return -1;
}
/* cells a and b belong to one configuration (equal in every factor but the seed) */
static int same_config(const gt_doe_matrix *m, const gt_doe_cell *a, const gt_doe_cell *b) {
    const int s = seed_factor(m);
    for (int f = 0; f < m->n_factors; f++)
        if (f != s && a->level[f] != b->level[f]) return 0;
    return 1;
}
static void config_label(const gt_doe_matrix *m, const gt_doe_cell *c, char *b, size_t n) {
    const int s = seed_factor(m);
    b[0] = 0;
    for (int f = 0; f < m->n_factors; f++)
        if (f != s)
            snprintf(b + strlen(b), n - strlen(b), "%s%s=%s", b[0] ? " " : "", m->factors[f].name,
                     m->factors[f].levels[c->level[f]]);
    if (!b[0]) snprintf(b, n, "(all)");
}

/* --------------------------------------------------------- run results -- */

/* the newest committed checkpoint's step (checkpoints/ckpt-<step>.ok), -1: none */
static int64_t newest_step(const char *run_dir) {
    char p[2 * PATH_MAX];
    snprintf(p, sizeof p, "%s/checkpoints", run_dir);
    DIR *d = opendir(p);
    if (!d) return -1;
    int64_t best = -1;
    for (struct dirent *e; (e = readdir(d));) {
        long long s;
        char tail[8];
        if (sscanf(e->d_name, "ckpt-%lld.%7s", &s, tail) == 2 && !strcmp(tail, "ok") && s > best) best = s;
    }
    closedir(d);
    return best;
}

/* metrics.jsonl: best_val of the last validation at a step <= budget (NaN:
 * none), and the last train step seen in *steps */
static double val_at(const char *run_dir, double budget, double *steps) {
    char p[2 * PATH_MAX];
    snprintf(p, sizeof p, "%s/metrics.jsonl", run_dir);
    FILE *f = fopen(p, "r");
    double best = NAN, at = -1;
    *steps = 0;
    char *line = NULL;
    size_t cap = 0;
    long long ln = 0;
    while (f && gt_jsonl_getline(&line, &cap, f, p, &ln) > 0) {
        cJSON *j = cJSON_Parse(line);
        if (!j) continue;
        const cJSON *type = cJSON_GetObjectItem(j, "type"), *step = cJSON_GetObjectItem(j, "step");
        const double s = cJSON_IsNumber(step) ? step->valuedouble : -1;
        if (cJSON_IsString(type) && !strcmp(type->valuestring, "val") && s <= budget && s >= at) {
            const cJSON *v = cJSON_GetObjectItem(j, "best_val");
            best = cJSON_IsNumber(v) ? v->valuedouble : NAN;
            at = s;
        }
        if (s > *steps && s <= budget) *steps = s;
        cJSON_Delete(j);
    }
    free(line);
    if (f) fclose(f);
    return best;
}

/* the run's ranks (manifest.json), and in *gpus the ranks on a GPU (engine cuda), as write_train_part counts */
static int run_ranks(const char *run_dir, int *gpus) {
    char p[2 * PATH_MAX];
    snprintf(p, sizeof p, "%s/manifest.json", run_dir);
    cJSON *j = gt_doe_json_read(p);
    const cJSON *r = j ? cJSON_GetObjectItem(j, "ranks") : NULL, *e = j ? cJSON_GetObjectItem(j, "engine") : NULL;
    int n = cJSON_IsNumber(r) && r->valueint > 0 ? r->valueint : 1;
    if (gpus) *gpus = cJSON_IsString(e) && !strcmp(e->valuestring, "cuda") ? n : 0;
    cJSON_Delete(j);
    return n;
}

/* seconds of training over the segments a cell's train.log reports
 * ("train: ... after N steps (K skipped) in S s"), appended over attempts */
static double train_time(const char *cell_dir) {
    char p[2 * PATH_MAX];
    snprintf(p, sizeof p, "%s/train.log", cell_dir);
    char *log = gt_read_file_bounded(p, GT_READ_JSON_MAX_BYTES, "a cell's train.log", NULL, NULL, 0);
    double s = 0;
    for (char *q = log; q && (q = strstr(q, " skipped) in ")); q++) s += atof(q + 13);
    free(log);
    return s;
}

typedef struct rung_rec {
    char status[16]; /* done, failed, preempted, "" (none) */
    double metric, steps, steps_added, wall_s, train_s, cpu_hours, gpu_hours;
    int exit_code;
} rung_rec;

static int read_record(const gt_doe_matrix *m, int rung, const gt_doe_cell *c, rung_rec *r) {
    char p[PATH_MAX + 64];
    record_path(m, rung, c, p, sizeof p);
    memset(r, 0, sizeof *r);
    r->metric = NAN;
    cJSON *j = gt_doe_json_read(p);
    if (!j) return -1;
    const cJSON *x = cJSON_GetObjectItem(j, "status");
    snprintf(r->status, sizeof r->status, "%s", cJSON_IsString(x) ? x->valuestring : "");
#define NUM(k, dst)                                                   \
    do {                                                              \
        const cJSON *v_ = cJSON_GetObjectItem(j, k);                  \
        if (cJSON_IsNumber(v_)) dst = v_->valuedouble;                \
    } while (0)
    NUM("metric", r->metric);
    NUM("steps", r->steps);
    NUM("steps_added", r->steps_added);
    NUM("wall_s", r->wall_s);
    NUM("train_time_s", r->train_s);
    NUM("cpu_hours", r->cpu_hours);
    NUM("gpu_hours", r->gpu_hours);
    double ec = 0;
    NUM("exit_code", ec);
#undef NUM
    r->exit_code = (int)ec;
    cJSON_Delete(j);
    return 0;
}

static void write_record(const gt_doe_matrix *m, int rung, const gt_doe_cell *c, const rung_rec *r) {
    char p[PATH_MAX + 64];
    if (make_rung_dir(m, rung, p, sizeof p)) {
        GT_WARN("doe: cannot create %s: %s", p, gt_out_strerror(errno));
        return;
    }
    record_path(m, rung, c, p, sizeof p);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "id", c->id);
    cJSON_AddNumberToObject(j, "index", (double)c->index);
    cJSON_AddNumberToObject(j, "rung", rung);
    cJSON_AddNumberToObject(j, "budget", m->search.budget[rung]);
    cJSON_AddStringToObject(j, "unit", m->search.unit == GT_DOE_UNIT_DATA ? "data" : "steps");
    cJSON_AddStringToObject(j, "status", r->status);
    cJSON_AddStringToObject(j, "metric_name", m->search.metric);
    if (isfinite(r->metric)) cJSON_AddNumberToObject(j, "metric", r->metric);
    else cJSON_AddNullToObject(j, "metric");
    cJSON_AddNumberToObject(j, "steps", r->steps);
    cJSON_AddNumberToObject(j, "steps_added", r->steps_added);
    cJSON_AddNumberToObject(j, "wall_s", r->wall_s);
    cJSON_AddNumberToObject(j, "train_time_s", r->train_s);
    cJSON_AddNumberToObject(j, "cpu_hours", r->cpu_hours);
    cJSON_AddNumberToObject(j, "gpu_hours", r->gpu_hours);
    cJSON_AddNumberToObject(j, "exit_code", r->exit_code);
    if (gt_doe_json_write(p, j)) GT_WARN("doe: cannot write %s", p);
    cJSON_Delete(j);
}

/* CPU-hours of train_s seconds of training, as the evaluator counts them
 * (training time x ranks x OPENBLAS_NUM_THREADS / 3600) */
static double cpu_hours(double train_s, int ranks) {
    const char *ob = getenv("OPENBLAS_NUM_THREADS");
    const int threads = ob && atoi(ob) > 0 ? atoi(ob) : 1;
    return train_s * ranks * threads / 3600.0;
}

/* --------------------------------------------------------------- ladder -- */

static cJSON *ladder_read(const gt_doe_matrix *m) {
    char p[2 * PATH_MAX];
    snprintf(p, sizeof p, "%s/ladder.json", m->dir);
    return gt_doe_json_read(p);
}

int64_t gt_doe_rung_cells(const gt_doe_matrix *m, int rung, int64_t **cells) {
    *cells = NULL;
    if (rung < 0 || rung >= m->search.n_rungs) return -1;
    if (rung == 0) {
        *cells = GT_MALLOC(sizeof **cells * (size_t)m->n_cells);
        for (int64_t i = 0; i < m->n_cells; i++) (*cells)[i] = i;
        return m->n_cells;
    }
    cJSON *l = ladder_read(m);
    const cJSON *r = l ? cJSON_GetArrayItem(cJSON_GetObjectItem(l, "rungs"), rung) : NULL;
    const cJSON *cl = r ? cJSON_GetObjectItem(r, "cells") : NULL, *x;
    if (!cJSON_IsArray(cl)) {
        cJSON_Delete(l);
        return -1;
    }
    int64_t n = 0;
    *cells = GT_MALLOC(sizeof **cells * (size_t)(cJSON_GetArraySize(cl) + 1));
    cJSON_ArrayForEach(x, cl) if (cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble < (double)m->n_cells)
        (*cells)[n++] = (int64_t)x->valuedouble;
    cJSON_Delete(l);
    return n;
}

int gt_doe_current_rung(const gt_doe_matrix *m) {
    cJSON *l = ladder_read(m);
    const cJSON *rs = l ? cJSON_GetObjectItem(l, "rungs") : NULL, *r;
    int cur = 0, k = 0;
    cJSON_ArrayForEach(r, rs) {
        if (cJSON_GetObjectItem(r, "configs")) cur = k + 1; /* ranked: the next one is current */
        k++;
    }
    cJSON_Delete(l);
    return cur < m->search.n_rungs ? cur : m->search.n_rungs - 1;
}

static int in_rung(const gt_doe_matrix *m, int rung, int64_t index) {
    int64_t *cells = NULL, n = gt_doe_rung_cells(m, rung, &cells), found = 0;
    for (int64_t i = 0; i < n && !found; i++) found = cells[i] == index;
    free(cells);
    return (int)found;
}

/* ------------------------------------------------------------ one rung -- */

/* the cell's data sample for a data rung: "id,id,..." (malloc'd) or NULL with err */
static char *sample_items(const gt_doe_matrix *m, const gt_doe_cell *c, double fraction, char *err, size_t en) {
    const char *file = gt_doe_fixed_get(m, "data.file");
    int64_t *ids = NULL;
    int64_t n = file ? gt_doe_item_ids(file, &ids, err, en) : -1;
    if (n <= 0) {
        if (n == 0) snprintf(err, en, "%s: no households or turbines to sample", file);
        free(ids);
        return NULL;
    }
    const int sf = seed_factor(m);
    const char *seed = sf >= 0 ? m->factors[sf].levels[c->level[sf]] : gt_doe_fixed_get(m, "train.seed");
    int64_t *pick = GT_MALLOC(sizeof *pick * (size_t)n);
    int64_t k = gt_doe_data_sample(ids, n, fraction, seed ? atoll(seed) : 0, pick);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    for (int64_t i = 0; i < k; i++) fprintf(f, "%s%lld", i ? "," : "", (long long)pick[i]);
    fclose(f);
    free(pick);
    free(ids);
    return buf;
}

/* the last rung: the cell's full training and evaluation ('doe run') */
static int run_last(const gt_doe_matrix *m, const gt_doe_cell *c, int rung, const gt_doe_run_opts *o) {
    char dir[PATH_MAX], p[PATH_MAX + 32];
    cell_dir(m, c, dir, sizeof dir);
    rung_rec r;
    snprintf(p, sizeof p, "%s/eval.json", dir);
    const int had = gt_doe_exists(p);
    if (!read_record(m, rung, c, &r) && !strcmp(r.status, "done") && had) return 0;
    const int64_t before = m->search.unit == GT_DOE_UNIT_STEPS ? newest_step(dir) : -1;
    const double w0 = gt_doe_cell_wall(dir), t0 = gt_now(), tt0 = train_time(dir);
    int rc = gt_doe_run_cell(m, c->index, o);
    const double wall = had ? 0 : gt_now() - t0;
    memset(&r, 0, sizeof r);
    r.exit_code = rc;
    if (rc == 0 && gt_doe_exists(p)) {
        cJSON *ev = gt_doe_json_read(p);
        const cJSON *tr = ev ? cJSON_GetObjectItem(ev, "train") : NULL, *x;
        x = tr ? cJSON_GetObjectItem(tr, "best_val_loss") : NULL;
        r.metric = cJSON_IsNumber(x) ? x->valuedouble : NAN;
        x = tr ? cJSON_GetObjectItem(tr, "steps") : NULL;
        r.steps = cJSON_IsNumber(x) ? x->valuedouble : 0;
        cJSON_Delete(ev);
        r.steps_added = had ? 0 : r.steps - (before > 0 ? (double)before : 0);
        snprintf(r.status, sizeof r.status, "done");
    } else if (rc == 0) {
        return 0; /* another runner has it */
    } else {
        r.metric = NAN;
        snprintf(r.status, sizeof r.status, "%s", rc == GT_EXIT_PREEMPTED ? "preempted" : "failed");
    }
    r.wall_s = wall > 0 ? wall : gt_doe_cell_wall(dir) - w0;
    r.train_s = had ? 0 : train_time(dir) - tt0;
    int gpus = 0;
    r.cpu_hours = cpu_hours(r.train_s, run_ranks(dir, &gpus));
    r.gpu_hours = r.train_s * gpus / 3600.0;
    write_record(m, rung, c, &r);
    return rc;
}

/* the training of a non-last rung: unit steps from the cell's checkpoint (or
 * afresh) to step B; unit data a run of its own on the rung's sample */
static int launch(const gt_doe_matrix *m, const gt_doe_cell *cp, int rung, double B, int data, int64_t cur,
                  const char *dir, const char *run_dir, const char *ini, const char *log, const gt_doe_run_opts *o) {
    const gt_doe_cell c = *cp;
    char err[512];
    int rc;
    char a1[64], a2[2 * PATH_MAX];
    if (data) {
        char *items = sample_items(m, &c, B, err, sizeof err);
        GT_CHECK(items, GT_EXIT_DATA, "doe: %s: cell %s rung %d: %s", m->path, c.id, rung, err);
        char *it = NULL;
        GT_CHECK(asprintf(&it, "data.items=%s", items) >= 0, GT_EXIT_RESOURCE, "out of memory");
        snprintf(a2, sizeof a2, "run.dir=%s", run_dir);
        if (cur >= 0) {
            const char *args[] = {"train", "--resume", run_dir};
            rc = gt_doe_run_child(o, args, 3, log);
        } else {
            const char *args[] = {"train", ini, a2, it, "run.overwrite=true"};
            rc = gt_doe_run_child(o, args, 5, log);
        }
        free(it);
        free(items);
    } else if (cur >= 0) {
        snprintf(a1, sizeof a1, "train.stop_after=%lld", (long long)B - (long long)cur);
        const char *args[] = {"train", "--resume", dir, a1};
        rc = gt_doe_run_child(o, args, 4, log);
    } else {
        snprintf(a1, sizeof a1, "train.stop_after=%lld", (long long)B);
        const char *args[] = {"train", ini, "run.overwrite=true", a1};
        rc = gt_doe_run_child(o, args, 4, log);
    }
    return rc;
}

/* The rung's record of a cell after its run (exit rc, wall and training
 * seconds, steps added): its metric at the budget B from metrics.jsonl, cost
 * and status, written to rungs/<rung>/<id>.json. The exit code, GT_EXIT_DATA
 * for a finished run without a validation at or before B. */
static int rung_record(const gt_doe_matrix *m, int rung, const gt_doe_cell *cp, int rc, double wall, double tt,
                       double added, const char *run_dir, double B, int data, const char *log) {
    rung_rec r;
    memset(&r, 0, sizeof r);
    r.exit_code = rc;
    r.wall_s = wall;
    r.train_s = tt;
    int gpus = 0;
    r.cpu_hours = cpu_hours(tt, run_ranks(run_dir, &gpus));
    r.gpu_hours = tt * gpus / 3600.0;
    r.steps_added = added;
    if (rc == 0) {
        r.metric = val_at(run_dir, data ? INFINITY : B, &r.steps);
        snprintf(r.status, sizeof r.status, "%s", isfinite(r.metric) ? "done" : "failed");
        if (!isfinite(r.metric))
            GT_WARN("doe: cell %s rung %d: no validation at or before step %g in %s/metrics.jsonl (train.eval_every)",
                    cp->id, rung, B, run_dir), rc = GT_EXIT_DATA;
    } else {
        r.metric = NAN;
        snprintf(r.status, sizeof r.status, "%s", rc == GT_EXIT_PREEMPTED ? "preempted" : "failed");
        GT_WARN("doe: cell %s rung %d %s (exit %d; see %s)", cp->id, rung, r.status, rc, log);
    }
    write_record(m, rung, cp, &r);
    return rc;
}

int gt_doe_run_rung(const gt_doe_matrix *m, int64_t index, int rung, const gt_doe_run_opts *o) {
    GT_CHECK(m->search.strategy == GT_DOE_HALVING, GT_EXIT_USAGE, "doe run --rung: %s has no [search] strategy = halving",
             m->path);
    GT_CHECK(index >= 0 && index < m->n_cells, GT_EXIT_USAGE,
             "doe run: task %lld is outside the matrix '%s' (%lld cells: 0-%lld)", (long long)index, m->path,
             (long long)m->n_cells, (long long)m->n_cells - 1);
    GT_CHECK(rung >= 0 && rung < m->search.n_rungs, GT_EXIT_USAGE, "doe run --rung %d: the ladder of %s has rungs 0-%d",
             rung, m->path, m->search.n_rungs - 1);
    gt_doe_cell c;
    gt_doe_cell_at(m, index, &c);
    if (gt_doe_write_sweep(m)) return GT_EXIT_RESOURCE;
    if (!in_rung(m, rung, index)) {
        GT_INFO("doe: cell %s (task %lld) is not in rung %d (%s): skipped", c.id, (long long)index, rung,
                rung > 0 ? "stopped at an earlier rung, or 'doe next' not run yet" : "?");
        return 0;
    }
    if (rung == m->search.n_rungs - 1) return run_last(m, &c, rung, o);
    rung_rec r;
    if (!read_record(m, rung, &c, &r) && !strcmp(r.status, "done")) {
        GT_INFO("doe: cell %s (task %lld) already at rung %d's budget: skipped", c.id, (long long)index, rung);
        return 0;
    }
    const double B = m->search.budget[rung];
    char dir[PATH_MAX], run_dir[PATH_MAX + 64], p[2 * PATH_MAX];
    snprintf(p, sizeof p, "cells/%s", c.id); /* neither cells/ nor the cell's directory a symbolic link */
    GT_CHECK(gt_mkdir_out_below(m->dir, p, dir, sizeof dir) == 0, GT_EXIT_RESOURCE, "doe: cannot create %s: %s", dir,
             gt_out_strerror(errno));
    cell_dir(m, &c, dir, sizeof dir);
    GT_CHECK(make_rung_dir(m, rung, p, sizeof p) == 0, GT_EXIT_RESOURCE, "doe: cannot create %s: %s", p,
             gt_out_strerror(errno));
    const int data = m->search.unit == GT_DOE_UNIT_DATA;
    if (data) snprintf(run_dir, sizeof run_dir, "%s/rungs/%d/%s", m->dir, rung, c.id);
    else snprintf(run_dir, sizeof run_dir, "%s", dir);
    /* one runner per cell at a time */
    snprintf(p, sizeof p, "%s/cell.lock", dir);
    int lock = open(p, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
    GT_CHECK(lock >= 0, GT_EXIT_RESOURCE, "doe: cannot open %s: %s", p, gt_out_strerror(errno));
    if (flock(lock, LOCK_EX | LOCK_NB)) {
        GT_WARN("doe: cell %s (task %lld) is being run by another process (lock %s held): left alone", c.id,
                (long long)index, p);
        close(lock);
        return 0;
    }
    char err[512];
    char *cfg = gt_doe_cell_config(m, &c, dir, err, sizeof err);
    GT_CHECK(cfg, GT_EXIT_USAGE, "doe: %s: cell %s: %s", m->path, c.id, err);
    char ini[PATH_MAX + 16], log[PATH_MAX + 16];
    snprintf(ini, sizeof ini, "%s/cell.ini", dir);
    GT_CHECK(gt_write_file_atomic(ini, cfg) == 0, GT_EXIT_RESOURCE, "doe: cannot write %s", ini);
    free(cfg);
    snprintf(log, sizeof log, "%s/train.log", dir);
    gt_doe_forwarding_install();

    snprintf(p, sizeof p, "%s/eval.json", run_dir);
    int rc = 0;
    double wall = 0, added = 0;
    const int64_t cur = newest_step(run_dir);
    const double tt0 = train_time(dir);
    double tt = 0;
    if (gt_doe_exists(p) || (!data && cur >= (int64_t)B)) {
        /* trained before (a record lost), or stopped early at an earlier rung: nothing to add */
    } else {
        gt_doe_cell_state(dir, m, &c, "running", 1, 0, 0);
        GT_INFO("doe: cell %s (task %lld) rung %d: %s to %s %g", c.id, (long long)index, rung,
                cur >= 0 ? "resuming" : "training", data ? "a sample of" : "step", data ? B : B);
        const double t0 = gt_now();
        rc = launch(m, &c, rung, B, data, cur, dir, run_dir, ini, log, o);
        wall = gt_now() - t0;
        tt = train_time(dir) - tt0;
        const int64_t after = newest_step(run_dir);
        added = (double)(after > 0 ? after : 0) - (cur > 0 ? (double)cur : 0);
        if (rc == GT_EXIT_PREEMPTED && !data && after >= (int64_t)B && !gt_doe_forwarded_signal()) rc = 0;
        if (rc == 0 && !data && gt_doe_exists(p)) {
            gt_doe_cell_state(dir, m, &c, "done", 0, 0, wall); /* finished early (early stopping) */
            if (gt_doe_write_train_part(dir, gt_doe_cell_wall(dir))) rc = GT_EXIT_RESOURCE;
        } else if (rc == 0) {
            gt_doe_cell_state(dir, m, &c, "paused", 0, 0, wall);
        } else {
            gt_doe_cell_state(dir, m, &c, rc == GT_EXIT_PREEMPTED ? "preempted" : "failed", 0, rc, wall);
        }
    }
    rc = rung_record(m, rung, &c, rc, wall, tt, added, run_dir, B, data, log);
    close(lock);
    return rc;
}

/* ---------------------------------------------------------------- next -- */

static int cmp_i64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

typedef struct conf {
    gt_doe_cell first;
    int64_t *cells;
    int n;
} conf;

/* the numbers of arr in ascending order, as a new array (arr deleted) */
static cJSON *sorted_cells(cJSON *arr) {
    const int nn = cJSON_GetArraySize(arr);
    int64_t *v = GT_MALLOC(sizeof *v * (size_t)(nn + 1));
    for (int i = 0; i < nn; i++) v[i] = (int64_t)cJSON_GetArrayItem(arr, i)->valuedouble;
    qsort(v, (size_t)nn, sizeof *v, cmp_i64);
    cJSON_Delete(arr);
    cJSON *out = cJSON_CreateArray();
    for (int i = 0; i < nn; i++) cJSON_AddItemToArray(out, cJSON_CreateNumber((double)v[i]));
    free(v);
    return out;
}

typedef struct ranking {
    conf *cf;              /* configurations of the rung, cell order */
    int nc;
    gt_doe_rank_in *in;    /* [nc] */
    cJSON *failed;         /* cell indices without a result */
    int pf, last, adv, n_best;
    int *order, *advanced, *best; /* ranked (per group), kept flags, each group's best */
} ranking;

/* the rung's configurations and their results into rk */
static void collect(const gt_doe_matrix *m, int rung, const int64_t *cells, int64_t n, ranking *rk, FILE *out) {
    /* configurations in cell order */
    conf *cf = rk->cf = GT_CALLOC((size_t)(n + 1), sizeof *cf);
    int nc = 0;
    for (int64_t i = 0; i < n; i++) {
        gt_doe_cell c;
        gt_doe_cell_at(m, cells[i], &c);
        int k = 0;
        while (k < nc && !same_config(m, &cf[k].first, &c)) k++;
        if (k == nc) cf[nc].first = c, cf[nc].cells = GT_MALLOC(sizeof(int64_t) * (size_t)n), nc++;
        cf[k].cells[cf[k].n++] = cells[i];
    }
    rk->nc = nc;
    gt_doe_rank_in *in = rk->in = GT_CALLOC((size_t)(nc + 1), sizeof *in);
    cJSON *failed = rk->failed = cJSON_CreateArray();
    for (int k = 0; k < nc; k++) {
        double sum = 0;
        in[k].first_cell = cf[k].first.index;
        in[k].n_cells = cf[k].n;
        for (int i = 0; i < cf[k].n; i++) {
            gt_doe_cell c;
            gt_doe_cell_at(m, cf[k].cells[i], &c);
            rung_rec r;
            if (!read_record(m, rung, &c, &r) && !strcmp(r.status, "done") && isfinite(r.metric)) {
                sum += r.metric;
                in[k].n_done++;
            } else {
                in[k].n_failed++;
                cJSON_AddItemToArray(failed, cJSON_CreateNumber((double)c.index));
                fprintf(out, "doe next: rung %d: cell %lld (%s) %s\n", rung, (long long)c.index, c.id,
                        r.status[0] ? r.status : "has no result (not run)");
            }
        }
        in[k].mean = in[k].n_done ? sum / in[k].n_done : NAN;
    }
}

/* ranks each group (one without [search] per); rk->adv = -1 with why when too few have a result */
static void rank_groups(const gt_doe_matrix *m, int rung, ranking *rk, char *why, size_t why_bytes) {
    const conf *cf = rk->cf;
    const int nc = rk->nc;
    const gt_doe_rank_in *in = rk->in;
    const int last = rk->last = rung == m->search.n_rungs - 1;
    const int mi = gt_doe_metric_find(m->search.metric);
    const int hb = mi >= 0 ? gt_doe_metrics(NULL)[mi].higher_better : 0;
    /* one ladder per level of [search] per (e.g. the appliance groups), else one */
    const int pf = rk->pf = m->search.per[0] ? factor_named(m, m->search.per) : -1;
    const int n_groups = pf >= 0 ? m->factors[pf].n_levels : 1;
    int *order = rk->order = GT_MALLOC(sizeof *order * (size_t)(nc + 1));
    int *advanced = rk->advanced = GT_CALLOC((size_t)(nc + 1), sizeof(int));
    int *best = rk->best = GT_MALLOC(sizeof *best * (size_t)(n_groups + 1)), *sub = GT_MALLOC(sizeof *sub * (size_t)(nc + 1));
    int *sub_order = GT_MALLOC(sizeof *sub_order * (size_t)(nc + 1));
    gt_doe_rank_in *sub_in = GT_MALLOC(sizeof *sub_in * (size_t)(nc + 1));
    int adv = 0, n_order = 0, n_best = 0;
    for (int g = 0; g < n_groups && adv >= 0; g++) {
        int ns = 0;
        for (int k = 0; k < nc; k++)
            if (pf < 0 || cf[k].first.level[pf] == g) sub[ns] = k, sub_in[ns++] = in[k];
        if (ns == 0) continue;
        const int keep = last ? 1 : gt_doe_keep(ns, m->search.eta);
        const int a = gt_doe_select(sub_in, ns, keep, hb, sub_order, why, why_bytes);
        if (a < 0) {
            if (pf >= 0) {
                char w[600];
                snprintf(w, sizeof w, "%s = %s: %s", m->factors[pf].name, m->factors[pf].levels[g], why);
                snprintf(why, why_bytes, "%.500s", w);
            }
            adv = -1;
            break;
        }
        for (int i = 0; i < ns; i++) order[n_order++] = sub[sub_order[i]];
        for (int i = 0; i < a; i++) advanced[sub[sub_order[i]]] = 1;
        best[n_best++] = sub[sub_order[0]];
        adv += a;
    }
    rk->adv = adv;
    rk->n_best = n_best;
    free(sub);
    free(sub_order);
    free(sub_in);
}

/* ladder.json: rung's ranking, the next rung's cells or the choice; marks the stopped cells.
 * Returns 0 (a next rung), 1 (chosen) or -1 (not written) */
/* ladder.json's settings: strategy, eta, unit, metric, budgets (replaced). */
static void ladder_settings(const gt_doe_matrix *m, cJSON *l) {
    cJSON_DeleteItemFromObject(l, "strategy");
    cJSON_AddStringToObject(l, "strategy", "halving");
    cJSON_DeleteItemFromObject(l, "eta");
    cJSON_AddNumberToObject(l, "eta", m->search.eta);
    cJSON_DeleteItemFromObject(l, "unit");
    cJSON_AddStringToObject(l, "unit", m->search.unit == GT_DOE_UNIT_DATA ? "data" : "steps");
    cJSON_DeleteItemFromObject(l, "metric");
    cJSON_AddStringToObject(l, "metric", m->search.metric);
    cJSON_DeleteItemFromObject(l, "budgets");
    cJSON *bs = cJSON_AddArrayToObject(l, "budgets");
    for (int r = 0; r < m->search.n_rungs; r++) cJSON_AddItemToArray(bs, cJSON_CreateNumber(m->search.budget[r]));
}

/* This rung's configurations by rank into cs; the advancing ones' cells into
 * next; the cells of the stopped ones marked "stopped". */
static void rung_configs(const gt_doe_matrix *m, const ranking *rk, cJSON *cs, cJSON *next) {
    const conf *cf = rk->cf;
    const int nc = rk->nc, last = rk->last, pf = rk->pf;
    const gt_doe_rank_in *in = rk->in;
    const int *order = rk->order, *advanced = rk->advanced;
    for (int k = 0; k < nc; k++) {
        const int ci = order[k];
        cJSON *x = cJSON_CreateObject();
        char lab[512];
        config_label(m, &cf[ci].first, lab, sizeof lab);
        cJSON_AddStringToObject(x, "config", lab);
        cJSON_AddNumberToObject(x, "first_cell", (double)cf[ci].first.index);
        cJSON *xc = cJSON_AddArrayToObject(x, "cells");
        for (int i = 0; i < cf[ci].n; i++) cJSON_AddItemToArray(xc, cJSON_CreateNumber((double)cf[ci].cells[i]));
        if (isfinite(in[ci].mean)) cJSON_AddNumberToObject(x, "mean", in[ci].mean);
        else cJSON_AddNullToObject(x, "mean");
        cJSON_AddNumberToObject(x, "n_done", in[ci].n_done);
        cJSON_AddNumberToObject(x, "n_failed", in[ci].n_failed);
        cJSON_AddNumberToObject(x, "rank", k + 1);
        if (pf >= 0) cJSON_AddStringToObject(x, "per", m->factors[pf].levels[cf[ci].first.level[pf]]);
        cJSON_AddBoolToObject(x, "advanced", advanced[ci]);
        cJSON_AddItemToArray(cs, x);
        for (int i = 0; advanced[ci] && !last && i < cf[ci].n; i++)
            cJSON_AddItemToArray(next, cJSON_CreateNumber((double)cf[ci].cells[i]));
        for (int i = 0; !advanced[ci] && i < cf[ci].n; i++) { /* stopped here */
            gt_doe_cell c;
            char d[PATH_MAX];
            gt_doe_cell_at(m, cf[ci].cells[i], &c);
            cell_dir(m, &c, d, sizeof d);
            if (gt_doe_exists(d)) gt_doe_cell_state(d, m, &c, "stopped", 0, 0, 0);
        }
    }
}

/* The last rung: the chosen configuration(s) into l (one per ladder with
 * [search] per), later rungs dropped. */
static void ladder_chosen(const gt_doe_matrix *m, const ranking *rk, cJSON *l, cJSON *rs, int rung, FILE *out) {
    const conf *cf = rk->cf;
    const gt_doe_rank_in *in = rk->in;
    const int *best = rk->best;
    const int pf = rk->pf, n_best = rk->n_best;
    char lab[512];
    cJSON *all = pf >= 0 ? cJSON_AddArrayToObject(l, "chosen_per") : NULL;
    for (int g = 0; g < n_best; g++) {
        cJSON *ch = cJSON_CreateObject();
        config_label(m, &cf[best[g]].first, lab, sizeof lab);
        cJSON_AddStringToObject(ch, "config", lab);
        cJSON_AddNumberToObject(ch, "first_cell", (double)cf[best[g]].first.index);
        cJSON_AddNumberToObject(ch, "mean", in[best[g]].mean);
        if (all) cJSON_AddItemToArray(all, ch);
        else cJSON_AddItemToObject(l, "chosen", ch);
        fprintf(out, "chosen: %s\n", lab);
    }
    if (all) cJSON_AddItemToObject(l, "chosen", cJSON_Duplicate(cJSON_GetArrayItem(all, 0), 1));
    while (cJSON_GetArraySize(rs) > rung + 1) cJSON_DeleteItemFromArray(rs, rung + 1);
}

/* Not the last rung: the next rung's cells (later rungs dropped when they
 * changed); takes next. */
static void ladder_next(const gt_doe_matrix *m, cJSON *rs, int rung, cJSON *next, FILE *out) {
    cJSON *N = cJSON_GetArrayItem(rs, rung + 1);
    const cJSON *old = N ? cJSON_GetObjectItem(N, "cells") : NULL;
    char *a = old ? cJSON_PrintUnformatted(old) : NULL, *b = cJSON_PrintUnformatted(next);
    const int same = a && !strcmp(a, b);
    free(a);
    if (!same) {
        while (cJSON_GetArraySize(rs) > rung + 1) cJSON_DeleteItemFromArray(rs, rung + 1);
        N = cJSON_CreateObject();
        cJSON_AddNumberToObject(N, "rung", rung + 1);
        cJSON_AddNumberToObject(N, "budget", m->search.budget[rung + 1]);
        cJSON_AddItemToObject(N, "cells", next);
        cJSON_AddItemToArray(rs, N);
    } else {
        cJSON_Delete(next);
    }
    fprintf(out, "next: rung %d cells %s\n", rung + 1, b);
    free(b);
}

static int ladder_write(const gt_doe_matrix *m, int rung, const int64_t *cells, int64_t n, ranking *rk, FILE *out) {
    const conf *cf = rk->cf;
    const int nc = rk->nc, last = rk->last, adv = rk->adv, n_best = rk->n_best;
    const gt_doe_rank_in *in = rk->in;
    const int *best = rk->best;
    cJSON *failed = rk->failed;
    int rc = 0;
    /* ladder.json: this rung's ranking and the next rung's cells */
    cJSON *l = ladder_read(m);
    if (!l) l = cJSON_CreateObject();
    ladder_settings(m, l);
    cJSON *rs = cJSON_GetObjectItem(l, "rungs");
    if (!rs) rs = cJSON_AddArrayToObject(l, "rungs");
    while (cJSON_GetArraySize(rs) < rung + 1) cJSON_AddItemToArray(rs, cJSON_CreateObject());
    cJSON *R = cJSON_CreateObject();
    cJSON_AddNumberToObject(R, "rung", rung);
    cJSON_AddNumberToObject(R, "budget", m->search.budget[rung]);
    cJSON *cl = cJSON_AddArrayToObject(R, "cells");
    for (int64_t i = 0; i < n; i++) cJSON_AddItemToArray(cl, cJSON_CreateNumber((double)cells[i]));
    cJSON *cs = cJSON_AddArrayToObject(R, "configs");
    cJSON *next = cJSON_CreateArray();
    rung_configs(m, rk, cs, next);
    next = sorted_cells(next); /* cell order: a Slurm array list */
    cJSON_AddItemToObject(R, "failed_cells", failed);
    rk->failed = NULL; /* now R's */
    cJSON_ReplaceItemInArray(rs, rung, R);
    char lab[512];
    for (int g = 0; g < n_best; g++) {
        config_label(m, &cf[best[g]].first, lab, sizeof lab);
        fprintf(out, "doe next: rung %d (budget %g %s): %d of %d configurations advance; best %s (%s %.6g over %d "
                     "seed(s))\n",
                rung, m->search.budget[rung], m->search.unit == GT_DOE_UNIT_DATA ? "of the data" : "steps", adv, nc,
                lab, m->search.metric, in[best[g]].mean, in[best[g]].n_done);
    }
    cJSON_DeleteItemFromObject(l, "chosen");
    cJSON_DeleteItemFromObject(l, "chosen_per");
    if (last) {
        ladder_chosen(m, rk, l, rs, rung, out);
        cJSON_Delete(next);
        rc = 1;
    } else {
        ladder_next(m, rs, rung, next, out);
    }
    char p[2 * PATH_MAX];
    snprintf(p, sizeof p, "%s/ladder.json", m->dir);
    if (gt_doe_json_write(p, l)) {
        GT_WARN("doe: cannot write %s", p);
        rc = -1;
    }
    cJSON_Delete(l);
    return rc;
}

int gt_doe_next(const gt_doe_matrix *m, int rung, FILE *out) {
    GT_CHECK(m->search.strategy == GT_DOE_HALVING, GT_EXIT_USAGE, "doe next: %s has no [search] strategy = halving",
             m->path);
    GT_CHECK(rung >= 0 && rung < m->search.n_rungs, GT_EXIT_USAGE, "doe next --rung %d: the ladder of %s has rungs 0-%d",
             rung, m->path, m->search.n_rungs - 1);
    int64_t *cells = NULL;
    const int64_t n = gt_doe_rung_cells(m, rung, &cells);
    GT_CHECK(n >= 0, GT_EXIT_USAGE, "doe next --rung %d: rung %d has not been reached (run 'doe next --rung %d' first)",
             rung, rung, rung - 1);
    ranking rk = {0};
    collect(m, rung, cells, n, &rk, out);
    char why[512] = "";
    rank_groups(m, rung, &rk, why, sizeof why);
    int rc = -1;
    if (rk.adv < 0) fprintf(out, "doe next: rung %d of '%s': %s\n", rung, m->name, why);
    else rc = ladder_write(m, rung, cells, n, &rk, out);
    cJSON_Delete(rk.failed);
    for (int k = 0; k < rk.nc; k++) free(rk.cf[k].cells);
    free(rk.cf);
    free(rk.in);
    free(rk.order);
    free(rk.advanced);
    free(rk.best);
    free(cells);
    return rc;
}

/* ------------------------------------------------------------- run-all -- */

int gt_doe_ladder_run_all(const gt_doe_matrix *m, int jobs, const gt_doe_run_opts *o) {
    for (int r = gt_doe_current_rung(m); r < m->search.n_rungs; r++) {
        int64_t *cells = NULL;
        const int64_t n = gt_doe_rung_cells(m, r, &cells);
        if (n < 0) return 1;
        GT_INFO("doe: run-all '%s': rung %d of %d: %lld cells to %g %s", m->name, r, m->search.n_rungs, (long long)n,
                m->search.budget[r], m->search.unit == GT_DOE_UNIT_DATA ? "of the data" : "steps");
        gt_doe_run_tasks(m, cells, n, r, jobs, o); /* failed cells: recorded, 'next' decides */
        free(cells);
        if (gt_doe_forwarded_signal()) return 1;
        const int nx = gt_doe_next(m, r, stderr);
        if (nx < 0) return 1;
        if (nx == 1) return 0;
    }
    return 1;
}

/* The strategy's runner: every cell (grid) or the ladder of rungs (halving). */
int gt_doe_run_all(const gt_doe_matrix *m, int jobs, const gt_doe_run_opts *o) {
    if (m->search.strategy == GT_DOE_HALVING) return gt_doe_ladder_run_all(m, jobs, o);
    int64_t *tasks = GT_MALLOC(sizeof *tasks * (size_t)m->n_cells);
    for (int64_t i = 0; i < m->n_cells; i++) tasks[i] = i;
    int rc = gt_doe_run_tasks(m, tasks, m->n_cells, -1, jobs, o);
    free(tasks);
    return rc;
}
