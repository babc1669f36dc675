/* Round trip of both file kinds at P ranks: write collectively with all P
 * ranks (closed-form sources, several collective rounds, a rank with nothing to
 * write when P > 3 for PdM), then read back with the sharded readers on every
 * sub-communicator of k = 1..P ranks (so a file written by 4 ranks is read by
 * 1, 2, 3 and 4) and check every element, the plan (each item exactly once,
 * balanced) and the tables. Uncompressed and deflate files. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "io/mpi_test.h"
#include "io/read.h"
#include "io/shard.h"
#include "io/testgen.h"
#include "test.h"

static int check_nilm(const char *path, MPI_Comm comm, int H) {
    int fails0 = gt_test_failures;
    gt_nilm_shard *s = gt_nilm_shard_read(path, comm);
    TEST_EQ_INT(s->n_households_total, H);
    TEST_EQ_INT(s->n_appliances, TG_NILM_A);
    TEST_CHECK(!strcmp(s->meta[2].name, "app2"));
    TEST_CLOSE(s->meta[2].on_power_w, 30.0, 0, 0);
    TEST_CLOSE(s->meta[4].max_power_w, 5000.0, 0, 0);
    TEST_CHECK(s->fault_flags != NULL && s->owns != NULL && s->has_lowres);
    TEST_CLOSE(s->lowres_period_s, 60.0, 0, 0);
    int64_t sum_idx = 0, rows = 0;
    for (int k = 0; k < s->n_households; k++) {
        int h = s->index[k];
        sum_idx += h + 1;
        int64_t n = s->row_offset[k + 1] - s->row_offset[k];
        TEST_EQ_INT(n, tg_nilm_rows(h));
        TEST_EQ_INT(s->id[k], 1000 + h);
        TEST_CLOSE(s->period_s[k], tg_nilm_period(h), 0, 0);
        if (k > 0) TEST_CHECK(s->index[k] > s->index[k - 1]);
        for (int a = 0; a < TG_NILM_A; a++) TEST_EQ_INT(s->owns[k * TG_NILM_A + a], (h + a) % 2);
        int64_t o = s->row_offset[k], t0 = TG_T0_MS + (int64_t)h * 60000, pms = (int64_t)(tg_nilm_period(h) * 1000);
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            bad += s->timestamps[o + i] != t0 + i * pms;
            bad += s->aggregate[o + i] != tg_agg(h, i);
            bad += s->fault_flags[o + i] != tg_flag(h, i);
            for (int a = 0; a < TG_NILM_A; a++) bad += s->appliances[(o + i) * TG_NILM_A + a] != tg_app(h, i, a);
        }
        TEST_EQ_INT(bad, 0);
        /* low resolution: means of 60 s bins */
        int64_t lo = s->lowres_offset[k], nl = s->lowres_offset[k + 1] - lo;
        TEST_EQ_INT(nl, ((n - 1) * pms) / 60000 + 1);
        int lbad = 0;
        for (int64_t b = 0; b < nl; b++) {
            double sa = 0, sp[TG_NILM_A] = {0};
            int64_t c = 0;
            for (int64_t i = 0; i < n; i++)
                if (i * pms / 60000 == b) {
                    sa += tg_agg(h, i);
                    for (int a = 0; a < TG_NILM_A; a++) sp[a] += tg_app(h, i, a);
                    c++;
                }
            lbad += s->lowres_timestamps[lo + b] != t0 + b * 60000;
            lbad += s->lowres_aggregate[lo + b] != (float)(sa / c);
            for (int a = 0; a < TG_NILM_A; a++) lbad += s->lowres_appliances[(lo + b) * TG_NILM_A + a] != (float)(sp[a] / c);
        }
        TEST_EQ_INT(lbad, 0);
        rows += n;
    }
    TEST_EQ_INT(rows, s->n_rows);
    int64_t tot[2] = {sum_idx, s->n_households}, all[2];
    MPI_Allreduce(tot, all, 2, MPI_INT64_T, MPI_SUM, comm);
    TEST_EQ_INT(all[1], H);               /* every household once ... */
    TEST_EQ_INT(all[0], (int64_t)H * (H + 1) / 2); /* ... and each index once */
    TEST_CHECK(s->stats.imbalance >= 1.0 && s->stats.imbalance < 2.0);
    gt_nilm_shard_free(s);
    return gt_test_failures == fails0;
}

static int check_pdm(const char *path, MPI_Comm comm, int T) {
    int fails0 = gt_test_failures;
    gt_pdm_shard *s = gt_pdm_shard_read(path, comm);
    TEST_EQ_INT(s->n_turbines_total, T);
    TEST_EQ_INT(s->n_channels, TG_PDM_C);
    TEST_CHECK(!strcmp(s->channels[1].name, "ch1") && !strcmp(s->channels[1].unit, "degC"));
    int64_t sum_idx = 0;
    int n_seg_expect = 0, n_ev_expect = 0;
    for (int k = 0; k < s->n_turbines; k++) {
        int t = s->index[k];
        sum_idx += t + 1;
        int64_t n = s->row_offset[k + 1] - s->row_offset[k], o = s->row_offset[k];
        TEST_EQ_INT(n, tg_pdm_rows(t));
        TEST_EQ_INT(s->id[k], 500 + t);
        TEST_EQ_INT(s->farm[k], t / 3);
        TEST_EQ_INT(s->machine_type[k], t % 2);
        TEST_CLOSE(s->rate_hz[k], 10.0, 0, 0);
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            bad += s->timestamps[o + i] != TG_T0_MS + t * 1000 + i * 100;
            bad += s->labels[o + i] != tg_label(t, i);
            for (int c = 0; c < TG_PDM_C; c++) bad += s->signals[(o + i) * TG_PDM_C + c] != tg_sig(t, i, c);
        }
        TEST_EQ_INT(bad, 0);
        n_seg_expect += 2;
        n_ev_expect += t % 2 == 0;
    }
    TEST_EQ_INT(s->n_segments, n_seg_expect);
    TEST_EQ_INT(s->n_events, n_ev_expect);
    for (int j = 0; j < s->n_segments; j++) {
        int t = s->index[s->segment_turbine[j]];
        int64_t half = tg_pdm_rows(t) / 2;
        TEST_CHECK((s->segments[j].code == 0 && s->segments[j].start_row == 0 && s->segments[j].end_row == half) ||
                   (s->segments[j].code == 1 && s->segments[j].start_row == half &&
                    s->segments[j].end_row == tg_pdm_rows(t)));
    }
    for (int j = 0; j < s->n_events; j++) {
        TEST_CHECK(s->index[s->event_turbine[j]] % 2 == 0);
        TEST_CHECK(s->events[j].start_row == 100 && s->events[j].end_row == 200 && s->events[j].code == 1);
    }
    int64_t tot[2] = {sum_idx, s->n_turbines}, all[2];
    MPI_Allreduce(tot, all, 2, MPI_INT64_T, MPI_SUM, comm);
    TEST_EQ_INT(all[1], T);
    TEST_EQ_INT(all[0], (int64_t)T * (T + 1) / 2);
    gt_pdm_shard_free(s);
    return gt_test_failures == fails0;
}

int main(int argc, char **argv) {
    int rank, size;
    tg_mpi_init(&argc, &argv, &rank, &size);
    const int H = 7, T = 3; /* T < 4: one rank has no turbine at 4 ranks */
    for (int deflate = 0; deflate <= 4; deflate += 4) {
        char pn[64], pp[64];
        snprintf(pn, sizeof pn, "io_rt_nilm_np%d_d%d.h5", size, deflate);
        snprintf(pp, sizeof pp, "io_rt_pdm_np%d_d%d.h5", size, deflate);
        gt_write_opts wo;
        gt_write_opts_defaults(&wo);
        wo.deflate = deflate;
        wo.chunk_rows = 256;
        wo.batch_bytes = 32 << 10; /* several rounds per rank */
        gt_nilm_source ns;
        tg_nilm ng;
        tg_nilm_source(&ns, &ng, H, 0, 60.0);
        gt_write_stats st;
        gt_nilm_write(pn, &ns, &wo, MPI_COMM_WORLD, &st);
        TEST_CHECK(st.n_rounds >= 2);
        gt_pdm_source ps;
        tg_pdm pg;
        tg_pdm_source(&ps, &pg, T);
        gt_pdm_write(pp, &ps, &wo, MPI_COMM_WORLD, &st);
        TEST_CHECK(st.n_rounds >= 2);
        for (int k = 1; k <= size; k++) {
            MPI_Comm sub;
            MPI_Comm_split(MPI_COMM_WORLD, rank < k ? 0 : MPI_UNDEFINED, rank, &sub);
            if (rank < k) {
                int ok = check_nilm(pn, sub, H);
                ok &= check_pdm(pp, sub, T);
                if (!ok) fprintf(stderr, "rank %d: failures reading %s / %s with %d ranks\n", rank, pn, pp, k);
                MPI_Comm_free(&sub);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            remove(pn);
            remove(pp);
        }
    }
    int ok = tg_all(gt_test_failures == 0, MPI_COMM_WORLD);
    MPI_Finalize();
    if (!ok && gt_test_failures == 0) gt_test_failures = 1;
    TEST_DONE();
}
