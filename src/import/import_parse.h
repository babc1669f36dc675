/* import/import_parse.h: the importers' text layer (internal to import/, the
 * tests and the fuzz targets). No MPI, no HDF5: every function here is a pure
 * function of its input bytes and can run under libFuzzer.
 *
 * Error model: parsers never end the process on bad input. They report through a
 * gt_diag: an *error* (a bad header, a bad side file line, more bad data lines
 * in one file than diag->max_bad_lines) stops the parser, which returns -1; a
 * *bad data line* (malformed, non-numeric value) is skipped and counted up to
 * that limit, one warning per file; a *warning* (timestamp going backwards
 * beyond the tolerance, conflicting duplicate, ...) is counted and printed
 * (the first few of each item, then a summary by kind), and becomes an error
 * when diag->strict is set (bad data lines too). Every message starts with
 * "FILE:LINE: " (or "FILE: " when no line applies) so editors can jump to it.
 *
 * Time is int64 milliseconds since the Unix epoch (UTC) everywhere. */
#ifndef GT_IMPORT_IMPORT_PARSE_H
#define GT_IMPORT_IMPORT_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define GT_IMPORT_MSG_LEN 512
#define GT_IMPORT_NAME_LEN 32 /* = GT_FORMAT_NAME_LEN (fixed string of names) */
#define GT_IMPORT_UNIT_LEN 16 /* = GT_FORMAT_UNIT_LEN */
/* Channels a file can hold: readers refuse more (= GT_IO_MAX_COLS, io/format.h,
 * checked in import_care.c; this header stays free of HDF5/MPI for the fuzzers). */
#define GT_IMPORT_MAX_COLS 4096
/* Channels training reads (= GT_DATA_MAX_CHANNELS, data/dataset.h): more are
 * imported with a warning (inspect and eval of other tools still read them). */
#define GT_IMPORT_TRAIN_MAX_COLS 1024
#define GT_IMPORT_LABEL_LEN 256 /* labels.dat label, bytes with the nul */

/* ------------------------------------------------------------ diagnostics -- */
/* What a warning is about: the per-item summary counts the warnings that were
 * not printed by kind (gt_diag_item_end). */
typedef enum gt_warn_kind {
    GT_WARN_OTHER = 0,
    GT_WARN_BACKWARD,   /* a time stamp going back more than the tolerance */
    GT_WARN_CONFLICT,   /* a conflicting duplicate (same time, another value) */
    GT_WARN_TIME_RANGE, /* a time stamp outside 1990..2100 (line skipped) */
    GT_WARN_BAD_LINES,  /* a file's skipped bad lines (one warning per file) */
    GT_WARN_CHANNEL,    /* a channel file missing or empty (channel skipped) */
    GT_WARN_KINDS
} gt_warn_kind;
/* "time stamps going back beyond the tolerance", ...: the summary's words. */
const char *gt_warn_kind_name(gt_warn_kind k);

typedef struct gt_diag {
    int strict;        /* warnings become errors */
    int quiet;         /* print nothing (fuzzers, tests) */
    int max_print;     /* warnings printed per item (default 10 when 0) */
    int max_bad_lines; /* bad data lines a file may have, skipped with a warning (gt_bad_line); 0: the first is an error */
    int64_t n_warn;    /* warnings seen (printed or not) */
    int64_t n_printed; /* warnings of the current item (printed or not) */
    int64_t n_suppressed[GT_WARN_KINDS]; /* of those, not printed, by kind (gt_diag_item_end) */
    int err_code;      /* 0: no error; else the exit code (GT_EXIT_DATA, ...) */
    char err[GT_IMPORT_MSG_LEN]; /* first error */
    char last_warn[GT_IMPORT_MSG_LEN]; /* last warning (tests) */
} gt_diag;
/* Records a warning of kind `kind`: printed while the current item has had
 * fewer than max_print, else counted by kind for the item's summary. In
 * strict mode records it as an error (GT_EXIT_DATA) and returns -1, else
 * returns 0. */
int gt_diag_warn(gt_diag *d, gt_warn_kind kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Records an error (the first one is kept); returns -1. */
int gt_diag_error(gt_diag *d, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Ends an item (a house, a turbine, a plan): when some of its warnings were
 * not printed, one warning line "ITEM: N more warnings not printed: n1 KIND1,
 * n2 KIND2" (unless quiet), written to `out` too when out is not NULL (tests);
 * then the next item starts with a fresh print budget. Returns the warnings
 * not printed. */
int64_t gt_diag_item_end(gt_diag *d, const char *item, char *out, size_t out_bytes);

/* Bad data lines of one file: a line of a data file that cannot be read (a
 * wrong number of fields, a bad time stamp, a non-numeric value, a REFIT
 * Issues or CARE train_test / status_type_id / id value out of its set) is
 * skipped while the file has at most d->max_bad_lines of them (not in strict
 * mode), and summarised at the end of the file by gt_bad_lines_end. */
typedef struct gt_bad_lines {
    int64_t n;                   /* lines skipped */
    uint64_t first;              /* the line number of the first */
    char first_why[GT_IMPORT_MSG_LEN / 2]; /* what was wrong with it */
} gt_bad_lines;
/* One bad line: `why` (printf) says what is wrong. Returns 0 (skip the line),
 * or -1 with the error "FILE:LINE: WHY" in d when d->strict or when the file
 * already had d->max_bad_lines bad lines. */
int gt_bad_line(gt_diag *d, gt_bad_lines *b, const char *fname, uint64_t line, const char *why, ...)
    __attribute__((format(printf, 5, 6)));
struct gt_series_stats;
/* After a file: one warning (GT_WARN_BAD_LINES) "FILE: N bad line(s) skipped
 * (at most M per file: --max-bad-lines), the first at line L: WHY" when lines
 * were skipped; adds them to st->n_bad_lines (st may be NULL). Returns 0. */
int gt_bad_lines_end(gt_diag *d, const gt_bad_lines *b, const char *fname, struct gt_series_stats *st);

/* ------------------------------------------------------------- text files -- */
/* A read-only view of a whole file (mmap'ed; an empty file gives n = 0). */
typedef struct gt_text {
    const char *p;
    size_t n;
    void *map;
    size_t map_bytes;
} gt_text;
/* Returns 0, or -1 with an error in d (file cannot be opened: GT_EXIT_DATA). */
int gt_text_open(gt_text *t, const char *path, gt_diag *d);
void gt_text_close(gt_text *t);
/* First line(s) of a file without mapping it: reads up to max_bytes into a
 * malloc'ed, nul-terminated buffer (*out, caller frees). Returns bytes read or -1. */
int64_t gt_text_head(const char *path, size_t max_bytes, char **out);
/* A short excerpt of a bad token for messages (printable ASCII only). */
void gt_text_excerpt(const char *p, const char *end, char *out, size_t out_bytes);
static inline int gt_is_blank(char c) { return c == ' ' || c == '\t'; }

/* ---------------------------------------------------------------- numbers -- */
/* Each parser reads one token starting at p (no leading blanks) and stops at
 * `end` or at the first character that cannot continue the number. Returns the
 * position after the number, or NULL when no valid number starts at p. */
/* Decimal floating point: [+-]digits[.digits][(e|E)[+-]digits], also "nan",
 * "inf", "infinity" (any case). Within 1 ulp of strtod for up to 19 significant
 * digits (more digits are rounded away). */
const char *gt_parse_f64(const char *p, const char *end, double *v);
/* Unix time in seconds with an optional fraction ("1303132929", "1352500095.5")
 * -> ms, rounded half up on the 4th decimal. */
const char *gt_parse_unix_ms(const char *p, const char *end, int64_t *ms);
/* Signed decimal integer (at most 18 digits). */
const char *gt_parse_i64(const char *p, const char *end, int64_t *v);
/* "YYYY-MM-DD HH:MM[:SS[.fff]]" (or 'T' between), optional trailing "Z" or
 * "+00:00": UTC -> ms. The one calendar parser of every importer: real
 * Gregorian month lengths (29 February only in leap years), hours 0..23,
 * minutes and seconds 0..59 (no leap second: ":60" is refused, as the
 * recordings' clocks never write one). NULL on anything else. */
const char *gt_parse_datetime_ms(const char *p, const char *end, int64_t *ms);
/* Days from 1970-01-01 of a proleptic Gregorian date. */
int64_t gt_days_from_civil(int64_t y, unsigned m, unsigned d);
/* Days of month m (1..12) of year y (proleptic Gregorian); 0 for another m. */
int gt_days_in_month(int64_t y, unsigned m);

/* Sane time stamps: [1990-01-01, 2100-01-01) UTC, the range every reader of
 * the format accepts (io/format.h GT_IO_TS_MIN_MS / GT_IO_TS_MAX_MS). One
 * sample outside it would stretch an item's clock over decades (a single 1970
 * line made a 4.9 GB file). */
#define GT_IMPORT_TS_MIN_MS INT64_C(631152000000)
#define GT_IMPORT_TS_MAX_MS INT64_C(4102444800000)
/* 0 when t is sane; else a warning naming FILE:LINE ("outside ...; line
 * skipped") and 1 (skip the sample), or -1 in strict mode (the error is in d). */
int gt_time_check(int64_t t, const char *fname, uint64_t line, gt_diag *d, struct gt_series_stats *st);

/* ---------------------------------------------------------------- series -- */
/* Samples of one channel: times, values and the source line of each sample. */
typedef struct gt_series {
    int64_t *t;     /* [n] ms */
    float *v;       /* [n] */
    uint32_t *line; /* [n] 1-based line in the source file */
    int64_t n, cap;
    int unsorted;   /* a sample went backwards */
    int64_t n_backward; /* backward steps (any size) */
} gt_series;
void gt_series_push(gt_series *s, int64_t t, float v, uint32_t line);
void gt_series_free(gt_series *s);

/* Counters of one file's clean-up. */
typedef struct gt_series_stats {
    int64_t n_lines, n_samples, n_exact_dup, n_conflict, n_backward, n_backward_far;
    int64_t n_bad_time; /* samples skipped: time stamp outside [GT_IMPORT_TS_MIN_MS, GT_IMPORT_TS_MAX_MS) */
    int64_t n_bad_lines; /* bad data lines skipped (gt_bad_line) */
    int64_t n_stray;     /* samples skipped: a stray time stamp (gt_stray_edges) */
} gt_series_stats;

/* Parses a whitespace separated "timestamp value ..." file (UK-DALE / REDD
 * channel_M.dat: 2 fields; UK-DALE mains.dat: timestamp active apparent voltage).
 * Takes field `col` (1 = the first after the timestamp) as the value; a line must
 * have between min_fields and max_fields fields (timestamp included). Blank lines
 * are skipped. Times going back more than backward_tol_ms behind the latest time
 * so far are warnings naming the line. Appends to *out. Returns 0 or -1 (error in d). */
int gt_parse_tv(const char *buf, size_t n, const char *fname, int col, int min_fields, int max_fields,
                int64_t backward_tol_ms, gt_series *out, gt_diag *d, gt_series_stats *st);

/* Sorts by time (stable: ties keep file order), drops exact duplicates (same
 * time and same value) and reports conflicting ones (same time, another value:
 * a warning naming both lines; the first in file order is kept), then drops
 * stray time stamps (gt_stray_edges: a warning naming each line, kind
 * GT_WARN_TIME_RANGE; an error with --strict). Returns 0 or -1. */
int gt_series_clean(gt_series *s, const char *fname, gt_diag *d, gt_series_stats *st);

/* ---------------------------------------------------------------- strays -- */
/* A stray time stamp: a clock that jumped once (a line dated 2053 in a 2013
 * recording) would stretch the regular grid over decades of empty rows. The
 * samples of a sorted recording are strays when they form a run at either end
 * of at most 1 % of the samples (at least one), separated from the rest by a
 * gap longer than GT_IMPORT_STRAY_GAP_MS (a year), and the rest keeps more
 * than half of the samples. They are skipped with a warning naming each line,
 * like a time stamp outside [1990, 2100). */
#define GT_IMPORT_STRAY_GAP_MS (INT64_C(365) * 86400 * 1000)
/* The kept range [*lo, *hi) of sorted times t[0..n); returns n - (*hi - *lo),
 * the strays (0: none, *lo = 0, *hi = n). */
int64_t gt_stray_edges(const int64_t *t, int64_t n, int64_t *lo, int64_t *hi);
/* The most rows a grid may have per sample: an item whose grid (after strays)
 * has more than GT_IMPORT_GRID_MAX_RATIO x max(samples, GT_IMPORT_GRID_MIN_SAMPLES)
 * rows is refused (exit 3) naming the line after its largest gap: a sparse
 * recording on a fine period, or gaps of years inside it. Legitimate
 * recordings stay far below it (UK-DALE at its 6 s period: about 1 row per
 * sample; a 60 s meter on a 1 s grid: 60). */
#define GT_IMPORT_GRID_MAX_RATIO 1000
#define GT_IMPORT_GRID_MIN_SAMPLES 10000
/* 1 when a grid of n_rows rows is too large for n samples (above); *gap_at:
 * the index i >= 1 of sorted t with the largest t[i] - t[i - 1] (0 when n < 2). */
int gt_grid_too_sparse(int64_t n_rows, const int64_t *t, int64_t n, int64_t *gap_at);

/* --------------------------------------------------------------- resample -- */
/* A regular clock: row k covers [t0 + k*period, t0 + (k+1)*period). */
typedef struct gt_grid {
    int64_t t0_ms, period_ms, n_rows;
} gt_grid;
/* Grid over [first, last] aligned to multiples of period since the epoch. */
gt_grid gt_grid_span(int64_t first_ms, int64_t last_ms, int64_t period_ms);
/* Row of time t (may be < 0 or >= n_rows when outside). */
static inline int64_t gt_grid_row(const gt_grid *g, int64_t t) {
    int64_t d = t - g->t0_ms;
    return d >= 0 ? d / g->period_ms : -((-d + g->period_ms - 1) / g->period_ms);
}
/* out[k * stride] = mean of the finite samples (t sorted) falling in row k, NaN
 * when none. angle_deg: circular mean of degrees (atan2 of the mean sin/cos, in
 * [0, 360); a single sample is kept as is). Samples outside the grid are
 * ignored; returns how many were. Never fills a row without a sample. */
int64_t gt_resample_mean(const int64_t *t, const float *v, int64_t n, const gt_grid *g, float *out,
                         size_t stride, int angle_deg);
/* Marks rows lying strictly inside a hole longer than max_gap_ms between two
 * consecutive samples (t sorted), and the rows before the first / after the last
 * sample when that hole (to the start of the grid's first / last row) is longer
 * than max_gap_ms; every row when n = 0: flags[k] |= bit. Returns the rows newly
 * marked. */
int64_t gt_mark_gaps(const int64_t *t, int64_t n, const gt_grid *g, int64_t max_gap_ms, uint8_t *flags,
                     uint8_t bit);

/* The channels one appliance is metered on (REDD's two-circuit appliances:
 * one channel per leg; any channels of one house mapped to one name), each
 * resampled to n rows (legs[j][k]), summed row by row into out[k * stride],
 * the legs added in order (float). A leg without a value in row k (NaN) counts
 * with the linear interpolation between its values on both sides of that hole
 * when the hole lasts at most max_hole_rows rows and another leg has a value
 * in row k: meter clocks jitter independently, so a leg's bin is often empty
 * where the other's is not, and one empty bin must not make the appliance
 * missing. The row stays NaN where no leg has a value (as a one-channel
 * appliance: never filled), or where a leg's hole is longer than
 * max_hole_rows or open at an end of the item (the appliance is genuinely
 * not measured there). One leg: copied as it is. Returns the cells a leg was
 * bridged in. */
int64_t gt_sum_legs(const float *const *legs, int n_legs, int64_t n, int64_t max_hole_rows, float *out, size_t stride);

/* ------------------------------------------------------------ delimited --- */
/* Splits one line [p, end) into fields at `sep` (double-quoted fields may hold
 * the separator; "" is a quote). Writes up to max_fields (start, length) pairs
 * (quotes removed from the view only at the ends). Returns the number of fields
 * (which may exceed max_fields: the rest are not stored). */
int gt_split_fields(const char *p, const char *end, char sep, const char **f, int *len, int max_fields);
/* ';' when the line has a ';', else ','. */
char gt_detect_sep(const char *p, const char *end);
/* Label normalisation: lower case, runs of anything but [a-z0-9] to one '_',
 * no leading/trailing '_'; at most out_bytes-1 characters. */
void gt_label_norm(const char *s, size_t n, char *out, size_t out_bytes);
/* Length of a UTF-8 byte order mark at the start of [p, p+n): 3 or 0. Every
 * text parser skips it (files saved by Excel / Notepad carry one). */
static inline size_t gt_bom_len(const char *p, size_t n) {
    return n >= 3 && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB && (unsigned char)p[2] == 0xBF ? 3 : 0;
}

/* UK-DALE / REDD labels.dat: "channel_id label" per line (channel_id in
 * 1..GT_LABELS_MAX_CHANNEL, a label of at most GT_IMPORT_LABEL_LEN-1 bytes). Returns
 * the number of entries (ids[k], labels[k] malloc'ed, caller frees with
 * gt_labels_free), or -1. */
#define GT_LABELS_MAX_CHANNEL 100000
typedef struct gt_labels {
    int n;
    int *channel;
    int *line;          /* line of each entry in labels.dat */
    char (*label)[GT_IMPORT_LABEL_LEN];
} gt_labels;
int gt_parse_labels(const char *buf, size_t n, const char *fname, gt_labels *out, gt_diag *d);
void gt_labels_free(gt_labels *l);

/* REFIT CLEAN_HouseN.csv: "Time,Unix,Aggregate,Appliance1..9,Issues". Fills
 * series[0] (aggregate) and series[1..9]; counts Issues=1 rows. */
typedef struct gt_refit_stats {
    gt_series_stats s;
    int64_t n_issues;
} gt_refit_stats;
int gt_parse_refit(const char *buf, size_t n, const char *fname, int64_t backward_tol_ms, gt_series series[10],
                   gt_diag *d, gt_refit_stats *st);

/* CARE to Compare data file (datasets/<event_id>.csv, ';' or ','). */
typedef struct gt_care_rows {
    int n_cols;           /* sensor columns of this file */
    int index_col;        /* 1-based field of a dropped pandas index column (empty
                           * name first, or "Unnamed: 0"); 0 when none */
    int64_t n_status_empty; /* rows with an empty status_type_id (stored as 5: other) */
    char (*col)[64];      /* [n_cols] header names */
    int64_t n, cap;       /* rows */
    int64_t *t;           /* [n] ms */
    float *v;             /* [n, n_cols] */
    uint8_t *status;      /* [n] status_type_id */
    uint8_t *train;       /* [n] 1 train, 2 prediction */
    int64_t *asset;       /* [n] */
    uint32_t *line;       /* [n] */
} gt_care_rows;
/* Parses the header and rows; values may be empty or NaN (-> NaN). Tolerated
 * variants (same result as the plain file): a UTF-8 BOM, fields in double quotes,
 * a trailing separator on the header and/or the rows (an empty last column is
 * ignored), a pandas index column (out->index_col; the driver warns), an empty
 * status_type_id (status 5, counted in out->n_status_empty; the driver warns).
 * More than GT_IMPORT_MAX_COLS sensor columns, an empty or repeated name (also
 * names equal in their first 63 bytes) are errors naming FILE:1. */
int gt_parse_care_rows(const char *buf, size_t n, const char *fname, int64_t backward_tol_ms, gt_care_rows *out,
                       gt_diag *d, gt_series_stats *st);
/* Header only: sensor column names (out->n_cols, out->col); no rows. */
int gt_parse_care_header(const char *buf, size_t n, const char *fname, gt_care_rows *out, gt_diag *d);
void gt_care_rows_free(gt_care_rows *r);

typedef struct gt_care_event {
    int64_t asset, event_id;
    int anomaly;          /* event_label == anomaly */
    int64_t start_ms, end_ms;
} gt_care_event;
/* event_info.csv; returns the number of events (*out malloc'ed) or -1. */
int gt_parse_care_events(const char *buf, size_t n, const char *fname, gt_care_event **out, gt_diag *d);

typedef struct gt_care_feature {
    char name[64];        /* sensor_name */
    char stat[32];        /* statistics_type as written */
    char unit[GT_IMPORT_UNIT_LEN]; /* bytes as in the file (any encoding), truncated */
    char desc[64];        /* description (optional column), truncated; "" without */
    int is_angle, is_counter;
} gt_care_feature;
/* feature_description.csv; returns the number of rows (*out malloc'ed) or -1. */
int gt_parse_care_features(const char *buf, size_t n, const char *fname, gt_care_feature **out, gt_diag *d);

/* ------------------------------------------------------------ mapping ini -- */
/* datasets/appliance_map.ini: sections [labels] (all datasets), [ukdale],
 * [redd], [refit], [care] (overrides), [refit_houses] (houseN = 9 names),
 * [meta] (name = on_power_w, on_duration_s, max_power_w). Another section is an
 * error (GT_EXIT_USAGE, FILE:LINE); a key defined twice in a section (the last
 * wins) and an empty value (the label is dropped) are warnings. */
typedef struct gt_map_entry {
    char section[16];
    char key[64];
    char value[256];
    int line;
} gt_map_entry;
typedef struct gt_appliance_map {
    int n;
    gt_map_entry *e;
    char path[256];
} gt_appliance_map;
int gt_map_parse(const char *buf, size_t n, const char *fname, gt_appliance_map *m, gt_diag *d);
void gt_map_free(gt_appliance_map *m);
/* Value of key in section, or NULL. */
const char *gt_map_get(const gt_appliance_map *m, const char *section, const char *key);
/* Canonical name of a raw label for dataset `ds` ("ukdale", ...): the dataset's
 * section, then [labels], else the normalised label itself. Returns 0 when
 * the label maps to "-" (drop the channel), 1 otherwise. */
int gt_map_label(const gt_appliance_map *m, const char *ds, const char *raw, char out[GT_IMPORT_NAME_LEN]);
/* The same with the name untruncated (at most out_bytes-1 bytes): callers compare
 * it to tell names that only agree in their first GT_IMPORT_NAME_LEN-1 bytes. */
int gt_map_label_full(const gt_appliance_map *m, const char *ds, const char *raw, char *out, size_t out_bytes);

#endif
