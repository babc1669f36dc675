/* synth/synth_source.h: write.h sources over the synthetic generators of synth.h. */
#ifndef GT_SYNTH_SYNTH_SOURCE_H
#define GT_SYNTH_SYNTH_SOURCE_H

#include "synth/synth.h"
#include "io/write.h"

/* The config is copied; the source stays valid until *_free. Not collective. */
gt_nilm_source *gt_synth_nilm_source(const gt_nilm_synth_cfg *cfg);
void gt_synth_nilm_source_free(gt_nilm_source *s);
gt_pdm_source *gt_synth_pdm_source(const gt_pdm_synth_cfg *cfg);
void gt_synth_pdm_source_free(gt_pdm_source *s);

#endif
