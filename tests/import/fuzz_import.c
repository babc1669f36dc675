/* tests/import/fuzz_import.c: libFuzzer targets of the importers' parsers, one
 * per parser, selected at compile time (built with clang -fsanitize=fuzzer,
 * address,undefined by tests/import/CMakeLists.txt):
 *   -DGT_FUZZ=1  gt_parse_tv + gt_series_clean + gt_resample_mean + gt_mark_gaps + gt_sum_legs
 *   -DGT_FUZZ=2  gt_parse_refit
 *   -DGT_FUZZ=3  gt_parse_care_rows / _events / _features
 *   -DGT_FUZZ=4  gt_parse_labels + gt_map_parse + gt_map_label
 * The parsers must never crash, leak, hang or read outside [data, data+size)
 * (the input is copied into an exact-size heap buffer so ASan sees overreads). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *b = malloc(size ? size : 1);
    memcpy(b, data, size);
    gt_diag d;
    memset(&d, 0, sizeof d);
    d.quiet = 1;
    d.strict = size > 0 && (data[0] & 1);
    d.max_bad_lines = size > 0 ? (data[0] >> 1) % 4 : 0; /* bad lines skipped (0..3 per file) or the error */
#if GT_FUZZ == 1
    gt_series s;
    memset(&s, 0, sizeof s);
    gt_series_stats st;
    memset(&st, 0, sizeof st);
    int max_f = size > 1 ? 2 + data[1] % 3 : 2;
    if (gt_parse_tv(b, size, "fuzz.dat", 1, 2, max_f, 60000, &s, &d, &st) == 0 &&
        gt_series_clean(&s, "fuzz.dat", &d, &st) == 0 && s.n > 0) {
        int64_t span = s.t[s.n - 1] - s.t[0];
        if (span >= 0 && span / 1000 < (1 << 20)) { /* keep the grid small */
            gt_grid g = gt_grid_span(s.t[0], s.t[s.n - 1], 1000);
            float *out = malloc(sizeof(float) * (size_t)g.n_rows);
            uint8_t *fl = calloc((size_t)g.n_rows, 1);
            gt_resample_mean(s.t, s.v, s.n, &g, out, 1, (int)(s.n & 1));
            gt_mark_gaps(s.t, s.n, &g, 5000, fl, 2);
            if (g.n_rows > 1) { /* two "legs": the series and itself one row later */
                const float *legs[2] = {out, out + 1};
                float *sum = malloc(sizeof(float) * (size_t)g.n_rows);
                gt_sum_legs(legs, 2, g.n_rows - 1, (int64_t)(s.n % 7), sum, 1);
                free(sum);
            }
            free(out);
            free(fl);
        }
    }
    gt_series_free(&s);
#elif GT_FUZZ == 2
    gt_series s[10];
    memset(s, 0, sizeof s);
    gt_refit_stats st;
    memset(&st, 0, sizeof st);
    if (gt_parse_refit(b, size, "CLEAN_House1.csv", 60000, s, &d, &st) == 0)
        for (int c = 0; c < 10; c++) gt_series_clean(&s[c], "CLEAN_House1.csv", &d, NULL);
    for (int c = 0; c < 10; c++) gt_series_free(&s[c]);
#elif GT_FUZZ == 3
    gt_care_rows r;
    gt_parse_care_rows(b, size, "1.csv", 60000, &r, &d, NULL);
    gt_care_rows_free(&r);
    gt_parse_care_header(b, size, "1.csv", &r, &d);
    gt_care_rows_free(&r);
    gt_care_event *ev = NULL;
    gt_parse_care_events(b, size, "event_info.csv", &ev, &d);
    free(ev);
    gt_care_feature *ft = NULL;
    gt_parse_care_features(b, size, "feature_description.csv", &ft, &d);
    free(ft);
#elif GT_FUZZ == 4
    gt_labels l;
    if (gt_parse_labels(b, size, "labels.dat", &l, &d) >= 0) gt_labels_free(&l);
    gt_appliance_map m;
    if (gt_map_parse(b, size, "map.ini", &m, &d) == 0) {
        char out[GT_IMPORT_NAME_LEN];
        for (int i = 0; i < m.n; i++) gt_map_label(&m, "ukdale", m.e[i].key, out);
        gt_map_free(&m);
    }
#else
#error "define GT_FUZZ=1..4"
#endif
    free(b);
    return 0;
}
