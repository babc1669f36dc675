/* pdm/pdm_channels.c: PdM channel kinds (what a channel measures, from
 * its name, description and unit) and the NBM roles (input / target) of a
 * turbine's channels (see pdm.h). */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "pdm/pdm.h"

static int has_word(const char *s, const char *w) { return strstr(s, w) != NULL; }

/* lower-case "name description" (what the word tests read) into out */
static void channel_text(const char *name, const char *desc, char *out, size_t cap) {
    snprintf(out, cap, "%s%s%s", name ? name : "", desc && desc[0] ? " " : "", desc ? desc : "");
    for (char *p = out; *p; p++) *p = (char)tolower((unsigned char)*p);
}

gt_channel_kind gt_pdm_channel_kind(const char *name, const char *unit) {
    return gt_pdm_channel_kind_desc(name, NULL, unit);
}

gt_channel_kind gt_pdm_channel_kind_desc(const char *name, const char *desc, const char *unit) {
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

const char *gt_pdm_channel_kind_name(gt_channel_kind k) {
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

int gt_pdm_spike_channel(const gt_data_config *cfg, const char *name, const char *desc, const char *unit) {
    const char *sel = gt_pdm_data_cfg(cfg)->spike_channels;
    if (!sel[0] || !strcmp(sel, "auto")) return gt_pdm_channel_kind_desc(name, desc, unit) == GT_CHANNEL_CONDITION;
    if (!strcmp(sel, "all")) return 1;
    if (!strcmp(sel, "none")) return 0;
    return name_matches(sel, name);
}

int gt_pdm_target_parse(const char *text) {
    if (!text || !*text || !strcmp(text, "next")) return GT_PDM_TARGET_NEXT;
    if (!strcmp(text, "nbm")) return GT_PDM_TARGET_NBM;
    return -1;
}

const char *gt_pdm_target_name(int t) { return t == GT_PDM_TARGET_NBM ? "nbm" : "next"; }

/* The automatic role of one channel (gt_pdm_nbm_roles). */
static gt_nbm_role nbm_auto_role(const char *name, const char *desc, const char *unit) {
    char n[128], t[160], u[32];
    size_t i;
    for (i = 0; name[i] && i + 1 < sizeof n; i++) n[i] = (char)tolower((unsigned char)name[i]);
    n[i] = 0;
    for (i = 0; unit[i] && i + 1 < sizeof u; i++) u[i] = (char)tolower((unsigned char)unit[i]);
    u[i] = 0;
    gt_channel_kind k = gt_pdm_channel_kind_desc(n, desc, unit);
    const int aggregate = k == GT_CHANNEL_AGGREGATE;
    if (aggregate) { /* an interval's min/max/std: the role of the signal it summarises */
        n[strlen(n) - 4] = 0;
        k = gt_pdm_channel_kind_desc(n, desc, unit);
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

void gt_pdm_nbm_roles(const gt_data_config *cfg, const gt_io_channel *ch, int C, uint8_t *role, int *n_inputs,
                       int *n_targets) {
    const gt_pdm_data_config *pc = gt_pdm_data_cfg(cfg);
    const int in_auto = !pc->nbm_inputs[0] || !strcmp(pc->nbm_inputs, "auto");
    const int tg_auto = !pc->nbm_targets[0] || !strcmp(pc->nbm_targets, "auto");
    *n_inputs = *n_targets = 0;
    for (int c = 0; c < C; c++) {
        gt_nbm_role a = nbm_auto_role(ch[c].name, ch[c].desc, ch[c].unit);
        int tg = tg_auto ? a == GT_NBM_TARGET : name_matches(pc->nbm_targets, ch[c].name);
        int in = !tg && (in_auto ? a == GT_NBM_INPUT : name_matches(pc->nbm_inputs, ch[c].name));
        role[c] = (uint8_t)(tg ? GT_NBM_TARGET : in ? GT_NBM_INPUT : GT_NBM_UNUSED);
        *n_targets += tg;
        *n_inputs += in;
    }
}

void gt_pdm_nbm_input(float *x, int64_t n_steps, int C, const uint8_t *role) {
    for (int64_t t = 0; t < n_steps; t++)
        for (int c = 0; c < C; c++)
            if (role[c] != GT_NBM_INPUT) x[t * C + c] = 0.0f;
}

