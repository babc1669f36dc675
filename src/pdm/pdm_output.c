/* pdm/pdm_output.c: what the PdM evaluation writes: predict's HDF5 file
 * (per-row score, alarm, top channel; the threshold and its calibration as
 * attributes) and eval's score trace of one turbine for the report (see
 * pdm_impl.h, docs/evaluation.md). */
#define _GNU_SOURCE
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/escape.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "data/dataset.h"
#include "eval/eval.h"
#include "eval/eval_impl.h"
#include "pdm/pdm_impl.h"
#include "io/h5.h"
#include "io/read.h"

void gt_pdm_write_trace(const char *path, const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, int k, const float *score,
                        const int16_t *top, double thr) {
    int64_t lo = ti[k].e0, n = ti[k].e1 - lo;
    FILE *f = gt_fopen_atomic(path, 0); /* a link there is replaced, never followed */
    if (f) {
        fprintf(f, "# turbine id %lld (file index %d, %s), rows %lld.., threshold %.6g: time_h score label "
                   "channel (the channel with the largest term of the score)\n",
                (long long)sh->id[k], sh->index[k], ti[k].holdout ? "held out" : "test split", (long long)lo, thr);
        int64_t step = n / 4000 + 1;
        for (int64_t a = 0; a < n; a += step) {
            float mx = NAN;
            int lab = 0, ch = -1;
            for (int64_t r = a; r < a + step && r < n; r++) {
                float v = score[ti[k].r0 + lo + r];
                if (isfinite(v) && !(mx >= v)) mx = v, ch = top[ti[k].r0 + lo + r];
                if (sh->labels[ti[k].r0 + lo + r]) lab = 1;
            }
            double th = (double)a / ti[k].rate / 3600.0;
            char cn[3 * GT_FORMAT_NAME_LEN]; /* one token: the row keeps its 4 columns */
            gt_esc_token(cn, sizeof cn, ch >= 0 && ch < sh->n_channels ? sh->channels[ch].name : "-");
            if (isfinite(mx)) fprintf(f, "%.5f %.6g %d %s\n", th, mx, lab, cn);
            else fprintf(f, "%.5f NaN %d -\n", th, lab);
        }
        fclose(f);
    }
}

void gt_predict_pdm(const char *data_file, const gt_eval_model *ems, int n_models, const gt_eval_config *ec,
                    const char *out_path, MPI_Comm comm) {
    const gt_pdm_eval_config *pcfg = gt_pdm_eval_cfg(ec);
    int rank;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    const double signal_limit = gt_pdm_data_cfg(&ems[0].data)->signal_limit;
    gt_pdm_shard *sh = gt_pdm_shard_read_opts(data_file, &(gt_read_opts){signal_limit}, comm);
    gt_pdm_check_filters(data_file, sh, &ems[0].data, comm); /* the run's filters on this file */
    const int nt = sh->n_turbines;
    gt_data_config dsel = ems[0].data;
    gt_pdm_care_select(&dsel, data_file, comm);
    gt_pdm_tinfo *ti = gt_pdm_plan_turbines(sh, &dsel, ec, gt_pdm_max_window(ems, n_models));
    double thr, qv;
    int64_t nv;
    int16_t *top;
    gt_pdm_env_out env;
    int level;
    float *score = gt_pdm_scores(data_file, sh, ti, ems, n_models, ec, 1, comm, &thr, &qv, &nv, &level, &top, &env);
    gt_pdm_envelope es;
    gt_pdm_envelope_summary(&env, sh, comm, &es, rank == 0 ? "predict" : NULL);
    uint8_t *alarm = GT_CALLOC((size_t)(sh->n_rows > 0 ? sh->n_rows : 1), 1);
    int64_t *nrows = GT_MALLOC(sizeof(int64_t) * (size_t)(nt > 0 ? nt : 1));
    for (int k = 0; k < nt; k++) {
        nrows[k] = ti[k].n;
        gt_pdm_alarm_mask(score + ti[k].r0, ti[k].n, thr, ec, ti[k].rate, alarm + ti[k].r0);
    }
    gt_eval_out o;
    gt_eval_out_open(&o, out_path, nt, sh->index, nrows, sh->n_turbines_total, comm);
    gt_h5_attr_str(o.f, "kind", "pdm_scores");
    gt_h5_attr_i64(o.f, "schema_version", 1);
    gt_h5_attr_str(o.f, "source", data_file);
    gt_h5_attr_f64(o.f, "threshold", thr);
    gt_h5_attr_str(o.f, "level", level == GT_PDM_LEVEL_ROBUST ? "robust" : "quantile"); /* as used (auto resolved) */
    gt_h5_attr_f64(o.f, "quantile", pcfg->quantile);
    gt_h5_attr_f64(o.f, "quantile_value", qv); /* the level: the quantile, or median + 3 x 1.4826 MAD (robust) */
    gt_h5_attr_f64(o.f, "margin", pcfg->margin);
    gt_h5_attr_f64(o.f, "ewma_s", pcfg->ewma_s); /* -1: auto (gt_pdm_ewma_span_rows) */
    gt_h5_attr_i64(o.f, "score", pcfg->score);
    gt_h5_attr_f64(o.f, "channel_quantile", pcfg->channel_quantile);
    gt_h5_attr_f64(o.f, "envelope", pcfg->envelope);
    gt_h5_attr_i64(o.f, "flat_line", pcfg->flat_line);
    gt_h5_attr_i64(o.f, "nbm_linear", pcfg->nbm_linear);
    gt_h5_attr_i64(o.f, "envelope_rows_not_scored", es.rows_out);
    gt_h5_attr_i64(o.f, "n_models", n_models);
    gt_eval_out_attr_models(&o, "models", ems, n_models, 1);
    gt_eval_out_rows(&o, "timestamps", H5T_NATIVE_INT64, H5T_STD_I64LE, 0, sh->timestamps);
    gt_eval_out_rows(&o, "score", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, 0, score);
    gt_eval_out_rows(&o, "alarm", H5T_NATIVE_UINT8, H5T_STD_U8LE, 0, alarm);
    gt_eval_out_rows(&o, "top_channel", H5T_NATIVE_INT16, H5T_STD_I16LE, 0, top);
    gt_h5_write_strings(o.f, "channels", sh->channels[0].name, sizeof sh->channels[0], GT_FORMAT_NAME_LEN,
                        sh->n_channels, comm); /* the names top_channel indexes */
    gt_eval_out_rows(&o, "labels", H5T_NATIVE_UINT8, H5T_STD_U8LE, 0, sh->labels);
    const int NT = sh->n_turbines_total;
    double *idl = GT_MALLOC(sizeof(double) * (size_t)(nt > 0 ? nt : 1)), *ida = GT_MALLOC(sizeof(double) * (size_t)NT + 8);
    for (int k = 0; k < nt; k++) idl[k] = (double)sh->id[k];
    gt_eval_gather_items(nt, sh->index, idl, 1, NT, ida, comm);
    int64_t *ids = GT_MALLOC(sizeof(int64_t) * (size_t)NT + 8);
    for (int f = 0; f < NT; f++) ids[f] = (int64_t)ida[f];
    gt_eval_out_table(&o, "turbines/id", H5T_NATIVE_INT64, H5T_STD_I64LE, NT, 0, ids);
    gt_eval_out_table(&o, "turbines/row_offset", H5T_NATIVE_INT64, H5T_STD_I64LE, NT + 1, 0, o.goff);
    gt_eval_out_close(&o);
    if (rank == 0 && level != GT_PDM_LEVEL_ROBUST)
        GT_INFO("predict: wrote %s: %d turbines, threshold %.6g (%g x the %g quantile %.6g of %lld validation scores)",
                out_path, NT, thr, pcfg->margin, pcfg->quantile, qv, (long long)nv);
    else if (rank == 0)
        GT_INFO("predict: wrote %s: %d turbines, threshold %.6g (%g x the robust level %.6g, median + 3 x 1.4826 MAD "
                "of %lld validation scores)", out_path, NT, thr, pcfg->margin, qv, (long long)nv);
    free(idl), free(ida), free(ids), free(alarm), free(nrows), free(score), free(top), free(ti);
    gt_pdm_shard_free(sh);
}

