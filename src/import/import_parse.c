/* import/import_parse.c: diagnostics, mmap'ed text, hand-written number and date
 * parsers, the "timestamp value" channel parser and labels.dat (see
 * import_parse.h). No MPI, no HDF5. */
#define _GNU_SOURCE
#include "import/import_parse.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/check.h"
#include "core/log.h"

/* ------------------------------------------------------------ diagnostics -- */

int gt_diag_error(gt_diag *d, int code, const char *fmt, ...) {
    if (d->err_code == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->err, sizeof d->err, fmt, ap);
        va_end(ap);
        d->err_code = code ? code : GT_EXIT_DATA;
    }
    return -1;
}

const char *gt_warn_kind_name(gt_warn_kind k) {
    static const char *const names[GT_WARN_KINDS] = {
        "other", "time stamps going back beyond the tolerance", "conflicting duplicates",
        "time stamps outside 1990..2100", "files with bad lines skipped", "missing or empty channels"};
    return (unsigned)k < GT_WARN_KINDS ? names[k] : "other";
}

int gt_diag_warn(gt_diag *d, gt_warn_kind kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->last_warn, sizeof d->last_warn, fmt, ap);
    va_end(ap);
    d->n_warn++;
    if (d->strict) return gt_diag_error(d, GT_EXIT_DATA, "%s (--strict)", d->last_warn);
    int max = d->max_print > 0 ? d->max_print : 10;
    if (d->n_printed < max) {
        if (!d->quiet) GT_WARN("%s", d->last_warn);
    } else {
        d->n_suppressed[(unsigned)kind < GT_WARN_KINDS ? kind : GT_WARN_OTHER]++;
    }
    d->n_printed++;
    return 0;
}

int64_t gt_diag_item_end(gt_diag *d, const char *item, char *out, size_t out_bytes) {
    int64_t n = 0;
    for (int k = 0; k < GT_WARN_KINDS; k++) n += d->n_suppressed[k];
    if (out && out_bytes) out[0] = 0;
    if (n > 0) {
        /* the individual lines stop at max_print; what they would have said is counted here, by kind */
        char msg[GT_IMPORT_MSG_LEN];
        size_t l = (size_t)snprintf(msg, sizeof msg, "%s: %lld more warning%s not printed:", item, (long long)n,
                                    n == 1 ? "" : "s");
        int first = 1;
        for (int k = 1; k <= GT_WARN_KINDS && l < sizeof msg; k++) {
            int kk = k % GT_WARN_KINDS; /* "other" last */
            if (!d->n_suppressed[kk]) continue;
            l += (size_t)snprintf(msg + l, sizeof msg - l, "%s %lld %s", first ? "" : ",",
                                  (long long)d->n_suppressed[kk], gt_warn_kind_name((gt_warn_kind)kk));
            first = 0;
        }
        if (!d->quiet) GT_WARN("%s", msg);
        if (out && out_bytes) snprintf(out, out_bytes, "%s", msg);
    }
    memset(d->n_suppressed, 0, sizeof d->n_suppressed);
    d->n_printed = 0;
    return n;
}

int gt_bad_line(gt_diag *d, gt_bad_lines *b, const char *fname, uint64_t line, const char *why, ...) {
    char w[GT_IMPORT_MSG_LEN / 2];
    va_list ap;
    va_start(ap, why);
    vsnprintf(w, sizeof w, why, ap);
    va_end(ap);
    if (d->strict)
        return gt_diag_error(d, GT_EXIT_DATA, "%s:%llu: %s (--strict)", fname, (unsigned long long)line, w);
    if (b->n >= d->max_bad_lines) {
        if (d->max_bad_lines <= 0)
            return gt_diag_error(d, GT_EXIT_DATA, "%s:%llu: %s", fname, (unsigned long long)line, w);
        return gt_diag_error(d, GT_EXIT_DATA, "%s:%llu: %s; more than --max-bad-lines %d bad lines in this file (the "
                             "first at line %llu)", fname, (unsigned long long)line, w, d->max_bad_lines,
                             (unsigned long long)b->first);
    }
    if (b->n == 0) {
        b->first = line;
        snprintf(b->first_why, sizeof b->first_why, "%s", w);
    }
    b->n++;
    return 0;
}

int gt_bad_lines_end(gt_diag *d, const gt_bad_lines *b, const char *fname, gt_series_stats *st) {
    if (b->n == 0) return 0;
    if (st) st->n_bad_lines += b->n;
    return gt_diag_warn(d, GT_WARN_BAD_LINES, "%s: %lld bad line%s skipped (at most %d per file: --max-bad-lines), "
                        "the first at line %llu: %s", fname, (long long)b->n, b->n == 1 ? "" : "s", d->max_bad_lines,
                        (unsigned long long)b->first, b->first_why);
}

/* ------------------------------------------------------------- text files -- */

int gt_text_open(gt_text *t, const char *path, gt_diag *d) {
    memset(t, 0, sizeof *t);
    /* O_NONBLOCK: a FIFO must be refused below, not wait for a writer forever */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return gt_diag_error(d, GT_EXIT_DATA, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return gt_diag_error(d, GT_EXIT_DATA, "%s: not a regular file", path);
    }
    if (sb.st_size == 0) {
        close(fd);
        t->p = "";
        return 0;
    }
    void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return gt_diag_error(d, GT_EXIT_RESOURCE, "%s: cannot map: %s", path, strerror(errno));
    madvise(m, (size_t)sb.st_size, MADV_SEQUENTIAL);
    t->map = m;
    t->map_bytes = (size_t)sb.st_size;
    t->p = m;
    t->n = (size_t)sb.st_size;
    return 0;
}

void gt_text_close(gt_text *t) {
    if (t->map) munmap(t->map, t->map_bytes);
    memset(t, 0, sizeof *t);
}

int64_t gt_text_head(const char *path, size_t max_bytes, char **out) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat sb;
    if (fd < 0) return -1;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) { /* a FIFO would block, a directory read as empty */
        close(fd);
        return -1;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return -1;
    }
    char *b = GT_MALLOC(max_bytes + 1);
    size_t got = fread(b, 1, max_bytes, f);
    fclose(f);
    b[got] = 0;
    *out = b;
    return (int64_t)got;
}

/* ---------------------------------------------------------------- numbers -- */

static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                             1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static inline int is_digit(char c) { return (unsigned)(c - '0') < 10u; }
static inline char lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c; }

static int word_ci(const char *p, const char *end, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(end - p) < n) return 0;
    for (size_t i = 0; i < n; i++)
        if (lower(p[i]) != w[i]) return 0;
    return 1;
}

const char *gt_parse_f64(const char *p, const char *end, double *v) {
    if (p >= end) return NULL;
    int neg = 0;
    if (*p == '-' || *p == '+') {
        neg = *p == '-';
        p++;
        if (p >= end) return NULL;
    }
    if (!is_digit(*p) && *p != '.') {
        if (word_ci(p, end, "nan")) {
            *v = NAN;
            return p + 3;
        }
        if (word_ci(p, end, "infinity")) {
            *v = neg ? -INFINITY : INFINITY;
            return p + 8;
        }
        if (word_ci(p, end, "inf")) {
            *v = neg ? -INFINITY : INFINITY;
            return p + 3;
        }
        return NULL;
    }
    uint64_t mant = 0;
    int nd = 0, exp10 = 0, any = 0;
    while (p < end && is_digit(*p)) {
        if (nd < 19) {
            mant = mant * 10 + (uint64_t)(*p - '0');
            if (mant) nd++;
        } else {
            exp10++;
        }
        p++;
        any = 1;
    }
    if (p < end && *p == '.') {
        p++;
        while (p < end && is_digit(*p)) {
            if (nd < 19) {
                mant = mant * 10 + (uint64_t)(*p - '0');
                if (mant) nd++;
                exp10--;
            }
            p++;
            any = 1;
        }
    }
    if (!any) return NULL;
    if (p < end && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1;
        int eneg = 0;
        if (q < end && (*q == '-' || *q == '+')) eneg = *q++ == '-';
        if (q >= end || !is_digit(*q)) return NULL;
        int e = 0;
        while (q < end && is_digit(*q)) {
            if (e < 100000) e = e * 10 + (*q - '0');
            q++;
        }
        exp10 += eneg ? -e : e;
        p = q;
    }
    double x = (double)mant;
    if (mant == 0) {
        x = 0;
    } else if (exp10 >= 0 && exp10 <= 22) {
        x *= p10[exp10];
    } else if (exp10 < 0 && exp10 >= -22) {
        x /= p10[-exp10];
    } else {
        x *= pow(10.0, exp10);
    }
    *v = neg ? -x : x;
    return p;
}

const char *gt_parse_i64(const char *p, const char *end, int64_t *v) {
    int neg = 0;
    if (p < end && (*p == '-' || *p == '+')) neg = *p++ == '-';
    if (p >= end || !is_digit(*p)) return NULL;
    int64_t x = 0;
    int nd = 0;
    while (p < end && is_digit(*p)) {
        if (++nd > 18) return NULL;
        x = x * 10 + (*p++ - '0');
    }
    *v = neg ? -x : x;
    return p;
}

const char *gt_parse_unix_ms(const char *p, const char *end, int64_t *ms) {
    int64_t s;
    const char *q = gt_parse_i64(p, end, &s);
    if (!q || s < 0 || s > 100000000000LL) return NULL; /* up to year 5138 */
    int64_t frac = 0;
    if (q < end && *q == '.') {
        q++;
        int k = 0;
        int64_t f4 = 0;
        while (q < end && is_digit(*q)) {
            if (k < 4) f4 = f4 * 10 + (*q - '0'), k++;
            q++;
        }
        while (k < 4) f4 *= 10, k++;
        frac = (f4 + 5) / 10; /* ms, half up */
    }
    /* "1e9" style or a trailing letter is not a timestamp */
    if (q < end && (*q == 'e' || *q == 'E' || *q == '.')) return NULL;
    *ms = s * 1000 + frac;
    return q;
}

int64_t gt_days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

int gt_days_in_month(int64_t y, unsigned m) {
    static const unsigned char mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12) return 0;
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; /* Gregorian: 2000 is, 1900 and 2100 are not */
    return mdays[m - 1] + (m == 2 && leap);
}

static const char *digits_n(const char *p, const char *end, int n, int *v) {
    if (end - p < n) return NULL;
    int x = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit(p[i])) return NULL;
        x = x * 10 + (p[i] - '0');
    }
    *v = x;
    return p + n;
}

const char *gt_parse_datetime_ms(const char *p, const char *end, int64_t *ms) {
    int Y, M, D, h, m, s = 0;
    if (!(p = digits_n(p, end, 4, &Y)) || p >= end || *p++ != '-') return NULL;
    if (!(p = digits_n(p, end, 2, &M)) || p >= end || *p++ != '-') return NULL;
    if (!(p = digits_n(p, end, 2, &D)) || p >= end || (*p != ' ' && *p != 'T')) return NULL;
    p++;
    if (!(p = digits_n(p, end, 2, &h)) || p >= end || *p++ != ':') return NULL;
    if (!(p = digits_n(p, end, 2, &m))) return NULL;
    int frac = 0;
    if (p < end && *p == ':') {
        if (!(p = digits_n(p + 1, end, 2, &s))) return NULL;
        if (p < end && *p == '.') {
            p++;
            int k = 0;
            while (p < end && is_digit(*p)) {
                if (k < 3) frac = frac * 10 + (*p - '0'), k++;
                p++;
            }
            while (k < 3) frac *= 10, k++;
        }
    }
    /* seconds 0..59: the recordings' clocks (Unix time, pandas, SCADA loggers) have no leap second, and a
     * ":60" accepted here would be the next minute's ":00" (two lines one time stamp) */
    if (M < 1 || M > 12 || D < 1 || D > gt_days_in_month(Y, (unsigned)M) || h > 23 || m > 59 || s > 59) return NULL;
    if (p < end && *p == 'Z') p++;
    else if (end - p >= 6 && (p[0] == '+') && !memcmp(p + 1, "00:00", 5)) p += 6;
    int64_t days = gt_days_from_civil(Y, (unsigned)M, (unsigned)D);
    *ms = ((days * 24 + h) * 60 + m) * 60000LL + s * 1000LL + frac;
    return p;
}

/* ---------------------------------------------------------------- series -- */

void gt_series_push(gt_series *s, int64_t t, float v, uint32_t line) {
    if (s->n == s->cap) {
        int64_t cap = s->cap ? s->cap * 2 : 4096;
        s->t = GT_REALLOC_ARRAY(s->t, cap, sizeof *s->t, "import: a channel's samples");
        s->v = GT_REALLOC_ARRAY(s->v, cap, sizeof *s->v, "import: a channel's samples");
        s->line = GT_REALLOC_ARRAY(s->line, cap, sizeof *s->line, "import: a channel's samples");
        s->cap = cap;
    }
    s->t[s->n] = t;
    s->v[s->n] = v;
    s->line[s->n] = line;
    s->n++;
}

void gt_series_free(gt_series *s) {
    free(s->t);
    free(s->v);
    free(s->line);
    memset(s, 0, sizeof *s);
}

/* Shows a short excerpt of a bad token in messages (printable ASCII only). */
static void excerpt(const char *p, const char *end, char *out, size_t out_bytes) {
    size_t k = 0;
    while (p < end && *p != '\n' && *p != '\r' && k + 1 < out_bytes && k < 40) {
        unsigned char c = (unsigned char)*p++;
        out[k++] = (c >= 32 && c < 127) ? (char)c : '?';
    }
    out[k] = 0;
}

static inline int is_blank(char c) { return c == ' ' || c == '\t'; }

int gt_time_check(int64_t t, const char *fname, uint64_t line, gt_diag *d, gt_series_stats *st) {
    if (t >= GT_IMPORT_TS_MIN_MS && t < GT_IMPORT_TS_MAX_MS) return 0;
    if (st) st->n_bad_time++;
    if (gt_diag_warn(d, GT_WARN_TIME_RANGE, "%s:%llu: time stamp %lld ms is outside 1990-01-01..2100-01-01; line skipped", fname,
                     (unsigned long long)line, (long long)t))
        return -1;
    return 1;
}

/* Backward-step bookkeeping shared by the parsers. Returns -1 on a strict error. */
static inline int note_time(gt_series *s, int64_t t, int64_t *latest, int64_t tol, const char *fname,
                            uint64_t line, gt_diag *d, gt_series_stats *st) {
    if (t < *latest) {
        s->unsorted = 1;
        s->n_backward++;
        if (st) st->n_backward++;
        if (*latest - t > tol) {
            if (st) st->n_backward_far++;
            if (gt_diag_warn(d, GT_WARN_BACKWARD, "%s:%llu: timestamp goes back %.3f s (more than the tolerance %.3f s); the samples are sorted",
                             fname, (unsigned long long)line, (double)(*latest - t) / 1000.0, (double)tol / 1000.0))
                return -1;
        }
    } else {
        *latest = t;
    }
    return 0;
}

int gt_parse_tv(const char *buf, size_t n, const char *fname, int col, int min_fields, int max_fields,
                int64_t backward_tol_ms, gt_series *out, gt_diag *d, gt_series_stats *st) {
    const char *p = buf, *end = buf + n;
    uint64_t line = 0;
    int64_t latest = INT64_MIN;
    char ex[48], why[160];
    gt_bad_lines bad = {0};
    const int64_t n0 = out->n;
    while (p < end) {
        line++;
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *le = eol;
        if (le > p && le[-1] == '\r') le--;
        const char *q = p;
        while (q < le && is_blank(*q)) q++;
        if (q == le) { /* blank line */
            p = eol + 1;
            continue;
        }
        if (line > UINT32_MAX) return gt_diag_error(d, GT_EXIT_DATA, "%s: more than 2^32 lines", fname);
        int64_t t;
        const char *r = gt_parse_unix_ms(q, le, &t);
        if (!r || (r < le && !is_blank(*r))) {
            excerpt(q, le, ex, sizeof ex);
            snprintf(why, sizeof why, "bad timestamp in '%s' (expected unix seconds)", ex);
            goto bad_line;
        }
        q = r;
        int fields = 1;
        double val = NAN;
        while (1) {
            while (q < le && is_blank(*q)) q++;
            if (q >= le) break;
            fields++;
            if (fields > max_fields) {
                excerpt(p, le, ex, sizeof ex);
                snprintf(why, sizeof why, "malformed line '%s' (expected at most %d fields)", ex, max_fields);
                goto bad_line;
            }
            double x;
            r = gt_parse_f64(q, le, &x);
            if (!r || (r < le && !is_blank(*r))) {
                excerpt(q, le, ex, sizeof ex);
                snprintf(why, sizeof why, "non-numeric value '%s'", ex);
                goto bad_line;
            }
            if (fields - 1 == col) val = x;
            q = r;
        }
        if (fields < min_fields) {
            excerpt(p, le, ex, sizeof ex);
            snprintf(why, sizeof why, "malformed line '%s' (expected %d fields, got %d)", ex, min_fields, fields);
            goto bad_line;
        }
        int bad_t = gt_time_check(t, fname, line, d, st);
        if (bad_t < 0) return -1;
        if (!bad_t) {
            if (note_time(out, t, &latest, backward_tol_ms, fname, line, d, st)) return -1;
            gt_series_push(out, t, (float)val, (uint32_t)line);
        }
        p = eol + 1;
        continue;
    bad_line: /* skipped while the file has at most d->max_bad_lines of them, else the error */
        if (gt_bad_line(d, &bad, fname, line, "%s", why)) return -1;
        p = eol + 1;
    }
    if (st) {
        st->n_lines += (int64_t)line;
        st->n_samples += out->n - n0;
    }
    return gt_bad_lines_end(d, &bad, fname, st);
}

/* ------------------------------------------------------------------ sort --- */

typedef struct {
    int64_t t;
    float v;
    uint32_t line;
} rec;

static int rec_cmp(const void *a, const void *b) {
    const rec *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

static int drop_strays(gt_series *s, const char *fname, gt_diag *d, gt_series_stats *st);

static int same_value(float a, float b) { return a == b || (isnan(a) && isnan(b)); }

int gt_series_clean(gt_series *s, const char *fname, gt_diag *d, gt_series_stats *st) {
    if (s->unsorted) {
        rec *r = GT_ALLOC_ARRAY(s->n, sizeof(rec), "import: a channel's samples");
        for (int64_t i = 0; i < s->n; i++) r[i] = (rec){s->t[i], s->v[i], s->line[i]};
        qsort(r, (size_t)s->n, sizeof(rec), rec_cmp);
        for (int64_t i = 0; i < s->n; i++) s->t[i] = r[i].t, s->v[i] = r[i].v, s->line[i] = r[i].line;
        free(r);
        s->unsorted = 0;
    }
    int64_t w = 0;
    for (int64_t i = 0; i < s->n; i++) {
        if (w > 0 && s->t[i] == s->t[w - 1]) {
            if (same_value(s->v[i], s->v[w - 1])) {
                if (st) st->n_exact_dup++;
            } else {
                if (st) st->n_conflict++;
                if (gt_diag_warn(d, GT_WARN_CONFLICT, "%s:%u: conflicting duplicate of the timestamp at line %u (%.9g vs %.9g); keeping line %u",
                                 fname, s->line[i], s->line[w - 1], (double)s->v[i], (double)s->v[w - 1],
                                 s->line[w - 1]))
                    return -1;
            }
            continue;
        }
        s->t[w] = s->t[i];
        s->v[w] = s->v[i];
        s->line[w] = s->line[i];
        w++;
    }
    s->n = w;
    return drop_strays(s, fname, d, st);
}

/* ---------------------------------------------------------------- strays -- */

int64_t gt_stray_edges(const int64_t *t, int64_t n, int64_t *lo, int64_t *hi) {
    *lo = 0, *hi = n;
    const int64_t m = n / 100 > 1 ? n / 100 : 1; /* the most strays at one end */
    int64_t a = 0, b = n;
    for (int64_t i = 0; i < m && i + 1 < n; i++)
        if (t[i + 1] - t[i] > GT_IMPORT_STRAY_GAP_MS) a = i + 1;
    for (int64_t j = n - 1; j >= n - m && j > a; j--)
        if (t[j] - t[j - 1] > GT_IMPORT_STRAY_GAP_MS) b = j;
    if (b - a <= n / 2) return 0; /* no majority left: nothing is a stray (the grid check decides) */
    *lo = a, *hi = b;
    return n - (b - a);
}

int gt_grid_too_sparse(int64_t n_rows, const int64_t *t, int64_t n, int64_t *gap_at) {
    *gap_at = 0;
    for (int64_t i = 1; i < n; i++)
        if (t[i] - t[i - 1] > t[*gap_at] - t[*gap_at > 0 ? *gap_at - 1 : 0]) *gap_at = i;
    const int64_t base = n > GT_IMPORT_GRID_MIN_SAMPLES ? n : GT_IMPORT_GRID_MIN_SAMPLES;
    return n_rows / GT_IMPORT_GRID_MAX_RATIO >= base;
}

static void ymd(int64_t ms, char *out, size_t out_bytes) {
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    if (gmtime_r(&s, &tm)) strftime(out, out_bytes, "%Y-%m-%d", &tm);
    else snprintf(out, out_bytes, "%lld ms", (long long)ms);
}

static int drop_strays(gt_series *s, const char *fname, gt_diag *d, gt_series_stats *st) {
    int64_t lo = 0, hi = s->n;
    if (gt_stray_edges(s->t, s->n, &lo, &hi) == 0) return 0;
    for (int64_t i = 0; i < s->n; i++) {
        if (i == lo) i = hi;
        if (i >= s->n) break;
        const int64_t near = i < lo ? lo : hi - 1, days = llabs(s->t[i] - s->t[near]) / 86400000;
        char when[32];
        ymd(s->t[i], when, sizeof when);
        if (st) st->n_stray++;
        if (gt_diag_warn(d, GT_WARN_TIME_RANGE, "%s:%u: time stamp %s lies %lld days %s the rest of the recording "
                         "(line %u): a stray clock; line skipped", fname, s->line[i], when, (long long)days,
                         i < lo ? "before" : "after", s->line[near]))
            return -1;
    }
    const int64_t k = hi - lo;
    memmove(s->t, s->t + lo, sizeof *s->t * (size_t)k);
    memmove(s->v, s->v + lo, sizeof *s->v * (size_t)k);
    memmove(s->line, s->line + lo, sizeof *s->line * (size_t)k);
    s->n = k;
    return 0;
}

/* --------------------------------------------------------------- resample -- */

gt_grid gt_grid_span(int64_t first_ms, int64_t last_ms, int64_t period_ms) {
    gt_grid g = {0, period_ms, 0};
    int64_t f = first_ms >= 0 ? first_ms / period_ms : -((-first_ms + period_ms - 1) / period_ms);
    g.t0_ms = f * period_ms;
    g.n_rows = (last_ms - g.t0_ms) / period_ms + 1;
    return g;
}

int64_t gt_resample_mean(const int64_t *t, const float *v, int64_t n, const gt_grid *g, float *out, size_t stride,
                         int angle_deg) {
    for (int64_t k = 0; k < g->n_rows; k++) out[(size_t)k * stride] = NAN;
    int64_t outside = 0;
    int64_t i = 0;
    const double rad = M_PI / 180.0;
    while (i < n) {
        int64_t k = gt_grid_row(g, t[i]);
        if (k < 0 || k >= g->n_rows) {
            outside++;
            i++;
            continue;
        }
        double sum = 0, sc = 0, ss = 0, first = 0;
        int64_t cnt = 0;
        int64_t bin_end = g->t0_ms + (k + 1) * g->period_ms;
        for (; i < n && t[i] < bin_end; i++) {
            double x = v[i];
            if (!isfinite(x)) continue;
            if (cnt == 0) first = x;
            cnt++;
            if (angle_deg) sc += cos(x * rad), ss += sin(x * rad);
            else sum += x;
        }
        if (cnt == 1) out[(size_t)k * stride] = (float)first;
        else if (cnt > 1) {
            if (angle_deg) {
                double a = atan2(ss, sc) / rad;
                if (a < 0) a += 360.0;
                if (a >= 360.0) a -= 360.0;
                out[(size_t)k * stride] = (float)a;
            } else {
                out[(size_t)k * stride] = (float)(sum / (double)cnt);
            }
        }
    }
    return outside;
}

int64_t gt_mark_gaps(const int64_t *t, int64_t n, const gt_grid *g, int64_t max_gap_ms, uint8_t *flags, uint8_t bit) {
    int64_t marked = 0;
#define MARK(a, b)                                                  \
    for (int64_t k_ = (a) < 0 ? 0 : (a); k_ < (b) && k_ < g->n_rows; k_++) \
        if (!(flags[k_] & bit)) flags[k_] |= bit, marked++;
    if (n == 0) {
        MARK(0, g->n_rows);
        return marked;
    }
    MARK(0, gt_grid_row(g, t[0]));
    for (int64_t i = 0; i + 1 < n; i++)
        if (t[i + 1] - t[i] > max_gap_ms) MARK(gt_grid_row(g, t[i]) + 1, gt_grid_row(g, t[i + 1]));
    MARK(gt_grid_row(g, t[n - 1]) + 1, g->n_rows);
#undef MARK
    return marked;
}

int64_t gt_sum_legs(const float *const *legs, int n_legs, int64_t n, int64_t max_hole_rows, float *out, size_t stride) {
    if (n_legs == 1) {
        for (int64_t k = 0; k < n; k++) out[(size_t)k * stride] = legs[0][k];
        return 0;
    }
    /* bridged[j]: leg j with its short holes interpolated (the same rule as data.fill_max_s) */
    float *bridged = GT_ALLOC_ARRAY((n > 0 ? n : 1) * (int64_t)n_legs, sizeof(float), "import: an appliance's legs");
    for (int j = 0; j < n_legs; j++) {
        float *b = bridged + (size_t)j * (size_t)n;
        memcpy(b, legs[j], sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            if (isfinite(b[i])) continue;
            int64_t e = i;
            while (e < n && !isfinite(b[e])) e++;
            if (i > 0 && e < n && e - i <= max_hole_rows) { /* hole [i, e) with a value on both sides */
                const double lo = b[i - 1], hi = b[e], span = (double)(e - i + 1);
                for (int64_t k = i; k < e; k++) b[k] = (float)(lo + (hi - lo) * (double)(k - i + 1) / span);
            }
            i = e;
        }
    }
    int64_t n_bridged = 0;
    for (int64_t k = 0; k < n; k++) {
        int any = 0, miss = 0;
        for (int j = 0; j < n_legs; j++) {
            any |= isfinite(legs[j][k]) != 0;
            miss += !isfinite(legs[j][k]);
        }
        float s = NAN;
        if (any) {
            s = bridged[k];
            for (int j = 1; j < n_legs; j++) s += bridged[(size_t)j * (size_t)n + (size_t)k];
            if (isfinite(s)) n_bridged += miss;
        }
        out[(size_t)k * stride] = s;
    }
    free(bridged);
    return n_bridged;
}

/* ------------------------------------------------------------- delimited --- */

int gt_split_fields(const char *p, const char *end, char sep, const char **f, int *len, int max_fields) {
    int nf = 0;
    while (1) {
        const char *s = p, *e;
        if (p < end && *p == '"') {
            p++;
            s = p;
            while (p < end) {
                if (*p == '"') {
                    if (p + 1 < end && p[1] == '"') p += 2;
                    else break;
                } else {
                    p++;
                }
            }
            e = p;
            if (p < end) p++; /* closing quote */
            while (p < end && *p != sep) p++;
        } else {
            const char *q = memchr(p, sep, (size_t)(end - p));
            e = q ? q : end;
            p = e;
        }
        if (nf < max_fields) f[nf] = s, len[nf] = (int)(e - s);
        nf++;
        if (p >= end) break;
        p++; /* separator */
    }
    return nf;
}

char gt_detect_sep(const char *p, const char *end) { return memchr(p, ';', (size_t)(end - p)) ? ';' : ','; }

void gt_label_norm(const char *s, size_t n, char *out, size_t out_bytes) {
    size_t k = 0;
    int us = 0;
    for (size_t i = 0; i < n && k + 1 < out_bytes; i++) {
        char c = lower(s[i]);
        if ((c >= 'a' && c <= 'z') || is_digit(c)) {
            if (us && k > 0 && k + 2 < out_bytes) out[k++] = '_';
            us = 0;
            out[k++] = c;
        } else {
            us = 1;
        }
    }
    out[k] = 0;
}

/* ------------------------------------------------------------ labels.dat --- */

int gt_parse_labels(const char *buf, size_t n, const char *fname, gt_labels *out, gt_diag *d) {
    memset(out, 0, sizeof *out);
    const char *p = buf + gt_bom_len(buf, n), *end = buf + n;
    int cap = 0;
    uint64_t line = 0;
    char ex[48];
    while (p < end) {
        line++;
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *le = eol;
        if (le > p && le[-1] == '\r') le--;
        const char *q = p;
        p = eol + 1;
        while (q < le && is_blank(*q)) q++;
        if (q == le) continue;
        int64_t ch = 0;
        const char *r = gt_parse_i64(q, le, &ch);
        const char *digits = q + (q < le && (*q == '-' || *q == '+'));
        int numeric = digits < le && is_digit(*digits);
        while (digits < le && is_digit(*digits)) digits++;
        if (numeric && (digits >= le || is_blank(*digits)) && (!r || ch < 1 || ch > GT_LABELS_MAX_CHANNEL)) {
            /* a number, but not a channel id: say so (gt_parse_i64 refuses more than 18 digits) */
            excerpt(q, digits, ex, sizeof ex);
            gt_labels_free(out);
            return gt_diag_error(d, GT_EXIT_DATA, "%s:%llu: channel id %s out of range (1..%d)", fname,
                                 (unsigned long long)line, ex, GT_LABELS_MAX_CHANNEL);
        }
        if (!r || r >= le || !is_blank(*r)) {
            excerpt(q, le, ex, sizeof ex);
            gt_labels_free(out);
            return gt_diag_error(d, GT_EXIT_DATA, "%s:%llu: malformed line '%s' (expected 'channel_id label')", fname,
                                 (unsigned long long)line, ex);
        }
        while (r < le && is_blank(*r)) r++;
        const char *ls = r, *lend = le;
        while (lend > ls && is_blank(lend[-1])) lend--;
        if (ls == lend) {
            gt_labels_free(out);
            return gt_diag_error(d, GT_EXIT_DATA, "%s:%llu: channel %lld has no label", fname,
                                 (unsigned long long)line, (long long)ch);
        }
        for (int k = 0; k < out->n; k++)
            if (out->channel[k] == ch) {
                gt_labels_free(out);
                return gt_diag_error(d, GT_EXIT_DATA, "%s:%llu: channel %lld listed twice", fname,
                                     (unsigned long long)line, (long long)ch);
            }
        if (out->n == cap) {
            cap = cap ? cap * 2 : 32;
            out->channel = GT_REALLOC(out->channel, sizeof(int) * (size_t)cap);
            out->label = GT_REALLOC(out->label, sizeof(*out->label) * (size_t)cap);
            out->line = GT_REALLOC(out->line, sizeof(int) * (size_t)cap);
        }
        out->channel[out->n] = (int)ch;
        out->line[out->n] = (int)line;
        size_t ll = (size_t)(lend - ls);
        if (ll > GT_IMPORT_LABEL_LEN - 1) {
            gt_labels_free(out);
            return gt_diag_error(d, GT_EXIT_DATA, "%s:%llu: label of channel %lld is longer than %d bytes", fname,
                                 (unsigned long long)line, (long long)ch, GT_IMPORT_LABEL_LEN - 1);
        }
        memcpy(out->label[out->n], ls, ll);
        out->label[out->n][ll] = 0;
        out->n++;
    }
    return out->n;
}

void gt_labels_free(gt_labels *l) {
    free(l->channel);
    free(l->label);
    free(l->line);
    memset(l, 0, sizeof *l);
}
