/* synth/synth_gens.c: the list of generators (synth_gen.h), in the order of
 * the help and the usage line, and the settings they all have. Only lists. */
#include <stdio.h>
#include <string.h>

#include "synth/synth_gen.h"

extern const gt_synth_gen_i gt_synth_gen_nilm, gt_synth_gen_pdm;

static const gt_synth_gen_i *const k_gens[] = {&gt_synth_gen_nilm, &gt_synth_gen_pdm};
#define N_GENS ((int)(sizeof k_gens / sizeof k_gens[0]))

const gt_synth_setting gt_synth_common_settings[] = {
    {"synth.seed", "seed", GT_SYNTH_INT, "generator seed (default: generator's)"},
    {"synth.days", "days", GT_SYNTH_FLOAT, "nominal days per household/turbine (default: generator's)"},
    {NULL, NULL, 0, NULL},
};

const gt_synth_gen_i *gt_synth_gen_at(int i) { return i >= 0 && i < N_GENS ? k_gens[i] : NULL; }

const gt_synth_gen_i *gt_synth_gen_find(const char *name) {
    for (int i = 0; name && i < N_GENS; i++)
        if (!strcmp(k_gens[i]->name, name)) return k_gens[i];
    return NULL;
}

void gt_synth_gen_names(char *out, size_t out_bytes, const char *sep, const char *last) {
    size_t l = 0;
    out[0] = 0;
    for (int i = 0; i < N_GENS && l < out_bytes; i++)
        l += (size_t)snprintf(out + l, out_bytes - l, "%s%s", i == 0 ? "" : i == N_GENS - 1 ? last : sep,
                              k_gens[i]->name);
}
