/* data/dataset.c: splits, screening, window index, normalisation and global
 * sampling (see dataset.h).
 *
 * Layout of the index. For every local item and split: the rows [lo, hi) of the
 * split, a grid of candidate window starts (first + j * base, j < n_grid, each
 * window [s, s + W) inside [lo, hi), so no window crosses a split boundary), and
 * the screened grid positions as sorted runs (j0, n) with the number of
 * screened windows before each run. The k-th kept window is found by a binary
 * search over the runs: a few dozen bytes per item plus 24 bytes per run of
 * screened windows, never per window, and never a copy of the window's data.
 *
 * Screening (per item, on the NILM aggregate or on every PdM channel):
 *   gap    a NaN/Inf sample (NILM: in the aggregate; PdM: in any channel);
 *   spike  a Hampel filter over the 7 centred samples: |x - median| >
 *          spike_k * max(1.4826 * MAD, sigma_item), where sigma_item (the
 *          item's noise from its first differences, and a quarter of its own
 *          robust spread; see item_sigma) keeps a flat stretch (a stuck meter,
 *          an idle channel) from flagging every small change and genuine
 *          short loads from passing for glitches. It finds isolated spikes of
 *          1-3 samples; a level that
 *          lasts 4 samples or more moves the median and is a real load. On PdM,
 *          rows inside a labelled event are never spikes (a gearbox shock is
 *          the anomaly the detector must see, not a glitch to remove).
 *   event  PdM with pdm_train_normal_only: a TRAIN or VAL window touching a
 *          row with labels != 0.
 * A window is screened for the first of gap, spike, event it touches.
 *
 * Normalisation: two passes over the train rows (sum -> mean, then the sum of
 * squared deviations), each summed over the ranks (dist/reduce.h), so the
 * statistics do not suffer the cancellation of sum-of-squares formulas on
 * channels with a large mean and a small spread (temperatures, rpm) and agree
 * across rank counts to rounding. */
#include "data/dataset.h"

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
#include "data/permute.h"
#include "dist/reduce.h"

enum { F_GAP = 1, F_SPIKE = 2, F_EVENT = 4, F_SPIKE_SEEN = 8, F_OFFCOND = 16, F_OFFTRAIN = 32 };
enum { R_GAP = 0, R_SPIKE = 1, R_EVENT = 2, R_SPIKE_FOUND = 3, R_SPIKE_REPAIRED = 4, R_COUNT = 5 };
static const char *const k_reason[R_COUNT] = {"gap", "spike", "event", "spike_found", "spike_repaired"};

#define HAMPEL_HALF 3

typedef struct ds_run {
    int64_t j0, n; /* screened grid positions [j0, j0 + n) */
    int64_t cum;   /* screened positions in the earlier runs of the same (item, split) */
} ds_run;

typedef struct ds_split {
    int64_t lo, hi;      /* rows [lo, hi) of the item */
    int64_t first;       /* first grid start (row within the item) */
    int64_t n_grid;      /* candidate windows */
    int64_t n_kept;      /* windows after screening */
    int64_t local_first; /* local window number of this item's first kept window */
    int64_t run_off;     /* runs [run_off, run_off + n_runs) of ds->runs */
    int64_t n_runs;
} ds_split;

typedef struct ds_item {
    int64_t row0, n_rows; /* local rows [row0, row0 + n_rows) of the shard */
    int64_t base;         /* rows between grid starts */
    int holdout;
    int excluded;         /* outside cfg.items / farms / machine_types: no windows */
    int64_t filled;       /* nilm: aggregate samples filled (cfg.fill_max_s) */
    int64_t n_total, n_gap, n_spike, n_event, n_filtered; /* windows on the grid, screened by reason */
    ds_split sp[GT_SPLIT_COUNT];
} ds_item;

typedef struct ds_record { /* one CSV line of the screening report */
    int32_t file_index, reason;
    int64_t id, start_ms, end_ms;
} ds_record;

struct gt_dataset {
    gt_task task;
    gt_data_config cfg;
    gt_nilm_shard *nilm; /* owned (one of the two) */
    gt_pdm_shard *pdm;
    int n_items, n_items_total;
    int n_cols;           /* A (nilm targets) or C (pdm channels) */
    int64_t W;
    const int64_t *ts;    /* [n_rows] */
    float *x;             /* nilm aggregate [n_rows] or pdm signals [n_rows, C] */
    const float *app;     /* nilm appliances [n_rows, A] */
    float *tfeat;         /* nilm time features [n_rows, cfg.time_features] (owned), or NULL */
    const uint8_t *labels;/* pdm [n_rows] */
    const int32_t *index; /* [n_items] file index */
    const int64_t *id;    /* [n_items] */
    ds_item *items;       /* [n_items] */
    int64_t *strides;     /* nilm [n_items, A]: appliance a counts where start % stride == 0 */
    ds_run *runs;
    int64_t n_runs, cap_runs;
    ds_record *recs;
    int64_t n_recs, cap_recs;
    int64_t *spike_rows;  /* sorted local rows holding a detected spike (DROP: not used in moments) */
    int64_t n_spike_rows, cap_spike_rows;
    int64_t *cond_ok;     /* pdm with a condition filter: sorted local row ranges [a, b) (pairs) that pass */
    int64_t n_cond_ok, cap_cond_ok;
    uint32_t app_mask;    /* nilm: appliances whose targets count (bit a) */
    int64_t n_local[GT_SPLIT_COUNT], n_global[GT_SPLIT_COUNT];
    int64_t *g_first[GT_SPLIT_COUNT]; /* [n_items_total + 1] global window prefix in file order */
    int32_t *owner_local;             /* [n_items_total] local item index, -1 elsewhere */
    gt_norm_stats norm;
    int64_t norm_count[1 + GT_DATA_MAX_CHANNELS]; /* finite train values behind norm, over all ranks */
    gt_screen_summary screen_local;
    uint8_t *spike_ch;    /* pdm [n_cols]: 1 where the spike test runs (cfg.spike_channels) */
    int64_t *spikes_ch;   /* pdm [n_cols]: spikes found per channel, this rank */
    int64_t *nan_ch;      /* pdm [n_cols]: non-finite samples per channel, this rank */
    uint8_t *nbm_role;    /* pdm nbm [n_cols]: gt_nbm_role of each channel; NULL with pdm_target next */
    gt_norm_stats *item_norm; /* pdm, data.norm = turbine [n_items]: each item's statistics; else NULL */
    int nbm_n_in, nbm_n_tg;
    /* augmentation: activations [act_off[li * A + a], act_off[li * A + a + 1]) of ds->acts */
    int64_t *acts;        /* (row, len) pairs, local rows */
    int64_t *act_off;     /* [n_items * A + 1] */
};

const char *gt_split_name(gt_split s) {
    switch (s) {
    case GT_SPLIT_TRAIN: return "train";
    case GT_SPLIT_VAL: return "val";
    case GT_SPLIT_TEST: return "test";
    case GT_SPLIT_HOLDOUT: return "holdout";
    default: return "?";
    }
}

int gt_data_filter_parse(gt_data_filter *f, const char *text, char *err, size_t err_bytes) {
    memset(f, 0, sizeof *f);
    const char *p = text ? text : "";
    while (*p == ' ') p++;
    if (!*p || !strcmp(p, "all")) return 0;
    while (*p) {
        char *end;
        while (*p == ' ') p++;
        errno = 0; /* an id beyond long long is not one: strtoll gave LLONG_MAX, named as the id */
        long long lo = strtoll(p, &end, 10), hi;
        if (end == p || errno == ERANGE) goto bad;
        p = end;
        while (*p == ' ') p++;
        if (*p == '-' ) {
            p++;
            hi = strtoll(p, &end, 10);
            if (end == p || errno == ERANGE) goto bad;
            p = end;
        } else {
            hi = lo;
        }
        while (*p == ' ') p++;
        if (hi < lo) {
            snprintf(err, err_bytes, "empty range %lld-%lld in '%s'", lo, hi, text);
            return -1;
        }
        if (f->n == GT_DATA_MAX_RANGES) {
            snprintf(err, err_bytes, "more than %d ranges in '%s'", GT_DATA_MAX_RANGES, text);
            return -1;
        }
        f->lo[f->n] = lo;
        f->hi[f->n] = hi;
        f->n++;
        if (*p == ',') {
            p++;
            while (*p == ' ') p++;
            if (!*p) goto bad;
        } else if (*p) {
            goto bad;
        }
    }
    return 0;
bad:
    snprintf(err, err_bytes, "'%s' is not a list of integers and ranges (e.g. 0,2,5-9)", text);
    memset(f, 0, sizeof *f);
    return -1;
}

int gt_data_filter_has(const gt_data_filter *f, int64_t v) {
    if (f->n == 0) return 1;
    for (int r = 0; r < f->n; r++)
        if (v >= f->lo[r] && v <= f->hi[r]) return 1;
    return 0;
}

void gt_data_config_defaults(gt_data_config *cfg, gt_task task) {
    memset(cfg, 0, sizeof *cfg);
    cfg->task = task;
    if (task == GT_TASK_NILM) {
        cfg->window = 599;      /* seq2point (Zhang et al. 2018) */
        cfg->stride = 0;        /* per-appliance strides */
        cfg->stride_frac = 0.5; /* a window every half on-duration of each appliance */
    } else {
        cfg->window = 512; /* the field case: window 512, stride 128 */
        cfg->stride = 128;
        cfg->stride_frac = 0.5;
    }
    cfg->split_train = 0.7;
    cfg->split_val = 0.15;
    cfg->holdout_every = 0;
    cfg->screen = GT_SCREEN_DROP;
    cfg->spike_k = 8.0;
    cfg->pdm_train_normal_only = 1;
    cfg->seed = 1;
    cfg->fill_max_s = -1; /* auto */
    cfg->pdm_row_missing = 0.5;
    cfg->pdm_short_gap = 6;
    cfg->spike_min_w = 5000;
    snprintf(cfg->spike_channels, sizeof cfg->spike_channels, "auto");
    cfg->pdm_target = GT_PDM_TARGET_NEXT;
    snprintf(cfg->nbm_inputs, sizeof cfg->nbm_inputs, "auto");
    snprintf(cfg->nbm_targets, sizeof cfg->nbm_targets, "auto");
    cfg->care_event = -1;
    cfg->care.event_id = -1;
}

int64_t gt_data_pdm_impute(float *x, int64_t n) {
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) x[i] = 0.0f, k++;
    return k;
}

int64_t gt_data_fill_max_rows(const gt_data_config *cfg, double period_s) {
    if (cfg->fill_max_s == 0) return 0;
    if (cfg->fill_max_s < 0) return GT_DATA_FILL_AUTO_PERIODS;
    if (!(period_s > 0)) return 0;
    double r = floor(cfg->fill_max_s / period_s + 1e-9);
    return r > (double)INT32_MAX ? INT32_MAX : (int64_t)r;
}

/* ----------------------------------------------------- channel kinds -- */

static int has_word(const char *s, const char *w) { return strstr(s, w) != NULL; }

/* lower-case "name description" (what the word tests read) into out */
static void channel_text(const char *name, const char *desc, char *out, size_t cap) {
    snprintf(out, cap, "%s%s%s", name ? name : "", desc && desc[0] ? " " : "", desc ? desc : "");
    for (char *p = out; *p; p++) *p = (char)tolower((unsigned char)*p);
}

gt_channel_kind gt_data_channel_kind(const char *name, const char *unit) {
    return gt_data_channel_kind_desc(name, NULL, unit);
}

gt_channel_kind gt_data_channel_kind_desc(const char *name, const char *desc, const char *unit) {
    char n[160], u[32];
    size_t i;
    for (i = 0; unit && unit[i] && i + 1 < sizeof u; i++) u[i] = (char)tolower((unsigned char)unit[i]);
    u[i] = 0;
    channel_text(name, NULL, n, sizeof n);
    size_t l = strlen(n);
    /* an interval's spread or extreme values: their own distribution, jumpy by nature */
    if (l > 4 && (!strcmp(n + l - 4, "_std") || !strcmp(n + l - 4, "_min") || !strcmp(n + l - 4, "_max")))
        return GT_CHANNEL_AGGREGATE;
    channel_text(name, desc, n, sizeof n); /* the words of the name and of the description */
    /* the degree sign in UTF-8 (c2 b0) or Latin-1 (b0), as CARE's feature descriptions write it */
    const int has_deg = strchr(u, 0xb0) != NULL || has_word(u, "deg");
    const int celsius = has_deg && strchr(u, 'c') != NULL;
    /* temperatures, pressures, vibration: follow the machine's condition slowly */
    if (celsius || !strcmp(u, "c") || !strcmp(u, "k") || !strcmp(u, "bar") || !strcmp(u, "mm/s") || !strcmp(u, "g"))
        return GT_CHANNEL_CONDITION;
    if (has_word(n, "temp") || has_word(n, "press") || has_word(n, "vib") || has_word(n, "accel") ||
        has_word(n, "oil") || has_word(n, "bearing") || has_word(n, "kurtosis") || has_word(n, "humid"))
        return GT_CHANNEL_CONDITION;
    /* angles: wrap around and jump with the wind */
    if (has_deg || !strcmp(u, "degree") || !strcmp(u, "degrees") || !strcmp(u, "rad") || has_word(n, "angle") ||
        has_word(n, "direction") || has_word(n, "yaw") || has_word(n, "pitch") || has_word(n, "nacelle_position"))
        return GT_CHANNEL_ANGLE;
    /* operational drivers: what the wind and the controller do */
    static const char *const op_words[] = {"wind", "power", "speed", "rpm", "rotor", "status", "state", "current",
                                           "voltage", "frequency", "reactive", "setpoint", "set_point", "torque",
                                           "energy", "production", "curtail", "grid", "count", "hours", "cos_phi"};
    for (size_t k = 0; k < sizeof op_words / sizeof op_words[0]; k++)
        if (has_word(n, op_words[k])) return GT_CHANNEL_OPERATIONAL;
    static const char *const op_units[] = {"m/s", "kw", "w", "mw", "kvar", "var", "kva", "rpm", "a", "v", "kv",
                                           "hz", "kwh", "mwh", "wh", "%", "h", "s"};
    for (size_t k = 0; k < sizeof op_units / sizeof op_units[0]; k++)
        if (!strcmp(u, op_units[k])) return GT_CHANNEL_OPERATIONAL;
    return GT_CHANNEL_CONDITION;
}

const char *gt_data_channel_kind_name(gt_channel_kind k) {
    static const char *const names[] = {"condition", "operational", "angle", "aggregate"};
    return (unsigned)k < 4 ? names[k] : "?";
}

/* 1 when one of the comma-separated fnmatch patterns of sel matches name. */
static int name_matches(const char *sel, const char *name) {
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", sel);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        if (*tok && fnmatch(tok, name, 0) == 0) return 1;
    }
    return 0;
}

int gt_data_spike_channel(const gt_data_config *cfg, const char *name, const char *desc, const char *unit) {
    const char *sel = cfg->spike_channels;
    if (!sel[0] || !strcmp(sel, "auto")) return gt_data_channel_kind_desc(name, desc, unit) == GT_CHANNEL_CONDITION;
    if (!strcmp(sel, "all")) return 1;
    if (!strcmp(sel, "none")) return 0;
    return name_matches(sel, name);
}

int gt_data_pdm_target_parse(const char *text) {
    if (!text || !*text || !strcmp(text, "next")) return GT_PDM_TARGET_NEXT;
    if (!strcmp(text, "nbm")) return GT_PDM_TARGET_NBM;
    return -1;
}

const char *gt_data_pdm_target_name(int t) { return t == GT_PDM_TARGET_NBM ? "nbm" : "next"; }

/* The automatic role of one channel (gt_data_nbm_roles). */
static gt_nbm_role nbm_auto_role(const char *name, const char *desc, const char *unit) {
    char n[128], t[160], u[32];
    size_t i;
    for (i = 0; name[i] && i + 1 < sizeof n; i++) n[i] = (char)tolower((unsigned char)name[i]);
    n[i] = 0;
    for (i = 0; unit[i] && i + 1 < sizeof u; i++) u[i] = (char)tolower((unsigned char)unit[i]);
    u[i] = 0;
    gt_channel_kind k = gt_data_channel_kind_desc(n, desc, unit);
    const int aggregate = k == GT_CHANNEL_AGGREGATE;
    if (aggregate) { /* an interval's min/max/std: the role of the signal it summarises */
        n[strlen(n) - 4] = 0;
        k = gt_data_channel_kind_desc(n, desc, unit);
    }
    channel_text(n, desc, t, sizeof t);
    const char *nm = t; /* the words tested below: the name and the description */
    /* a counter only grows: as an input it tells the model the date, which the test rows lie beyond */
    if (has_word(nm, "energy") || has_word(nm, "counter") || has_word(nm, "hours") || !strcmp(u, "kwh") ||
        !strcmp(u, "mwh") || !strcmp(u, "wh") || !strcmp(u, "h"))
        return GT_NBM_UNUSED;
    /* the weather is an operating condition, not the machine's */
    if (has_word(nm, "ambient") || has_word(nm, "outside") || has_word(nm, "outdoor") || has_word(nm, "amb_temp"))
        return GT_NBM_INPUT;
    /* a condition signal's min/max/std: noisy, and as an input it would give the target away */
    if (aggregate && k == GT_CHANNEL_CONDITION) return GT_NBM_UNUSED;
    return k == GT_CHANNEL_CONDITION ? GT_NBM_TARGET : GT_NBM_INPUT;
}

void gt_data_nbm_roles(const gt_data_config *cfg, const gt_io_channel *ch, int C, uint8_t *role, int *n_inputs,
                       int *n_targets) {
    const int in_auto = !cfg->nbm_inputs[0] || !strcmp(cfg->nbm_inputs, "auto");
    const int tg_auto = !cfg->nbm_targets[0] || !strcmp(cfg->nbm_targets, "auto");
    *n_inputs = *n_targets = 0;
    for (int c = 0; c < C; c++) {
        gt_nbm_role a = nbm_auto_role(ch[c].name, ch[c].desc, ch[c].unit);
        int tg = tg_auto ? a == GT_NBM_TARGET : name_matches(cfg->nbm_targets, ch[c].name);
        int in = !tg && (in_auto ? a == GT_NBM_INPUT : name_matches(cfg->nbm_inputs, ch[c].name));
        role[c] = (uint8_t)(tg ? GT_NBM_TARGET : in ? GT_NBM_INPUT : GT_NBM_UNUSED);
        *n_targets += tg;
        *n_inputs += in;
    }
}

void gt_data_nbm_input(float *x, int64_t n_steps, int C, const uint8_t *role) {
    for (int64_t t = 0; t < n_steps; t++)
        for (int c = 0; c < C; c++)
            if (role[c] != GT_NBM_INPUT) x[t * C + c] = 0.0f;
}

int64_t gt_data_fill_holes(float *x, int64_t n, int64_t max_rows) {
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

void gt_data_config_resolve(gt_data_config *cfg, gt_task task) {
    gt_data_config d;
    gt_data_config_defaults(&d, task);
    cfg->task = task;
    if (cfg->window == GT_DATA_WINDOW_TASK_DEFAULT) cfg->window = d.window;
    if (cfg->stride == GT_DATA_STRIDE_TASK_DEFAULT) cfg->stride = d.stride;
}

void gt_data_item_split(int64_t n_rows, int32_t file_index, double split_train, double split_val, int holdout_every,
                        int64_t *b1, int64_t *b2, int *holdout) {
    *holdout = holdout_every > 0 && file_index % holdout_every == holdout_every - 1;
    int64_t a = llround(split_train * (double)n_rows), b = llround((split_train + split_val) * (double)n_rows);
    if (a > n_rows) a = n_rows;
    if (b > n_rows) b = n_rows;
    if (b < a) b = a;
    *b1 = a;
    *b2 = b;
}

void gt_data_item_rows_of(const gt_data_config *cfg, int64_t n_rows, int32_t file_index, gt_data_item_rows *r) {
    memset(r, 0, sizeof *r);
    const gt_data_care_sel *cs = &cfg->care;
    if (cs->event_id >= 0) { /* the authors' protocol: one event dataset's training and prediction parts */
        r->excluded = file_index != cs->turbine;
        if (r->excluded) return;
        int64_t lo = cs->train_lo < 0 ? 0 : cs->train_lo, hi = cs->train_hi > n_rows ? n_rows : cs->train_hi;
        if (hi < lo) hi = lo;
        double f = cfg->split_train / (cfg->split_train + cfg->split_val);
        int64_t b1 = lo + llround(f * (double)(hi - lo));
        if (b1 > hi) b1 = hi;
        r->lo[GT_SPLIT_TRAIN] = lo, r->hi[GT_SPLIT_TRAIN] = b1;
        r->lo[GT_SPLIT_VAL] = b1, r->hi[GT_SPLIT_VAL] = hi;
        r->lo[GT_SPLIT_TEST] = cs->pred_lo < 0 ? 0 : cs->pred_lo;
        r->hi[GT_SPLIT_TEST] = cs->pred_hi > n_rows ? n_rows : cs->pred_hi;
        if (r->hi[GT_SPLIT_TEST] < r->lo[GT_SPLIT_TEST]) r->hi[GT_SPLIT_TEST] = r->lo[GT_SPLIT_TEST];
        return;
    }
    int64_t b1, b2;
    gt_data_item_split(n_rows, file_index, cfg->split_train, cfg->split_val, cfg->holdout_every, &b1, &b2, &r->holdout);
    if (r->holdout) {
        r->hi[GT_SPLIT_HOLDOUT] = n_rows;
        return;
    }
    r->hi[GT_SPLIT_TRAIN] = b1;
    r->lo[GT_SPLIT_VAL] = b1, r->hi[GT_SPLIT_VAL] = b2;
    r->lo[GT_SPLIT_TEST] = b2, r->hi[GT_SPLIT_TEST] = n_rows;
}

void gt_data_care_select(gt_data_config *cfg, const char *path, MPI_Comm comm) {
    memset(&cfg->care, 0, sizeof cfg->care);
    cfg->care.event_id = -1;
    if (cfg->care_event < 0) return;
    int64_t n = 0;
    int64_t *ce = gt_care_events_read(path, comm, &n); /* the same table on every rank: the same verdict */
    GT_CHECK(ce != NULL, GT_EXIT_USAGE,
             "%s: data.care_event = %lld: the file has no /care_events (import a CARE to Compare farm with "
             "`gridtrain import care`)", path, (long long)cfg->care_event);
    const int64_t *q = NULL;
    for (int64_t i = 0; i < n && !q; i++)
        if (ce[GT_CARE_EVENT_K * i + 1] == cfg->care_event) q = ce + GT_CARE_EVENT_K * i;
    if (!q) {
        char ids[256] = "";
        size_t l = 0;
        for (int64_t i = 0; i < n && l + 24 < sizeof ids; i++)
            l += (size_t)snprintf(ids + l, sizeof ids - l, "%s%lld", i ? ", " : "",
                                  (long long)ce[GT_CARE_EVENT_K * i + 1]);
        if (l + 24 >= sizeof ids) snprintf(ids + l, sizeof ids - l, ", ...");
        free(ce);
        GT_FAIL(GT_EXIT_USAGE, "%s: data.care_event = %lld: no such event dataset in /care_events (it has %s)", path,
                (long long)cfg->care_event, ids);
    }
    gt_data_care_sel s = {q[1], (int32_t)q[0], q[2] == 1, q[7], q[8], q[3], q[4]};
    free(ce);
    GT_CHECK(s.train_lo >= 0 && s.train_hi > s.train_lo, GT_EXIT_USAGE,
             "%s: data.care_event = %lld: /care_events has no training part for it (a file imported before "
             "train_start_row was stored: import the farm again)", path, (long long)cfg->care_event);
    cfg->care = s;
}

/* ------------------------------------------------ filters against the file -- */

static int i64_cmp(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* One data filter option checked against the values the file has: `mine`
 * [n_mine] are this rank's (its items' ids, farms, ... or its segments'
 * condition codes); codes 0..n_legend-1 of a legend count as present too. */
typedef struct {
    const char *key;        /* "data.farms" */
    const char *what;       /* "farm": the message says "no farm 7 in the file" */
    const gt_data_filter *f;
    const int64_t *mine;
    int n_mine;
    const char *legend;     /* rank 0: names [n_legend][GT_FORMAT_NAME_LEN] or NULL */
    int n_legend;
    int legend_counts;      /* 1: a code of the legend is present even without a value */
} filter_check;

/* Collective. Gathers the values to rank 0, which decides; every rank learns
 * the verdict and, when an entry matches nothing, all end the job together. */
static void filter_check_run(const char *file, const filter_check *c, MPI_Comm comm) {
    if (c->f->n == 0) return;
    int rank = 0;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    int64_t n_all = 0;
    int64_t *all = gt_dist_gatherv(c->mine, c->n_mine, MPI_INT64_T, &n_all, "data: too many items to gather", comm);
    char msg[1400] = "";
    int bad = 0;
    if (rank == 0) {
        const int64_t n_leg = c->legend_counts ? c->n_legend : 0;
        all = GT_REALLOC(all, sizeof(int64_t) * (size_t)(n_all + n_leg + 1));
        for (int64_t k = 0; k < n_leg; k++) all[n_all++] = k;
        qsort(all, (size_t)n_all, sizeof *all, i64_cmp);
        int64_t u = 0; /* sorted, unique */
        for (int64_t i = 0; i < n_all; i++)
            if (u == 0 || all[i] != all[u - 1]) all[u++] = all[i];
        char missing[512] = "", have[640] = "";
        for (int r = 0; r < c->f->n; r++) {
            int64_t lo = 0, hi = u; /* first value >= the range's low end */
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (all[mid] < c->f->lo[r]) lo = mid + 1;
                else hi = mid;
            }
            if (lo < u && all[lo] <= c->f->hi[r]) continue;
            size_t l = strlen(missing);
            if (l + 48 >= sizeof missing) {
                if (!strstr(missing, ", ...")) snprintf(missing + l, sizeof missing - l, ", ...");
            } else if (c->f->lo[r] == c->f->hi[r]) {
                snprintf(missing + l, sizeof missing - l, "%s%lld", bad ? ", " : "", (long long)c->f->lo[r]);
            } else {
                snprintf(missing + l, sizeof missing - l, "%s%lld-%lld", bad ? ", " : "", (long long)c->f->lo[r],
                         (long long)c->f->hi[r]);
            }
            bad++;
        }
        if (bad) { /* the values the file has: the first GT_DATA_FILTER_LIST_MAX, with their legend names */
            size_t l = 0;
            for (int64_t i = 0; i < u; i++) {
                if (i == GT_DATA_FILTER_LIST_MAX || l + 64 >= sizeof have) {
                    snprintf(have + l, sizeof have - l, ", ... (%lld in all)", (long long)u);
                    break;
                }
                const char *nm = c->legend && all[i] >= 0 && all[i] < c->n_legend
                                     ? c->legend + (size_t)all[i] * GT_FORMAT_NAME_LEN : "";
                l += (size_t)snprintf(have + l, sizeof have - l, "%s%lld", i ? ", " : "", (long long)all[i]);
                if (nm[0] && l < sizeof have) l += (size_t)snprintf(have + l, sizeof have - l, " (%s)", nm);
            }
            if (u == 0) snprintf(have, sizeof have, "none");
            snprintf(msg, sizeof msg, "%s: %s: no %s %s in the file (it has: %s)", file, c->key, c->what, missing,
                     have);
        }
    }
    free(all);
    if (gt_dist_max_int(bad, comm)) gt_io_fail(comm, GT_EXIT_USAGE, msg); /* rank 0 prints its message */
}

void gt_data_check_filters_nilm(const char *file, const gt_nilm_shard *sh, const gt_data_config *cfg, MPI_Comm comm) {
    filter_check c = {"data.items", "household with id", &cfg->items, sh->id, sh->n_households, NULL, 0, 0};
    filter_check_run(file, &c, comm);
}

void gt_data_check_filters_pdm(const char *file, const gt_pdm_shard *sh, const gt_data_config *cfg, MPI_Comm comm) {
    int rank = 0;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    const int nt = sh->n_turbines;
    int64_t *v = GT_MALLOC(sizeof(int64_t) * (size_t)((nt > sh->n_segments ? nt : sh->n_segments) + 1));
    filter_check c = {"data.items", "turbine with id", &cfg->items, sh->id, nt, NULL, 0, 0};
    filter_check_run(file, &c, comm);
    for (int k = 0; k < nt; k++) v[k] = sh->farm[k];
    c = (filter_check){"data.farms", "farm", &cfg->farms, v, nt, NULL, 0, 0};
    filter_check_run(file, &c, comm);
    if (cfg->machine_types.n > 0) {
        int n_leg = 0; /* names for the message only: a type no turbine has selects nothing */
        char *leg = rank == 0 ? gt_legend_read(file, "machine_type", &n_leg) : NULL;
        for (int k = 0; k < nt; k++) v[k] = sh->machine_type[k];
        c = (filter_check){"data.machine_types", "machine type", &cfg->machine_types, v, nt, leg, n_leg, 0};
        filter_check_run(file, &c, comm);
        free(leg);
    }
    if (cfg->conditions.n > 0 || cfg->train_conditions.n > 0) {
        /* the codes of the turbines' segments, and those /legend/condition names (a CARE file names
         * train_and_prediction whether or not a farm has such rows: 0,2 stays a valid selection) */
        int n_leg = 0;
        char *leg = rank == 0 ? gt_legend_read(file, "condition", &n_leg) : NULL;
        for (int i = 0; i < sh->n_segments; i++) v[i] = sh->segments[i].code;
        static const char *const keys[2] = {"data.conditions", "data.train_conditions"};
        const gt_data_filter *fs[2] = {&cfg->conditions, &cfg->train_conditions};
        for (int j = 0; j < 2; j++) {
            c = (filter_check){keys[j], "condition code", fs[j], v, sh->n_segments, leg, n_leg, 1};
            filter_check_run(file, &c, comm);
        }
        free(leg);
    }
    free(v);
}

int gt_data_config_n_in(const gt_data_config *cfg, int n_cols) {
    return cfg->task == GT_TASK_NILM ? 1 + cfg->time_features : n_cols;
}

int gt_data_time_features_parse(const char *text) {
    if (!text || !*text || !strcmp(text, "none")) return 0;
    if (!strcmp(text, "day")) return 2;
    if (!strcmp(text, "day+week")) return 4;
    return -1;
}

static int zone_is_utc(const char *zone) { return !zone || !*zone || !strcmp(zone, "UTC"); }

int gt_data_timezone_check(const char *zone, char *err, size_t err_bytes) {
    if (zone_is_utc(zone)) return 0;
    /* glibc silently falls back to UTC for a zone it cannot find: look for the file */
    const char *dir = getenv("TZDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", zone);
    struct stat st;
    if (zone[0] == '/' || strstr(zone, "..") || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, err_bytes, "unknown time zone '%s' (no %s; IANA names such as Europe/London, or UTC)", zone,
                 path);
        return -1;
    }
    return 0;
}

/* The UTC offset comes from the C library's time-zone database (localtime_r
 * with TZ = zone), looked up again whenever the time crosses a quarter hour
 * (zones change offset on quarter hours) or goes back (the next item), so
 * daylight saving moves the features at the right row. */
void gt_data_time_features(const int64_t *ts, int64_t n_rows, int F, const char *zone, float *out) {
    if (F == 0) return;
    const int utc = zone_is_utc(zone);
    char *old_tz = NULL;
    if (!utc) {
        const char *o = getenv("TZ");
        old_tz = o ? strdup(o) : NULL;
        setenv("TZ", zone, 1);
        tzset();
    }
    const double two_pi = 6.283185307179586;
    int64_t next_check = INT64_MIN; /* s */
    double off = 0.0;               /* s east of UTC */
    for (int64_t r = 0; r < n_rows; r++) {
        int64_t ms = ts[r];
        int64_t sec = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
        if (!utc && (sec >= next_check || sec < next_check - 900)) {
            time_t tt = (time_t)sec;
            struct tm tmv;
            off = localtime_r(&tt, &tmv) ? (double)tmv.tm_gmtoff : 0.0;
            int64_t q = sec >= 0 ? sec / 900 : -((-sec + 899) / 900);
            next_check = (q + 1) * 900;
        }
        double local = (double)ms / 1000.0 + off;
        double day = fmod(local, 86400.0);
        if (day < 0) day += 86400.0;
        float *f = out + r * F;
        f[0] = (float)sin(two_pi * day / 86400.0);
        f[1] = (float)cos(two_pi * day / 86400.0);
        if (F == 4) { /* 1970-01-01 was a Thursday: +3 days puts Monday 00:00 at phase 0 */
            double week = fmod(local + 3.0 * 86400.0, 604800.0);
            if (week < 0) week += 604800.0;
            f[2] = (float)sin(two_pi * week / 604800.0);
            f[3] = (float)cos(two_pi * week / 604800.0);
        }
    }
    if (!utc) {
        if (old_tz) setenv("TZ", old_tz, 1);
        else unsetenv("TZ");
        tzset();
        free(old_tz);
    }
}

static void time_features(gt_dataset *ds, int64_t n_rows) {
    const int F = ds->cfg.time_features;
    if (F == 0) return;
    ds->tfeat = GT_MALLOC(sizeof(float) * (size_t)(n_rows > 0 ? n_rows : 1) * (size_t)F);
    gt_data_time_features(ds->ts, n_rows, F, ds->cfg.timezone, ds->tfeat);
}

/* ------------------------------------------------------------ helpers -- */

static void push_run(gt_dataset *ds, ds_run r) {
    if (ds->n_runs == ds->cap_runs) {
        ds->cap_runs = ds->cap_runs ? 2 * ds->cap_runs : 64;
        ds->runs = GT_REALLOC(ds->runs, sizeof(ds_run) * (size_t)ds->cap_runs);
    }
    ds->runs[ds->n_runs++] = r;
}
static void push_rec(gt_dataset *ds, ds_record r) {
    if (ds->n_recs == ds->cap_recs) {
        ds->cap_recs = ds->cap_recs ? 2 * ds->cap_recs : 64;
        ds->recs = GT_REALLOC(ds->recs, sizeof(ds_record) * (size_t)ds->cap_recs);
    }
    ds->recs[ds->n_recs++] = r;
}
static void push_cond_ok(gt_dataset *ds, int64_t a, int64_t b) {
    if (ds->n_cond_ok + 2 > ds->cap_cond_ok) {
        ds->cap_cond_ok = ds->cap_cond_ok ? 2 * ds->cap_cond_ok : 64;
        ds->cond_ok = GT_REALLOC(ds->cond_ok, sizeof(int64_t) * (size_t)ds->cap_cond_ok);
    }
    ds->cond_ok[ds->n_cond_ok++] = a;
    ds->cond_ok[ds->n_cond_ok++] = b;
}
static void push_spike_row(gt_dataset *ds, int64_t row) {
    if (ds->n_spike_rows == ds->cap_spike_rows) {
        ds->cap_spike_rows = ds->cap_spike_rows ? 2 * ds->cap_spike_rows : 64;
        ds->spike_rows = GT_REALLOC(ds->spike_rows, sizeof(int64_t) * (size_t)ds->cap_spike_rows);
    }
    ds->spike_rows[ds->n_spike_rows++] = row;
}

static int cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* sorts v[m] (m <= 2 * HAMPEL_HALF + 1) and returns its lower median */
static float small_median(float *v, int m) {
    for (int i = 1; i < m; i++) {
        float t = v[i];
        int j = i - 1;
        while (j >= 0 && v[j] > t) v[j + 1] = v[j], j--;
        v[j + 1] = t;
    }
    return v[(m - 1) / 2];
}

/* The item's floor of the spike scale, from up to 65536 evenly spaced samples
 * of x[i*stride] (i < n, finite values only): the largest of
 *   1.4826 * MAD of the first differences (the noise: a flat stretch does not
 *       flag every small change),
 *   0.25 * 1.4826 * MAD of the values (the item's own spread: a genuine short
 *       load of a few hundred watts in a household whose load varies by
 *       kilowatts is not a glitch; meter spikes are tens of kW),
 *   1e-3 * mean|x| + 1e-6. */
static double item_sigma(const float *x, int64_t n, int64_t stride) {
    const int64_t cap = 65536;
    int64_t step = n / cap + 1, m = 0, mv = 0;
    float *d = GT_MALLOC(sizeof(float) * (size_t)cap), *v = GT_MALLOC(sizeof(float) * (size_t)cap);
    double sum_abs = 0;
    for (int64_t i = 0; i < n && mv < cap; i += step) {
        float b = x[i * stride];
        if (!isfinite(b)) continue;
        v[mv++] = b;
        sum_abs += fabs(b);
        float a = i > 0 ? x[(i - 1) * stride] : NAN;
        if (isfinite(a)) d[m++] = b - a;
    }
    double s = 0, floor_ = 1e-6;
    float *arr[2] = {d, v};
    int64_t cnt[2] = {m, mv};
    double w[2] = {1.0, 0.25};
    for (int k = 0; k < 2; k++) {
        if (cnt[k] == 0) continue;
        float *a = arr[k];
        qsort(a, (size_t)cnt[k], sizeof(float), cmp_f);
        float med = a[cnt[k] / 2];
        for (int64_t i = 0; i < cnt[k]; i++) a[i] = fabsf(a[i] - med);
        qsort(a, (size_t)cnt[k], sizeof(float), cmp_f);
        double sk = w[k] * 1.4826 * a[cnt[k] / 2];
        if (sk > s) s = sk;
    }
    if (mv > 0) floor_ += 1e-3 * sum_abs / (double)mv;
    free(d);
    free(v);
    return s > floor_ ? s : floor_;
}

/* Hampel filter of one channel x[i*stride], i < n. Rows whose flags have
 * F_EVENT set are never spikes when skip_events. Marks F_SPIKE_SEEN (and
 * F_SPIKE when !repair) in flags; with repair replaces the sample by the local
 * median. Returns the number of spike samples. */
static int64_t hampel(float *x, int64_t n, int64_t stride, double k, double min_dev, int repair, int skip_events,
                      uint8_t *flags) {
    const double sigma = item_sigma(x, n, stride);
    const double thr_floor = k * sigma > min_dev ? k * sigma : min_dev;
    int64_t found = 0;
    float v[2 * HAMPEL_HALF + 1];
    for (int64_t i = 0; i < n; i++) {
        float xi = x[i * stride];
        if (!isfinite(xi) || (skip_events && (flags[i] & F_EVENT))) continue;
        int64_t a = i - HAMPEL_HALF < 0 ? 0 : i - HAMPEL_HALF;
        int64_t b = i + HAMPEL_HALF + 1 > n ? n : i + HAMPEL_HALF + 1;
        int m = 0, near = 0;
        for (int64_t j = a; j < b; j++) {
            float xj = x[j * stride];
            if (!isfinite(xj)) continue;
            v[m++] = xj;
            near += fabs((double)xj - xi) <= thr_floor;
        }
        /* more than half of the window within thr_floor of x_i puts the median
         * there too: x_i cannot pass the (larger) threshold; the common case */
        if (m < 3 || 2 * near > m) continue;
        float med = small_median(v, m);
        for (int j = 0; j < m; j++) v[j] = fabsf(v[j] - med);
        double mad = 1.4826 * small_median(v, m);
        double scale = mad > sigma ? mad : sigma;
        if (fabs((double)xi - med) > k * scale && fabs((double)xi - med) > min_dev) {
            found++;
            flags[i] |= F_SPIKE_SEEN;
            if (repair) x[i * stride] = med;
            else flags[i] |= F_SPIKE;
        }
    }
    return found;
}

static int64_t ts_at(const gt_dataset *ds, const ds_item *it, int64_t row) { return ds->ts[it->row0 + row]; }

/* Flags, screened runs and records of one item (flags: [n_rows] scratch). */
static void index_item(gt_dataset *ds, int li, uint8_t *flags) {
    ds_item *it = &ds->items[li];
    const gt_data_config *cfg = &ds->cfg;
    const int64_t n = it->n_rows, W = ds->W;
    const int pdm = ds->task == GT_TASK_PDM;
    const int C = pdm ? ds->n_cols : 1;
    float *x = ds->x + it->row0 * C;
    memset(flags, 0, (size_t)n);
    if (pdm)
        for (int64_t i = 0; i < n; i++) flags[i] = ds->labels[it->row0 + i] ? F_EVENT : 0;
    if (pdm && (cfg->conditions.n > 0 || cfg->train_conditions.n > 0)) {
        /* rows outside the selected conditions: never part of a window; outside the
         * training conditions: never part of a train or validation window */
        uint8_t *in = GT_MALLOC((size_t)(n > 0 ? n : 1));
        gt_data_pdm_rows_in(ds->pdm, li, &cfg->conditions, in);
        for (int64_t i = 0; i < n; i++) flags[i] |= in[i] ? 0 : F_OFFCOND;
        gt_data_pdm_rows_in(ds->pdm, li, &cfg->train_conditions, in);
        for (int64_t i = 0; i < n; i++) flags[i] |= in[i] ? 0 : F_OFFTRAIN;
        free(in);
        /* row ranges passing both (the moments: train rows only), in increasing row order */
        for (int64_t i = 0; i < n; i++) {
            if (flags[i] & (F_OFFCOND | F_OFFTRAIN)) continue;
            int64_t e = i;
            while (e < n && !(flags[e] & (F_OFFCOND | F_OFFTRAIN))) e++;
            push_cond_ok(ds, it->row0 + i, it->row0 + e);
            i = e;
        }
    }
    /* gap rows: nilm, a missing aggregate sample; pdm, a missing record (more than
     * data.pdm_row_missing of the channels non-finite; fewer are imputed, gt_data_pdm_impute) */
    const int gap_min = pdm ? (int)floor(cfg->pdm_row_missing * C + 1e-9) + 1 : 1;
    for (int64_t i = 0; i < n; i++) {
        int miss = 0;
        for (int c = 0; c < C; c++)
            if (!isfinite(x[i * C + c])) {
                miss++;
                if (ds->nan_ch) ds->nan_ch[c]++;
            }
        if (miss >= gap_min) flags[i] |= F_GAP;
        else if (miss) ds->screen_local.samples_imputed += miss;
    }
    /* pdm: a short run of missing records (telemetry dropped a record or two) between two records is
     * imputed like missing samples (gt_data_pdm_impute: input the training mean, loss and score leave
     * it out), not screened; a run at the turbine's start or end has no record on one side: a gap */
    for (int64_t i = 0; pdm && cfg->pdm_short_gap > 0 && i < n; i++) {
        if (!(flags[i] & F_GAP)) continue;
        int64_t e = i;
        while (e < n && (flags[e] & F_GAP)) e++;
        if (e - i <= cfg->pdm_short_gap && i > 0 && e < n)
            for (int64_t r = i; r < e; r++) {
                flags[r] &= (uint8_t)~F_GAP;
                for (int c = 0; c < C; c++) ds->screen_local.samples_imputed += !isfinite(x[r * C + c]);
            }
        i = e;
    }
    if (cfg->screen != GT_SCREEN_OFF) {
        int64_t found = 0;
        for (int c = 0; c < C; c++) {
            if (ds->spike_ch && !ds->spike_ch[c]) continue; /* pdm: a channel the spike test does not suit */
            /* nilm: a deviation under data.spike_min_w is a load (a microwave's defrost pulses, a drum's
             * spin), not a meter glitch */
            int64_t fc = hampel(x + c, n, C, cfg->spike_k, pdm ? 0.0 : cfg->spike_min_w, cfg->screen == GT_SCREEN_REPAIR,
                                pdm, flags);
            if (ds->spikes_ch) ds->spikes_ch[c] += fc;
            found += fc;
        }
        ds->screen_local.spikes_found += found;
        if (cfg->screen == GT_SCREEN_REPAIR) ds->screen_local.samples_repaired += found;
        /* spike rows: for the moments and one record per contiguous run */
        int reason = cfg->screen == GT_SCREEN_REPAIR ? R_SPIKE_REPAIRED : R_SPIKE_FOUND;
        for (int64_t i = 0; i < n; i++) {
            if (!(flags[i] & F_SPIKE_SEEN)) continue;
            push_spike_row(ds, it->row0 + i);
            int64_t e = i;
            while (e + 1 < n && (flags[e + 1] & F_SPIKE_SEEN)) push_spike_row(ds, it->row0 + ++e);
            push_rec(ds, (ds_record){ds->index[li], reason, ds->id[li], ts_at(ds, it, i), ts_at(ds, it, e)});
            i = e;
        }
    }
    for (int s = 0; s < GT_SPLIT_COUNT; s++) {
        ds_split *sp = &it->sp[s];
        sp->run_off = ds->n_runs;
        sp->n_runs = 0;
        sp->n_kept = 0;
        ds->screen_local.windows_total += sp->n_grid;
        it->n_total += sp->n_grid;
        uint8_t active = F_GAP | F_SPIKE | F_OFFCOND;
        if (pdm && cfg->pdm_train_normal_only && (s == GT_SPLIT_TRAIN || s == GT_SPLIT_VAL)) active |= F_EVENT;
        if (pdm && (s == GT_SPLIT_TRAIN || s == GT_SPLIT_VAL)) active |= F_OFFTRAIN; /* set with train_conditions */
        int64_t cnt[4] = {0, 0, 0, 0}; /* gap, spike, event, off-condition rows in the window [wa, wb) */
        int64_t wa = 0, wb = 0, n_screened = 0;
        int64_t rec_j = -2;
        int rec_reason = -1;
        for (int64_t j = 0; j < sp->n_grid; j++) {
            int64_t s0 = sp->first + j * it->base, e0 = s0 + W;
            if (s0 >= wb) {
                cnt[0] = cnt[1] = cnt[2] = cnt[3] = 0;
                wa = wb = s0;
            }
            for (; wa < s0; wa++) {
                uint8_t f = flags[wa] & active;
                cnt[0] -= (f & F_GAP) != 0, cnt[1] -= (f & F_SPIKE) != 0, cnt[2] -= (f & F_EVENT) != 0;
                cnt[3] -= (f & (F_OFFCOND | F_OFFTRAIN)) != 0;
            }
            for (; wb < e0; wb++) {
                uint8_t f = flags[wb] & active;
                cnt[0] += (f & F_GAP) != 0, cnt[1] += (f & F_SPIKE) != 0, cnt[2] += (f & F_EVENT) != 0;
                cnt[3] += (f & (F_OFFCOND | F_OFFTRAIN)) != 0;
            }
            int reason = cnt[3] ? R_COUNT : cnt[0] ? R_GAP : cnt[1] ? R_SPIKE : cnt[2] ? R_EVENT : -1;
            if (reason < 0) {
                sp->n_kept++;
                continue;
            }
            if (reason == R_COUNT) { /* condition filter: excluded, not screened (no record) */
                ds_run *last = sp->n_runs ? &ds->runs[ds->n_runs - 1] : NULL;
                if (last && last->j0 + last->n == j) last->n++;
                else {
                    push_run(ds, (ds_run){j, 1, n_screened});
                    sp->n_runs++;
                }
                n_screened++;
                ds->screen_local.windows_filtered++;
                it->n_filtered++;
                continue;
            }
            if (reason == R_GAP) ds->screen_local.windows_screened_gap++, it->n_gap++;
            else if (reason == R_SPIKE) ds->screen_local.windows_screened_spike++, it->n_spike++;
            else ds->screen_local.windows_screened_event++, it->n_event++;
            /* exclusion runs (any reason) */
            ds_run *last = sp->n_runs ? &ds->runs[ds->n_runs - 1] : NULL;
            if (last && last->j0 + last->n == j) last->n++;
            else {
                push_run(ds, (ds_run){j, 1, n_screened});
                sp->n_runs++;
            }
            n_screened++;
            /* report records (per reason) */
            if (rec_j == j - 1 && rec_reason == reason) ds->recs[ds->n_recs - 1].end_ms = ts_at(ds, it, e0 - 1);
            else push_rec(ds, (ds_record){ds->index[li], reason, ds->id[li], ts_at(ds, it, s0), ts_at(ds, it, e0 - 1)});
            rec_j = j;
            rec_reason = reason;
        }
    }
}

/* Grid positions of every split of one item. */
static void plan_item(gt_dataset *ds, int li, int64_t row0, int64_t n_rows, int64_t base) {
    ds_item *it = &ds->items[li];
    const gt_data_config *cfg = &ds->cfg;
    it->row0 = row0;
    it->n_rows = n_rows;
    it->base = base;
    gt_data_item_rows rows;
    gt_data_item_rows_of(cfg, n_rows, ds->index[li], &rows);
    it->holdout = rows.holdout;
    it->excluded = rows.excluded || !gt_data_filter_has(&cfg->items, ds->id[li]);
    if (ds->pdm)
        it->excluded |= !gt_data_filter_has(&cfg->farms, ds->pdm->farm[li]) ||
                        !gt_data_filter_has(&cfg->machine_types, ds->pdm->machine_type[li]);
    int64_t lo[GT_SPLIT_COUNT], hi[GT_SPLIT_COUNT];
    for (int s = 0; s < GT_SPLIT_COUNT; s++) {
        lo[s] = it->excluded ? 0 : rows.lo[s];
        hi[s] = it->excluded ? 0 : rows.hi[s];
    }
    for (int s = 0; s < GT_SPLIT_COUNT; s++) {
        ds_split *sp = &it->sp[s];
        memset(sp, 0, sizeof *sp);
        sp->lo = lo[s];
        sp->hi = hi[s];
        sp->first = (lo[s] + base - 1) / base * base;
        sp->n_grid = hi[s] - ds->W >= sp->first ? (hi[s] - ds->W - sp->first) / base + 1 : 0;
    }
}

/* Grid position of the k-th kept window of (item, split). */
static int64_t kept_to_grid(const gt_dataset *ds, const ds_split *sp, int64_t k) {
    const ds_run *r = ds->runs + sp->run_off;
    int64_t lo = 0, hi = sp->n_runs; /* count runs with j0 - cum <= k */
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (r[mid].j0 - r[mid].cum <= k) lo = mid + 1;
        else hi = mid;
    }
    return lo > 0 ? k + r[lo - 1].cum + r[lo - 1].n : k;
}

/* local window number -> (item, start row) */
static void locate(const gt_dataset *ds, gt_split s, int64_t l, int *item, int64_t *start) {
    GT_ASSERT(l >= 0 && l < ds->n_local[s]);
    int lo = 0, hi = ds->n_items; /* first item with local_first > l */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (ds->items[mid].sp[s].local_first <= l) lo = mid + 1;
        else hi = mid;
    }
    const ds_item *it = &ds->items[lo - 1];
    const ds_split *sp = &it->sp[s];
    int64_t k = l - sp->local_first;
    GT_ASSERT(k < sp->n_kept);
    *item = lo - 1;
    *start = sp->first + kept_to_grid(ds, sp, k) * it->base;
}

/* ------------------------------------------------------ normalisation -- */

/* Is local row `row` a detected, unrepaired spike? (ptr: a cursor into the
 * sorted spike_rows, rows visited in increasing order) */
static int is_spike_row(const gt_dataset *ds, int64_t row, int64_t *ptr) {
    while (*ptr < ds->n_spike_rows && ds->spike_rows[*ptr] < row) (*ptr)++;
    return *ptr < ds->n_spike_rows && ds->spike_rows[*ptr] == row;
}

/* pass 0: count and sum; pass 1: sum of squared deviations from mean. */
static void moments_pass(const gt_dataset *ds, int pass, const double *mean, int64_t *cnt, double *acc) {
    const int pdm = ds->task == GT_TASK_PDM;
    const int nf = pdm ? ds->n_cols : 1 + ds->n_cols;
    const int skip_spikes = ds->cfg.screen == GT_SCREEN_DROP;
    const int skip_events = pdm && ds->cfg.pdm_train_normal_only;
    const int cond = pdm && (ds->cfg.conditions.n > 0 || ds->cfg.train_conditions.n > 0);
    for (int f = 0; f < nf; f++) cnt[f] = 0, acc[f] = 0;
    int64_t sptr = 0, cptr = 0;
    for (int li = 0; li < ds->n_items; li++) {
        const ds_item *it = &ds->items[li];
        const ds_split *sp = &it->sp[GT_SPLIT_TRAIN];
        if (sp->n_kept == 0) continue;
        /* rows covered by the item's kept train windows: first to last kept */
        int64_t a = sp->first + kept_to_grid(ds, sp, 0) * it->base;
        int64_t b = sp->first + kept_to_grid(ds, sp, sp->n_kept - 1) * it->base + ds->W;
        for (int64_t i = it->row0 + a; i < it->row0 + b; i++) {
            if (skip_spikes && is_spike_row(ds, i, &sptr)) continue;
            if (skip_events && ds->labels[i]) continue;
            if (cond) { /* rows outside the selected conditions do not count */
                while (cptr < ds->n_cond_ok && ds->cond_ok[cptr + 1] <= i) cptr += 2;
                if (cptr >= ds->n_cond_ok || ds->cond_ok[cptr] > i) continue;
            }
            for (int f = 0; f < nf; f++) {
                float v = pdm ? ds->x[i * nf + f] : f == 0 ? ds->x[i] : ds->app[i * ds->n_cols + f - 1];
                if (!isfinite(v)) continue;
                cnt[f]++;
                acc[f] += pass == 0 ? (double)v : ((double)v - mean[f]) * ((double)v - mean[f]);
            }
        }
    }
}

static void compute_norm(gt_dataset *ds, MPI_Comm comm) {
    const int nf = ds->task == GT_TASK_PDM ? ds->n_cols : 1 + ds->n_cols;
    int64_t cnt_g[1 + GT_DATA_MAX_CHANNELS], cnt1[1 + GT_DATA_MAX_CHANNELS];
    double sum_g[1 + GT_DATA_MAX_CHANNELS];
    double mean[1 + GT_DATA_MAX_CHANNELS] = {0}, m2_g[1 + GT_DATA_MAX_CHANNELS];
    /* pass 0: counts and sums, pass 1: squared deviations from the global
     * mean (its counts, cnt1, repeat pass 0's); each summed over the ranks */
    moments_pass(ds, 0, NULL, cnt_g, sum_g);
    gt_dist_allreduce_sum_i64(cnt_g, nf, comm);
    gt_dist_allreduce_sum_d(sum_g, nf, comm);
    for (int f = 0; f < nf; f++) mean[f] = cnt_g[f] ? sum_g[f] / (double)cnt_g[f] : 0.0;
    moments_pass(ds, 1, mean, cnt1, m2_g);
    gt_dist_allreduce_sum_d(m2_g, nf, comm);
    memset(&ds->norm, 0, sizeof ds->norm);
    ds->norm.n = nf;
    int n_empty = 0;
    for (int f = 0; f < nf; f++) {
        double sd = cnt_g[f] ? sqrt(m2_g[f] / (double)cnt_g[f]) : 0.0;
        double floor_ = 1e-3 * fabs(mean[f]) + 1e-6; /* constant channels do not explode */
        /* an appliance (almost) never on in the train split would get a tiny std and
         * explode every later on-period: its scale is at least its on-power threshold */
        if (ds->task == GT_TASK_NILM && f >= 1 && ds->nilm && ds->nilm->meta[f - 1].on_power_w > floor_)
            floor_ = ds->nilm->meta[f - 1].on_power_w;
        ds->norm.mean[f] = mean[f];
        ds->norm.std[f] = sd > floor_ ? sd : floor_;
        n_empty += cnt_g[f] == 0;
        ds->norm_count[f] = cnt_g[f];
    }
    if (n_empty) GT_WARN("data: %d feature(s) have no finite train samples (mean 0, std floored)", n_empty);
}

void gt_data_pdm_rows_in(const gt_pdm_shard *sh, int k, const gt_data_filter *f, uint8_t *in) {
    const int64_t n = sh->row_offset[k + 1] - sh->row_offset[k];
    memset(in, f->n == 0, (size_t)n);
    if (f->n == 0) return;
    for (int i = 0; i < sh->n_segments; i++) {
        if (sh->segment_turbine[i] != k || !gt_data_filter_has(f, sh->segments[i].code)) continue;
        int64_t a = sh->segments[i].start_row < 0 ? 0 : sh->segments[i].start_row;
        int64_t b = sh->segments[i].end_row > n ? n : sh->segments[i].end_row;
        if (b > a) memset(in + a, 1, (size_t)(b - a));
    }
}

void gt_data_pdm_fit_skip(const gt_pdm_shard *sh, int k, const gt_data_config *cfg, uint8_t *skip) {
    const int64_t r0 = sh->row_offset[k], n = sh->row_offset[k + 1] - r0;
    uint8_t *in = GT_MALLOC((size_t)(n > 0 ? n : 1));
    for (int64_t r = 0; r < n; r++) skip[r] = cfg->pdm_train_normal_only && sh->labels[r0 + r];
    const gt_data_filter *f[2] = {&cfg->conditions, &cfg->train_conditions};
    for (int j = 0; j < 2; j++) {
        if (f[j]->n == 0) continue;
        gt_data_pdm_rows_in(sh, k, f[j], in);
        for (int64_t r = 0; r < n; r++) skip[r] |= !in[r];
    }
    free(in);
}

void gt_data_item_norm(const float *sig, const uint8_t *skip, int64_t b1, int C, const gt_norm_stats *glob,
                       gt_norm_stats *out) {
    out->n = C;
    for (int c = 0; c < C; c++) {
        int64_t cnt = 0;
        double sum = 0, m2 = 0;
        for (int64_t i = 0; i < b1; i++) { /* pass 0: the mean */
            float v = sig[i * C + c];
            if (skip[i] || !isfinite(v)) continue;
            cnt++;
            sum += v;
        }
        if (cnt < GT_DATA_ITEM_NORM_MIN) { /* no rows of its own: the statistics of all turbines */
            out->mean[c] = glob->mean[c];
            out->std[c] = glob->std[c];
            continue;
        }
        const double mean = sum / (double)cnt;
        for (int64_t i = 0; i < b1; i++) { /* pass 1: squared deviations (no cancellation) */
            float v = sig[i * C + c];
            if (skip[i] || !isfinite(v)) continue;
            m2 += ((double)v - mean) * ((double)v - mean);
        }
        const double sd = sqrt(m2 / (double)cnt), floor_ = 1e-3 * fabs(mean) + 1e-6;
        out->mean[c] = mean;
        out->std[c] = sd > floor_ ? sd : floor_;
    }
}

/* data.norm = turbine: every local item's statistics (again after the global
 * ones change: they are the fallback). */
static void item_norms(gt_dataset *ds) {
    if (ds->task != GT_TASK_PDM || !ds->cfg.pdm_norm_turbine) return;
    if (!ds->item_norm) ds->item_norm = GT_CALLOC((size_t)(ds->n_items > 0 ? ds->n_items : 1), sizeof(gt_norm_stats));
    const int C = ds->n_cols;
    for (int li = 0; li < ds->n_items; li++) {
        const ds_item *it = &ds->items[li];
        gt_data_item_rows rows; /* the item's train rows (none when held out) */
        gt_data_item_rows_of(&ds->cfg, it->n_rows, ds->index[li], &rows);
        const int64_t a = rows.lo[GT_SPLIT_TRAIN], b = rows.hi[GT_SPLIT_TRAIN];
        uint8_t *skip = GT_MALLOC((size_t)(it->n_rows > 0 ? it->n_rows : 1));
        gt_data_pdm_fit_skip(ds->pdm, li, &ds->cfg, skip);
        gt_data_item_norm(ds->x + (it->row0 + a) * C, skip + a, b - a, C, &ds->norm, &ds->item_norm[li]);
        free(skip);
    }
}

/* ------------------------------------------------------------ creation -- */

int64_t gt_dataset_series_bytes(gt_task task, int64_t rows, int64_t lowres_rows, int cols, int has_faults,
                                int time_features) {
    if (task == GT_TASK_NILM) {
        int64_t b = rows * (int64_t)(sizeof(int64_t) + sizeof(float) * (1 + cols + time_features));
        if (has_faults) b += rows;
        return b + lowres_rows * (int64_t)(sizeof(int64_t) + sizeof(float) * (1 + cols));
    }
    return rows * (int64_t)(sizeof(int64_t) + sizeof(float) * cols + 1);
}

static int64_t series_bytes(const gt_dataset *ds) {
    if (ds->nilm) {
        const gt_nilm_shard *s = ds->nilm;
        return gt_dataset_series_bytes(GT_TASK_NILM, s->n_rows, s->n_lowres_rows, s->n_appliances,
                                       s->fault_flags != NULL, ds->cfg.time_features);
    }
    const gt_pdm_shard *s = ds->pdm;
    return gt_dataset_series_bytes(GT_TASK_PDM, s->n_rows, 0, s->n_channels, 0, 0);
}

int64_t gt_dataset_bytes(const gt_dataset *ds) {
    int64_t b = series_bytes(ds);
    b += (int64_t)sizeof *ds + (int64_t)sizeof(ds_item) * ds->n_items;
    if (ds->strides) b += (int64_t)sizeof(int64_t) * ds->n_items * ds->n_cols;
    b += (int64_t)sizeof(ds_run) * ds->cap_runs + (int64_t)sizeof(ds_record) * ds->cap_recs;
    b += (int64_t)sizeof(int64_t) * (ds->cap_spike_rows + ds->cap_cond_ok);
    if (ds->item_norm) b += (int64_t)sizeof(gt_norm_stats) * ds->n_items;
    b += (int64_t)(GT_SPLIT_COUNT * sizeof(int64_t) + sizeof(int32_t)) * (ds->n_items_total + 1);
    return b;
}

/* Shared by both tasks once the series views and the items' grids are set. */
static void log_usage(const gt_dataset *ds, const gt_item_usage *u, int n, const gt_screen_summary *g);

static void build(gt_dataset *ds, MPI_Comm comm) {
    int rank = 0, size = 1;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    MPI_CHECK(MPI_Comm_size(comm, &size));
    int64_t max_rows = 1;
    for (int li = 0; li < ds->n_items; li++)
        if (ds->items[li].n_rows > max_rows) max_rows = ds->items[li].n_rows;
    uint8_t *flags = GT_MALLOC((size_t)max_rows);
    for (int li = 0; li < ds->n_items; li++) index_item(ds, li, flags);
    free(flags);

    /* local numbering: items in (file) order, each item's windows in time order */
    for (int s = 0; s < GT_SPLIT_COUNT; s++) {
        int64_t acc = 0;
        for (int li = 0; li < ds->n_items; li++) {
            ds->items[li].sp[s].local_first = acc;
            acc += ds->items[li].sp[s].n_kept;
        }
        ds->n_local[s] = acc;
    }

    /* global numbering: every rank learns every item's kept counts */
    enum { REC = 1 + GT_SPLIT_COUNT };
    const int mine = ds->n_items * REC;
    int64_t *sendb = GT_MALLOC(sizeof(int64_t) * (size_t)(mine + 1));
    for (int li = 0; li < ds->n_items; li++) {
        sendb[li * REC] = ds->index[li];
        for (int s = 0; s < GT_SPLIT_COUNT; s++) sendb[li * REC + 1 + s] = ds->items[li].sp[s].n_kept;
    }
    int64_t total = 0;
    int64_t *recvb = gt_dist_allgatherv(sendb, mine, MPI_INT64_T, &total, "data: too many items to gather", comm);
    GT_ASSERT(total == (int64_t)ds->n_items_total * REC);
    const int H = ds->n_items_total;
    for (int s = 0; s < GT_SPLIT_COUNT; s++) ds->g_first[s] = GT_CALLOC((size_t)H + 1, sizeof(int64_t));
    for (int e = 0; e < H; e++) {
        int64_t f = recvb[e * REC];
        GT_ASSERT(f >= 0 && f < H);
        for (int s = 0; s < GT_SPLIT_COUNT; s++) ds->g_first[s][f + 1] = recvb[e * REC + 1 + s];
    }
    for (int s = 0; s < GT_SPLIT_COUNT; s++) {
        for (int f = 0; f < H; f++) ds->g_first[s][f + 1] += ds->g_first[s][f];
        ds->n_global[s] = ds->g_first[s][H];
    }
    ds->owner_local = GT_MALLOC(sizeof(int32_t) * (size_t)(H > 0 ? H : 1));
    for (int f = 0; f < H; f++) ds->owner_local[f] = -1;
    for (int li = 0; li < ds->n_items; li++) ds->owner_local[ds->index[li]] = li;
    free(sendb), free(recvb);

    compute_norm(ds, comm);

    gt_screen_summary g;
    gt_dataset_screen_summary(ds, comm, &g);
    const int64_t bytes = gt_dataset_bytes(ds);
    const int64_t bytes_sum = gt_dist_sum_i64(bytes, comm), bytes_max = gt_dist_max_i64(bytes, comm);
    if (rank == 0) {
        GT_INFO("data: %s windows (W=%lld) train %lld, val %lld, test %lld, holdout %lld over %d %s",
                ds->task == GT_TASK_NILM ? "nilm" : "pdm", (long long)ds->W, (long long)ds->n_global[0],
                (long long)ds->n_global[1], (long long)ds->n_global[2], (long long)ds->n_global[3], H,
                ds->task == GT_TASK_NILM ? "households" : "turbines");
        GT_INFO("data: screening (%s): %lld of %lld windows screened (gap %lld, spike %lld, event %lld); "
                "spikes found %lld, repaired %lld",
                ds->cfg.screen == GT_SCREEN_DROP ? "drop" : ds->cfg.screen == GT_SCREEN_REPAIR ? "repair" : "off",
                (long long)(g.windows_screened_gap + g.windows_screened_spike + g.windows_screened_event),
                (long long)g.windows_total, (long long)g.windows_screened_gap, (long long)g.windows_screened_spike,
                (long long)g.windows_screened_event, (long long)g.spikes_found, (long long)g.samples_repaired);
        if (g.windows_filtered)
            GT_INFO("data: condition filter (data.conditions, data.train_conditions): %lld windows outside the "
                    "selected conditions left out", (long long)g.windows_filtered);
        GT_INFO("data: pipeline memory %.1f MiB over %d rank(s) (max %.1f MiB per rank, series + window index; "
                "windows are views)",
                (double)bytes_sum / 1048576.0, size, (double)bytes_max / 1048576.0);
    }
    int n_usage = 0;
    gt_item_usage *usage = gt_dataset_usage(ds, comm, &n_usage);
    if (ds->spikes_ch) { /* pdm: per-channel spike and gap counts, over all ranks (for the log) */
        gt_dist_allreduce_sum_i64(ds->spikes_ch, ds->n_cols, comm);
        gt_dist_allreduce_sum_i64(ds->nan_ch, ds->n_cols, comm);
    }
    if (rank == 0) log_usage(ds, usage, n_usage, &g);
    free(usage);
}

static void check_cfg(const gt_data_config *cfg, gt_task task) {
    GT_CHECK(cfg->task == task, GT_EXIT_USAGE, "data: config task does not match the file kind");
    GT_CHECK(cfg->window >= 2, GT_EXIT_USAGE, "data: window must be >= 2 (got %d)", cfg->window);
    GT_CHECK(cfg->stride >= 0, GT_EXIT_USAGE, "data: stride must be >= 0 (got %lld)", (long long)cfg->stride);
    GT_CHECK(task == GT_TASK_NILM || cfg->stride > 0, GT_EXIT_USAGE,
             "data: pdm needs a fixed stride > 0 (per-appliance strides are for nilm)");
    GT_CHECK(cfg->stride > 0 || cfg->stride_frac > 0, GT_EXIT_USAGE,
             "data: stride_frac must be > 0 when stride = 0 (got %g)", cfg->stride_frac);
    GT_CHECK(cfg->split_train > 0 && cfg->split_val >= 0 && cfg->split_train + cfg->split_val <= 1.0 + 1e-12,
             GT_EXIT_USAGE, "data: split fractions must satisfy train > 0, val >= 0, train + val <= 1 (got %g, %g)",
             cfg->split_train, cfg->split_val);
    GT_CHECK(cfg->holdout_every >= 0, GT_EXIT_USAGE, "data: holdout_every must be >= 0");
    GT_CHECK(task == GT_TASK_PDM || cfg->care_event < 0, GT_EXIT_USAGE,
             "data: data.care_event selects a CARE to Compare event dataset of a wind-farm (pdm) file");
    GT_CHECK(cfg->screen >= GT_SCREEN_DROP && cfg->screen <= GT_SCREEN_OFF, GT_EXIT_USAGE, "data: bad screen action");
    GT_CHECK(cfg->screen == GT_SCREEN_OFF || cfg->spike_k > 0, GT_EXIT_USAGE, "data: spike_k must be > 0");
    GT_CHECK(cfg->time_features == 0 || cfg->time_features == 2 || cfg->time_features == 4, GT_EXIT_USAGE,
             "data: time_features must be 0, 2 or 4 channels (got %d)", cfg->time_features);
    GT_CHECK(task == GT_TASK_NILM || cfg->time_features == 0, GT_EXIT_USAGE,
             "data.time_features is for nilm data (wind-farm inputs are the sensor channels)");
    GT_CHECK(cfg->augment >= 0 && cfg->augment <= 1, GT_EXIT_USAGE, "data.augment must be in [0, 1] (got %g)",
             cfg->augment);
    GT_CHECK(task == GT_TASK_NILM || cfg->augment == 0, GT_EXIT_USAGE,
             "data.augment is for nilm data (it superimposes appliance activations)");
    char err[600];
    GT_CHECK(gt_data_timezone_check(cfg->timezone, err, sizeof err) == 0, GT_EXIT_USAGE, "data.timezone: %s", err);
}

uint32_t gt_data_appliance_mask(const char *names, const gt_io_appliance *meta, int A) {
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

/* The fields both kinds share; the caller attaches its shard. */
static gt_dataset *ds_new(gt_task task, const gt_data_config *cfg, int n_items, int n_items_total, int n_cols,
                          const int64_t *ts, float *x, const int32_t *index, const int64_t *id) {
    gt_dataset *ds = GT_CALLOC(1, sizeof *ds);
    ds->task = task;
    ds->cfg = *cfg;
    ds->n_items = n_items;
    ds->n_items_total = n_items_total;
    ds->n_cols = n_cols;
    ds->W = cfg->window;
    ds->ts = ts;
    ds->x = x;
    ds->index = index;
    ds->id = id;
    ds->items = GT_CALLOC((size_t)(n_items > 0 ? n_items : 1), sizeof(ds_item));
    return ds;
}

/* ------------------------------------------------------- augmentation -- */

#define ACT_MERGE_S 300.0 /* off gaps inside one activation (a washing machine's pauses) */

/* Activations of every local item and appliance in the item's train rows:
 * runs above the on-power, merged over off gaps up to ACT_MERGE_S, every row
 * finite, at most W rows long. */
static void find_activations(gt_dataset *ds) {
    const int A = ds->n_cols;
    const gt_nilm_shard *sh = ds->nilm;
    int64_t cap = 1024, n = 0;
    ds->acts = GT_MALLOC(sizeof(int64_t) * 2 * (size_t)cap);
    ds->act_off = GT_MALLOC(sizeof(int64_t) * ((size_t)ds->n_items * A + 1));
    for (int li = 0; li < ds->n_items; li++) {
        const ds_item *it = &ds->items[li];
        const ds_split *sp = &it->sp[GT_SPLIT_TRAIN];
        const int64_t merge = (int64_t)floor(ACT_MERGE_S / sh->period_s[li]);
        /* holes inside an activation up to data.fill_max_s (jittered clocks leave empty bins in
         * appliance channels too) are bridged; the augment copy interpolates across them */
        int64_t hole = gt_data_fill_max_rows(&ds->cfg, sh->period_s[li]);
        if (hole < GT_DATA_FILL_AUTO_PERIODS) hole = GT_DATA_FILL_AUTO_PERIODS;
        for (int a = 0; a < A; a++) {
            ds->act_off[(size_t)li * A + a] = n;
            if (it->excluded || !(ds->app_mask >> a & 1u)) continue;
            const float on_w = sh->meta[a].on_power_w;
            int64_t r = it->row0 + sp->lo, end = it->row0 + sp->hi;
            while (r < end) {
                float v = ds->app[r * A + a];
                if (!(isfinite(v) && v > on_w)) {
                    r++;
                    continue;
                }
                /* [r, e): on, extended over off gaps of at most `merge` rows */
                int64_t e = r + 1, last_on = r, finite = 1;
                while (e < end && e - last_on <= merge + 1) {
                    float u = ds->app[e * A + a];
                    if (!isfinite(u)) { /* a short hole followed by a sample is bridged; a longer one drops the run */
                        int64_t h = e;
                        while (h < end && !isfinite(ds->app[h * A + a])) h++;
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
                        ds->acts = GT_REALLOC(ds->acts, sizeof(int64_t) * 2 * (size_t)cap);
                    }
                    ds->acts[2 * n] = r, ds->acts[2 * n + 1] = e - r;
                    n++;
                }
                r = e;
            }
        }
    }
    ds->act_off[(size_t)ds->n_items * A] = n;
}

int64_t gt_dataset_n_activations(const gt_dataset *ds) {
    return ds->act_off ? ds->act_off[(size_t)ds->n_items * ds->n_cols] : 0;
}

/* Sample q of appliance a inside the activation [row, row + L): a bridged hole
 * (find_activations) by linear interpolation between its finite neighbours
 * (the activation starts and ends on finite on rows). */
static double act_sample(const gt_dataset *ds, int a, int64_t row, int64_t L, int64_t q) {
    const int A = ds->n_cols;
    const float v = ds->app[q * A + a];
    if (isfinite(v)) return v;
    int64_t p = q, s = q;
    while (p > row && !isfinite(ds->app[p * A + a])) p--;
    while (s < row + L - 1 && !isfinite(ds->app[s * A + a])) s++;
    const double vp = ds->app[p * A + a], vs = ds->app[s * A + a];
    if (!isfinite(vp)) return isfinite(vs) ? vs : 0.0;
    if (!isfinite(vs) || s == p) return vp;
    return vp + (vs - vp) * (double)(q - p) / (double)(s - p);
}

int64_t gt_dataset_augment(const gt_dataset *ds, uint64_t epoch, const gt_window_ref *refs, int64_t n, float *x,
                           float *y, const float *mask) {
    if (!ds->act_off || ds->cfg.augment <= 0) return 0;
    const int A = ds->n_cols, Cin = 1 + ds->cfg.time_features, last = ds->cfg.x_channels_last;
    const int64_t W = ds->W, nx = W * Cin, mid = W / 2;
    const double inv0 = 1.0 / ds->norm.std[0];
    int64_t changed = 0;
    for (int64_t i = 0; i < n; i++) {
        const int li = refs[i].item;
        const int64_t r0 = ds->items[li].row0 + refs[i].start;
        gt_rng r;
        gt_rng_init(&r, ds->cfg.seed, gt_stream(GT_STREAM_AUGMENT, (uint32_t)refs[i].file_index));
        gt_rng_seek(&r, (epoch << 40) | (uint64_t)refs[i].start);
        if (gt_rng_uniform_d(&r) >= ds->cfg.augment) continue;
        /* an appliance with activations, off throughout this window */
        const int64_t *off = ds->act_off + (size_t)li * A;
        int cand[GT_DATA_MAX_TARGETS], nc = 0;
        for (int a = 0; a < A; a++) {
            if (off[a + 1] == off[a]) continue;
            int on = 0;
            for (int64_t t = 0; t < W && !on; t++) {
                float v = ds->app[(r0 + t) * A + a];
                on = isfinite(v) && v > ds->nilm->meta[a].on_power_w;
            }
            if (!on) cand[nc++] = a;
        }
        if (nc == 0) continue;
        const int a = cand[(int)(gt_rng_uniform_d(&r) * nc) % nc];
        const int64_t k = off[a] + (int64_t)(gt_rng_uniform_d(&r) * (double)(off[a + 1] - off[a])) % (off[a + 1] - off[a]);
        const int64_t row = ds->acts[2 * k], L = ds->acts[2 * k + 1];
        /* window step of the activation's first row: covering the midpoint, or anywhere overlapping */
        int64_t o;
        if (gt_rng_uniform_d(&r) < 0.5) o = mid - L + 1 + (int64_t)(gt_rng_uniform_d(&r) * (double)L) % L;
        else o = -(L - 1) + (int64_t)(gt_rng_uniform_d(&r) * (double)(W + L - 1)) % (W + L - 1);
        float *xi = x + i * nx;
        for (int64_t t = o < 0 ? 0 : o; t < W && t < o + L; t++) {
            const double d = act_sample(ds, a, row, L, row + t - o);
            xi[gt_data_x_offset(last, W, Cin, t, 0)] += (float)(d * inv0);
            if (t == mid && mask[i * A + a] != 0.0f) y[i * A + a] += (float)(d / ds->norm.std[1 + a]);
        }
        changed++;
    }
    return changed;
}

gt_dataset *gt_dataset_nilm(gt_nilm_shard *shard, const gt_data_config *cfg, MPI_Comm comm) {
    check_cfg(cfg, GT_TASK_NILM);
    const int A = shard->n_appliances;
    GT_CHECK(A >= 1 && A <= GT_DATA_MAX_TARGETS, GT_EXIT_DATA, "data: %d appliances (1..%d supported)", A,
             GT_DATA_MAX_TARGETS);
    gt_dataset *ds = ds_new(GT_TASK_NILM, cfg, shard->n_households, shard->n_households_total, A, shard->timestamps,
                            shard->aggregate, shard->index, shard->id);
    ds->nilm = shard;
    ds->app = shard->appliances;
    time_features(ds, shard->row_offset[shard->n_households]);
    ds->strides = GT_MALLOC(sizeof(int64_t) * (size_t)(ds->n_items > 0 ? ds->n_items : 1) * (size_t)A);
    ds->app_mask = gt_data_appliance_mask(cfg->appliances, shard->meta, shard->n_appliances);
    for (int li = 0; li < ds->n_items; li++) {
        int64_t *st = ds->strides + (int64_t)li * A, base;
        if (cfg->stride > 0) {
            base = cfg->stride;
            for (int a = 0; a < A; a++) st[a] = base;
        } else {
            /* per-appliance strides from the typical on-duration (the field
             * reports' adaptive overlap instead of a fixed 90% overlap); each
             * rounded to a multiple of the smallest selected one, so the window
             * set (the union over appliances) is exactly the grid of the
             * smallest. The multi-output models compute every appliance in
             * every window, so by default every window also trains every
             * appliance (stride_mask = 0): masking a long appliance's target
             * to its own stride saves no compute and leaves it few targets
             * (a washing machine 1 window in 35 at the defaults). */
            base = INT64_MAX;
            for (int a = 0; a < A; a++) {
                int64_t sa = llround(cfg->stride_frac * shard->meta[a].on_duration_s / shard->period_s[li]);
                st[a] = sa < 1 ? 1 : sa;
                if (st[a] < base && (ds->app_mask >> a & 1u)) base = st[a];
            }
            if (base == INT64_MAX) base = 1; /* no appliance selected: refused by gt_data_appliance_mask */
            for (int a = 0; a < A; a++) {
                int64_t m = llround((double)st[a] / (double)base);
                st[a] = cfg->stride_mask ? (m < 1 ? 1 : m) * base : base;
            }
        }
        plan_item(ds, li, shard->row_offset[li], shard->row_offset[li + 1] - shard->row_offset[li], base);
        /* short holes of the aggregate (timestamp jitter) filled for the model input: before
         * screening, so only real gaps screen windows; the targets keep their NaN (masked) */
        ds->items[li].filled = gt_data_fill_holes(ds->x + ds->items[li].row0, ds->items[li].n_rows,
                                                  gt_data_fill_max_rows(cfg, shard->period_s[li]));
    }
    build(ds, comm);
    if (cfg->augment > 0) find_activations(ds);
    return ds;
}

gt_dataset *gt_dataset_pdm(gt_pdm_shard *shard, const gt_data_config *cfg, MPI_Comm comm) {
    check_cfg(cfg, GT_TASK_PDM);
    const int C = shard->n_channels;
    GT_CHECK(C >= 1 && C <= GT_DATA_MAX_CHANNELS, GT_EXIT_DATA, "data: %d channels (1..%d supported)", C,
             GT_DATA_MAX_CHANNELS);
    gt_dataset *ds = ds_new(GT_TASK_PDM, cfg, shard->n_turbines, shard->n_turbines_total, C, shard->timestamps,
                            shard->signals, shard->index, shard->id);
    ds->pdm = shard;
    ds->labels = shard->labels;
    ds->spike_ch = GT_CALLOC((size_t)C, 1);
    ds->spikes_ch = GT_CALLOC((size_t)C, sizeof(int64_t));
    ds->nan_ch = GT_CALLOC((size_t)C, sizeof(int64_t));
    for (int c = 0; c < C; c++)
        ds->spike_ch[c] = (uint8_t)gt_data_spike_channel(cfg, shard->channels[c].name, shard->channels[c].desc,
                                                          shard->channels[c].unit);
    if (cfg->pdm_target == GT_PDM_TARGET_NBM) {
        ds->nbm_role = GT_CALLOC((size_t)C, 1);
        gt_data_nbm_roles(cfg, shard->channels, C, ds->nbm_role, &ds->nbm_n_in, &ds->nbm_n_tg);
    }
    for (int li = 0; li < ds->n_items; li++)
        plan_item(ds, li, shard->row_offset[li], shard->row_offset[li + 1] - shard->row_offset[li], cfg->stride);
    build(ds, comm);
    item_norms(ds);
    return ds;
}

void gt_dataset_free(gt_dataset *ds) {
    if (!ds) return;
    if (ds->nilm) gt_nilm_shard_free(ds->nilm);
    if (ds->pdm) gt_pdm_shard_free(ds->pdm);
    free(ds->items);
    free(ds->strides);
    free(ds->tfeat);
    free(ds->runs);
    free(ds->recs);
    free(ds->spike_rows);
    free(ds->cond_ok);
    for (int s = 0; s < GT_SPLIT_COUNT; s++) free(ds->g_first[s]);
    free(ds->owner_local);
    free(ds->acts), free(ds->act_off);
    free(ds->spike_ch), free(ds->spikes_ch), free(ds->nan_ch), free(ds->nbm_role), free(ds->item_norm);
    free(ds);
}

/* ------------------------------------------------------------- queries -- */

int64_t gt_dataset_n_x(const gt_dataset *ds) { return ds->W * gt_data_config_n_in(&ds->cfg, ds->n_cols); }
int64_t gt_dataset_n_y(const gt_dataset *ds) { return ds->task == GT_TASK_NILM ? ds->n_cols : 0; }
int gt_dataset_n_targets(const gt_dataset *ds) { return ds->n_cols; }
const gt_norm_stats *gt_dataset_norm(const gt_dataset *ds) { return &ds->norm; }
int64_t gt_dataset_norm_count(const gt_dataset *ds, int f) {
    return f >= 0 && f < ds->norm.n ? ds->norm_count[f] : 0;
}
const char *gt_dataset_target_name(const gt_dataset *ds, int t) {
    if (t < 0 || t >= ds->n_cols) return "?";
    if (ds->task == GT_TASK_NILM && ds->nilm) return ds->nilm->meta[t].name;
    if (ds->task == GT_TASK_PDM && ds->pdm) return ds->pdm->channels[t].name;
    return "?";
}
double gt_dataset_min_period_s(const gt_dataset *ds) {
    double p = INFINITY;
    for (int li = 0; li < ds->n_items; li++) {
        double q = ds->task == GT_TASK_NILM ? (ds->nilm ? ds->nilm->period_s[li] : NAN)
                                            : (ds->pdm && ds->pdm->rate_hz[li] > 0 ? 1.0 / ds->pdm->rate_hz[li] : NAN);
        if (q > 0 && q < p) p = q;
    }
    return p;
}

const gt_norm_stats *gt_dataset_item_norm(const gt_dataset *ds, int li) {
    return ds->item_norm ? &ds->item_norm[li] : &ds->norm;
}

const uint8_t *gt_dataset_nbm_roles(const gt_dataset *ds, int *n_inputs, int *n_targets) {
    *n_inputs = ds->nbm_n_in;
    *n_targets = ds->nbm_n_tg;
    return ds->nbm_role;
}

float gt_dataset_on_threshold(const gt_dataset *ds, int a) {
    GT_ASSERT(ds->task == GT_TASK_NILM && a >= 0 && a < ds->n_cols);
    return (float)(((double)ds->nilm->meta[a].on_power_w - ds->norm.mean[1 + a]) / ds->norm.std[1 + a]);
}
void gt_dataset_set_norm(gt_dataset *ds, const gt_norm_stats *ns) {
    GT_CHECK(ns->n == ds->norm.n, GT_EXIT_USAGE, "data: normalisation has %d features, the data %d", ns->n,
             ds->norm.n);
    ds->norm = *ns;
    item_norms(ds);
}
int64_t gt_dataset_n_windows_local(const gt_dataset *ds, gt_split s) { return ds->n_local[s]; }
int64_t gt_dataset_n_windows_global(const gt_dataset *ds, gt_split s) { return ds->n_global[s]; }

int64_t gt_dataset_batches_per_epoch(const gt_dataset *ds, gt_split s, int64_t g_batch) {
    GT_ASSERT(g_batch > 0);
    return ds->n_global[s] / g_batch;
}

int64_t gt_dataset_batch_local(const gt_dataset *ds, gt_split s, uint64_t epoch, int64_t k, int64_t g_batch,
                               int64_t *local_idx) {
    const int64_t N = ds->n_global[s];
    GT_ASSERT(g_batch > 0 && k >= 0);
    int64_t p0 = k * g_batch, p1 = p0 + g_batch < N ? p0 + g_batch : N;
    if (p0 >= N) return 0;
    gt_perm perm;
    gt_perm_init(&perm, (uint64_t)N, ds->cfg.seed, gt_stream(GT_STREAM_SHUFFLE, (uint32_t)s), epoch);
    const int64_t *gf = ds->g_first[s];
    int64_t n = 0;
    for (int64_t p = p0; p < p1; p++) {
        int64_t g = (int64_t)gt_perm_at(&perm, (uint64_t)p);
        int lo = 0, hi = ds->n_items_total; /* first file item with gf[f + 1] > g */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (gf[mid + 1] <= g) lo = mid + 1;
            else hi = mid;
        }
        int li = ds->owner_local[lo];
        if (li < 0) continue;
        local_idx[n++] = ds->items[li].sp[s].local_first + (g - gf[lo]);
    }
    return n;
}

int64_t gt_dataset_local_range(const gt_dataset *ds, gt_split s, int64_t first, int64_t n, int64_t *local_idx) {
    if (first < 0) first = 0;
    if (first + n > ds->n_local[s]) n = ds->n_local[s] - first;
    if (n <= 0) return 0;
    for (int64_t i = 0; i < n; i++) local_idx[i] = first + i;
    return n;
}

void gt_dataset_fill(const gt_dataset *ds, gt_split s, const int64_t *idx, int64_t n, float *x, float *y,
                     float *mask, gt_window_ref *refs) {
    const int64_t W = ds->W;
    const gt_norm_stats *ns = &ds->norm;
    for (int64_t i = 0; i < n; i++) {
        int li;
        int64_t start;
        locate(ds, s, idx[i], &li, &start);
        const ds_item *it = &ds->items[li];
        const int64_t r0 = it->row0 + start;
        if (ds->task == GT_TASK_NILM) {
            const int A = ds->n_cols;
            const double m0 = ns->mean[0], inv0 = 1.0 / ns->std[0];
            const int F = ds->cfg.time_features, Cin = 1 + F;
            const int last = ds->cfg.x_channels_last;
            float *xi = x + i * W * Cin; // (Cin, W) or (W, Cin)
            for (int64_t t = 0; t < W; t++) {
                xi[gt_data_x_offset(last, W, Cin, t, 0)] = (float)(((double)ds->x[r0 + t] - m0) * inv0);
                for (int f = 0; f < F; f++) xi[gt_data_x_offset(last, W, Cin, t, 1 + f)] = ds->tfeat[(r0 + t) * F + f];
            }
            const int64_t mid = r0 + W / 2;
            const int64_t *st = ds->strides + (int64_t)li * A;
            for (int a = 0; a < A; a++) {
                float v = ds->app[mid * A + a];
                int ok = isfinite(v) && start % st[a] == 0 && (ds->app_mask >> a & 1u);
                y[i * A + a] = ok ? (float)(((double)v - ns->mean[1 + a]) / ns->std[1 + a]) : 0.0f;
                mask[i * A + a] = ok ? 1.0f : 0.0f;
            }
        } else {
            const int C = ds->n_cols;
            ns = gt_dataset_item_norm(ds, li); /* data.norm = turbine: the item's own statistics */
            float *xi = x + i * W * C; // (T, C)
            for (int64_t t = 0; t < W; t++)
                for (int c = 0; c < C; c++)
                    xi[t * C + c] = (float)(((double)ds->x[(r0 + t) * C + c] - ns->mean[c]) / ns->std[c]);
        }
        if (refs) {
            refs[i].item = li;
            refs[i].file_index = ds->index[li];
            refs[i].id = ds->id[li];
            refs[i].start = start;
            refs[i].t_start_ms = ds->ts[r0];
            refs[i].t_end_ms = ds->ts[r0 + W - 1];
        }
    }
}

/* ---------------------------------------------------------- screening -- */

void gt_dataset_screen_summary(const gt_dataset *ds, MPI_Comm comm, gt_screen_summary *global) {
    int64_t v[8] = {ds->screen_local.windows_total, ds->screen_local.windows_screened_spike,
                    ds->screen_local.windows_screened_gap, ds->screen_local.windows_screened_event,
                    ds->screen_local.spikes_found, ds->screen_local.samples_repaired,
                    ds->screen_local.windows_filtered, ds->screen_local.samples_imputed};
    gt_dist_allreduce_sum_i64(v, 8, comm);
    const int64_t *g = v;
    global->windows_total = g[0];
    global->windows_screened_spike = g[1];
    global->windows_screened_gap = g[2];
    global->windows_screened_event = g[3];
    global->spikes_found = g[4];
    global->samples_repaired = g[5];
    global->windows_filtered = g[6];
    global->samples_imputed = g[7];
}

static int cmp_rec(const void *pa, const void *pb) {
    const ds_record *a = pa, *b = pb;
    if (a->file_index != b->file_index) return a->file_index < b->file_index ? -1 : 1;
    if (a->start_ms != b->start_ms) return a->start_ms < b->start_ms ? -1 : 1;
    if (a->reason != b->reason) return a->reason < b->reason ? -1 : 1;
    return (a->end_ms > b->end_ms) - (a->end_ms < b->end_ms);
}

void gt_dataset_write_screened(const gt_dataset *ds, MPI_Comm comm, FILE *out) {
    int rank = 0;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    GT_CHECK(ds->n_recs <= INT32_MAX / (int64_t)sizeof(ds_record), GT_EXIT_RESOURCE,
             "data: too many screening records to gather (%lld)", (long long)ds->n_recs);
    const int mine_bytes = (int)(ds->n_recs * (int64_t)sizeof(ds_record));
    int64_t total = 0; /* bytes, on rank 0 */
    ds_record *all = gt_dist_gatherv(ds->recs, mine_bytes, MPI_BYTE, &total,
                                     "data: screening report too large to gather", comm);
    if (rank == 0) {
        int64_t n = total / (int64_t)sizeof(ds_record);
        qsort(all, (size_t)n, sizeof(ds_record), cmp_rec);
        for (int64_t i = 0; i < n; i++)
            fprintf(out, "%lld,%lld,%lld,%s\n", (long long)all[i].id, (long long)all[i].start_ms,
                    (long long)all[i].end_ms, k_reason[all[i].reason]);
        fflush(out);
    }
    free(all);
}

/* ------------------------------------------------------------- usage -- */

const char *gt_dataset_item_name(const gt_dataset *ds) { return ds->task == GT_TASK_NILM ? "household" : "turbine"; }

static int cmp_usage(const void *pa, const void *pb) {
    const gt_item_usage *a = pa, *b = pb;
    return (a->file_index > b->file_index) - (a->file_index < b->file_index);
}

gt_item_usage *gt_dataset_usage(const gt_dataset *ds, MPI_Comm comm, int *n_items) {
    gt_item_usage *mine = GT_CALLOC((size_t)(ds->n_items > 0 ? ds->n_items : 1), sizeof *mine);
    for (int li = 0; li < ds->n_items; li++) {
        const ds_item *it = &ds->items[li];
        gt_item_usage *u = &mine[li];
        u->id = ds->id[li];
        u->file_index = ds->index[li];
        u->holdout = it->holdout;
        u->rows = it->n_rows;
        u->filled = it->filled;
        u->windows_total = it->n_total;
        for (int s = 0; s < GT_SPLIT_COUNT; s++) u->windows_kept += it->sp[s].n_kept;
        u->screened_gap = it->n_gap;
        u->screened_spike = it->n_spike;
        u->screened_event = it->n_event;
        u->filtered = it->n_filtered;
        u->excluded = it->excluded;
    }
    int64_t total = 0;
    gt_item_usage *all = gt_dist_gatherv(mine, ds->n_items * (int)sizeof *mine, MPI_BYTE, &total,
                                         "data: usage table too large to gather", comm);
    free(mine);
    *n_items = (int)(total / (int64_t)sizeof(gt_item_usage));
    if (all) qsort(all, (size_t)*n_items, sizeof *all, cmp_usage);
    return all;
}

void gt_dataset_write_usage(const gt_dataset *ds, MPI_Comm comm, FILE *out) {
    int n = 0;
    gt_item_usage *u = gt_dataset_usage(ds, comm, &n);
    if (u && out) {
        fprintf(out, "%s_id,file_index,holdout,rows,filled,windows,kept,screened_gap,screened_spike,screened_event,"
                     "filtered\n", gt_dataset_item_name(ds));
        for (int i = 0; i < n; i++)
            fprintf(out, "%lld,%d,%d,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld\n", (long long)u[i].id, u[i].file_index,
                    u[i].holdout, (long long)u[i].rows, (long long)u[i].filled, (long long)u[i].windows_total,
                    (long long)u[i].windows_kept, (long long)u[i].screened_gap, (long long)u[i].screened_spike,
                    (long long)u[i].screened_event, (long long)u[i].filtered);
        fflush(out);
    }
    free(u);
}

/* Rank 0: the per-item table in the log (every item when there are few, else
 * the ones that lose the most), and a warning naming the main reason and the
 * setting to change when more than GT_DATA_SCREEN_WARN of the windows are
 * screened. */
#define GT_DATA_SCREEN_WARN 0.20
#define GT_DATA_USAGE_LOG_ITEMS 16
static void log_usage(const gt_dataset *ds, const gt_item_usage *u, int n, const gt_screen_summary *g) {
    const char *item = gt_dataset_item_name(ds);
    int64_t filled = 0, rows = 0;
    for (int i = 0; i < n; i++) filled += u[i].filled, rows += u[i].rows;
    if (ds->task == GT_TASK_NILM) {
        char lim[64];
        if (ds->cfg.fill_max_s < 0) snprintf(lim, sizeof lim, "%d sampling periods", GT_DATA_FILL_AUTO_PERIODS);
        else snprintf(lim, sizeof lim, "%g s", ds->cfg.fill_max_s);
        GT_INFO("data: %lld of %lld aggregate samples filled by interpolation (holes up to %s, data.fill_max_s)",
                (long long)filled, (long long)rows, lim);
    }
    /* the items to show: all when few, else the GT_DATA_USAGE_LOG_ITEMS with the largest screened share */
    int *order = GT_MALLOC(sizeof(int) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) order[i] = i;
    if (n > GT_DATA_USAGE_LOG_ITEMS)
        for (int i = 0; i < GT_DATA_USAGE_LOG_ITEMS; i++) { /* partial selection: n x 16 */
            int best = i;
            for (int j = i + 1; j < n; j++) {
                const gt_item_usage *a = &u[order[j]], *b = &u[order[best]];
                double fa = a->windows_total ? (double)(a->windows_total - a->windows_kept - a->filtered) / a->windows_total : 0;
                double fb = b->windows_total ? (double)(b->windows_total - b->windows_kept - b->filtered) / b->windows_total : 0;
                if (fa > fb) best = j;
            }
            int tmp = order[i];
            order[i] = order[best], order[best] = tmp;
        }
    int shown = n < GT_DATA_USAGE_LOG_ITEMS ? n : GT_DATA_USAGE_LOG_ITEMS;
    GT_INFO("data used per %s%s: id rows filled windows kept screened(gap/spike/event)", item,
            n > shown ? " (the most screened)" : "");
    for (int k = 0; k < shown; k++) {
        const gt_item_usage *x = &u[order[k]];
        GT_INFO("  %s %lld%s: %lld rows, %lld filled, %lld windows, %lld kept (%.1f%%), screened %lld/%lld/%lld",
                item, (long long)x->id, x->holdout ? " (held out)" : x->excluded ? " (not selected)" : "",
                (long long)x->rows, (long long)x->filled, (long long)x->windows_total, (long long)x->windows_kept,
                x->windows_total ? 100.0 * (double)x->windows_kept / (double)x->windows_total : 0.0,
                (long long)x->screened_gap, (long long)x->screened_spike, (long long)x->screened_event);
    }
    free(order);
    /* pdm: which channels the spike test runs on, and the channels with the most spikes / gaps */
    char top_spike[256] = "", top_gap[256] = "";
    if (ds->spike_ch) {
        int n_kind[4] = {0, 0, 0, 0}, n_sel = 0;
        const gt_pdm_shard *sh = ds->pdm;
        for (int c = 0; c < ds->n_cols; c++) {
            n_kind[gt_data_channel_kind_desc(sh->channels[c].name, sh->channels[c].desc, sh->channels[c].unit)]++;
            n_sel += ds->spike_ch[c];
        }
        GT_INFO("data: channels: %d condition, %d operational, %d angle, %d min/max/std; the spike test runs on %d "
                "(data.spike_channels = %s)", n_kind[0], n_kind[1], n_kind[2], n_kind[3], n_sel,
                ds->cfg.spike_channels[0] ? ds->cfg.spike_channels : "auto");
        for (int which = 0; which < 2; which++) {
            const int64_t *cnt = which ? ds->nan_ch : ds->spikes_ch;
            char *out = which ? top_gap : top_spike;
            uint8_t used_c[GT_DATA_MAX_CHANNELS] = {0};
            for (int k = 0; k < 3; k++) { /* the three largest counts */
                int best = -1;
                for (int c = 0; c < ds->n_cols; c++)
                    if (!used_c[c] && cnt[c] > 0 && (best < 0 || cnt[c] > cnt[best])) best = c;
                if (best < 0) break;
                used_c[best] = 1;
                size_t l = strlen(out);
                snprintf(out + l, 256 - l, "%s%s (%lld)", k ? ", " : "", sh->channels[best].name, (long long)cnt[best]);
            }
        }
        if (top_spike[0]) GT_INFO("data: most spikes found on %s", top_spike);
        /* missing samples: a channel without a finite sample anywhere is a dead sensor */
        int64_t rows = 0;
        for (int i = 0; i < n; i++) rows += u[i].rows;
        char dead[256] = "";
        int n_dead = 0;
        for (int c = 0; c < ds->n_cols; c++)
            if (rows > 0 && ds->nan_ch[c] >= rows) {
                size_t l = strlen(dead);
                if (n_dead++ < 4) snprintf(dead + l, sizeof dead - l, "%s%s", l ? ", " : "", sh->channels[c].name);
            }
        if (n_dead)
            GT_WARN("data: %d channel(s) have no finite sample in the file (%s%s): the model input there is the "
                    "channel's mean and they are never a target", n_dead, dead, n_dead > 4 ? ", ..." : "");
        if (g->samples_imputed)
            GT_INFO("data: %lld missing samples imputed (%.3f%% of the samples; most missing on %s): the model input "
                    "there is the channel's training mean, the loss and the anomaly score leave them out; rows with "
                    "more than %g of their channels missing are gap rows (data.pdm_row_missing)",
                    (long long)g->samples_imputed, rows > 0 ? 100.0 * (double)g->samples_imputed / ((double)rows * ds->n_cols) : 0.0,
                    top_gap[0] ? top_gap : "-", ds->cfg.pdm_row_missing);
    }
    const int64_t scr = g->windows_screened_gap + g->windows_screened_spike + g->windows_screened_event;
    const int64_t cand = g->windows_total - g->windows_filtered;
    if (cand <= 0 || (double)scr <= GT_DATA_SCREEN_WARN * (double)cand) return;
    const char *why, *fix;
    char whybuf[400];
    if (g->windows_screened_gap >= g->windows_screened_spike && g->windows_screened_gap >= g->windows_screened_event) {
        why = "gaps (missing or non-finite samples)";
        if (top_gap[0]) {
            snprintf(whybuf, sizeof whybuf, "gaps (missing or non-finite samples; most on %s)", top_gap);
            why = whybuf;
        }
        fix = ds->task == GT_TASK_NILM ? "holes up to data.fill_max_s seconds are filled: raise it if the gaps are "
                                         "short, or check the recording's clock and dropouts (gridtrain inspect)"
                                       : "whole records are missing there (rows with more than data.pdm_row_missing "
                                         "of the channels missing); check the recording's dropouts (gridtrain "
                                         "inspect)";
    } else if (g->windows_screened_spike >= g->windows_screened_event) {
        why = "spikes (Hampel test, data.spike_k)";
        if (top_spike[0]) {
            snprintf(whybuf, sizeof whybuf, "spikes (Hampel test, data.spike_k; most on %s)", top_spike);
            why = whybuf;
        }
        fix = ds->spike_ch ? "leave those channels out of the test (data.spike_channels: auto, none, or name patterns), "
                             "raise data.spike_k, or use data.screen = repair (local median) or off"
                           : "raise data.spike_k, or use data.screen = repair (replace spikes by the local median) or off";
    } else {
        why = "labelled events (data.train_normal_only)";
        fix = "set data.train_normal_only = false to train on event rows as well";
    }
    GT_WARN("data: %lld of %lld windows (%.1f%%) screened, mostly for %s: %s; see data_used.csv / screened.csv of "
            "the run", (long long)scr, (long long)cand, 100.0 * (double)scr / (double)cand, why, fix);
}
