/* A third file kind added from outside io/ (tests/ only, io/'s public headers
 * only): "load", items with one float series each. Its row is registered with
 * gt_io_kind_register; then the shared code of io/ opens, validates, reads,
 * inspects and names it through the row alone: gt_io_open (kind found by its
 * root attribute, the kind's schema check), gt_io_read (its reader, the value
 * limit passed as a read option), gt_io_inspect (its datasets and lines), the
 * messages of a wrong kind. The built-in rows are checked beside it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/format.h"
#include "io/h5.h"
#include "io/inspect.h"
#include "io/kind.h"
#include "io/mpi_test.h"
#include "io/read.h"
#include "test.h"

enum { KIND_LOAD = 7, N_ITEMS = 3 };
static const int64_t ROWS[N_ITEMS] = {5, 9, 4};
#define T0_MS INT64_C(1400000000000)

typedef struct {
    int n_items;
    const float *values; /* every item's rows, in file order */
} load_source;

typedef struct {
    int n_local;
    int32_t *index;
    int64_t *id, *row_offset, n_rows, *ts;
    float *load;
} load_shard;

static int load_validate(gt_io_check *v, hid_t f, gt_file_index *ix) {
    int64_t I = -1, I1, N = -1;
    if (gt_io_check_ds(v, f, "/items/id", GT_IO_I64, 1, &I, NULL, GT_IO_MAX_ITEMS)) return -1;
    if (I < 1) return gt_io_check_fail(v, "/items/id: no items");
    I1 = I + 1;
    if (gt_io_check_ds1(v, f, "/items/row_offset", GT_IO_I64, &I1) || gt_io_check_ds1(v, f, "/timestamps", GT_IO_I64, &N) ||
        gt_io_check_ds1(v, f, "/load", GT_IO_F32, &N))
        return -1;
    ix->n_items = (int)I;
    ix->n_cols = 1;
    ix->n_rows = N;
    if (gt_io_check_offsets(v, f, "/items/row_offset", I, N, &ix->row_offset)) return -1;
    return gt_io_check_ids(v, f, "/items/id", I);
}

static void *load_read(hid_t f, const gt_file_index *ix, const char *path, const gt_read_opts *o, MPI_Comm comm) {
    load_shard *s = calloc(1, sizeof *s);
    gt_io_plan p;
    gt_io_plan_make(&p, ix->row_offset, ix->n_items, comm);
    int64_t *ids = malloc(sizeof(int64_t) * (size_t)ix->n_items);
    gt_h5_read_all(f, "/items/id", H5T_NATIVE_INT64, ids);
    s->n_local = p.n_local;
    s->index = malloc(sizeof(int32_t) * (size_t)(p.n_local + 1));
    s->id = malloc(sizeof(int64_t) * (size_t)(p.n_local + 1));
    for (int k = 0; k < p.n_local; k++) s->index[k] = p.local[k], s->id[k] = ids[p.local[k]];
    free(ids);
    s->row_offset = gt_io_plan_offsets(&p, ix->row_offset);
    s->n_rows = p.n_rows;
    s->ts = gt_io_alloc_rows(p.n_rows, 8);
    s->load = gt_io_alloc_rows(p.n_rows, 4);
    gt_read_stats st = {0};
    hid_t dxpl = gt_h5_dxpl(1);
    gt_io_read_rows(f, "/timestamps", H5T_NATIVE_INT64, p.runs, p.n_runs, s->ts, dxpl, &st, 8, p.n_rows);
    gt_io_read_rows(f, "/load", H5T_NATIVE_FLOAT, p.runs, p.n_runs, s->load, dxpl, &st, 4, p.n_rows);
    H5Pclose(dxpl);
    const gt_io_local L = {path, "item", s->index, s->id, s->n_local, comm};
    gt_io_check_times(&L, "/timestamps", s->ts, s->row_offset);
    gt_io_check_range(&L, "/load", " kW", "load.limit", o->value_limit, s->load, 1, s->row_offset);
    gt_io_plan_free(&p);
    return s;
}

static void load_free(void *sh) {
    load_shard *s = sh;
    free(s->index), free(s->id), free(s->row_offset), free(s->ts), free(s->load), free(s);
}

/* Small enough for rank 0 to write every table whole. Collective. */
static void load_write(const char *path, const void *source, const gt_write_opts *o, MPI_Comm comm,
                       gt_write_stats *stats) {
    const load_source *src = source;
    (void)o, (void)stats;
    const int I = src->n_items;
    int64_t ids[N_ITEMS], off[N_ITEMS + 1] = {0}, ts[64];
    for (int i = 0; i < I; i++) ids[i] = 100 + i, off[i + 1] = off[i] + ROWS[i];
    for (int i = 0; i < I; i++)
        for (int64_t r = 0; r < ROWS[i]; r++) ts[off[i] + r] = gt_io_ts_at(T0_MS, 1000.0, r);
    char tmp[4096];
    hid_t f = gt_io_create_tmp(path, comm, tmp, sizeof tmp);
    gt_io_root_attrs(f, "load", "test_io_kind", "", 1);
    gt_h5_write_table(f, "/items/id", H5T_NATIVE_INT64, I, 0, ids, comm);
    gt_h5_write_table(f, "/items/row_offset", H5T_NATIVE_INT64, I + 1, 0, off, comm);
    gt_h5_write_table(f, "/timestamps", H5T_NATIVE_INT64, off[I], 0, ts, comm);
    gt_h5_write_table(f, "/load", H5T_NATIVE_FLOAT, off[I], 0, src->values, comm);
    gt_io_finish_file(f, tmp, path, comm);
}

static void load_period_ms(hid_t f, const gt_file_index *ix, double *period_ms) {
    (void)f;
    for (int i = 0; i < ix->n_items; i++) period_ms[i] = 1000.0;
}
static void *load_begin(hid_t f, const gt_file_index *ix, uint8_t *col) {
    (void)f, (void)ix;
    col[0] = GT_IO_COL_NEGATIVE;
    return NULL;
}
static void load_rows(const void *st, int64_t n, int C, const float *x, const float *extra, const uint8_t *u8,
                      int *in_nan, gt_item_report *rep) {
    (void)st, (void)C, (void)extra, (void)u8;
    for (int64_t j = 0; j < n; j++) {
        if (isnan(x[j]) && !*in_nan) rep->nan_runs++;
        *in_nan = isnan(x[j]);
    }
}
static void load_header(FILE *out, const gt_file_index *ix) {
    (void)ix;
    fputs("  load: yes\n", out);
}
static void load_summary(FILE *out, const gt_file_index *ix, const gt_item_report *tot) {
    (void)ix;
    fprintf(out, " load_nan_runs=%lld", (long long)tot->nan_runs);
}

static const gt_io_inspect_i load_inspect = {
    .id_dataset = "/items/id", .main = "/load", .extra = NULL, .u8 = NULL, .period_ms = load_period_ms,
    .begin = load_begin, .rows = load_rows, .header = load_header, .summary = load_summary,
};
static const gt_io_kind_i load_kind = {
    .id = KIND_LOAD, .name = "load", .item = "item", .items = "items", .cols = "series",
    .validate = load_validate, .read = load_read, .shard_free = load_free, .value_limit = 50, .limit_key = "load.limit",
    .write = load_write, .inspect = &load_inspect,
};

static char *slurp(FILE *f) {
    fflush(f);
    long n = ftell(f);
    rewind(f);
    char *s = calloc((size_t)n + 1, 1);
    TEST_CHECK(fread(s, 1, (size_t)n, f) == (size_t)n);
    return s;
}

int main(int argc, char **argv) {
    int rank, size;
    tg_mpi_init(&argc, &argv, &rank, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    char dir[] = "/tmp/gt_io_kind_XXXXXX", path[256], bogus[256];
    if (rank == 0) TEST_CHECK(mkdtemp(dir) != NULL);
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, comm);
    snprintf(path, sizeof path, "%s/load.h5", dir);
    snprintf(bogus, sizeof bogus, "%s/bogus.h5", dir);

    /* the built-in rows */
    TEST_CHECK(gt_io_kind_get(GT_KIND_NILM) == &gt_io_kind_nilm && gt_io_kind_by_name("pdm") == &gt_io_kind_pdm);
    TEST_CHECK(!strcmp(gt_io_kind_nilm.item, "household") && !strcmp(gt_io_kind_pdm.cols, "channels"));
    TEST_CHECK(gt_io_kind_get(KIND_LOAD) == NULL && !strcmp(gt_file_kind_name(KIND_LOAD), "unknown"));
    char known[128];
    gt_io_kinds_text(known, sizeof known);
    TEST_CHECK(!strcmp(known, "nilm or pdm"));

    /* registered from here */
    gt_io_kind_register(&load_kind);
    TEST_CHECK(gt_io_kind_get(KIND_LOAD) == &load_kind && gt_io_kind_by_name("load") == &load_kind);
    TEST_CHECK(!strcmp(gt_file_kind_name(KIND_LOAD), "load"));
    gt_io_kinds_text(known, sizeof known);
    TEST_CHECK(!strcmp(known, "nilm, pdm or load"));

    /* written through its row, opened and validated by io/'s shared open */
    float values[18];
    for (int i = 0; i < 18; i++) values[i] = (float)i;
    values[7] = 1e6f; /* beyond the limit of 50 passed below: missing */
    const load_source src = {N_ITEMS, values};
    load_kind.write(path, &src, NULL, comm, NULL);
    gt_file_index ix;
    char err[GT_IO_ERR_LEN];
    hid_t f = gt_io_open(path, comm, GT_KIND_UNKNOWN, &ix, err, sizeof err);
    TEST_CHECK(f >= 0);
    TEST_EQ_INT(ix.kind, KIND_LOAD);
    TEST_EQ_INT(ix.n_items, N_ITEMS);
    TEST_EQ_INT(ix.n_rows, 18);
    TEST_EQ_INT(ix.row_offset[2], 14);
    H5Fclose(f);
    gt_file_index_free(&ix);
    TEST_CHECK(gt_io_open(path, comm, GT_KIND_NILM, &ix, err, sizeof err) < 0);
    TEST_CHECK(strstr(err, "root attribute 'kind': file holds 'load' data, expected 'nilm'") != NULL);

    /* read through its row: every item once, the limit a read option */
    load_shard *s = gt_io_read(path, KIND_LOAD, &(gt_read_opts){50}, comm);
    int64_t rows = s->n_rows, nan = 0, sum_idx = 0;
    for (int k = 0; k < s->n_local; k++) {
        sum_idx += s->index[k] + 1;
        TEST_EQ_INT(s->id[k], 100 + s->index[k]);
        TEST_EQ_INT(s->row_offset[k + 1] - s->row_offset[k], ROWS[s->index[k]]);
    }
    for (int64_t r = 0; r < s->n_rows; r++) nan += isnan(s->load[r]);
    MPI_Allreduce(MPI_IN_PLACE, &rows, 1, MPI_INT64_T, MPI_SUM, comm);
    MPI_Allreduce(MPI_IN_PLACE, &nan, 1, MPI_INT64_T, MPI_SUM, comm);
    MPI_Allreduce(MPI_IN_PLACE, &sum_idx, 1, MPI_INT64_T, MPI_SUM, comm);
    TEST_EQ_INT(rows, 18);
    TEST_EQ_INT(nan, 1);
    TEST_EQ_INT(sum_idx, 1 + 2 + 3);
    load_kind.shard_free(s);
    s = gt_io_read(path, KIND_LOAD, NULL, comm); /* NULL: the kind's default limit (50) */
    nan = 0;
    for (int64_t r = 0; r < s->n_rows; r++) nan += isnan(s->load[r]);
    MPI_Allreduce(MPI_IN_PLACE, &nan, 1, MPI_INT64_T, MPI_SUM, comm);
    TEST_EQ_INT(nan, 1);
    load_kind.shard_free(s);
    s = gt_io_read(path, KIND_LOAD, &(gt_read_opts){0}, comm); /* 0: no check */
    nan = 0;
    for (int64_t r = 0; r < s->n_rows; r++) nan += isnan(s->load[r]);
    MPI_Allreduce(MPI_IN_PLACE, &nan, 1, MPI_INT64_T, MPI_SUM, comm);
    TEST_EQ_INT(nan, 0);
    load_kind.shard_free(s);

    /* inspect: the shared report with the kind's words and lines */
    FILE *out = tmpfile();
    TEST_EQ_INT(gt_io_inspect(path, NULL, comm, out, NULL, NULL), 0);
    if (rank == 0) {
        char *text = slurp(out), want[512];
        snprintf(want, sizeof want, "file: %s\nkind: load  schema_version: 1  items: 3  rows: 18  series: 1  load: yes\n",
                 path);
        TEST_CHECK(strncmp(text, want, strlen(want)) == 0);
        TEST_CHECK(strstr(text, "summary: kind=load items=3 rows=18 ") != NULL);
        TEST_CHECK(strstr(text, " load_nan_runs=0 imbalance=") != NULL);
        free(text);
    }
    fclose(out);

    /* a kind nobody registered: the message lists the known ones */
    if (rank == 0) {
        hid_t g = gt_h5_create_file(bogus, 1, H5P_DEFAULT);
        TEST_CHECK(g >= 0);
        gt_h5_attr_str(g, "kind", "bogus");
        gt_h5_attr_i64(g, "schema_version", 1);
        H5Fclose(g);
    }
    MPI_Barrier(comm);
    TEST_CHECK(gt_io_open(bogus, comm, GT_KIND_UNKNOWN, &ix, err, sizeof err) < 0);
    TEST_CHECK(strstr(err, "root attribute 'kind': unknown kind 'bogus' (expected nilm, pdm or load)") != NULL);

    MPI_Barrier(comm);
    if (rank == 0) {
        unlink(path);
        unlink(bogus);
        rmdir(dir);
    }
    int fails = gt_test_failures;
    MPI_Allreduce(MPI_IN_PLACE, &fails, 1, MPI_INT, MPI_SUM, comm);
    if (rank == 0) printf("test_io_kind: %s\n", fails ? "FAILED" : "passed");
    MPI_Finalize();
    return fails ? 1 : 0;
}
