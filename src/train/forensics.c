/* train/forensics.c: which samples made a step non-finite (forensics.jsonl). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "dist/reduce.h"
#include "core/log.h"
#include "train/train_impl.h"

/* Offending samples reported per rank and bad step. */
#define GT_FORENSICS_MAX 64

typedef struct offender {
    int64_t id, start, t0_ms, t1_ms, sample;
    int32_t file_index, rank, reason, pad;
} offender;
static const char *const g_reasons[] = {"non-finite input", "non-finite target", "non-finite loss",
                                        "non-finite gradient"};

/* Why sample x alone is non-finite (an index into g_reasons), or -1. */
static int sample_reason(trainer *t, const float *x, const float *yd, const float *md) {
    gt_task_ctx *tc = &t->tc;
    const float *xin = gt_task_input(tc, x, 1); /* what the model sees (pdm: missing samples imputed) */
    for (size_t j = 0; j < tc->n_x; j++)
        if (!isfinite(xin[j])) return 0;
    if (yd)
        for (size_t j = 0; j < tc->n_y_ds; j++)
            if (md[j] != 0.0f && !isfinite(yd[j])) return 1;
    const float *y, *mask;
    gt_task_targets(tc, x, yd, md, 1, &y, &mask);
    const float *pred = gt_engine_forward(t->e, gt_task_input(tc, x, 1), 1);
    /* as float on purpose: an fp32 overflow is what we look for */
    float l = (float)gt_task_objective(tc, NULL, pred, y, mask, 1, 0.0f), cnt = 0.0f;
    for (size_t j = 0; j < tc->n_t; j++) cnt += mask ? mask[j] : 1.0f;
    if (!isfinite(l)) return 2;
    if (cnt > 0) {
        gt_engine_zero_grad(t->e);
        gt_task_objective(tc, gt_engine_dpred(t->e), pred, y, mask, 1, 1.0f / cnt);
        gt_engine_backward(t->e, 1.0f);
        if (!isfinite(gt_engine_grad_norm(t->e))) return 3;
    }
    return -1;
}

/* Local: samples of this rank's batch that are non-finite on their own
 * (input, target, per-sample loss, per-sample gradient: each sample re-run
 * alone). Clobbers the gradients (the step is skipped anyway). */
static int find_offenders(trainer *t, const gt_batch *b, offender *out, int cap) {
    const int own_targets = t->tc.n_y_ds > 0; /* targets from the dataset, not derived from x */
    int n_out = 0;
    for (int64_t i = 0; i < b->n && n_out < cap; i++) {
        const float *x = b->x + (size_t)i * t->tc.n_x;
        const float *yd = own_targets ? b->y + (size_t)i * t->tc.n_y_ds : NULL;
        const float *md = own_targets ? b->mask + (size_t)i * t->tc.n_y_ds : NULL;
        int reason = sample_reason(t, x, yd, md);
        if (reason >= 0) {
            const gt_window_ref *r = &b->refs[i];
            out[n_out++] = (offender){.id = r->id, .start = r->start, .t0_ms = r->t_start_ms,
                                      .t1_ms = r->t_end_ms, .sample = i, .file_index = r->file_index,
                                      .rank = t->rank, .reason = reason};
        }
    }
    gt_engine_zero_grad(t->e);
    return n_out;
}

static void *step_json(const trainer *t, const gt_batch *b) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "step", (double)t->ts.step);
    cJSON_AddNumberToObject(j, "epoch", (double)b->epoch);
    cJSON_AddNumberToObject(j, "batch", (double)b->k);
    return j;
}

static void add_num(cJSON *o, const char *key, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

/* rank 0: forensics.jsonl rows and the log line */
static void report(trainer *t, const gt_batch *b, const offender *all, int n_all, double loss, double gnorm) {
    const char *kind = t->task->item;
    FILE *f = t->cfg->write_outputs ? gt_train_open_in_run(t, "forensics.jsonl", "a") : NULL;
    char first[256] = "";
    char id_key[32];
    snprintf(id_key, sizeof id_key, "%s_id", kind);
    for (int i = 0; i < n_all; i++) {
        const offender *o = &all[i];
        char a[32], z[32];
        gt_train_iso_time(o->t0_ms, a, sizeof a);
        gt_train_iso_time(o->t1_ms, z, sizeof z);
        if (i == 0)
            snprintf(first, sizeof first, "%s %lld (file index %d) %s .. %s (%s)", kind, (long long)o->id,
                     o->file_index, a, z, g_reasons[o->reason]);
        if (!f) continue;
        cJSON *j = step_json(t, b);
        cJSON_AddStringToObject(j, "kind", kind);
        cJSON_AddNumberToObject(j, "id", (double)o->id);
        cJSON_AddNumberToObject(j, id_key, (double)o->id);
        cJSON_AddNumberToObject(j, "file_index", o->file_index);
        cJSON_AddNumberToObject(j, "start_row", (double)o->start);
        cJSON_AddNumberToObject(j, "t_start_ms", (double)o->t0_ms);
        cJSON_AddNumberToObject(j, "t_end_ms", (double)o->t1_ms);
        cJSON_AddStringToObject(j, "t_start", a);
        cJSON_AddStringToObject(j, "t_end", z);
        cJSON_AddStringToObject(j, "reason", g_reasons[o->reason]);
        cJSON_AddNumberToObject(j, "rank", o->rank);
        add_num(j, "batch_loss", loss);
        add_num(j, "grad_norm", gnorm);
        gt_train_write_json_line(f, j);
    }
    if (f && n_all == 0) {
        cJSON *j = step_json(t, b);
        cJSON_AddStringToObject(j, "reason", "no single sample is non-finite on its own "
                                             "(overflow of the accumulated batch)");
        add_num(j, "batch_loss", loss);
        add_num(j, "grad_norm", gnorm);
        gt_train_write_json_line(f, j);
    }
    if (f) fclose(f);
    gt_log(GT_LOG_WARN,
           "step %lld (epoch %llu, batch %lld): non-finite %s (loss %g, grad norm %g): step skipped (%d/%d consecutive); "
           "%d offending sample%s%s%s%s; see %s/forensics.jsonl",
           (long long)t->ts.step + 1, (unsigned long long)b->epoch, (long long)b->k,
           isfinite(loss) ? "gradient" : "loss", loss, gnorm, t->ts.bad_steps, t->cfg->nan_max_bad, n_all,
           n_all == 1 ? "" : "s", n_all ? ": " : "", first, n_all > 1 ? " ..." : "", t->run_dir);
}

void gt_train_forensics(trainer *t, const gt_batch *b, double loss, double gnorm) {
    offender mine[GT_FORENSICS_MAX];
    int n = find_offenders(t, b, mine, GT_FORENSICS_MAX);
    int64_t total = 0;
    offender *all = gt_dist_gatherv(mine, n * (int)sizeof(offender), MPI_BYTE, &total,
                                    "forensics: too many offending samples to gather", t->comm);
    if (t->rank == 0) report(t, b, all, (int)(total / (int64_t)sizeof(offender)), loss, gnorm);
    free(all);
}
