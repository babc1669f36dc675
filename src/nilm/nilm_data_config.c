/* nilm/nilm_data_config.c: NILM's block of the data settings (nilm.h
 * gt_nilm_data_config): its defaults (the data table's config_defaults), its
 * lookup in a gt_data_config, and the settings' helpers (hole filling,
 * the appliance selection). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "data/dataset.h"
#include "io/kind_nilm.h"
#include "nilm/nilm.h"
#include "nilm/nilm_impl.h"

_Static_assert(sizeof(gt_nilm_data_config) <= GT_DATA_TASK_ARENA_BYTES, "NILM's data settings outgrew the arena");

void gt_nilm_data_config_defaults(void *cfg) {
    gt_nilm_data_config *c = cfg;
    memset(c, 0, sizeof *c);
    c->fill_max_s = -1; /* auto */
    c->spike_min_w = 5000;
    c->power_limit_w = GT_NILM_POWER_LIMIT_W;
    c->stride_mask = 0;
}

const gt_nilm_data_config *gt_nilm_data_cfg(const gt_data_config *dc) { return gt_data_task_config_c(dc, "nilm"); }

gt_nilm_data_config *gt_nilm_data_cfg_set(gt_data_config *dc) { return gt_data_task_config(dc, "nilm"); }

int64_t gt_nilm_fill_max_rows(const gt_data_config *cfg, double period_s) {
    const double fill_max_s = gt_nilm_data_cfg(cfg)->fill_max_s;
    if (fill_max_s == 0) return 0;
    if (fill_max_s < 0) return GT_NILM_FILL_AUTO_PERIODS;
    if (!(period_s > 0)) return 0;
    double r = floor(fill_max_s / period_s + 1e-9);
    return r > (double)INT32_MAX ? INT32_MAX : (int64_t)r;
}

int64_t gt_nilm_fill_holes(float *x, int64_t n, int64_t max_rows) {
    if (max_rows <= 0) return 0;
    int64_t filled = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isfinite(x[i])) continue;
        int64_t j = i;
        while (j < n && !isfinite(x[j])) j++;
        /* hole [i, j): a finite neighbour on both sides and short enough */
        if (i > 0 && j < n && j - i <= max_rows) {
            const double a = x[i - 1], b = x[j], span = (double)(j - i + 1);
            for (int64_t k = i; k < j; k++) x[k] = (float)(a + (b - a) * (double)(k - i + 1) / span);
            filled += j - i;
        }
        i = j;
    }
    return filled;
}

uint32_t gt_nilm_appliance_mask(const char *names, const gt_io_appliance *meta, int A) {
    uint32_t all = A >= 32 ? 0xffffffffu : (1u << A) - 1u;
    if (!names || !names[0] || !strcmp(names, "all")) return all;
    uint32_t mask = 0;
    const char *p = names;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '+') p++;
        size_t n = strcspn(p, ",+ ");
        if (!n) break;
        int found = -1;
        for (int a = 0; a < A; a++)
            if (strlen(meta[a].name) == n && !strncmp(meta[a].name, p, n)) found = a;
        if (found < 0) {
            char known[1024] = "";
            for (int a = 0; a < A; a++) {
                strncat(known, a ? ", " : "", sizeof known - strlen(known) - 1);
                strncat(known, meta[a].name, sizeof known - strlen(known) - 1);
            }
            GT_FAIL(GT_EXIT_USAGE, "data.appliances: no appliance '%.*s' in the file (it has: %s)", (int)n, p, known);
        }
        mask |= 1u << found;
        p += n;
    }
    return mask;
}
