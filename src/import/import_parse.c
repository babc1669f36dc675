/* import/import_parse.c: diagnostics, mmap'ed text, hand-written number and date
 * parsers, delimited fields and labels.dat (see import_parse.h; the series
 * layer above them: import_series.c). No MPI, no HDF5. */
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

void gt_text_excerpt(const char *p, const char *end, char *out, size_t out_bytes) {
    size_t k = 0;
    while (p < end && *p != '\n' && *p != '\r' && k + 1 < out_bytes && k < 40) {
        unsigned char c = (unsigned char)*p++;
        out[k++] = (c >= 32 && c < 127) ? (char)c : '?';
    }
    out[k] = 0;
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
        while (q < le && gt_is_blank(*q)) q++;
        if (q == le) continue;
        int64_t ch = 0;
        const char *r = gt_parse_i64(q, le, &ch);
        const char *digits = q + (q < le && (*q == '-' || *q == '+'));
        int numeric = digits < le && is_digit(*digits);
        while (digits < le && is_digit(*digits)) digits++;
        if (numeric && (digits >= le || gt_is_blank(*digits)) && (!r || ch < 1 || ch > GT_LABELS_MAX_CHANNEL)) {
            /* a number, but not a channel id: say so (gt_parse_i64 refuses more than 18 digits) */
            gt_text_excerpt(q, digits, ex, sizeof ex);
            gt_labels_free(out);
            return gt_diag_error(d, GT_EXIT_DATA, "%s:%llu: channel id %s out of range (1..%d)", fname,
                                 (unsigned long long)line, ex, GT_LABELS_MAX_CHANNEL);
        }
        if (!r || r >= le || !gt_is_blank(*r)) {
            gt_text_excerpt(q, le, ex, sizeof ex);
            gt_labels_free(out);
            return gt_diag_error(d, GT_EXIT_DATA, "%s:%llu: malformed line '%s' (expected 'channel_id label')", fname,
                                 (unsigned long long)line, ex);
        }
        while (r < le && gt_is_blank(*r)) r++;
        const char *ls = r, *lend = le;
        while (lend > ls && gt_is_blank(lend[-1])) lend--;
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
