/* pdm/pdm_data_config.c: PdM's block of the data settings (pdm.h
 * gt_pdm_data_config): its defaults (the data table's config_defaults) and
 * its lookup in a gt_data_config. */
#include <stdio.h>
#include <string.h>

#include "data/dataset.h"
#include "pdm/pdm.h"
#include "pdm/pdm_impl.h"

_Static_assert(sizeof(gt_pdm_data_config) <= GT_DATA_TASK_ARENA_BYTES, "PdM's data settings outgrew the arena");

void gt_pdm_data_config_defaults(void *cfg) {
    gt_pdm_data_config *c = cfg;
    memset(c, 0, sizeof *c);
    c->train_normal_only = 1;
    c->target = GT_PDM_TARGET_NEXT;
    c->row_missing = 0.5;
    c->short_gap = 6;
    c->norm_turbine = 0; /* data.norm = global */
    c->signal_limit = GT_PDM_SIGNAL_LIMIT;
    snprintf(c->spike_channels, sizeof c->spike_channels, "auto");
    snprintf(c->nbm_inputs, sizeof c->nbm_inputs, "auto");
    snprintf(c->nbm_targets, sizeof c->nbm_targets, "auto");
    c->care_event = -1;
    c->care.event_id = -1;
}

const gt_pdm_data_config *gt_pdm_data_cfg(const gt_data_config *dc) { return gt_data_task_config_c(dc, "pdm"); }

gt_pdm_data_config *gt_pdm_data_cfg_set(gt_data_config *dc) { return gt_data_task_config(dc, "pdm"); }
