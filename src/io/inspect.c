/* io/inspect.c: streaming validation report (see inspect.h). Shared by
 * every kind of file: what differs (the datasets scanned, the checks of each
 * column and row, the kind's lines) comes from the kind's row (io/kind.h
 * gt_io_inspect_i). */
#include "io/inspect.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_h5.h"
#include "core/check_mpi.h"
#include "io/format.h"
#include "io/h5.h"
#include "io/kind.h"
#include "io/shard.h"

void gt_inspect_opts_defaults(gt_inspect_opts *o) {
    o->max_report = 50;
    o->spike_k = 20.0;
    o->stuck_rows = 20;
    o->gap_factor = 1.5;
    o->block_bytes = (int64_t)64 << 20;
    o->fail_on_data = 0;
}

/* ------------------------------------------------------- per-channel state -- */

typedef struct {
    double sigma;     /* robust scale of first differences; < 0: not yet known */
    int64_t n;        /* samples seen */
    float p2, p1;     /* the two previous samples */
    float stuck_val;
    int64_t stuck_len;
    int stepped;      /* first differences mostly exactly 0: a stepped actuator
                         (yaw) or a counter; runs of equal values are normal there */
} chan;

static int cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* sigma = 1.4826 * MAD of the first differences of up to 65536 finite pairs of
 * x (stride `stride`), floored so a flat signal does not flag every change. */
static double robust_sigma(const float *x, int64_t n, int64_t stride, int *stepped) {
    int64_t cap = 65536, m = 0;
    float *d = GT_MALLOC(sizeof(float) * (size_t)cap);
    double sum_abs = 0;
    for (int64_t i = 1; i < n && m < cap; i++) {
        float a = x[(i - 1) * stride], b = x[i * stride];
        if (isfinite(a) && isfinite(b)) {
            d[m++] = b - a;
            sum_abs += fabs(b);
        }
    }
    double s = 0;
    if (m >= 8) {
        int64_t zeros = 0;
        for (int64_t i = 0; i < m; i++) zeros += d[i] == 0.0f;
        *stepped = zeros > m / 2;
        qsort(d, (size_t)m, sizeof(float), cmp_f);
        float med = d[m / 2];
        for (int64_t i = 0; i < m; i++) d[i] = fabsf(d[i] - med);
        qsort(d, (size_t)m, sizeof(float), cmp_f);
        s = 1.4826 * d[m / 2];
        double floor_ = 1e-3 * (sum_abs / m) + 1e-6;
        if (s < floor_) s = floor_;
    } else {
        s = -1; /* too few samples: decide on a later block */
    }
    free(d);
    return s;
}

/* Feeds samples x[i*stride], i < n of one channel. */
static void chan_feed(chan *c, const float *x, int64_t n, int64_t stride, const gt_inspect_opts *o,
                      int check_neg, int check_spike, int check_stuck, gt_item_report *r) {
    if (c->sigma < 0 && (check_spike || check_stuck)) c->sigma = robust_sigma(x, n, stride, &c->stepped);
    if (c->stepped) check_stuck = 0;
    const double thr = o->spike_k * c->sigma;
    for (int64_t i = 0; i < n; i++) {
        float v = x[i * stride];
        if (isnan(v)) r->nan++;
        else if (isinf(v)) r->inf++;
        else if (check_neg && v < 0) r->negative++;
        if (check_spike && c->n >= 2 && thr > 0 && isfinite(v) && isfinite(c->p1) && isfinite(c->p2)) {
            double d1 = (double)c->p1 - c->p2, d2 = (double)c->p1 - v;
            if (d1 * d2 > 0 && fabs(d1) > thr && fabs(d2) > thr) r->spikes++;
        }
        if (check_stuck) {
            /* a run of exact zeros is an idle plateau (no power, no vibration), not a frozen sensor */
            if (isfinite(v) && c->stuck_len > 0 && v == c->stuck_val && v != 0.0f) {
                c->stuck_len++;
            } else {
                if (c->stuck_len >= o->stuck_rows) r->stuck_runs++, r->stuck_rows += c->stuck_len;
                c->stuck_len = isfinite(v) ? 1 : 0;
                c->stuck_val = v;
            }
        }
        c->p2 = c->p1;
        c->p1 = v;
        c->n++;
    }
}
static void chan_end(chan *c, const gt_inspect_opts *o, gt_item_report *r) {
    if (c->stuck_len >= o->stuck_rows) r->stuck_runs++, r->stuck_rows += c->stuck_len;
    c->stuck_len = 0;
}

/* ---------------------------------------------------------------- driver -- */

typedef struct {
    int item; /* local item index */
    int64_t start, count; /* rows within the item */
} segment;

typedef struct {
    gt_item_report rep;
    chan *ch;          /* [n_ch] */
    int64_t prev_ts;
    int have_ts;
    int in_nan;
    double period_ms;
} item_state;

/* This rank's items cut into segments of at most `block` rows, the segments
 * grouped into pieces (one collective read each) of at most `block` rows:
 * *seg_out [*n_seg_out], *piece_out [n_pieces + 1] (malloc'd). Returns n_pieces. */
static int plan_pieces(const int *local, int n_local, const int64_t *w, int64_t block, segment **seg_out,
                       int *n_seg_out, int **piece_out) {
    int cap = 64, n_seg = 0;
    segment *seg = GT_MALLOC(sizeof(segment) * (size_t)cap);
    int *piece_start = NULL;
    int n_pieces = 0;
    for (int k = 0; k < n_local; k++) {
        int64_t n = w[local[k]];
        for (int64_t s = 0; s < n; s += block) {
            if (n_seg == cap) seg = GT_REALLOC(seg, sizeof(segment) * (size_t)(cap *= 2));
            seg[n_seg++] = (segment){k, s, n - s < block ? n - s : block};
        }
    }
    piece_start = GT_MALLOC(sizeof(int) * (size_t)(n_seg + 1));
    int64_t cur = 0;
    for (int i = 0; i < n_seg; i++) {
        if (i == 0 || cur + seg[i].count > block) {
            piece_start[n_pieces++] = i;
            cur = 0;
        }
        cur += seg[i].count;
    }
    piece_start[n_pieces] = n_seg;
    *seg_out = seg;
    *n_seg_out = n_seg;
    *piece_out = piece_start;
    return n_pieces;
}

/* What the scan of one file needs besides the rows. */
typedef struct {
    const gt_io_inspect_i *kind;
    const void *state;   /* the kind's (its begin) */
    int C, n_ch;         /* n_ch: C, + 1 with the kind's extra column */
    const uint8_t *col;  /* [n_ch] GT_IO_COL_* checks of each column */
    const int *local;    /* local item -> file item */
    const int64_t *w;    /* [n_items] rows of each item */
    const gt_inspect_opts *o;
} scan_ctx;

/* Checks the rows of segments [i0, i1) (one piece, read into ts, x, extra
 * and u8: NULL where the file has no such dataset) into the items' states. */
static void scan_piece(const scan_ctx *c, item_state *st, const segment *seg, int i0, int i1, const int64_t *ts,
                       const float *x, const float *extra, const uint8_t *u8) {
    int64_t pos = 0;
    for (int i = i0; i < i1; i++) {
        item_state *s = &st[seg[i].item];
        gt_item_report *rep = &s->rep;
        const int64_t n = seg[i].count;
        const double gap = c->o->gap_factor * s->period_ms;
        for (int64_t j = 0; j < n; j++) {
            int64_t t = ts[pos + j];
            if (t < GT_IO_TS_MIN_MS || t >= GT_IO_TS_MAX_MS) rep->ts_range++;
            if (s->have_ts) { /* no subtraction: extreme stamps would overflow int64 */
                if (t <= s->prev_ts) rep->ts_backward++;
                else if ((double)t - (double)s->prev_ts > gap) rep->ts_gaps++;
            }
            s->prev_ts = t;
            s->have_ts = 1;
        }
        c->kind->rows(c->state, n, c->C, x + pos * c->C, extra ? extra + pos : NULL, u8 ? u8 + pos : NULL, &s->in_nan,
                      rep);
        for (int ch = 0; ch < c->n_ch; ch++) {
            const int is_extra = ch == c->C; /* the kind's extra column, in its own buffer */
            const uint8_t k = c->col[ch];
            chan_feed(&s->ch[ch], is_extra ? extra + pos : x + pos * c->C + ch, n, is_extra ? 1 : c->C, c->o,
                      (k & GT_IO_COL_NEGATIVE) != 0, (k & GT_IO_COL_SPIKE) != 0, (k & GT_IO_COL_STUCK) != 0, rep);
        }
        if (seg[i].start + n == c->w[c->local[seg[i].item]])
            for (int ch = 0; ch < c->n_ch; ch++) chan_end(&s->ch[ch], c->o, rep);
        pos += n;
    }
}

/* Rank 0: the report of the file (every item's findings in file order in all)
 * on out; returns the number of items with findings. */
static int print_report(FILE *out, const char *path, const gt_io_kind_i *K, const gt_file_index *ix,
                        const gt_item_report *all, const int *owner, const int64_t *load, int size, int64_t row_bytes,
                        double imbalance, const gt_inspect_opts *o) {
    const int n_items = ix->n_items, C = ix->n_cols;
    fprintf(out, "file: %s\nkind: %s  schema_version: %lld  %s: %d  rows: %lld  %s: %d", path, K->name,
            (long long)ix->version, K->items, n_items, (long long)ix->n_rows, K->cols, C);
    K->inspect->header(out, ix);
    fprintf(out, "%-6s %8s %14s %14s\n", "rank", "items", "rows", "bytes");
    for (int q = 0; q < size; q++) {
        int cnt = 0;
        for (int i = 0; i < n_items; i++) cnt += owner[i] == q;
        fprintf(out, "%-6d %8d %14lld %14lld\n", q, cnt, (long long)load[q], (long long)(load[q] * row_bytes));
    }
    fprintf(out, "imbalance (max/mean rows): %.4f\n", imbalance);
    fprintf(out, "%8s %10s %12s %7s %7s %9s %8s %6s %9s %7s %7s %9s\n", "item", "id", "rows", "gaps",
            "ts_back", "nan", "nan_runs", "inf", "negative", "spikes", "stuck", "stuck_rows");
    gt_item_report tot = {0};
    int printed = 0, with = 0;
    for (int i = 0; i < n_items; i++) {
        const gt_item_report *p = &all[i];
        int64_t any = p->ts_gaps + p->ts_backward + p->nan + p->inf + p->negative + p->spikes + p->stuck_runs +
                      p->ts_range;
        for (int k = 0; k < K->inspect->n_own; k++)
            if (K->inspect->own_finding >> k & 1u) any += p->own[k];
        with += any > 0;
        if (printed < o->max_report) {
            fprintf(out, "%8lld %10lld %12lld %7lld %7lld %9lld %8lld %6lld %9lld %7lld %7lld %9lld\n",
                    (long long)p->index, (long long)p->id, (long long)p->rows, (long long)p->ts_gaps,
                    (long long)p->ts_backward, (long long)p->nan, (long long)p->nan_runs, (long long)p->inf,
                    (long long)p->negative, (long long)p->spikes, (long long)p->stuck_runs, (long long)p->stuck_rows);
            printed++;
        }
        tot.rows += p->rows; tot.ts_gaps += p->ts_gaps; tot.ts_backward += p->ts_backward;
        tot.nan += p->nan; tot.nan_runs += p->nan_runs; tot.inf += p->inf; tot.negative += p->negative;
        tot.spikes += p->spikes; tot.stuck_runs += p->stuck_runs; tot.stuck_rows += p->stuck_rows;
        tot.ts_range += p->ts_range;
        for (int k = 0; k < K->inspect->n_own; k++) tot.own[k] += p->own[k];
    }
    if (printed < n_items) fprintf(out, "... %d more items (inspect.max_report)\n", n_items - printed);
    fprintf(out, "summary: kind=%s items=%d rows=%lld items_with_findings=%d gaps=%lld ts_backward=%lld nan=%lld "
            "nan_runs=%lld inf=%lld negative=%lld spikes=%lld stuck_runs=%lld stuck_rows=%lld",
            K->name, n_items, (long long)tot.rows, with, (long long)tot.ts_gaps,
            (long long)tot.ts_backward, (long long)tot.nan, (long long)tot.nan_runs, (long long)tot.inf,
            (long long)tot.negative, (long long)tot.spikes, (long long)tot.stuck_runs, (long long)tot.stuck_rows);
    if (K->inspect->summary) K->inspect->summary(out, ix, &tot);
    if (tot.ts_range) /* only then: the line of a sane file stays as it was */
        fprintf(out, " ts_out_of_range=%lld", (long long)tot.ts_range);
    fprintf(out, " imbalance=%.4f ranks=%d\n", imbalance, size);
    if (tot.ts_range)
        fprintf(out, "warning: %lld time stamps lie outside 1990-01-01..2100-01-01 (ms since the Unix epoch): "
                "train, eval and predict refuse this file\n", (long long)tot.ts_range);
    fflush(out);
    return with;
}

/* Collective: reads this rank's pieces (n_rounds reads on every rank, of
 * at most `block` rows each) and checks them into st. */
static void scan_file(hid_t f, const gt_file_index *ix, const scan_ctx *sc, item_state *st, const segment *seg,
                      int n_seg, const int *piece_start, int n_pieces, int n_rounds, int64_t block) {
    const gt_io_inspect_i *K = sc->kind;
    const char *u8_name = K->u8 ? K->u8(ix) : NULL;
    hid_t d_ts = H5_CHECK(H5Dopen2(f, "/timestamps", H5P_DEFAULT));
    hid_t d_main = H5_CHECK(H5Dopen2(f, K->main, H5P_DEFAULT));
    hid_t d_agg = K->extra ? H5_CHECK(H5Dopen2(f, K->extra, H5P_DEFAULT)) : -1;
    hid_t d_u8 = u8_name ? H5_CHECK(H5Dopen2(f, u8_name, H5P_DEFAULT)) : -1;
    size_t bb = (size_t)block;
    int64_t *ts = GT_MALLOC(bb * 8);            /* (rows) */
    float *x = GT_MALLOC(bb * (size_t)sc->C * 4);   /* (rows, C) */
    float *agg = K->extra ? GT_MALLOC(bb * 4) : NULL; /* (rows) */
    uint8_t *u8 = GT_MALLOC(bb);                /* (rows) */
    gt_row_run *runs = GT_MALLOC(sizeof(gt_row_run) * (size_t)(n_seg + 1));
    hid_t dxpl = gt_h5_dxpl(1);

    for (int r = 0; r < n_rounds; r++) {
        int n_runs = 0;
        if (r < n_pieces) {
            for (int i = piece_start[r]; i < piece_start[r + 1]; i++) {
                int64_t g = ix->row_offset[sc->local[seg[i].item]] + seg[i].start;
                if (n_runs > 0 && runs[n_runs - 1].start + runs[n_runs - 1].count == g)
                    runs[n_runs - 1].count += seg[i].count;
                else
                    runs[n_runs++] = (gt_row_run){g, seg[i].count};
            }
        }
        gt_h5_read_runs(d_ts, H5T_NATIVE_INT64, runs, n_runs, ts, dxpl);
        gt_h5_read_runs(d_main, H5T_NATIVE_FLOAT, runs, n_runs, x, dxpl);
        if (d_agg >= 0) gt_h5_read_runs(d_agg, H5T_NATIVE_FLOAT, runs, n_runs, agg, dxpl);
        if (d_u8 >= 0) gt_h5_read_runs(d_u8, H5T_NATIVE_UINT8, runs, n_runs, u8, dxpl);
        if (r >= n_pieces) continue;
        scan_piece(sc, st, seg, piece_start[r], piece_start[r + 1], ts, x, agg, d_u8 >= 0 ? u8 : NULL);
    }
    H5Pclose(dxpl);
    H5Dclose(d_ts);
    H5Dclose(d_main);
    if (d_agg >= 0) H5Dclose(d_agg);
    if (d_u8 >= 0) H5Dclose(d_u8);
    free(ts);
    free(x);
    free(agg);
    free(u8);
    free(runs);
}

/* Collective: every rank's item reports, on rank 0 in file order (n_items;
 * malloc'd), NULL on the others. */
static gt_item_report *gather_reports(const item_state *st, int n_local, int n_items, MPI_Comm comm) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    gt_item_report *mine = GT_MALLOC(sizeof(gt_item_report) * (size_t)(n_local > 0 ? n_local : 1));
    for (int k = 0; k < n_local; k++) mine[k] = st[k].rep;
    int *counts = GT_MALLOC(sizeof(int) * (size_t)size), *displs = GT_MALLOC(sizeof(int) * (size_t)size);
    int my_bytes = (int)(sizeof(gt_item_report) * (size_t)n_local);
    MPI_CHECK(MPI_Gather(&my_bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, comm));
    gt_item_report *all = NULL;
    if (rank == 0) {
        int tot = 0;
        for (int q = 0; q < size; q++) displs[q] = tot, tot += counts[q];
        all = GT_MALLOC((size_t)(tot > 0 ? tot : 1));
    }
    MPI_CHECK(MPI_Gatherv(mine, my_bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, comm));
    free(mine);
    free(counts);
    free(displs);
    if (rank != 0) return NULL;
    /* back to file order */
    gt_item_report *ord = GT_CALLOC((size_t)n_items, sizeof(gt_item_report));
    for (int i = 0; i < n_items; i++) ord[all[i].index] = all[i];
    free(all);
    return ord;
}

int gt_io_inspect(const char *path, const gt_inspect_opts *opts_in, MPI_Comm comm, FILE *out,
                  gt_item_report **reports, int *n_reports) {
    gt_inspect_opts o;
    if (opts_in) o = *opts_in;
    else gt_inspect_opts_defaults(&o);
    if (reports) *reports = NULL;
    if (n_reports) *n_reports = 0;
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    gt_file_index ix;
    char err[GT_IO_ERR_LEN];
    hid_t f = gt_io_open(path, comm, GT_KIND_UNKNOWN, &ix, err, sizeof err);
    if (f < 0) {
        if (rank == 0) {
            fflush(out);
            fprintf(stderr, "gridtrain: error: %s\n", err);
            fflush(stderr);
        }
        return GT_EXIT_DATA;
    }
    const gt_io_kind_i *K = gt_io_kind_get(ix.kind); /* registered: gt_io_open knew it */
    const gt_io_inspect_i *I = K->inspect;
    GT_ASSERT(I->n_own >= 0 && I->n_own <= GT_ITEM_OWN_MAX);
    const int n_items = ix.n_items, C = ix.n_cols;
    const int n_ch = I->extra ? C + 1 : C; /* the kind's columns, then its extra one (NILM: the aggregate) */
    const char *u8_name = I->u8 ? I->u8(&ix) : NULL;

    /* per-item metadata, the checks of each column */
    int64_t *ids = GT_MALLOC(sizeof(int64_t) * (size_t)n_items);
    double *period_ms = GT_MALLOC(sizeof(double) * (size_t)n_items);
    gt_h5_read_all(f, I->id_dataset, H5T_NATIVE_INT64, ids);
    I->period_ms(f, &ix, period_ms);
    uint8_t *col = GT_CALLOC((size_t)n_ch, 1);
    void *kind_state = I->begin(f, &ix, col);

    /* the same plan as the readers */
    int64_t *w = GT_MALLOC(sizeof(int64_t) * (size_t)n_items);
    for (int i = 0; i < n_items; i++) w[i] = ix.row_offset[i + 1] - ix.row_offset[i];
    int *owner = GT_MALLOC(sizeof(int) * (size_t)n_items);
    gt_shard_assign(w, n_items, size, owner);
    int64_t *load = GT_MALLOC(sizeof(int64_t) * (size_t)size);
    double imbalance = gt_shard_imbalance(w, owner, n_items, size, load);
    int *local = GT_MALLOC(sizeof(int) * (size_t)n_items);
    int n_local = 0;
    for (int i = 0; i < n_items; i++)
        if (owner[i] == rank) local[n_local++] = i;

    /* bytes per row of what is read */
    const int64_t row_bytes = 8 + 4 * (int64_t)C + (I->extra ? 4 : 0) + (u8_name ? 1 : 0);
    int64_t block = o.block_bytes / row_bytes;
    if (block < 1024) block = 1024;

    /* segments (item blocks) grouped into pieces of at most `block` rows */
    segment *seg = NULL;
    int *piece_start = NULL, n_seg = 0;
    const int n_pieces = plan_pieces(local, n_local, w, block, &seg, &n_seg, &piece_start);
    int n_rounds = 0;
    MPI_CHECK(MPI_Allreduce(&n_pieces, &n_rounds, 1, MPI_INT, MPI_MAX, comm));

    item_state *st = GT_CALLOC((size_t)(n_local > 0 ? n_local : 1), sizeof(item_state));
    for (int k = 0; k < n_local; k++) {
        int i = local[k];
        st[k].rep.index = i;
        st[k].rep.id = ids[i];
        st[k].rep.rows = w[i];
        st[k].ch = GT_CALLOC((size_t)n_ch, sizeof(chan));
        for (int c = 0; c < n_ch; c++) st[k].ch[c].sigma = -1;
        st[k].period_ms = period_ms[i];
    }

    const scan_ctx sc = {I, kind_state, C, n_ch, col, local, w, &o};
    scan_file(f, &ix, &sc, st, seg, n_seg, piece_start, n_pieces, n_rounds, block);

    gt_item_report *all = gather_reports(st, n_local, n_items, comm);
    int findings = 0;
    if (rank == 0) {
        const int with = print_report(out, path, K, &ix, all, owner, load, size, row_bytes, imbalance, &o);
        findings = with > 0;
        if (reports) {
            *reports = all;
            *n_reports = n_items;
            all = NULL;
        }
    }
    MPI_CHECK(MPI_Bcast(&findings, 1, MPI_INT, 0, comm));
    free(all);
    for (int k = 0; k < n_local; k++) free(st[k].ch);
    free(st); free(seg); free(piece_start);
    free(ids); free(period_ms); free(col); free(kind_state); free(w); free(owner); free(load); free(local);
    gt_file_index_free(&ix);
    H5_CHECK(H5Fclose(f));
    return findings && o.fail_on_data ? GT_EXIT_DATA : 0;
}
