/* nilm/nilm_augment.c: NILM augmentation, appliance activations pasted into
 * training windows (see dataset.h). */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/log.h"
#include "core/rng.h"
#include "data/dataset_impl.h"
#include "data/permute.h"
#include "nilm/nilm_impl.h"
#include "dist/reduce.h"

#define ACT_MERGE_S 300.0 /* off gaps inside one activation (a washing machine's pauses) */

/* Activations of every local item and appliance in the item's train rows:
 * runs above the on-power, merged over off gaps up to ACT_MERGE_S, every row
 * finite, at most W rows long. */
void gt_ds_find_activations(gt_dataset *ds) {
    const int A = ds->n_cols;
    gt_nilm_part *P = ds->part;
    const gt_nilm_shard *sh = P->sh;
    int64_t cap = 1024, n = 0;
    P->acts = GT_MALLOC(sizeof(int64_t) * 2 * (size_t)cap);
    P->act_off = GT_MALLOC(sizeof(int64_t) * ((size_t)ds->n_items * A + 1));
    for (int li = 0; li < ds->n_items; li++) {
        const ds_item *it = &ds->items[li];
        const ds_split *sp = &it->sp[GT_SPLIT_TRAIN];
        const int64_t merge = (int64_t)floor(ACT_MERGE_S / sh->period_s[li]);
        /* holes inside an activation up to data.fill_max_s (jittered clocks leave empty bins in
         * appliance channels too) are bridged; the augment copy interpolates across them */
        int64_t hole = gt_nilm_fill_max_rows(&ds->cfg, sh->period_s[li]);
        if (hole < GT_NILM_FILL_AUTO_PERIODS) hole = GT_NILM_FILL_AUTO_PERIODS;
        for (int a = 0; a < A; a++) {
            P->act_off[(size_t)li * A + a] = n;
            if (it->excluded || !(P->app_mask >> a & 1u)) continue;
            const float on_w = sh->meta[a].on_power_w;
            int64_t r = it->row0 + sp->lo, end = it->row0 + sp->hi;
            while (r < end) {
                float v = ds->cols[r * A + a];
                if (!(isfinite(v) && v > on_w)) {
                    r++;
                    continue;
                }
                /* [r, e): on, extended over off gaps of at most `merge` rows */
                int64_t e = r + 1, last_on = r, finite = 1;
                while (e < end && e - last_on <= merge + 1) {
                    float u = ds->cols[e * A + a];
                    if (!isfinite(u)) { /* a short hole followed by a sample is bridged; a longer one drops the run */
                        int64_t h = e;
                        while (h < end && !isfinite(ds->cols[h * A + a])) h++;
                        if (h - e > hole || h >= end) {
                            finite = 0;
                            break;
                        }
                        e = h;
                        continue;
                    }
                    if (u > on_w) last_on = e;
                    e++;
                }
                e = last_on + 1; /* a run reaching a long hole is dropped; the scan goes on after its last on row */
                if (finite && e - r <= ds->W) {
                    if (n == cap) {
                        cap *= 2;
                        P->acts = GT_REALLOC(P->acts, sizeof(int64_t) * 2 * (size_t)cap);
                    }
                    P->acts[2 * n] = r, P->acts[2 * n + 1] = e - r;
                    n++;
                }
                r = e;
            }
        }
    }
    P->act_off[(size_t)ds->n_items * A] = n;
}

/* Sample q of appliance a inside the activation [row, row + L): a bridged hole
 * (find_activations) by linear interpolation between its finite neighbours
 * (the activation starts and ends on finite on rows). */
static double act_sample(const gt_dataset *ds, int a, int64_t row, int64_t L, int64_t q) {
    const int A = ds->n_cols;
    const float v = ds->cols[q * A + a];
    if (isfinite(v)) return v;
    int64_t p = q, s = q;
    while (p > row && !isfinite(ds->cols[p * A + a])) p--;
    while (s < row + L - 1 && !isfinite(ds->cols[s * A + a])) s++;
    const double vp = ds->cols[p * A + a], vs = ds->cols[s * A + a];
    if (!isfinite(vp)) return isfinite(vs) ? vs : 0.0;
    if (!isfinite(vs) || s == p) return vp;
    return vp + (vs - vp) * (double)(q - p) / (double)(s - p);
}

int64_t gt_nilm_augment(const gt_dataset *ds, uint64_t epoch, const gt_window_ref *refs, int64_t n, float *x,
                           float *y, const float *mask) {
    const gt_nilm_part *P = ds->part;
    const gt_nilm_data_config *nc = gt_nilm_data_cfg(&ds->cfg);
    if (!P->act_off || nc->augment <= 0) return 0;
    const int A = ds->n_cols, Cin = 1 + nc->time_features, last = ds->cfg.x_channels_last;
    const int64_t W = ds->W, nx = W * Cin, mid = W / 2;
    const double inv0 = 1.0 / ds->norm.std[0];
    int64_t changed = 0;
    for (int64_t i = 0; i < n; i++) {
        const int li = refs[i].item;
        const int64_t r0 = ds->items[li].row0 + refs[i].start;
        gt_rng r;
        gt_rng_init(&r, ds->cfg.seed, gt_stream(GT_STREAM_AUGMENT, (uint32_t)refs[i].file_index));
        gt_rng_seek(&r, (epoch << 40) | (uint64_t)refs[i].start);
        if (gt_rng_uniform_d(&r) >= nc->augment) continue;
        /* an appliance with activations, off throughout this window */
        const int64_t *off = P->act_off + (size_t)li * A;
        int cand[GT_DATA_MAX_TARGETS], nc = 0;
        for (int a = 0; a < A; a++) {
            if (off[a + 1] == off[a]) continue;
            int on = 0;
            for (int64_t t = 0; t < W && !on; t++) {
                float v = ds->cols[(r0 + t) * A + a];
                on = isfinite(v) && v > P->sh->meta[a].on_power_w;
            }
            if (!on) cand[nc++] = a;
        }
        if (nc == 0) continue;
        const int a = cand[(int)(gt_rng_uniform_d(&r) * nc) % nc];
        const int64_t k = off[a] + (int64_t)(gt_rng_uniform_d(&r) * (double)(off[a + 1] - off[a])) % (off[a + 1] - off[a]);
        const int64_t row = P->acts[2 * k], L = P->acts[2 * k + 1];
        /* window step of the activation's first row: covering the midpoint, or anywhere overlapping */
        int64_t o;
        if (gt_rng_uniform_d(&r) < 0.5) o = mid - L + 1 + (int64_t)(gt_rng_uniform_d(&r) * (double)L) % L;
        else o = -(L - 1) + (int64_t)(gt_rng_uniform_d(&r) * (double)(W + L - 1)) % (W + L - 1);
        float *xi = x + i * nx;
        for (int64_t t = o < 0 ? 0 : o; t < W && t < o + L; t++) {
            const double d = act_sample(ds, a, row, L, row + t - o);
            xi[gt_nilm_x_offset(last, W, Cin, t, 0)] += (float)(d * inv0);
            if (t == mid && mask[i * A + a] != 0.0f) y[i * A + a] += (float)(d / ds->norm.std[1 + a]);
        }
        changed++;
    }
    return changed;
}

