/* pdm/pdm_usage.c: the PdM lines of the data usage report (gt_data_task_i
 * log_channels): which channels the spike test runs on, the channels with the
 * most spikes and missing samples, dead channels and the imputed samples. */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "data/dataset_impl.h"
#include "pdm/pdm.h"
#include "pdm/pdm_impl.h"

void gt_pdm_log_channels(const gt_dataset *ds, const gt_item_usage *u, int n, const gt_screen_summary *g,
                         char *most_spike, char *most_gap, size_t cap) {
    char *top_spike = most_spike, *top_gap = most_gap;
    {
        int n_kind[4] = {0, 0, 0, 0}, n_sel = 0;
        const gt_pdm_shard *sh = ((const gt_pdm_part *)ds->part)->sh;
        for (int c = 0; c < ds->n_cols; c++) {
            n_kind[gt_pdm_channel_kind_desc(sh->channels[c].name, sh->channels[c].desc, sh->channels[c].unit)]++;
            n_sel += ds->ch_spike_test[c];
        }
        const char *sel = gt_pdm_data_cfg(&ds->cfg)->spike_channels;
        GT_INFO("data: channels: %d condition, %d operational, %d angle, %d min/max/std; the spike test runs on %d "
                "(data.spike_channels = %s)", n_kind[0], n_kind[1], n_kind[2], n_kind[3], n_sel,
                sel[0] ? sel : "auto");
        for (int which = 0; which < 2; which++) {
            const int64_t *cnt = which ? ds->ch_missing : ds->ch_spikes;
            char *out = which ? top_gap : top_spike;
            uint8_t used_c[GT_DATA_MAX_CHANNELS] = {0};
            for (int k = 0; k < 3; k++) { /* the three largest counts */
                int best = -1;
                for (int c = 0; c < ds->n_cols; c++)
                    if (!used_c[c] && cnt[c] > 0 && (best < 0 || cnt[c] > cnt[best])) best = c;
                if (best < 0) break;
                used_c[best] = 1;
                size_t l = strlen(out);
                snprintf(out + l, cap - l, "%s%s (%lld)", k ? ", " : "", sh->channels[best].name, (long long)cnt[best]);
            }
        }
        if (top_spike[0]) GT_INFO("data: most spikes found on %s", top_spike);
        /* missing samples: a channel without a finite sample anywhere is a dead sensor */
        int64_t rows = 0;
        for (int i = 0; i < n; i++) rows += u[i].rows;
        char dead[256] = "";
        int n_dead = 0;
        for (int c = 0; c < ds->n_cols; c++)
            if (rows > 0 && ds->ch_missing[c] >= rows) {
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
                    top_gap[0] ? top_gap : "-", gt_pdm_data_cfg(&ds->cfg)->row_missing);
    }
}
