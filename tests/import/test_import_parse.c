/* tests/import/test_import_parse.c: the importers' text layer (import/import_parse.h):
 * number and date parsers against strtod/known values, the channel parser's
 * line numbers, sort/duplicate clean-up, resampling means (plain and circular)
 * and gap marks against hand-computed values; with --bench, the parse speed
 * (MB/s per core) on 64 MB of UK-DALE-like and REFIT-like text. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/check.h"
#include "import/import_parse.h"
#include "test.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void test_numbers(void) {
    const char *cases[] = {"0", "1", "-1", "3.14159", "1e3", "2.5E-3", "123456789012345678", "0.1", "1234.5678",
                           "-0.000123", "6.02214076e23", "1e-300", "99999999999999999999", ".5", "241.57"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double v = -1, ref = strtod(cases[i], NULL);
        const char *e = cases[i] + strlen(cases[i]);
        const char *r = gt_parse_f64(cases[i], e, &v);
        TEST_CHECK(r == e);
        TEST_CLOSE(v, ref, 0, 4e-16);
    }
    double v;
    const char *s = "nan";
    TEST_CHECK(gt_parse_f64(s, s + 3, &v) == s + 3 && isnan(v));
    s = "abc";
    TEST_CHECK(gt_parse_f64(s, s + 3, &v) == NULL);
    s = "1e";
    TEST_CHECK(gt_parse_f64(s, s + 2, &v) == NULL);
    s = "-";
    TEST_CHECK(gt_parse_f64(s, s + 1, &v) == NULL);
    int64_t ms;
    s = "1352500095.5";
    TEST_CHECK(gt_parse_unix_ms(s, s + strlen(s), &ms) == s + strlen(s));
    TEST_EQ_INT(ms, 1352500095500LL);
    s = "1303132929";
    gt_parse_unix_ms(s, s + strlen(s), &ms);
    TEST_EQ_INT(ms, 1303132929000LL);
    s = "1.00049"; /* rounds half up on the 4th decimal */
    gt_parse_unix_ms(s, s + strlen(s), &ms);
    TEST_EQ_INT(ms, 1000);
    s = "2022-08-11 04:20:00";
    TEST_CHECK(gt_parse_datetime_ms(s, s + strlen(s), &ms) == s + strlen(s));
    TEST_EQ_INT(ms, 1660191600000LL); /* date -u -d '2022-08-11 04:20:00' +%s */
    s = "2000-02-29T23:59:59.250Z";
    TEST_CHECK(gt_parse_datetime_ms(s, s + strlen(s), &ms) == s + strlen(s));
    TEST_EQ_INT(ms, 951868799250LL);
    s = "2022-13-01 00:00:00";
    TEST_CHECK(gt_parse_datetime_ms(s, s + strlen(s), &ms) == NULL);
}

/* The calendar of the one date parser (issue #37, class 6): 29 February only
 * in leap years (every 4th, not centuries but every 400th), each month's own
 * length, seconds 0..59 (":60" was accepted: the next minute's ":00" a second
 * time), against Python's calendar-checked datetime values (date -u +%s). */
static void test_calendar(void) {
    static const struct {
        const char *s;
        long long ms; /* -1: refused */
    } cases[] = {
        {"2020-02-29 12:00:00", 1582977600000LL}, {"2000-02-29 00:00:00", 951782400000LL},
        {"2021-02-29 00:00:00", -1},             {"2019-02-29 00:00:00", -1},
        {"1900-02-29 00:00:00", -1},             {"2100-02-29 00:00:00", -1},
        {"2021-02-28 23:59:59", 1614556799000LL}, {"2024-02-30 00:00:00", -1},
        {"2021-04-31 00:00:00", -1},             {"2021-06-31 00:00:00", -1},
        {"2021-09-31 00:00:00", -1},             {"2021-11-31 00:00:00", -1},
        {"2021-04-30 00:00:00", 1619740800000LL}, {"2021-12-31 23:59:59", 1640995199000LL},
        {"2016-12-31 23:59:60", -1},             {"2021-01-01 00:00:60", -1},
        {"2021-01-01 00:60:00", -1},             {"2021-01-01 24:00:00", -1},
        {"2021-01-00 00:00:00", -1},             {"2021-00-10 00:00:00", -1},
        {"2021-01-01 00:00:59.999", 1609459259999LL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *s = cases[i].s;
        int64_t ms = -7;
        const char *r = gt_parse_datetime_ms(s, s + strlen(s), &ms);
        if (cases[i].ms < 0) {
            TEST_CHECK(r == NULL);
            if (r) fprintf(stderr, "  accepted %s\n", s);
        } else {
            TEST_CHECK(r == s + strlen(s));
            TEST_EQ_INT(ms, cases[i].ms);
        }
    }
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    for (unsigned m = 1; m <= 12; m++) {
        TEST_EQ_INT(gt_days_in_month(2023, m), days[m - 1]);
        TEST_EQ_INT(gt_days_in_month(2024, m), days[m - 1] + (m == 2));
    }
    TEST_EQ_INT(gt_days_in_month(1900, 2), 28);
    TEST_EQ_INT(gt_days_in_month(2000, 2), 29);
    TEST_EQ_INT(gt_days_in_month(2023, 0), 0);
    TEST_EQ_INT(gt_days_in_month(2023, 13), 0);
    /* every day of 1990..2099 parses to the day after the one before: no gap, no day twice */
    int64_t prev = -1;
    char buf[32];
    for (int y = 1990; y < 2100; y++)
        for (unsigned m = 1; m <= 12; m++)
            for (int d = 1; d <= gt_days_in_month(y, m); d++) {
                snprintf(buf, sizeof buf, "%04d-%02u-%02d 00:00:00", y, m, d);
                int64_t ms;
                TEST_REQUIRE(gt_parse_datetime_ms(buf, buf + strlen(buf), &ms) == buf + strlen(buf));
                if (prev >= 0) {
                    TEST_CHECK(ms - prev == 86400000LL);
                    if (ms - prev != 86400000LL) fprintf(stderr, "  %s\n", buf);
                }
                prev = ms;
            }
    TEST_EQ_INT(prev, 4102358400000LL); /* 2099-12-31 */
}

static void test_tv_and_clean(void) {
    gt_diag d = {0};
    d.quiet = 1;
    gt_series s = {0};
    gt_series_stats st = {0};
    /* time stamps in 2014 (1400000000 s): earlier than 1990 is refused below */
    const char *txt = "1400000100 1\n\n1400000106 2.5\r\n1400000103 7\n1400000106 2.5\n1400000106 9\n1400000112 4\n";
    TEST_EQ_INT(gt_parse_tv(txt, strlen(txt), "f.dat", 1, 2, 2, 60000, &s, &d, &st), 0);
    TEST_EQ_INT(s.n, 6);
    TEST_CHECK(s.unsorted);
    TEST_EQ_INT(s.line[2], 4);
    TEST_EQ_INT(gt_series_clean(&s, "f.dat", &d, &st), 0);
    TEST_EQ_INT(s.n, 4); /* 100 103 106 112 */
    TEST_EQ_INT(st.n_exact_dup, 1);
    TEST_EQ_INT(st.n_conflict, 1);
    TEST_CHECK(strstr(d.last_warn, "f.dat:6: conflicting duplicate of the timestamp at line 3") != NULL);
    TEST_EQ_INT(s.t[1], 1400000103000LL);
    TEST_CLOSE(s.v[2], 2.5, 0, 0);
    gt_series_free(&s);
    /* errors name the line */
    const char *bad[] = {"1 2\n3 x\n", "1 2\n3\n", "1 2\n3 4 5\n", "1 2\n-3 4\n"};
    const char *msg[] = {"g.dat:2: non-numeric value 'x'", "g.dat:2: malformed line", "g.dat:2: malformed line",
                         "g.dat:2: bad timestamp"};
    for (int i = 0; i < 4; i++) {
        gt_diag e = {0};
        e.quiet = 1;
        TEST_EQ_INT(gt_parse_tv(bad[i], strlen(bad[i]), "g.dat", 1, 2, 2, 0, &s, &e, NULL), -1);
        TEST_CHECK(strstr(e.err, msg[i]) != NULL);
        gt_series_free(&s);
    }
    /* strict: a far backward step is an error */
    gt_diag e = {0};
    e.strict = 1;
    const char *back = "1400001000 1\n1400000900 2\n";
    TEST_EQ_INT(gt_parse_tv(back, strlen(back), "h.dat", 1, 2, 2, 60000, &s, &e, NULL), -1);
    TEST_CHECK(strstr(e.err, "h.dat:2: timestamp goes back 100.000 s") != NULL);
    gt_series_free(&s);
    /* a time stamp outside 1990..2100: a warning naming the line and the sample skipped; strict: an error */
    const char *old_ts = "1400000000 1\n0 2\n1400000006 3\n5000000000 4\n";
    gt_diag w = {0};
    w.quiet = 1;
    gt_series_stats ws = {0};
    TEST_EQ_INT(gt_parse_tv(old_ts, strlen(old_ts), "o.dat", 1, 2, 2, 60000, &s, &w, &ws), 0);
    TEST_EQ_INT(s.n, 2);
    TEST_EQ_INT(ws.n_bad_time, 2);
    TEST_EQ_INT(w.n_warn, 2);
    TEST_CHECK(strstr(w.last_warn, "o.dat:4: time stamp 5000000000000 ms is outside 1990-01-01..2100-01-01") != NULL);
    gt_series_free(&s);
    gt_diag ws2 = {0};
    ws2.strict = 1;
    ws2.quiet = 1;
    TEST_EQ_INT(gt_parse_tv(old_ts, strlen(old_ts), "o.dat", 1, 2, 2, 60000, &s, &ws2, NULL), -1);
    TEST_CHECK(strstr(ws2.err, "o.dat:2: time stamp 0 ms is outside") != NULL);
    gt_series_free(&s);
}

static void test_resample(void) {
    /* period 6 s; samples at 1000(=t0+4), 1002, 1005, 1007, 1030 s; grid from 996 s */
    int64_t t[] = {1000000, 1002000, 1005000, 1007000, 1030000};
    float v[] = {100, 200, 600, 50, 7};
    gt_grid g = gt_grid_span(t[0], t[4], 6000);
    TEST_EQ_INT(g.t0_ms, 996000);
    TEST_EQ_INT(g.n_rows, 6); /* 996..1031 */
    float out[6];
    TEST_EQ_INT(gt_resample_mean(t, v, 5, &g, out, 1, 0), 0);
    TEST_CLOSE(out[0], 100, 0, 0);          /* [996, 1002): 1000 */
    TEST_CLOSE(out[1], 850.0 / 3, 0, 1e-7); /* [1002, 1008): 1002, 1005, 1007 */
    TEST_CHECK(isnan(out[2]) && isnan(out[3])); /* never filled */
    TEST_CLOSE(out[5], 7, 0, 0);
    uint8_t fl[6] = {0};
    TEST_EQ_INT(gt_mark_gaps(t, 5, &g, 10000, fl, 2), 3); /* rows 2, 3, 4 strictly inside the 23 s hole */
    TEST_CHECK(fl[0] == 0 && fl[1] == 0 && fl[2] == 2 && fl[3] == 2 && fl[4] == 2 && fl[5] == 0);
    /* a second series (REDD's other leg) starting in row 1 and ending in row 4 of that grid: the rows
     * before / after it are a short hole (7 s to the first row's start, 6 s from the last row's), not
     * gap rows; with a 5 s limit both ends are */
    int64_t t2[] = {1003000, 1008000, 1014000, 1020000};
    memset(fl, 0, sizeof fl);
    TEST_EQ_INT(gt_mark_gaps(t2, 4, &g, 10000, fl, 2), 0);
    TEST_EQ_INT(gt_mark_gaps(t2, 4, &g, 5000, fl, 2), 2);
    TEST_CHECK(fl[0] == 2 && fl[1] == 0 && fl[2] == 0 && fl[3] == 0 && fl[4] == 0 && fl[5] == 2);
    memset(fl, 0, sizeof fl);
    TEST_EQ_INT(gt_mark_gaps(t2, 0, &g, 10000, fl, 2), 6); /* no sample: every row */
    /* circular mean */
    int64_t ta[] = {0, 1000, 2000, 6000};
    float va[] = {350, 10, 20, 359.5f};
    gt_grid ga = {0, 6000, 2};
    gt_resample_mean(ta, va, 4, &ga, out, 1, 1);
    TEST_CLOSE(out[0], 6.70495, 1e-4, 0); /* atan2(sum sin, sum cos) of 350, 10, 20 = atan2(0.342020, 2.909308) */
    TEST_CLOSE(out[1], 359.5, 0, 0);     /* a single sample is kept */
    /* labels */
    char c[GT_IMPORT_NAME_LEN];
    gt_label_norm("Fridge-Freezer (1)", 18, c, sizeof c);
    TEST_CHECK(!strcmp(c, "fridge_freezer_1"));
}

static void test_map(void) {
    const char *ini = "# c\n[labels]\nfridge_freezer = fridge\ngas = -\n[redd]\nrefrigerator = fridge ; x\n[meta]\nfridge = 1, 2, 3\n";
    gt_appliance_map m;
    gt_diag d = {0};
    TEST_EQ_INT(gt_map_parse(ini, strlen(ini), "m.ini", &m, &d), 0);
    char out[GT_IMPORT_NAME_LEN];
    TEST_CHECK(gt_map_label(&m, "ukdale", "Fridge-Freezer", out) == 1 && !strcmp(out, "fridge"));
    TEST_CHECK(gt_map_label(&m, "redd", "refrigerator", out) == 1 && !strcmp(out, "fridge"));
    TEST_CHECK(gt_map_label(&m, "ukdale", "refrigerator", out) == 1 && !strcmp(out, "refrigerator"));
    TEST_CHECK(gt_map_label(&m, "ukdale", "gas", out) == 0);
    TEST_CHECK(gt_map_label(&m, "ukdale", "Mystery Box!", out) == 1 && !strcmp(out, "mystery_box"));
    gt_map_free(&m);
    const char *bad = "[labels]\nno equals sign\n";
    TEST_EQ_INT(gt_map_parse(bad, strlen(bad), "m.ini", &m, &d), -1);
    TEST_CHECK(strstr(d.err, "m.ini:2:") != NULL);
    /* appliance metadata enters the file here: finite and > 0, three numbers */
    const char *metas[] = {"[meta]\nkettle = 0, 180, 3200\n", "[meta]\nkettle = 2000, nan, 3200\n",
                           "[meta]\nkettle = 2000, 180\n", "[meta]\nkettle = 2000, 180, -1\n",
                           "[meta]\nkettle = 2000, 180, inf\n", "[meta]\nkettle = 2000, 180, 3200, 7\n"};
    for (int i = 0; i < 6; i++) {
        gt_diag e = {0};
        e.quiet = 1;
        TEST_EQ_INT(gt_map_parse(metas[i], strlen(metas[i]), "m.ini", &m, &e), -1);
        TEST_CHECK(strstr(e.err, "m.ini:2: [meta] kettle: expected") != NULL);
    }
    const char *meta_ok = "[meta]\nkettle = 2000, 180, 3200\n";
    gt_diag e = {0};
    TEST_EQ_INT(gt_map_parse(meta_ok, strlen(meta_ok), "m.ini", &m, &e), 0);
    gt_map_free(&m);
}

static void test_care(void) {
    const char *fd = "sensor_name,statistics_type,description,unit,is_angle,is_counter\n"
                     "sensor_7,average,\"Nacelle, direction\",\xb0,True,False\n";
    gt_care_feature *f = NULL;
    gt_diag d = {0};
    TEST_EQ_INT(gt_parse_care_features(fd, strlen(fd), "fd.csv", &f, &d), 1);
    TEST_CHECK(f && !strcmp(f[0].name, "sensor_7") && f[0].is_angle == 1 && (unsigned char)f[0].unit[0] == 0xb0);
    free(f);
    const char *rows = "time_stamp;asset_id;id;train_test;status_type_id;s_avg;s_max\n"
                       "2022-01-01 00:00:00;3;0;train;0;1.5;\n"
                       "2022-01-01 00:10:00;3;1;prediction;4;2;3\n";
    gt_care_rows r;
    TEST_EQ_INT(gt_parse_care_rows(rows, strlen(rows), "1.csv", 0, &r, &d, NULL), 0);
    TEST_EQ_INT(r.n, 2);
    TEST_EQ_INT(r.n_cols, 2);
    TEST_CHECK(isnan(r.v[1]) && r.v[2] == 2 && r.v[3] == 3 && r.train[1] == 2 && r.status[1] == 4 && r.asset[0] == 3);
    TEST_EQ_INT(r.t[1] - r.t[0], 600000);
    gt_care_rows_free(&r);
    /* event_info.csv: an event id twice is an error naming both lines (the first line's turbine and
     * label were used, the asset's file of the second imported as no event dataset) */
    const char *ei = "asset;event_id;event_label;event_start;event_start_id;event_end;event_end_id\n"
                     "0;10;anomaly;2020-10-17 12:30:00;4896;2020-10-19 12:30:00;5184\n"
                     "2;30;normal;2020-10-13 12:30:00;4320;2020-10-23 12:20:00;5759\n"
                     "1;10;normal;2020-10-13 12:30:00;4320;2020-10-23 12:20:00;5759\n";
    gt_care_event *ev = NULL;
    gt_diag de = {0};
    de.quiet = 1;
    TEST_EQ_INT(gt_parse_care_events(ei, strlen(ei), "event_info.csv", &ev, &de), -1);
    TEST_CHECK(ev == NULL && de.err_code == GT_EXIT_DATA && strstr(de.err, "event_info.csv:4: event_id 10 repeats line 2"));
    gt_diag dg = {0};
    TEST_EQ_INT(gt_parse_care_events(ei, strlen(ei) - 62, "event_info.csv", &ev, &dg), 2); /* without the last line */
    TEST_CHECK(ev && ev[0].event_id == 10 && ev[0].anomaly == 1 && ev[1].event_id == 30 && ev[1].asset == 2);
    free(ev);
}

/* CARE format variants read as the plain file: a UTF-8 BOM, quoted fields, a
 * trailing separator, a pandas index column, an empty status_type_id (status 5) */
static void care_same(const gt_care_rows *a, const gt_care_rows *b) {
    TEST_EQ_INT(a->n, b->n);
    TEST_EQ_INT(a->n_cols, b->n_cols);
    if (a->n != b->n || a->n_cols != b->n_cols) return;
    for (int c = 0; c < a->n_cols; c++) TEST_CHECK(!strcmp(a->col[c], b->col[c]));
    for (int64_t i = 0; i < a->n; i++) {
        TEST_EQ_INT(a->t[i], b->t[i]);
        TEST_EQ_INT(a->train[i], b->train[i]);
        TEST_EQ_INT(a->status[i], b->status[i]);
        TEST_EQ_INT(a->asset[i], b->asset[i]);
        for (int c = 0; c < a->n_cols; c++) {
            float x = a->v[i * a->n_cols + c], y = b->v[i * b->n_cols + c];
            TEST_CHECK(x == y || (isnan(x) && isnan(y)));
        }
    }
}

static void test_care_variants(void) {
    const char *plain = "time_stamp;asset_id;id;train_test;status_type_id;s_avg;s_max\n"
                        "2022-01-01 00:00:00;3;0;train;0;1.5;\n"
                        "2022-01-01 00:10:00;3;1;prediction;4;2;3\n";
    const char *variants[] = {
        "\xef\xbb\xbftime_stamp;asset_id;id;train_test;status_type_id;s_avg;s_max\n"
        "2022-01-01 00:00:00;3;0;train;0;1.5;\n"
        "2022-01-01 00:10:00;3;1;prediction;4;2;3\n",
        "\"time_stamp\";\"asset_id\";\"id\";\"train_test\";\"status_type_id\";\"s_avg\";\"s_max\"\n"
        "\"2022-01-01 00:00:00\";\"3\";\"0\";\"train\";\"0\";\"1.5\";\"\"\n"
        "\"2022-01-01 00:10:00\";\"3\";\"1\";\"prediction\";\"4\";\"2\";\"3\"\n",
        "time_stamp;asset_id;id;train_test;status_type_id;s_avg;s_max;\n" /* trailing separator everywhere */
        "2022-01-01 00:00:00;3;0;train;0;1.5;;\n"
        "2022-01-01 00:10:00;3;1;prediction;4;2;3;\n",
        "time_stamp;asset_id;id;train_test;status_type_id;s_avg;s_max\n" /* on the rows only */
        "2022-01-01 00:00:00;3;0;train;0;1.5;;\n"
        "2022-01-01 00:10:00;3;1;prediction;4;2;3;\n",
        "time_stamp;asset_id;id;train_test;status_type_id;s_avg;s_max;\n" /* on the header only */
        "2022-01-01 00:00:00;3;0;train;0;1.5;\n"
        "2022-01-01 00:10:00;3;1;prediction;4;2;3\n",
        "\r\n",
    };
    gt_care_rows ref, r;
    gt_diag d = {0};
    d.quiet = 1;
    TEST_REQUIRE(gt_parse_care_rows(plain, strlen(plain), "1.csv", 0, &ref, &d, NULL) == 0);
    for (int i = 0; i < 5; i++) {
        gt_diag e = {0};
        e.quiet = 1;
        int rc = gt_parse_care_rows(variants[i], strlen(variants[i]), "v.csv", 0, &r, &e, NULL);
        TEST_EQ_INT(rc, 0);
        if (rc) {
            printf("variant %d: %s\n", i, e.err);
            continue;
        }
        TEST_EQ_INT(r.index_col, 0);
        care_same(&ref, &r);
        gt_care_rows_free(&r);
    }
    /* a pandas index: empty name first, or "Unnamed: 0" */
    const char *idx[] = {";time_stamp;asset_id;id;train_test;status_type_id;s_avg;s_max\n"
                         "0;2022-01-01 00:00:00;3;0;train;0;1.5;\n"
                         "1;2022-01-01 00:10:00;3;1;prediction;4;2;3\n",
                         "Unnamed: 0,time_stamp,asset_id,id,train_test,status_type_id,s_avg,s_max\n"
                         "0,2022-01-01 00:00:00,3,0,train,0,1.5,\n"
                         "1,2022-01-01 00:10:00,3,1,prediction,4,2,3\n",
                         "time_stamp;asset_id;id;train_test;status_type_id;s_avg;Unnamed: 0;s_max\n"
                         "2022-01-01 00:00:00;3;0;train;0;1.5;0;\n"
                         "2022-01-01 00:10:00;3;1;prediction;4;2;1;3\n"};
    const int idx_col[] = {1, 1, 7};
    for (int i = 0; i < 3; i++) {
        gt_diag e = {0};
        e.quiet = 1;
        TEST_EQ_INT(gt_parse_care_rows(idx[i], strlen(idx[i]), "i.csv", 0, &r, &e, NULL), 0);
        TEST_EQ_INT(r.index_col, idx_col[i]);
        care_same(&ref, &r);
        gt_care_rows_free(&r);
    }
    /* an empty status_type_id: status 5 (other), counted */
    const char *st = "time_stamp;asset_id;id;train_test;status_type_id;s_avg;s_max\n"
                     "2022-01-01 00:00:00;3;0;train;;1.5;\n"
                     "2022-01-01 00:10:00;3;1;prediction;\"\";2;3\n";
    TEST_EQ_INT(gt_parse_care_rows(st, strlen(st), "s.csv", 0, &r, &d, NULL), 0);
    TEST_EQ_INT(r.n_status_empty, 2);
    TEST_CHECK(r.n == 2 && r.status[0] == 5 && r.status[1] == 5 && r.v[2] == 2);
    gt_care_rows_free(&r);
    gt_care_rows_free(&ref);
    /* header errors: a repeated name, names equal in their first 63 bytes, an empty name inside */
    char h[1024];
    const char *head = "time_stamp;asset_id;id;train_test;status_type_id;";
    char a70[71], b70[71];
    memset(a70, 'a', 70), memset(b70, 'a', 70);
    a70[70] = b70[70] = 0;
    a70[69] = 'x', b70[69] = 'y';
    const char *cases[][2] = {{"s1;s2;s1\n", "h.csv:1: column 's1' appears twice (columns 6 and 8)"},
                              {NULL, "h.csv:1: columns 6 and 7 ('aaaa"},
                              {"s1;;s2\n", "h.csv:1: column 7 has an empty name"}};
    for (int i = 0; i < 3; i++) {
        if (cases[i][0]) snprintf(h, sizeof h, "%s%s", head, cases[i][0]);
        else snprintf(h, sizeof h, "%s%s;%s\n", head, a70, b70);
        gt_diag e = {0};
        e.quiet = 1;
        TEST_EQ_INT(gt_parse_care_header(h, strlen(h), "h.csv", &r, &e), -1);
        TEST_CHECK(strstr(e.err, cases[i][1]) != NULL);
        if (i == 1) TEST_CHECK(strstr(e.err, "are the same in their first 63 bytes") != NULL);
        if (!strstr(e.err, cases[i][1])) printf("got: %s\n", e.err);
        gt_care_rows_free(&r);
    }
}

/* The header check is O(n log n) and bounded: 100,000 columns are refused at
 * once (the linear search per column took 127 s), 4096 distinct columns with
 * one repeat at the end are found in well under a second. */
static void test_care_many_columns(void) {
    const int n = 100000;
    char *h = malloc((size_t)n * 16 + 128);
    size_t k = (size_t)sprintf(h, "time_stamp;asset_id;id;train_test;status_type_id");
    for (int c = 0; c < n; c++) k += (size_t)sprintf(h + k, ";sensor_%d", c);
    h[k++] = '\n';
    gt_care_rows r;
    gt_diag e = {0};
    e.quiet = 1;
    double t0 = now();
    TEST_EQ_INT(gt_parse_care_header(h, k, "w.csv", &r, &e), -1);
    TEST_CHECK(now() - t0 < 2.0);
    TEST_CHECK(strstr(e.err, "w.csv:1: 100000 sensor columns; a file holds at most 4096 channels") != NULL);
    gt_care_rows_free(&r);
    k = (size_t)sprintf(h, "time_stamp;asset_id;id;train_test;status_type_id");
    for (int c = 0; c < GT_IMPORT_MAX_COLS - 1; c++) k += (size_t)sprintf(h + k, ";sensor_%d", (c * 7919) % 4095);
    k += (size_t)sprintf(h + k, ";sensor_17\n");
    gt_diag f = {0};
    f.quiet = 1;
    t0 = now();
    TEST_EQ_INT(gt_parse_care_header(h, k, "w.csv", &r, &f), -1);
    TEST_CHECK(now() - t0 < 1.0);
    TEST_CHECK(strstr(f.err, "w.csv:1: column 'sensor_17' appears twice") != NULL);
    gt_care_rows_free(&r);
    k = (size_t)sprintf(h, "time_stamp;asset_id;id;train_test;status_type_id");
    for (int c = 0; c < GT_IMPORT_MAX_COLS; c++) k += (size_t)sprintf(h + k, ";sensor_%d", c);
    h[k++] = '\n';
    gt_diag g = {0};
    TEST_EQ_INT(gt_parse_care_header(h, k, "w.csv", &r, &g), 0);
    TEST_EQ_INT(r.n_cols, GT_IMPORT_MAX_COLS);
    TEST_CHECK(!strcmp(r.col[4095], "sensor_4095"));
    gt_care_rows_free(&r);
    free(h);
}

/* labels.dat: ids out of range are said to be, BOM skipped; the appliance map:
 * BOM skipped, unknown sections refused, repeated keys and empty values warned */
static void test_labels_and_map_messages(void) {
    const char *bad[] = {"1 aggregate\n99999999999 kettle\n", "1 aggregate\n100001 kettle\n", "0 kettle\n",
                         "1 aggregate\ntwo kettle\n"};
    const char *msg[] = {"l.dat:2: channel id 99999999999 out of range (1..100000)",
                         "l.dat:2: channel id 100001 out of range (1..100000)", "l.dat:1: channel id 0 out of range",
                         "l.dat:2: malformed line 'two kettle' (expected 'channel_id label')"};
    gt_labels l;
    for (int i = 0; i < 4; i++) {
        gt_diag e = {0};
        e.quiet = 1;
        TEST_EQ_INT(gt_parse_labels(bad[i], strlen(bad[i]), "l.dat", &l, &e), -1);
        TEST_CHECK(strstr(e.err, msg[i]) != NULL);
        if (!strstr(e.err, msg[i])) printf("got: %s\n", e.err);
    }
    const char *bom = "\xef\xbb\xbf" "1 aggregate\n2 kettle\n";
    gt_diag d = {0};
    TEST_EQ_INT(gt_parse_labels(bom, strlen(bom), "l.dat", &l, &d), 2);
    TEST_CHECK(l.channel[0] == 1 && !strcmp(l.label[1], "kettle"));
    gt_labels_free(&l);

    gt_appliance_map m;
    char out[GT_IMPORT_NAME_LEN];
    const char *ini = "\xef\xbb\xbf[labels]\nfridge_freezer = fridge\n";
    gt_diag e = {0};
    e.quiet = 1;
    TEST_EQ_INT(gt_map_parse(ini, strlen(ini), "m.ini", &m, &e), 0);
    TEST_CHECK(gt_map_label(&m, "ukdale", "fridge freezer", out) == 1 && !strcmp(out, "fridge"));
    gt_map_free(&m);
    const char *unk = "[labels]\nkettle = kettle\n[map]\nfridge = fridge\n";
    TEST_EQ_INT(gt_map_parse(unk, strlen(unk), "m.ini", &m, &e), -1);
    TEST_CHECK(strstr(e.err, "m.ini:3: unknown section '[map]'") != NULL);
    TEST_EQ_INT(e.err_code, 2);
    const char *dup = "[labels]\nkettle = kettle\ntoaster =\nkettle = jug\n";
    gt_diag w = {0};
    w.quiet = 1;
    TEST_EQ_INT(gt_map_parse(dup, strlen(dup), "m.ini", &m, &w), 0);
    TEST_EQ_INT(w.n_warn, 2);
    TEST_CHECK(strstr(w.last_warn, "m.ini:4: [labels] kettle is defined again (first at line 2); the last definition wins") != NULL);
    TEST_CHECK(gt_map_label(&m, "ukdale", "kettle", out) == 1 && !strcmp(out, "jug"));
    TEST_CHECK(gt_map_label(&m, "ukdale", "toaster", out) == 0);
    gt_map_free(&m);
    gt_diag s = {0};
    s.strict = 1, s.quiet = 1;
    TEST_EQ_INT(gt_map_parse(dup, strlen(dup), "m.ini", &m, &s), -1);
    TEST_CHECK(strstr(s.err, "m.ini:3: [labels] toaster has an empty value: the channel is dropped") != NULL);
    /* names kept to 31 bytes; the untruncated name tells labels apart */
    char full[GT_IMPORT_LABEL_LEN];
    const char *z = "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz_kettle";
    TEST_CHECK(gt_map_label(NULL, "ukdale", z, out) == 1 && strlen(out) == 31);
    TEST_CHECK(gt_map_label_full(NULL, "ukdale", z, full, sizeof full) == 1 && !strcmp(full, z));
}

static void bench(void) {
    /* 64 MB of UK-DALE channel text: "timestamp value\n" */
    size_t cap = 64u << 20, n = 0;
    char *buf = malloc(cap + 64);
    unsigned x = 12345;
    int64_t t = 1363547563;
    while (n < cap) {
        x = x * 1103515245u + 12345u;
        n += (size_t)sprintf(buf + n, "%lld %u\n", (long long)t, (x >> 16) % 3000);
        t += 6;
    }
    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        gt_series s = {0};
        gt_diag d = {0};
        double t0 = now();
        int rc = gt_parse_tv(buf, n, "bench", 1, 2, 2, 60000, &s, &d, NULL);
        double dt = now() - t0;
        TEST_EQ_INT(rc, 0);
        if (dt < best) best = dt;
        gt_series_free(&s);
    }
    double mbs = n / 1e6 / best;
    printf("parse speed (UK-DALE channel text, %.0f MB, best of 3): %.0f MB/s per core\n", n / 1e6, mbs);
    /* REFIT-like CSV */
    n = 0;
    n += (size_t)sprintf(buf, "Time,Unix,Aggregate,Appliance1,Appliance2,Appliance3,Appliance4,Appliance5,Appliance6,Appliance7,Appliance8,Appliance9,Issues\n");
    while (n < cap) {
        x = x * 1103515245u + 12345u;
        n += (size_t)sprintf(buf + n, "2013-10-09 13:06:17,%lld,%u,%u,0,0,%u,0,0,12,0,0,0\n", (long long)t, (x >> 16) % 3000,
                             (x >> 8) % 90, (x >> 4) % 2000);
        t += 8;
    }
    best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        gt_series s[10];
        memset(s, 0, sizeof s);
        gt_diag d = {0};
        double t0 = now();
        int rc = gt_parse_refit(buf, n, "bench.csv", 60000, s, &d, NULL);
        double dt = now() - t0;
        TEST_EQ_INT(rc, 0);
        if (dt < best) best = dt;
        for (int c = 0; c < 10; c++) gt_series_free(&s[c]);
    }
    double mbs2 = n / 1e6 / best;
    printf("parse speed (REFIT CSV text, best of 3): %.0f MB/s per core\n", mbs2);
    printf("target >= 100 MB/s per core: UK-DALE %s, REFIT %s\n", mbs >= 100 ? "met" : "NOT met",
           mbs2 >= 100 ? "met" : "NOT met");
    fflush(stdout);
    free(buf);
}

/* Tests always; the parse-speed benchmark (64 MB of text, a few seconds) only
 * with --bench: a speed figure is a benchmark to read, not a pass/fail test. */
/* Bad data lines (--max-bad-lines): the same policy in the channel, REFIT and
 * CARE parsers. Up to max_bad_lines per file are skipped (the other lines'
 * values intact) and summarised in one warning naming the file and the first;
 * one more is the error naming FILE:LINE; 0 or strict: the first is. */
static void test_bad_lines(void) {
    /* a channel file: a non-numeric value (line 2), 3 fields (line 4), a truncated last line (line 6) */
    const char *tv = "1400000000 1\n1400000006 x\n1400000012 3\n1400000018 4 5\n1400000024 6\n1400000030";
    gt_series s = {0};
    gt_series_stats st = {0};
    gt_diag d = {0};
    d.quiet = 1;
    d.max_bad_lines = 10;
    TEST_EQ_INT(gt_parse_tv(tv, strlen(tv), "c.dat", 1, 2, 2, 60000, &s, &d, &st), 0);
    TEST_EQ_INT(s.n, 3);
    TEST_EQ_INT(s.t[1], 1400000012000LL);
    TEST_CLOSE(s.v[0], 1, 0, 0);
    TEST_CLOSE(s.v[1], 3, 0, 0);
    TEST_CLOSE(s.v[2], 6, 0, 0);
    TEST_EQ_INT(s.line[2], 5);
    TEST_EQ_INT(st.n_bad_lines, 3);
    TEST_EQ_INT(st.n_samples, 3);
    TEST_EQ_INT(d.n_warn, 1); /* one warning for the file */
    TEST_CHECK(d.err_code == 0);
    TEST_CHECK(!strcmp(d.last_warn, "c.dat: 3 bad lines skipped (at most 10 per file: --max-bad-lines), the first at "
                                    "line 2: non-numeric value 'x'"));
    gt_series_free(&s);
    /* above the limit: the error of the line past it, as without the option, and where the first was */
    gt_diag e = {0};
    e.quiet = 1;
    e.max_bad_lines = 2;
    TEST_EQ_INT(gt_parse_tv(tv, strlen(tv), "c.dat", 1, 2, 2, 60000, &s, &e, NULL), -1);
    TEST_CHECK(!strcmp(e.err, "c.dat:6: malformed line '1400000030' (expected 2 fields, got 1); more than "
                              "--max-bad-lines 2 bad lines in this file (the first at line 2)"));
    TEST_EQ_INT(e.n_warn, 0);
    gt_series_free(&s);
    gt_diag z = {0}; /* 0: the first bad line is the error, worded as it always was */
    z.quiet = 1;
    TEST_EQ_INT(gt_parse_tv(tv, strlen(tv), "c.dat", 1, 2, 2, 60000, &s, &z, NULL), -1);
    TEST_CHECK(!strcmp(z.err, "c.dat:2: non-numeric value 'x'"));
    gt_series_free(&s);
    gt_diag k = {0}; /* strict: the first is the error whatever the limit */
    k.quiet = 1, k.strict = 1, k.max_bad_lines = 10;
    TEST_EQ_INT(gt_parse_tv(tv, strlen(tv), "c.dat", 1, 2, 2, 60000, &s, &k, NULL), -1);
    TEST_CHECK(!strcmp(k.err, "c.dat:2: non-numeric value 'x' (--strict)"));
    gt_series_free(&s);
    /* the limit counts per file: a second file starts again */
    gt_diag m = {0};
    m.quiet = 1, m.max_bad_lines = 3;
    TEST_EQ_INT(gt_parse_tv(tv, strlen(tv), "a.dat", 1, 2, 2, 60000, &s, &m, NULL), 0);
    TEST_EQ_INT(gt_parse_tv(tv, strlen(tv), "b.dat", 1, 2, 2, 60000, &s, &m, NULL), 0);
    TEST_EQ_INT(s.n, 6);
    TEST_EQ_INT(m.n_warn, 2);
    gt_series_free(&s);

    /* REFIT: a stray bad Issues value (line 3) and a truncated last row (line 5) */
    const char *hdr = "Time,Unix,Aggregate,Appliance1,Appliance2,Appliance3,Appliance4,Appliance5,Appliance6,"
                      "Appliance7,Appliance8,Appliance9,Issues\n";
    char refit[1024];
    snprintf(refit, sizeof refit, "%s%s%s%s%s", hdr, "x,1400000000,100,1,2,3,4,5,6,7,8,9,0\n",
             "x,1400000008,200,1,2,3,4,5,6,7,8,9,7\n", "x,1400000016,300,1,2,3,4,5,6,7,8,9,1\n",
             "x,1400000024,400,1,2,3,4");
    gt_series rs[10];
    memset(rs, 0, sizeof rs);
    gt_refit_stats rst;
    memset(&rst, 0, sizeof rst);
    gt_diag r = {0};
    r.quiet = 1, r.max_bad_lines = 10;
    TEST_EQ_INT(gt_parse_refit(refit, strlen(refit), "CLEAN_House1.csv", 60000, rs, &r, &rst), 0);
    TEST_EQ_INT(rs[0].n, 2);
    TEST_CLOSE(rs[0].v[0], 100, 0, 0);
    TEST_CLOSE(rs[0].v[1], 300, 0, 0);
    TEST_EQ_INT(rs[9].n, 2);
    TEST_CLOSE(rs[9].v[1], 9, 0, 0);
    TEST_EQ_INT(rst.n_issues, 1);
    TEST_EQ_INT(rst.s.n_bad_lines, 2);
    TEST_CHECK(!strcmp(r.last_warn, "CLEAN_House1.csv: 2 bad lines skipped (at most 10 per file: --max-bad-lines), "
                                    "the first at line 3: Issues must be 0 or 1 (got '7')"));
    for (int c = 0; c < 10; c++) gt_series_free(&rs[c]);
    gt_diag r0 = {0};
    r0.quiet = 1;
    TEST_EQ_INT(gt_parse_refit(refit, strlen(refit), "CLEAN_House1.csv", 60000, rs, &r0, &rst), -1);
    TEST_CHECK(!strcmp(r0.err, "CLEAN_House1.csv:3: Issues must be 0 or 1 (got '7')"));
    for (int c = 0; c < 10; c++) gt_series_free(&rs[c]);

    /* CARE: a row with a bad train_test and an empty status (line 3) is skipped whole: no status count */
    const char *care = "time_stamp;asset_id;id;train_test;status_type_id;s_avg\n"
                       "2022-01-01 00:00:00;3;0;train;0;1.5\n"
                       "2022-01-01 00:10:00;3;1;tarin;;2\n"
                       "2022-01-01 00:20:00;3;2;prediction;;2.5\n"
                       "2022-01-01 00:30:00;3;3;predic";
    gt_care_rows cr;
    gt_series_stats cst = {0};
    gt_diag c = {0};
    c.quiet = 1, c.max_bad_lines = 10;
    TEST_EQ_INT(gt_parse_care_rows(care, strlen(care), "30.csv", 0, &cr, &c, &cst), 0);
    TEST_EQ_INT(cr.n, 2);
    TEST_EQ_INT(cr.n_status_empty, 1);
    TEST_EQ_INT(cr.t[1] - cr.t[0], 1200000);
    TEST_CLOSE(cr.v[1], 2.5, 0, 0);
    TEST_EQ_INT(cr.line[1], 4);
    TEST_EQ_INT(cst.n_bad_lines, 2);
    TEST_CHECK(!strcmp(c.last_warn, "30.csv: 2 bad lines skipped (at most 10 per file: --max-bad-lines), the first "
                                    "at line 3: train_test must be 'train' or 'prediction' (got 'tarin')"));
    gt_care_rows_free(&cr);
    gt_diag c1 = {0};
    c1.quiet = 1, c1.max_bad_lines = 1;
    TEST_EQ_INT(gt_parse_care_rows(care, strlen(care), "30.csv", 0, &cr, &c1, NULL), -1);
    TEST_CHECK(strstr(c1.err, "30.csv:5: train_test must be 'train' or 'prediction' (got 'predic'); more than "
                              "--max-bad-lines 1 bad lines in this file (the first at line 3)") == c1.err);
    gt_care_rows_free(&cr);
}

/* Warnings past the first max_print of an item are counted by kind and
 * summarised in one line when the item ends; the next item prints again. */
static void test_warning_summary(void) {
    gt_diag d = {0};
    d.quiet = 1;
    d.max_print = 2;
    /* 8 backward steps beyond the tolerance (every line after the first: 600 s is the latest) and 2
     * conflicting duplicates (0 s and 100 s with other values) in one channel */
    const char *txt = "1400000600 1\n1400000500 1\n1400000400 1\n1400000300 1\n1400000200 1\n1400000100 1\n"
                      "1400000000 1\n1400000000 2\n1400000100 3\n";
    gt_series s = {0};
    TEST_EQ_INT(gt_parse_tv(txt, strlen(txt), "h/c.dat", 1, 2, 2, 60000, &s, &d, NULL), 0);
    TEST_EQ_INT(gt_series_clean(&s, "h/c.dat", &d, NULL), 0);
    TEST_EQ_INT(d.n_warn, 10);
    TEST_EQ_INT(d.n_suppressed[GT_WARN_BACKWARD], 6); /* the first 2 printed */
    TEST_EQ_INT(d.n_suppressed[GT_WARN_CONFLICT], 2);
    char line[GT_IMPORT_MSG_LEN];
    TEST_EQ_INT(gt_diag_item_end(&d, "h", line, sizeof line), 8);
    TEST_CHECK(!strcmp(line, "h: 8 more warnings not printed: 6 time stamps going back beyond the tolerance, 2 "
                             "conflicting duplicates"));
    TEST_EQ_INT(d.n_printed, 0);
    TEST_EQ_INT(d.n_suppressed[GT_WARN_BACKWARD], 0);
    /* the next item: printed again, nothing to summarise */
    TEST_EQ_INT(gt_diag_warn(&d, GT_WARN_OTHER, "x"), 0);
    TEST_EQ_INT(d.n_suppressed[GT_WARN_OTHER], 0);
    TEST_EQ_INT(gt_diag_item_end(&d, "h2", line, sizeof line), 0);
    TEST_CHECK(line[0] == 0);
    gt_series_free(&s);
}

/* Two legs of one appliance summed (gt_sum_legs): a leg's hole of at most
 * max_hole_rows rows is bridged by linear interpolation where the other leg has
 * a value; a longer hole, one open at an end, or no leg at all: NaN. */
static void test_sum_legs(void) {
    const float N = NAN;
    const float l0[12] = {1, N, 3, 4, N, N, N, 8, 9, N, N, N};
    const float l1[12] = {10, 20, 30, N, 50, 60, 70, 80, N, N, 110, 120};
    const float *legs[2] = {l0, l1};
    float out[24];
    for (int k = 0; k < 24; k++) out[k] = -1;
    TEST_EQ_INT(gt_sum_legs(legs, 2, 12, 2, out, 2), 3); /* rows 1, 3, 8 bridged */
    const float want[12] = {11, 22, 33, 44, N, N, N, 88, 99, N, N, N};
    for (int k = 0; k < 12; k++) {
        if (isnan(want[k])) TEST_CHECK(isnan(out[2 * k]));
        else TEST_CLOSE(out[2 * k], want[k], 0, 0);
        TEST_CLOSE(out[2 * k + 1], -1, 0, 0); /* the stride is kept */
    }
    /* holes of 3 rows bridged with max_hole_rows 3: row 4..6 = l0 4 + (8 - 4) * (1..3) / 4 */
    TEST_EQ_INT(gt_sum_legs(legs, 2, 12, 3, out, 1), 6);
    TEST_CLOSE(out[4], 5 + 50, 0, 0);
    TEST_CLOSE(out[6], 7 + 70, 0, 0);
    TEST_CHECK(isnan(out[9]) && isnan(out[10])); /* l0's trailing hole is open */
    /* no bridging (0 rows): the sum only where both legs have a value */
    TEST_EQ_INT(gt_sum_legs(legs, 2, 12, 0, out, 1), 0);
    TEST_CHECK(isnan(out[1]) && isnan(out[3]) && out[2] == 33 && out[7] == 88);
    /* one leg: copied as it is, never filled */
    TEST_EQ_INT(gt_sum_legs(legs, 1, 12, 5, out, 1), 0);
    TEST_CHECK(out[0] == 1 && isnan(out[1]) && out[8] == 9 && isnan(out[9]));
}

/* Sizes (issue #37, class 5): a stray time stamp decades from the rest of a
 * recording is skipped with a warning naming its line (strict: an error), the
 * grid check refuses a grid of more than GT_IMPORT_GRID_MAX_RATIO rows per
 * sample, and event_info.csv's repeated-id check is a sort: 10^6 lines with a
 * repeat at the very end are refused naming both lines (the old pairwise scan:
 * 5 x 10^11 comparisons; the time is printed, never asserted). */
static void test_strays(void) {
    /* 300 samples every 6 s in 2014, one line dated 40 years later (2054) in the middle of the file */
    char *txt = malloc(64 * 302);
    TEST_REQUIRE(txt);
    size_t len = 0;
    for (int i = 0; i < 300; i++) {
        if (i == 150) len += (size_t)sprintf(txt + len, "%lld 5\n", 1400000000LL + 40LL * 365 * 86400);
        len += (size_t)sprintf(txt + len, "%lld %d\n", 1400000000LL + 6LL * i, i);
    }
    gt_diag d = {0};
    d.quiet = 1;
    gt_series s = {0};
    gt_series_stats st = {0};
    TEST_EQ_INT(gt_parse_tv(txt, len, "mains.dat", 1, 2, 2, INT64_C(1) << 60, &s, &d, &st), 0);
    TEST_EQ_INT(s.n, 301);
    TEST_EQ_INT(gt_series_clean(&s, "mains.dat", &d, &st), 0);
    TEST_EQ_INT(s.n, 300);
    TEST_EQ_INT(st.n_stray, 1);
    TEST_EQ_INT(s.t[s.n - 1], (1400000000LL + 6 * 299) * 1000);
    TEST_CHECK(strstr(d.last_warn, "mains.dat:151: time stamp 2054-") != NULL);
    TEST_CHECK(strstr(d.last_warn, "days after the rest of the recording (line 301): a stray clock; line skipped"));
    gt_series_free(&s);
    /* --strict: the same line is the error */
    gt_diag ds = {0};
    ds.quiet = 1, ds.strict = 1;
    TEST_EQ_INT(gt_parse_tv(txt, len, "mains.dat", 1, 2, 2, INT64_C(1) << 60, &s, &ds, NULL), 0);
    TEST_EQ_INT(gt_series_clean(&s, "mains.dat", &ds, NULL), -1);
    TEST_CHECK(ds.err_code == GT_EXIT_DATA && strstr(ds.err, "mains.dat:151: time stamp 2054-") && strstr(ds.err, "(--strict)"));
    gt_series_free(&s);
    free(txt);
    /* gt_stray_edges: at most 1 % at an end, a gap of more than a year, a majority kept */
    const int64_t Y = GT_IMPORT_STRAY_GAP_MS, H = 3600000;
    int64_t t[200], lo, hi;
    for (int i = 0; i < 200; i++) t[i] = i * H;
    TEST_EQ_INT(gt_stray_edges(t, 200, &lo, &hi), 0);
    TEST_CHECK(lo == 0 && hi == 200);
    for (int i = 0; i < 200; i++) t[i] = 40 * Y + i * H;
    t[0] = 0, t[1] = H; /* two strays before: 1 % of 200 */
    t[199] = 80 * Y;    /* and one after */
    TEST_EQ_INT(gt_stray_edges(t, 200, &lo, &hi), 3);
    TEST_CHECK(lo == 2 && hi == 199);
    t[2] = 2 * H; /* three before: more than 1 % is no stray run (a recording in two parts) */
    TEST_EQ_INT(gt_stray_edges(t, 200, &lo, &hi), 1);
    TEST_CHECK(lo == 0 && hi == 199);
    int64_t two[2] = {0, 40 * Y}; /* which one is the stray? neither: the grid check decides */
    TEST_EQ_INT(gt_stray_edges(two, 2, &lo, &hi), 0);
    /* exactly a year is no stray */
    for (int i = 0; i < 200; i++) t[i] = i * H;
    t[199] = t[198] + Y;
    TEST_EQ_INT(gt_stray_edges(t, 200, &lo, &hi), 0);
    /* the grid check: rows per sample, the largest gap named */
    int64_t at = -1;
    TEST_EQ_INT(gt_grid_too_sparse((int64_t)GT_IMPORT_GRID_MAX_RATIO * GT_IMPORT_GRID_MIN_SAMPLES - 1, t, 200, &at), 0);
    TEST_EQ_INT(at, 199);
    TEST_EQ_INT(gt_grid_too_sparse((int64_t)GT_IMPORT_GRID_MAX_RATIO * GT_IMPORT_GRID_MIN_SAMPLES, t, 200, &at), 1);
    gt_grid g = gt_grid_span(0, 40 * Y, 6000); /* 40 years of 6 s rows for two samples */
    TEST_EQ_INT(gt_grid_too_sparse(g.n_rows, two, 2, &at), 1);
    TEST_EQ_INT(at, 1);
}

static void test_event_info_large(void) {
    const int n = 1000000;
    const char *hdr = "asset;event_id;event_label;event_start;event_end\n";
    size_t cap = strlen(hdr) + (size_t)(n + 1) * 64, len = 0;
    char *txt = malloc(cap);
    TEST_REQUIRE(txt);
    len += (size_t)sprintf(txt, "%s", hdr);
    for (int i = 0; i < n; i++)
        len += (size_t)sprintf(txt + len, "%d;%d;normal;2020-10-13 12:30:00;2020-10-23 12:20:00\n", i % 50,
                               (int)(((int64_t)i * 7919) % n));
    gt_care_event *ev = NULL;
    gt_diag d = {0};
    d.quiet = 1;
    double t0 = now();
    TEST_EQ_INT(gt_parse_care_events(txt, len, "event_info.csv", &ev, &d), n);
    const double dt = now() - t0;
    TEST_CHECK(ev && ev[n - 1].event_id == (int64_t)(((int64_t)(n - 1) * 7919) % n));
    free(ev);
    /* one more line repeating line 2's id (event 0): named with both lines */
    len += (size_t)sprintf(txt + len, "3;0;anomaly;2020-10-13 12:30:00;2020-10-23 12:20:00\n");
    gt_diag de = {0};
    de.quiet = 1;
    TEST_EQ_INT(gt_parse_care_events(txt, len, "event_info.csv", &ev, &de), -1);
    TEST_CHECK(ev == NULL && de.err_code == GT_EXIT_DATA);
    char want[96];
    snprintf(want, sizeof want, "event_info.csv:%d: event_id 0 repeats line 2", n + 2);
    TEST_CHECK(strstr(de.err, want) != NULL);
    printf("event_info.csv: %d lines parsed and checked for repeated ids in %.2f s (benchmark only)\n", n, dt);
    free(txt);
}

int main(int argc, char **argv) {
    test_numbers();
    test_calendar();
    test_tv_and_clean();
    test_resample();
    test_map();
    test_care();
    test_care_variants();
    test_care_many_columns();
    test_labels_and_map_messages();
    test_bad_lines();
    test_warning_summary();
    test_sum_legs();
    test_strays();
    test_event_info_large();
    if (argc > 1 && !strcmp(argv[1], "--bench")) bench();
    TEST_DONE();
}
