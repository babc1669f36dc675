/* Every metric against values computed by hand on tiny arrays: NILM sums
 * (including a zero-energy appliance and an all-off one), EWMA, quantile,
 * alarm runs (merge gap, minimum duration), point and event metrics with
 * events at both edges, a missed event, an alarm overlapping two events and
 * a false alarm, per-condition splits, no-event turbines, CARE; the NILM
 * state filter (gap closing, flicker removal, breaks, ends, step rounding);
 * the CARE to Compare protocol (earliness weights, coverage on normal-status
 * rows, criticality, the special rules of the final score). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eval/metrics.h"
#include "nilm/nilm_metrics.h"
#include "pdm/pdm_metrics.h"
#include "test.h"

#define TOL 1e-9

static void test_nilm(void) {
    /* appliance A: y 0 100 200 0, yhat 10 90 250 0, on > 50 W, 0.5 h per sample */
    gt_nilm_acc a, z, off, all;
    memset(&a, 0, sizeof a);
    memset(&z, 0, sizeof z);
    memset(&off, 0, sizeof off);
    memset(&all, 0, sizeof all);
    const double y[4] = {0, 100, 200, 0}, yh[4] = {10, 90, 250, 0};
    for (int i = 0; i < 4; i++) gt_nilm_acc_add(&a, y[i], yh[i], 50, 0.5);
    gt_nilm_metrics m;
    gt_nilm_metrics_from_acc(&a, &m);
    TEST_CLOSE(m.mae_w, 17.5, TOL, 0);
    TEST_CLOSE(m.sae, 50.0 / 300.0, TOL, 0);
    TEST_CLOSE(m.nde, sqrt(2700.0 / 50000.0), TOL, 0);
    TEST_CLOSE(m.precision, 1, TOL, 0);
    TEST_CLOSE(m.recall, 1, TOL, 0);
    TEST_CLOSE(m.f1, 1, TOL, 0);
    TEST_CLOSE(m.ea, 1 - 70.0 / 600.0, TOL, 0);
    TEST_CLOSE(m.energy_true_wh, 150, TOL, 0);
    TEST_CLOSE(m.energy_pred_wh, 175, TOL, 0);

    /* zero-energy appliance with one false positive: SAE, NDE, EA, recall, F1 undefined */
    const double yz[3] = {0, 0, 0}, yhz[3] = {0, 60, 0};
    for (int i = 0; i < 3; i++) gt_nilm_acc_add(&z, yz[i], yhz[i], 50, 1);
    gt_nilm_metrics_from_acc(&z, &m);
    TEST_CLOSE(m.mae_w, 20, TOL, 0);
    TEST_CHECK(isnan(m.sae) && isnan(m.nde) && isnan(m.ea));
    TEST_CLOSE(m.precision, 0, TOL, 0); /* predicted on once, never on */
    TEST_CHECK(isnan(m.recall) && isnan(m.f1));

    /* all-off and predicted off: no positives at all -> precision, recall, F1 undefined; MAE 0 */
    for (int i = 0; i < 5; i++) gt_nilm_acc_add(&off, 0, 0, 50, 1);
    gt_nilm_metrics_from_acc(&off, &m);
    TEST_CLOSE(m.mae_w, 0, TOL, 0);
    TEST_CHECK(isnan(m.precision) && isnan(m.recall) && isnan(m.f1) && isnan(m.ea) && isnan(m.sae));

    /* no samples at all */
    gt_nilm_acc none;
    memset(&none, 0, sizeof none);
    gt_nilm_metrics_from_acc(&none, &m);
    TEST_CHECK(isnan(m.mae_w) && isnan(m.ea) && isnan(m.f1));

    /* overall = merged sums: EA 1 - (70 + 60) / (2 * 300), F1 micro 2*2 / (2*2 + 1 + 0) */
    gt_nilm_acc_merge(&all, &a);
    gt_nilm_acc_merge(&all, &z);
    gt_nilm_acc_merge(&all, &off);
    gt_nilm_metrics_from_acc(&all, &m);
    TEST_CLOSE(m.ea, 1 - 130.0 / 600.0, TOL, 0);
    TEST_CLOSE(m.f1, 0.8, TOL, 0);
    TEST_CLOSE(m.mae_w, 130.0 / 12.0, TOL, 0);
    TEST_CLOSE(m.sae, (410.0 - 300.0) / 300.0, TOL, 0);
    /* EA can go negative: predicting 3x the energy */
    gt_nilm_acc bad;
    memset(&bad, 0, sizeof bad);
    gt_nilm_acc_add(&bad, 100, 400, 50, 1);
    gt_nilm_metrics_from_acc(&bad, &m);
    TEST_CLOSE(m.ea, 1 - 300.0 / 200.0, TOL, 0);
}

static void test_ewma_quantile(void) {
    float x[5] = {NAN, 1, NAN, 3, 5}, o[5];
    gt_ewma(x, 5, 0.5, o);
    TEST_CHECK(isnan(o[0]));
    TEST_CLOSE(o[1], 1, 0, 0);
    TEST_CLOSE(o[2], 1, 0, 0); /* NaN holds */
    TEST_CLOSE(o[3], 2, 0, 0);
    TEST_CLOSE(o[4], 3.5, 0, 0);
    gt_ewma(x, 5, 0.5, x); /* in place */
    TEST_CLOSE(x[4], 3.5, 0, 0);
    double v[4] = {4, 1, 3, 2};
    TEST_CLOSE(gt_quantile(v, 4, 0.5), 2.5, TOL, 0);
    double w[4] = {4, 1, 3, 2};
    TEST_CLOSE(gt_quantile(w, 4, 0.995), 3.985, TOL, 0);
    TEST_CLOSE(gt_quantile(w, 4, 1.0), 4, 0, 0);
    TEST_CLOSE(gt_quantile(w, 4, 0.0), 1, 0, 0);
    double one[1] = {7};
    TEST_CLOSE(gt_quantile(one, 1, 0.9), 7, 0, 0);
    TEST_CHECK(isnan(gt_quantile(one, 0, 0.5)));
}

static void test_alarm_runs(void) {
    const float s[12] = {0, 5, 5, 0, 5, 0, 0, 0, 5, 5, 5, NAN};
    gt_alarm_run r[8];
    int64_t n = gt_alarm_runs(s, 12, 1.0, 1, 0, r);
    TEST_EQ_INT(n, 3);
    TEST_EQ_INT(r[0].start, 1); TEST_EQ_INT(r[0].end, 3);
    TEST_EQ_INT(r[1].start, 4); TEST_EQ_INT(r[1].end, 5);
    TEST_EQ_INT(r[2].start, 8); TEST_EQ_INT(r[2].end, 11); /* NaN never exceeds */
    n = gt_alarm_runs(s, 12, 1.0, 1, 1, r);                /* gap 1 merges the first two */
    TEST_EQ_INT(n, 2);
    TEST_EQ_INT(r[0].start, 1); TEST_EQ_INT(r[0].end, 5);
    n = gt_alarm_runs(s, 12, 1.0, 4, 1, r); /* then runs shorter than 4 rows are dropped */
    TEST_EQ_INT(n, 1);
    TEST_EQ_INT(r[0].start, 1); TEST_EQ_INT(r[0].end, 5);
    n = gt_alarm_runs(s, 12, 1.0, 1, 3, r); /* gap 3 merges everything */
    TEST_EQ_INT(n, 1);
    TEST_EQ_INT(r[0].end, 11);
    n = gt_alarm_runs(s, 12, 5.0, 1, 0, r); /* strictly above */
    TEST_EQ_INT(n, 0);
    const float edge[3] = {9, 0, 9};
    n = gt_alarm_runs(edge, 3, 1.0, 1, 0, r);
    TEST_EQ_INT(n, 2);
    TEST_EQ_INT(r[0].start, 0); TEST_EQ_INT(r[1].end, 3);
}

static void test_events(void) {
    /* 20 rows at 1 Hz; events E0 [0,1) (edge), E1 [2,6), E2 [8,10), E3 [15,17) (missed), E4 [19,20) (edge);
     * alarms [4,9) (overlaps E1 and E2), [12,13) (false), [19,20) */
    enum { N = 20 };
    float score[N] = {0};
    uint8_t lab[N] = {0};
    int32_t cond[N];
    for (int r = 4; r < 9; r++) score[r] = 3;
    score[12] = 3, score[19] = 3;
    /* E0 and E2 are operating-status periods (counted as events, not as anomaly events) */
    gt_alarm_run ev[5] = {{0, 1, 1}, {2, 6, 0}, {8, 10, 1}, {15, 17, 0}, {19, 20, 0}};
    for (int e = 0; e < 5; e++)
        for (int64_t r = ev[e].start; r < ev[e].end; r++) lab[r] = 1;
    for (int r = 0; r < N; r++) cond[r] = r < 10 ? 0 : 1;
    gt_pdm_acc tot, bc[2];
    memset(&tot, 0, sizeof tot);
    memset(bc, 0, sizeof bc);
    uint8_t flag[N];
    int64_t na = gt_pdm_score_rows(score, lab, cond, N, ev, 5, 1.0, 1, 0, 1.0, &tot, bc, 2, flag);
    TEST_EQ_INT(na, 3);
    TEST_EQ_INT(flag[4] + flag[8] + flag[12] + flag[19], 4);
    TEST_EQ_INT(flag[3] + flag[9] + flag[13], 0);
    gt_pdm_metrics m;
    gt_pdm_metrics_from_acc(&tot, &m);
    TEST_CLOSE(m.n_events, 5, 0, 0);
    TEST_CLOSE(m.n_detected, 3, 0, 0);
    TEST_CLOSE(m.event_recall, 0.6, TOL, 0);
    /* anomaly events E1, E3, E4: E1 and E4 detected */
    TEST_CLOSE(m.n_anomaly_events, 3, 0, 0);
    TEST_CLOSE(m.n_anomaly_detected, 2, 0, 0);
    TEST_CLOSE(m.anomaly_recall, 2.0 / 3.0, TOL, 0);
    TEST_CLOSE(bc[0].n_anomaly_events, 1, 0, 0); /* E1 (E0, E2 status) */
    TEST_CLOSE(bc[1].n_anomaly_events, 2, 0, 0);
    TEST_CLOSE(bc[1].n_anomaly_detected, 1, 0, 0);
    TEST_CLOSE(m.event_precision, 2.0 / 3.0, TOL, 0);
    TEST_CLOSE(m.event_f05, 1.25 * (2.0 / 3.0) * 0.6 / (0.25 * (2.0 / 3.0) + 0.6), TOL, 0);
    TEST_CLOSE(m.detection_delay_s_mean, 2.0 / 3.0, TOL, 0); /* delays 2, 0, 0 */
    TEST_CLOSE(m.earliness, (0.5 + 1 + 1) / 5.0, TOL, 0);
    TEST_CLOSE(m.turbine_days, 20.0 / 86400.0, 1e-15, 0);
    TEST_CLOSE(m.false_alarms_per_turbine_day, 1.0 / (20.0 / 86400.0), 1e-6, 0);
    TEST_CLOSE(m.point_precision, 4.0 / 7.0, TOL, 0);
    TEST_CLOSE(m.point_recall, 0.4, TOL, 0);
    double f05 = 1.25 * (4.0 / 7.0) * 0.4 / (0.25 * (4.0 / 7.0) + 0.4);
    TEST_CLOSE(m.point_f05, f05, TOL, 0);
    TEST_CLOSE(m.accuracy, 0.7, TOL, 0);
    TEST_CLOSE(m.care, (f05 + 2 * 0.7 + m.event_f05 + 0.5) / 5, TOL, 0);
    /* per condition: events by start, alarms by start, rows by row */
    TEST_CLOSE(bc[0].n_events, 3, 0, 0);
    TEST_CLOSE(bc[0].n_detected, 2, 0, 0);
    TEST_CLOSE(bc[0].n_alarms, 1, 0, 0);
    TEST_CLOSE(bc[0].n_alarms_true, 1, 0, 0);
    TEST_CLOSE(bc[1].n_events, 2, 0, 0);
    TEST_CLOSE(bc[1].n_detected, 1, 0, 0);
    TEST_CLOSE(bc[1].n_alarms, 2, 0, 0);
    TEST_CLOSE(bc[1].n_alarms_true, 1, 0, 0);
    TEST_CLOSE(bc[0].rows + bc[1].rows, 20, 0, 0);
    TEST_CLOSE(bc[0].turbine_days, 10.0 / 86400.0, 1e-15, 0);

    /* merge gap 3 joins [4,9) and [12,13): one alarm, still true; delays unchanged */
    gt_pdm_acc t2;
    memset(&t2, 0, sizeof t2);
    gt_pdm_score_rows(score, lab, NULL, N, ev, 5, 1.0, 1, 3, 1.0, &t2, NULL, 0, NULL);
    TEST_CLOSE(t2.n_alarms, 2, 0, 0);
    TEST_CLOSE(t2.n_alarms_true, 2, 0, 0);
    TEST_CLOSE(t2.n_detected, 3, 0, 0);

    /* no events, no alarms: recall, precision, delay, CARE undefined; 0 false alarms */
    float quiet[N] = {0};
    uint8_t nolab[N] = {0};
    gt_pdm_acc t3;
    memset(&t3, 0, sizeof t3);
    gt_pdm_score_rows(quiet, nolab, NULL, N, NULL, 0, 1.0, 1, 0, 2.0, &t3, NULL, 0, NULL);
    gt_pdm_metrics_from_acc(&t3, &m);
    TEST_CHECK(isnan(m.event_recall) && isnan(m.anomaly_recall) && isnan(m.event_precision) && isnan(m.detection_delay_s_mean));
    TEST_CHECK(isnan(m.care) && isnan(m.point_recall) && isnan(m.point_precision));
    TEST_CLOSE(m.false_alarms_per_turbine_day, 0, 0, 0);
    TEST_CLOSE(m.turbine_days, 20.0 / (86400.0 * 2.0), 1e-15, 0);
    TEST_CLOSE(m.accuracy, 1, 0, 0);

    /* events but no alarm at all: recall 0, reliability 0 in CARE */
    gt_pdm_acc t4;
    memset(&t4, 0, sizeof t4);
    gt_pdm_score_rows(quiet, lab, NULL, N, ev, 5, 1.0, 1, 0, 1.0, &t4, NULL, 0, NULL);
    gt_pdm_metrics_from_acc(&t4, &m);
    TEST_CLOSE(m.event_recall, 0, 0, 0);
    TEST_CHECK(isnan(m.event_precision) && isnan(m.event_f05) && isnan(m.point_f05));
    TEST_CLOSE(m.care, (0 + 2 * 1.0 + 0 + 0) / 5, TOL, 0);
    /* events clipped to the rows: an event starting before row 0 counts from row 0 */
    gt_alarm_run early = {-5, 3, 0};
    gt_pdm_acc t5;
    memset(&t5, 0, sizeof t5);
    float s5[N] = {0};
    s5[1] = 2;
    gt_pdm_score_rows(s5, lab, NULL, N, &early, 1, 1.0, 1, 0, 1.0, &t5, NULL, 0, NULL);
    TEST_CLOSE(t5.n_detected, 1, 0, 0);
    TEST_CLOSE(t5.delay_s_sum, 1, 0, 0);
}

static void test_scores(void) {
    TEST_CHECK(isnan(gt_fbeta(NAN, 1, 0.5)));
    TEST_CLOSE(gt_fbeta(0, 0, 0.5), 0, 0, 0);
    TEST_CLOSE(gt_fbeta(1, 1, 0.5), 1, TOL, 0);
    TEST_CLOSE(gt_fbeta(0.5, 1, 1), 2.0 / 3.0, TOL, 0);
    TEST_CLOSE(gt_care_score(1, 0.4, 1, 1), 0.4, 0, 0); /* accuracy below 0.5: CARE = accuracy */
    TEST_CLOSE(gt_care_score(1, 1, 1, 1), 1, TOL, 0);
    TEST_CLOSE(gt_care_score(NAN, 1, NAN, 0.5), (0 + 2 + 0 + 0.5) / 5, TOL, 0);
}

static int seq_is(const uint8_t *on, const char *want) {
    for (size_t i = 0; want[i]; i++)
        if (on[i] != (uint8_t)(want[i] - '0')) return 0;
    return 1;
}

static void test_state_filter(void) {
    /* closing: off runs of <= 2 steps (20 s) between on steps; the 3-step run stays; the end run is kept */
    uint8_t a[12] = {1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 1};
    TEST_EQ_INT(gt_nilm_state_filter(a, NULL, 12, 10.0, 20.0, 0.0), 3);
    TEST_CHECK(seq_is(a, "111111110001"));
    /* flicker: on runs shorter than 20 s (one step) between off steps; 2 steps (20 s) stay */
    uint8_t b[10] = {0, 1, 0, 0, 1, 1, 0, 0, 1, 0};
    TEST_EQ_INT(gt_nilm_state_filter(b, NULL, 10, 10.0, 0.0, 20.0), 2);
    TEST_CHECK(seq_is(b, "0000110000"));
    /* closing happens first: 1 0 1 becomes one 3-step run, which min_on 30 s keeps */
    uint8_t c[7] = {0, 0, 1, 0, 1, 0, 0};
    TEST_EQ_INT(gt_nilm_state_filter(c, NULL, 7, 10.0, 10.0, 30.0), 1);
    TEST_CHECK(seq_is(c, "0011100"));
    /* but a lone on step is removed */
    uint8_t c2[5] = {0, 0, 1, 0, 0};
    TEST_EQ_INT(gt_nilm_state_filter(c2, NULL, 5, 10.0, 10.0, 30.0), 1);
    TEST_CHECK(seq_is(c2, "00000"));
    /* breaks: runs end there and are not bounded across them */
    uint8_t d[7] = {1, 0, 1, 1, 0, 0, 1}, dbrk[7] = {0, 0, 0, 1, 0, 0, 0};
    TEST_EQ_INT(gt_nilm_state_filter(d, dbrk, 7, 10.0, 10.0, 0.0), 1);
    TEST_CHECK(seq_is(d, "1111001"));
    uint8_t e[4] = {1, 0, 0, 1}, ebrk[4] = {0, 0, 1, 0};
    TEST_EQ_INT(gt_nilm_state_filter(e, ebrk, 4, 10.0, 100.0, 0.0), 0); /* each off run touches the break */
    TEST_CHECK(seq_is(e, "1001"));
    uint8_t f[4] = {0, 1, 1, 0}, fbrk[4] = {0, 0, 1, 0};
    TEST_EQ_INT(gt_nilm_state_filter(f, fbrk, 4, 10.0, 0.0, 100.0), 0); /* each on run touches the break */
    TEST_CHECK(seq_is(f, "0110"));
    /* runs at the ends are never changed; nothing to do without durations */
    uint8_t g[5] = {1, 0, 1, 0, 0};
    TEST_EQ_INT(gt_nilm_state_filter(g, NULL, 5, 10.0, 0.0, 0.0), 0);
    TEST_EQ_INT(gt_nilm_state_filter(g, NULL, 5, 10.0, 0.0, 1000.0), 1); /* the run at step 0 touches the start */
    TEST_CHECK(seq_is(g, "10000"));
    /* durations in seconds on a 36 s grid: 30 s closes nothing, 72 s closes 2 steps;
     * min_on 60 s removes 1-step runs (36 s) and keeps 2-step runs (72 s) */
    uint8_t h[9] = {1, 0, 0, 1, 0, 1, 0, 0, 0};
    TEST_EQ_INT(gt_nilm_state_filter(h, NULL, 9, 36.0, 30.0, 0.0), 0);
    TEST_EQ_INT(gt_nilm_state_filter(h, NULL, 9, 36.0, 72.0, 0.0), 3);
    TEST_CHECK(seq_is(h, "111111000"));
    uint8_t k[8] = {0, 1, 0, 1, 1, 0, 0, 0};
    TEST_EQ_INT(gt_nilm_state_filter(k, NULL, 8, 36.0, 0.0, 60.0), 1);
    TEST_CHECK(seq_is(k, "00011000"));
    /* the state given explicitly decides the counts, the power the error sums */
    gt_nilm_acc acc;
    memset(&acc, 0, sizeof acc);
    gt_nilm_acc_add_state(&acc, 100, 10, 1, 50, 1.0); /* filled: on, power below the threshold */
    gt_nilm_acc_add_state(&acc, 0, 80, 0, 50, 1.0);   /* removed: off although 80 W */
    gt_nilm_acc_add_state(&acc, 0, 0, 0, 50, 1.0);
    TEST_CLOSE(acc.tp, 1, 0, 0);
    TEST_CLOSE(acc.fp, 0, 0, 0);
    TEST_CLOSE(acc.fn, 0, 0, 0);
    TEST_CLOSE(acc.tn, 2, 0, 0);
    TEST_CLOSE(acc.sum_abs_err, 170, 0, 0);
}

static void test_care_protocol(void) {
    /* earliness weights against the reference's linspace sampling: L = 4: 1, 44/45, 28/45, 12/45 */
    TEST_CLOSE(gt_care_earliness_weight(0, 4), 1, TOL, 0);
    TEST_CLOSE(gt_care_earliness_weight(1, 4), 44.0 / 45, TOL, 0);
    TEST_CLOSE(gt_care_earliness_weight(2, 4), 28.0 / 45, TOL, 0);
    TEST_CLOSE(gt_care_earliness_weight(3, 4), 12.0 / 45, TOL, 0);
    /* L = 8: the first quarter (2 rows) at 1, then x = 32/31 at row 2 */
    TEST_CLOSE(gt_care_earliness_weight(1, 8), 1, TOL, 0);
    TEST_CLOSE(gt_care_earliness_weight(2, 8), 92.0 / 93, TOL, 0);
    TEST_CLOSE(gt_care_earliness_weight(7, 8), (4 - 112.0 / 31) / 3, TOL, 0);
    TEST_CLOSE(gt_care_earliness_weight(1, 1), 0, 0, 0);

    /* anomaly event: 10 prediction rows, row 2 not normal status, event rows [4, 8), alarms at 2 5 6 7 9 */
    const uint8_t pa[10] = {0, 0, 1, 0, 0, 1, 1, 1, 0, 1}, na[10] = {1, 1, 0, 1, 1, 1, 1, 1, 1, 1};
    gt_care_event_eval a, a4, c, d;
    gt_care_event_score(pa, na, 10, 4, 8, 1, 3, &a);
    TEST_CHECK(a.anomaly == 1);
    TEST_CLOSE(a.coverage, 0.75, TOL, 0); /* tp 3, fp 1 (row 9), fn 1 (row 4); row 2 not scored */
    TEST_CLOSE(a.accuracy, 7.0 / 9, TOL, 0);
    TEST_CLOSE(a.earliness, 84.0 / 129, TOL, 0);
    TEST_CLOSE(a.max_criticality, 3, 0, 0); /* row 2's alarm does not count (status not normal) */
    TEST_CHECK(a.detected == 1);
    gt_care_event_score(pa, na, 10, 4, 8, 1, 4, &a4);
    TEST_CHECK(a4.detected == 0);
    /* criticality only up to the event end: the alarm at row 9 does not add */
    gt_care_event_score(pa, na, 10, 4, 10, 1, 4, &d);
    TEST_CLOSE(d.max_criticality, 3, 0, 0);
    /* normal event: 6 rows, one alarm at row 1 */
    const uint8_t pc[6] = {0, 1, 0, 0, 0, 0}, nc[6] = {1, 1, 1, 1, 1, 1};
    gt_care_event_score(pc, nc, 6, 3, 6, 0, 3, &c);
    TEST_CHECK(c.anomaly == 0 && c.detected == 0 && isnan(c.coverage) && isnan(c.earliness));
    TEST_CLOSE(c.accuracy, 5.0 / 6, TOL, 0);
    TEST_CLOSE(c.max_criticality, 1, 0, 0);

    gt_care_protocol p;
    gt_care_event_eval ev[3] = {a, c, c};
    gt_care_protocol_final(ev, 2, &p);
    TEST_CLOSE(p.reliability, 1, TOL, 0);
    TEST_CLOSE(p.score, (0.75 + 2 * 5.0 / 6 + 84.0 / 129 + 1) / 5, TOL, 0);
    TEST_CHECK(p.reason == NULL && p.n_events == 2 && p.n_detected == 1);
    /* a detected normal event: reliability F0.5 with tp 1, fp 1 = 1.25 / 2.25 */
    ev[2].detected = 1;
    gt_care_protocol_final(ev, 3, &p);
    TEST_CLOSE(p.reliability, 1.25 / 2.25, TOL, 0);
    /* nothing detected: 0 */
    ev[0] = a4;
    gt_care_protocol_final(ev, 2, &p);
    TEST_CLOSE(p.score, 0, 0, 0);
    TEST_CLOSE(p.reliability, 0, 0, 0);
    /* mean accuracy of the normal events <= 0.5: the accuracy */
    ev[0] = a;
    ev[1].accuracy = 0.5;
    gt_care_protocol_final(ev, 2, &p);
    TEST_CLOSE(p.score, 0.5, 0, 0);
    /* only anomaly events: undefined */
    gt_care_protocol_final(&a, 1, &p);
    TEST_CHECK(isnan(p.score) && p.reason != NULL);
    /* the counter stops at 1000 (the reference's calculate_criticality): 1100 alarms, then 5 quiet rows */
    enum { NL = 1105 };
    uint8_t *pl = calloc(NL, 1), *nl = malloc(NL);
    memset(pl, 1, 1100);
    memset(nl, 1, NL);
    gt_care_event_eval l;
    gt_care_event_score(pl, nl, NL, 0, NL, 0, GT_CARE_CRITICALITY_THRESHOLD, &l);
    TEST_CLOSE(l.max_criticality, 1000, 0, 0);
    TEST_CHECK(l.detected == 1);
    free(pl), free(nl);
    /* exactly 72 is detected (>=), 71 is not */
    uint8_t p72[72], n72[72];
    memset(p72, 1, sizeof p72), memset(n72, 1, sizeof n72);
    gt_care_event_score(p72, n72, 72, 0, 72, 1, GT_CARE_CRITICALITY_THRESHOLD, &l);
    TEST_CHECK(l.max_criticality == 72 && l.detected == 1);
    gt_care_event_score(p72, n72, 71, 0, 71, 1, GT_CARE_CRITICALITY_THRESHOLD, &l);
    TEST_CHECK(l.max_criticality == 71 && l.detected == 0);
    /* Wind Farm A (farm code 0) is scored with ignore_normal_index, the others with the status */
    TEST_CHECK(gt_care_ignores_normal_index(0) == 1 && gt_care_ignores_normal_index(1) == 0 &&
               gt_care_ignores_normal_index(2) == 0);
}

int main(void) {
    test_care_protocol();
    test_nilm();
    test_state_filter();
    test_ewma_quantile();
    test_alarm_runs();
    test_events();
    test_scores();
    TEST_DONE();
}
