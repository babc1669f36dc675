/* train/regress.c: throughput regression between runs (train/regress.h). */
#define _GNU_SOURCE
#include "train/regress.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "train/run_json_impl.h"

/* The phases of a step compared per step (timing.json event names). */
static const char *const k_phases[] = {"data_wait", "forward", "backward", "allreduce", "optimizer"};
#define N_PHASES (sizeof k_phases / sizeof k_phases[0])

void gt_regress_config_hash(const char *config_text, const char *data_xxh64, char out[17]) {
    /* the same work wherever it runs: run.dir and the data file's path left out
     * (the data's hash stands for the file); every other stored key counts */
    XXH64_state_t *st = XXH64_createState();
    XXH64_reset(st, 0);
    const char *p = config_text ? config_text : "";
    char section[64] = "";
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (len > 1 && p[0] == '[') snprintf(section, sizeof section, "%.*s", (int)(len < 63 ? len : 63), p);
        int skip = p[0] == '#' || (!strcmp(section, "[run]") && !strncmp(p, "dir =", 5)) ||
                   (!strcmp(section, "[data]") && !strncmp(p, "file =", 6));
        if (!skip) XXH64_update(st, p, len + (eol ? 1 : 0));
        p += len + (eol ? 1 : 0);
    }
    XXH64_update(st, data_xxh64 ? data_xxh64 : "", data_xxh64 ? strlen(data_xxh64) : 0);
    snprintf(out, 17, "%016llx", (unsigned long long)XXH64_digest(st));
    XXH64_freeState(st);
}

void gt_regress_hardware_hash(const char *cpu_model, int ranks, int nodes, const char *openblas_threads,
                              const char *engine, const char *device_name, int gpus, char out[17]) {
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "%s|%d|%d|%s|%s|%s|%d", cpu_model ? cpu_model : "", ranks, nodes,
                     openblas_threads ? openblas_threads : "", engine ? engine : "", device_name ? device_name : "",
                     gpus);
    snprintf(out, 17, "%016llx", (unsigned long long)XXH64(buf, (size_t)(n < 0 ? 0 : n), 0));
}

/* One run's numbers: steady samples/s and seconds per step of each phase. */
typedef struct run_rates {
    char name[256], end_time[32];
    double sps, phase[N_PHASES];
} run_rates;

static int read_rates(const char *dir, double min_train_s, run_rates *r) {
    cJSON *t = gt_run_json_load(dir, "timing.json");
    if (!t) return -1;
    r->sps = gt_run_json_num(t, "samples_per_s");
    if (!(gt_run_json_num(t, "train_time_s") >= min_train_s)) r->sps = NAN; /* too short to compare */
    double steps = gt_run_json_num(t, "steps");
    for (size_t k = 0; k < N_PHASES; k++) r->phase[k] = NAN;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(t, "events")) {
        const char *nm = gt_run_json_str(e, "name");
        for (size_t k = 0; nm && k < N_PHASES; k++)
            if (!strcmp(nm, k_phases[k]) && steps > 0) r->phase[k] = gt_run_json_num(e, "mean_s") / steps;
    }
    cJSON_Delete(t);
    return isfinite(r->sps) && r->sps > 0 ? 0 : -1;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n) {
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) v[m++] = v[i];
    if (m == 0) return NAN;
    qsort(v, (size_t)m, sizeof *v, cmp_d);
    return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}
static int newer_first(const void *a, const void *b) {
    return strcmp(((const run_rates *)b)->end_time, ((const run_rates *)a)->end_time);
}

int gt_regress_compare(const char *run_dir, double threshold, double min_train_s, gt_regress_result *r) {
    memset(r, 0, sizeof *r);
    r->ratio = NAN;
    cJSON *m = gt_run_json_load(run_dir, "manifest.json");
    const char *ch = m ? gt_run_json_str(m, "config_hash") : NULL, *hh = m ? gt_run_json_str(m, "hardware_hash") : NULL;
    const char *my_end = m ? gt_run_json_str(m, "end_time") : NULL;
    run_rates me;
    memset(&me, 0, sizeof me);
    if (!ch || !hh || read_rates(run_dir, min_train_s, &me)) {
        cJSON_Delete(m);
        return -1;
    }
    char cfg[17], hw[17], end[32];
    snprintf(cfg, sizeof cfg, "%s", ch);
    snprintf(hw, sizeof hw, "%s", hh);
    snprintf(end, sizeof end, "%s", my_end ? my_end : "9999");
    cJSON_Delete(m);
    r->samples_per_s = me.sps;

    /* the parent directory's other runs: same hashes, finished with exit 0, ended before this one */
    char parent[PATH_MAX], self[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", run_dir);
    size_t pl = strlen(parent);
    while (pl > 1 && parent[pl - 1] == '/') parent[--pl] = 0;
    char *slash = strrchr(parent, '/');
    if (slash) {
        snprintf(self, sizeof self, "%s", slash + 1);
        if (slash == parent) parent[1] = 0;
        else *slash = 0;
    } else {
        snprintf(self, sizeof self, "%s", parent);
        snprintf(parent, sizeof parent, ".");
    }
    DIR *d = opendir(parent);
    if (!d) return 0;
    int cap = 64, n = 0;
    run_rates *base = malloc((size_t)cap * sizeof *base);
    struct dirent *de;
    while (base && (de = readdir(d))) {
        if (de->d_name[0] == '.' || !strcmp(de->d_name, self)) continue;
        char dir[PATH_MAX];
        if (snprintf(dir, sizeof dir, "%s/%s", parent, de->d_name) >= (int)sizeof dir) continue;
        cJSON *om = gt_run_json_load(dir, "manifest.json");
        if (!om) continue;
        const char *oc = gt_run_json_str(om, "config_hash"), *oh = gt_run_json_str(om, "hardware_hash"), *oe = gt_run_json_str(om, "end_time");
        int same = oc && oh && oe && !strcmp(oc, cfg) && !strcmp(oh, hw) && gt_run_json_num(om, "exit_code") == 0 &&
                   strcmp(oe, end) <= 0;
        run_rates rr;
        memset(&rr, 0, sizeof rr);
        if (same && !read_rates(dir, min_train_s, &rr)) {
            snprintf(rr.name, sizeof rr.name, "%s", de->d_name);
            snprintf(rr.end_time, sizeof rr.end_time, "%s", oe);
            if (n == cap) {
                cap *= 2;
                run_rates *nb = realloc(base, (size_t)cap * sizeof *base);
                if (!nb) {
                    cJSON_Delete(om);
                    break;
                }
                base = nb;
            }
            base[n++] = rr;
        }
        cJSON_Delete(om);
    }
    closedir(d);
    if (!base || n == 0) {
        free(base);
        return 0;
    }
    qsort(base, (size_t)n, sizeof *base, newer_first);
    if (n > GT_REGRESS_MAX_BASE) n = GT_REGRESS_MAX_BASE;
    r->n_base = n;
    snprintf(r->newest_base, sizeof r->newest_base, "%s", base[0].name);
    double v[GT_REGRESS_MAX_BASE];
    for (int i = 0; i < n; i++) v[i] = base[i].sps;
    r->base_samples_per_s = median(v, n);
    r->ratio = r->samples_per_s / r->base_samples_per_s;
    r->slower = threshold > 0 && r->ratio < 1.0 - threshold;
    double worst = 0;
    for (size_t k = 0; k < N_PHASES; k++) {
        for (int i = 0; i < n; i++) v[i] = base[i].phase[k];
        double b = median(v, n), grow = me.phase[k] - b;
        if (isfinite(grow) && grow > worst) {
            worst = grow;
            snprintf(r->phase, sizeof r->phase, "%s", k_phases[k]);
            r->phase_s = me.phase[k];
            r->base_phase_s = b;
        }
    }
    free(base);
    return 0;
}

void gt_regress_describe(const gt_regress_result *r, char *buf, size_t n) {
    char ph[200] = "";
    if (r->phase[0])
        snprintf(ph, sizeof ph, "; the phase that slowed most: %s %.3g ms per step (was %.3g ms, %+.0f%%)", r->phase,
                 1e3 * r->phase_s, 1e3 * r->base_phase_s,
                 r->base_phase_s > 0 ? 100 * (r->phase_s / r->base_phase_s - 1) : 0.0);
    snprintf(buf, n,
             "%s: %.0f samples/s, %.0f%% of the median %.0f of %d earlier run%s of this configuration on this "
             "hardware (newest: %s)%s",
             r->slower ? "throughput regression" : "throughput", r->samples_per_s, 100 * r->ratio,
             r->base_samples_per_s, r->n_base, r->n_base == 1 ? "" : "s", r->newest_base, r->slower ? ph : "");
}
