/* nn/model_kinds.c: the model-kind registry (nn/model_registry.h's built-in
 * kinds, then the registered ones) and the rules read from the kinds' tables:
 * names, settings a kind has, the configuration check, defaults and the
 * memory estimate. The generic model API is nn/model.c; what a kind's file
 * uses to build its plan is nn/model_kit.c. */
#include "nn/model.h"

#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "nn/model_registry.h"

/* ------------------------------------------------------------ registry -- */
/* The built-in kinds' tables (nn/model_registry.h), then the registered ones. */
#define GT_MODEL_KIND_EXTERN_(k) extern const gt_model_vtable gt_model_vtable_##k;
GT_MODEL_KINDS(GT_MODEL_KIND_EXTERN_)
#define GT_MODEL_KIND_ENTRY_(k) &gt_model_vtable_##k,
static const gt_model_vtable *g_kinds[GT_MODEL_MAX_KINDS] = {GT_MODEL_KINDS(GT_MODEL_KIND_ENTRY_)};
static int g_n_kinds = GT_MODEL_KINDS_BUILT_IN;

static const gt_model_vtable *kind_vtable(gt_model_kind kind) {
    return (int)kind >= 0 && (int)kind < g_n_kinds ? g_kinds[kind] : NULL;
}

const char *gt_model_kind_name(gt_model_kind kind) {
    const gt_model_vtable *vt = kind_vtable(kind);
    return vt ? vt->name : "?";
}

int gt_model_kind_parse(const char *name) {
    for (int k = 0; name && k < g_n_kinds; k++)
        if (strcmp(name, g_kinds[k]->name) == 0) return k;
    return -1;
}

int gt_model_kind_available(gt_model_kind kind) { return kind_vtable(kind) != NULL; }
const gt_model_vtable *gt_model_kind_table(gt_model_kind kind) { return kind_vtable(kind); }
int gt_model_kind_count(void) { return g_n_kinds; }

gt_model_kind gt_model_kind_register(const gt_model_vtable *vt) {
    GT_CHECK(vt && vt->name && vt->defaults && vt->plan && vt->forward && vt->backward && vt->forward_flops,
             GT_EXIT_INTERNAL, "gt_model_kind_register: a table needs name, defaults, plan, forward, backward and "
             "forward_flops");
    GT_CHECK(gt_model_kind_parse(vt->name) < 0, GT_EXIT_INTERNAL, "model kind %s is registered already", vt->name);
    GT_CHECK(g_n_kinds < GT_MODEL_MAX_KINDS, GT_EXIT_INTERNAL, "more than %d model kinds", GT_MODEL_MAX_KINDS);
    g_kinds[g_n_kinds] = vt;
    return (gt_model_kind)g_n_kinds++;
}

const gt_model_vtable *gt_model_kind_table_checked(gt_model_kind kind) {
    const gt_model_vtable *vt = kind_vtable(kind);
    GT_CHECK(vt != NULL, GT_EXIT_USAGE, "model kind %d (%s) is not built into this binary", (int)kind,
             gt_model_kind_name(kind));
    return vt;
}

int gt_model_input_channels_last(gt_model_kind kind) { return gt_model_kind_table_checked(kind)->channels_last; }

int gt_model_kind_seq2point(gt_model_kind kind) { return gt_model_kind_table_checked(kind)->seq2point != 0; }

int gt_model_kind_next_step(gt_model_kind kind) { return gt_model_kind_table_checked(kind)->next_step_targets != NULL; }

void gt_model_next_step_targets(gt_model_kind kind, float *y, float *mask, const float *x, int B, int T, int C) {
    const gt_model_vtable *vt = gt_model_kind_table_checked(kind);
    GT_CHECK(vt->next_step_targets != NULL, GT_EXIT_INTERNAL, "model kind %s has no next-step targets", vt->name);
    vt->next_step_targets(y, mask, x, B, T, C);
}

void gt_model_kinds_by_output(int seq2point, char *buf, size_t n) {
    int cnt = 0, total = 0;
    for (int k = 0; k < g_n_kinds; k++) total += (g_kinds[k]->seq2point != 0) == (seq2point != 0);
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < g_n_kinds; k++) {
        if ((g_kinds[k]->seq2point != 0) != (seq2point != 0)) continue;
        const char *sep = cnt == 0 ? "" : cnt == total - 1 ? " or " : ", ";
        int w = snprintf(buf + len, n - len, "%s%s", sep, g_kinds[k]->name);
        if (w > 0 && (size_t)w < n - len) len += (size_t)w;
        cnt++;
    }
    if (!cnt) snprintf(buf, n, "none in this binary");
}

int gt_model_kind_has(gt_model_kind kind, unsigned has) {
    const gt_model_vtable *vt = kind_vtable(kind);
    return vt && (vt->has & has) == has;
}

/* "s2p_cnn has" / "a, b have": the kinds with the setting, for messages */
static void kinds_with(unsigned has, char *buf, size_t n) {
    size_t len = 0;
    int cnt = 0;
    buf[0] = '\0';
    for (int k = 0; k < g_n_kinds; k++)
        if (g_kinds[k]->has & has) {
            int w = snprintf(buf + len, n - len, "%s%s", cnt ? ", " : "", g_kinds[k]->name);
            if (w > 0 && (size_t)w < n - len) len += (size_t)w;
            cnt++;
        }
    snprintf(buf + len, n - len, cnt == 1 ? " has" : cnt ? " have" : "no kind has");
}

void gt_model_config_check_dropout(const gt_model_config *cfg) {
    const gt_model_vtable *vt = gt_model_kind_table_checked(cfg->kind);
    GT_CHECK(cfg->dropout >= 0.0f && cfg->dropout < 1.0f, GT_EXIT_USAGE, "model.dropout must be in [0, 1) (got %g)",
             (double)cfg->dropout);
    if (cfg->dropout == 0.0f || (vt->has & GT_MODEL_HAS_DROPOUT)) return;
    char who[256], where[128] = "";
    kinds_with(GT_MODEL_HAS_DROPOUT, who, sizeof who);
    int n_with = 0;
    for (int k = 0; k < g_n_kinds; k++)
        if (g_kinds[k]->has & GT_MODEL_HAS_DROPOUT) {
            if (g_kinds[k]->dropout_where) snprintf(where, sizeof where, " (%s)", g_kinds[k]->dropout_where);
            n_with++;
        }
    if (n_with != 1) where[0] = '\0';
    GT_FAIL(GT_EXIT_USAGE, "model.dropout = %g: only %s dropout%s, not %s", (double)cfg->dropout, who, where,
            vt->name);
}

void gt_model_config_check(const gt_model_config *cfg) {
    const gt_model_vtable *vt = gt_model_kind_table_checked(cfg->kind);
    if (cfg->tbptt != 0 && !(vt->has & GT_MODEL_HAS_TBPTT)) {
        char who[256];
        kinds_with(GT_MODEL_HAS_TBPTT, who, sizeof who);
        who[strlen(who) - (strstr(who, " have") ? 5 : 4)] = '\0'; /* the names alone */
        GT_FAIL(GT_EXIT_USAGE,
                "model.tbptt = %d: truncated backpropagation through time is for model.kind %s, not %s", cfg->tbptt,
                who, vt->name);
    }
    gt_model_config_check_dropout(cfg);
}

void gt_model_config_resolve(gt_model_config *cfg, double conv_scale) {
    const gt_model_vtable *vt = gt_model_kind_table_checked(cfg->kind);
    if (vt->resolve) vt->resolve(cfg, conv_scale);
}

double gt_model_bytes_estimate(const gt_model_config *mc, int B) {
    const gt_model_vtable *vt = gt_model_kind_table_checked(mc->kind);
    double width = mc->n_in > mc->n_out ? mc->n_in : mc->n_out;
    const double widths[] = {mc->hidden, mc->d_model, mc->d_ff};
    for (int i = 0; i < 3; i++) width = widths[i] > width ? widths[i] : width;
    for (int l = 0; l < GT_MODEL_MAX_CONV; l++) width = mc->conv_channels[l] > width ? mc->conv_channels[l] : width;
    double est = 4.0 * 16 * B * (double)mc->window * width * (mc->n_layers + 2);
    if (vt->bytes_estimate_extra) est += vt->bytes_estimate_extra(mc, B);
    return est;
}

static const char *const k_precision_names[] = {"fp32", "bf16", "fp16", "tf32", "auto"};

const char *gt_precision_name(gt_precision p) {
    return (unsigned)p < sizeof k_precision_names / sizeof *k_precision_names ? k_precision_names[p] : "?";
}

int gt_precision_parse(const char *name) {
    for (int i = 0; name && i < (int)(sizeof k_precision_names / sizeof *k_precision_names); i++)
        if (!strcmp(name, k_precision_names[i])) return i;
    return -1;
}

void gt_model_config_default(gt_model_config *cfg, gt_model_kind kind) {
    const gt_model_vtable *vt = gt_model_kind_table_checked(kind);
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = kind;
    cfg->max_batch = 256;
    vt->defaults(cfg);
}

