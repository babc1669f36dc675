/* tests/io/fuzz_schema.c: libFuzzer target of the HDF5 metadata checks
 * (io/schema.c gt_io_open) and the sharded readers behind them (io/read.c),
 * built with clang -fsanitize=fuzzer,address,undefined by tests/io/CMakeLists.txt.
 *
 * Random bytes as an HDF5 file would mostly fuzz the HDF5 library's own
 * parser. Instead the input describes a structurally valid file: its kind,
 * and for every dataset of the format whether it is there, its type, rank and
 * extents (small, off by one, 0, or 2^32+1 declared and never stored), and
 * values taken from the input (row offsets, periods, ids, time stamps, table
 * rows, powers: signs, extremes, NaN/Inf). The harness writes that file, then
 *   gt_io_open must either accept it or return -1 with a message naming the
 *   file; and an accepted file must read (gt_*_shard_read) without a crash,
 *   an overflow or a hang: its checks end through gt_abort, which the harness
 *   turns into a longjmp back here.
 * Leaks on that error path are expected (run with -detect_leaks=0). */
#include <hdf5.h>
#include <math.h>
#include <mpi.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "io/format.h"
#include "io/read.h"

static jmp_buf g_jmp;
static void on_abort(int code) {
    (void)code;
    longjmp(g_jmp, 1);
}
static char g_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    MPI_Init(argc, argv);
    gt_set_abort_handler_reentrant(on_abort);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    snprintf(g_path, sizeof g_path, "/tmp/gt_fuzz_schema_%d.h5", (int)getpid());
    return 0;
}

typedef struct {
    const uint8_t *p;
    size_t n, i;
} rd;
static unsigned u8(rd *r) { return r->i < r->n ? r->p[r->i++] : 0; }
static int64_t i64(rd *r) {
    static const int64_t special[] = {0, 1, -1, INT64_MIN, INT64_MAX, INT32_MAX, INT32_MIN, (int64_t)1 << 32,
                                      631152000000, 4102444800000, 1767571200000};
    unsigned k = u8(r);
    if (k < 11) return special[k];
    uint64_t v = 0;
    for (int b = 0; b < 8; b++) v = v << 8 | u8(r);
    return (int64_t)v;
}
static double f64(rd *r) {
    static const double special[] = {0, -1, 1, 6, 900, NAN, INFINITY, -INFINITY, 1e300, 1e-300, 3e38, -3e38, 1e7};
    unsigned k = u8(r);
    if (k < 13) return special[k];
    return (double)(int8_t)u8(r) * 37.5;
}

/* Mode of one dataset: 0 normal, 1 missing, 2 other type, 3 other rank, 4 one
 * entry more, 5 no entries, 6 2^32+1 entries declared and never stored. */
static int mode(rd *r) {
    unsigned m = u8(r);
    return m < 200 ? 0 : (int)(m % 6) + 1;
}

/* Writes dataset `name` of n rows (x cols when cols > 0) of `type` from buf,
 * after applying `md` (see mode). */
static void put(hid_t f, const char *name, hid_t type, int64_t n, int64_t cols, const void *buf, int md) {
    if (md == 1) return;
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t dims[2] = {(hsize_t)n, (hsize_t)(cols > 0 ? cols : 1)};
    int rank = cols > 0 ? 2 : 1;
    if (md == 3) rank = rank == 2 ? 1 : 2;
    if (md == 4) dims[0]++;
    if (md == 5) dims[0] = 0;
    if (md == 6) {
        dims[0] = ((hsize_t)1 << 32) + 1;
        hsize_t c[2] = {1024, dims[1]};
        H5Pset_chunk(dcpl, rank, c);
    }
    hid_t t = type;
    if (md == 2) t = H5Tget_class(type) == H5T_FLOAT ? H5T_NATIVE_INT : H5T_NATIVE_DOUBLE;
    hid_t sp = H5Screate_simple(rank, dims, NULL);
    hid_t ds = H5Dcreate2(f, name, t, sp, lcpl, dcpl, H5P_DEFAULT);
    if (ds >= 0 && md != 6 && md != 2 && md != 3 && dims[0] == (hsize_t)n && n > 0)
        H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    else if (ds >= 0 && md != 6 && dims[0] > 0) { /* fill what the shape takes */
        size_t bytes = H5Tget_size(t) * (size_t)dims[0] * (rank == 2 ? (size_t)dims[1] : 1);
        void *z = calloc(bytes ? bytes : 1, 1);
        H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, z);
        free(z);
    }
    if (ds >= 0) H5Dclose(ds);
    H5Sclose(sp);
    H5Pclose(dcpl);
    H5Pclose(lcpl);
}

static void attr_str(hid_t obj, const char *name, const char *v) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(v) + 1);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) H5Awrite(a, t, v), H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
}
static void attr_num(hid_t obj, const char *name, hid_t t, const void *v) {
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) H5Awrite(a, t, v), H5Aclose(a);
    H5Sclose(sp);
}

/* offsets of n items over rows: valid (each item >= 1 row) unless the input says otherwise */
static void offsets(rd *r, int64_t *o, int n, int64_t rows) {
    o[0] = 0;
    for (int i = 1; i < n; i++) o[i] = i; /* at least one row each */
    o[n] = rows;
    if (u8(r) > 220) o[u8(r) % (n + 1)] = i64(r);
}

static void write_file(rd *r, int pdm) {
    hid_t f = H5Fcreate(g_path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) return;
    unsigned ka = u8(r);
    attr_str(f, "kind", ka < 240 ? (pdm ? "pdm" : "nilm") : ka < 248 ? "NILM" : "");
    int64_t ver = u8(r) < 245 ? 1 : i64(r);
    attr_num(f, "schema_version", H5T_NATIVE_INT64, &ver);
    const int H = 1 + (int)(u8(r) % 4), A = 1 + (int)(u8(r) % 3);
    const int64_t N = H * (int64_t)(1 + u8(r) % 24);
    int64_t off[8];
    offsets(r, off, H, N);
    int64_t *ids = calloc((size_t)H, 8), *ts = calloc((size_t)N, 8);
    double *per = calloc((size_t)H, 8);
    float *x = calloc((size_t)N * (size_t)(A + 1), 4);
    for (int i = 0; i < H; i++) {
        ids[i] = u8(r) < 230 ? i : i64(r);
        per[i] = u8(r) < 230 ? 6.0 : f64(r);
    }
    for (int i = 0; i < H; i++)
        for (int64_t k = off[i] >= 0 && off[i] < N ? off[i] : 0; k < N && (i == H - 1 || k < off[i + 1]); k++)
            ts[k] = 1767571200000 + k * 6000;
    for (int64_t k = 0; k < N; k++)
        if (u8(r) > 240) ts[k] = i64(r);
    for (int64_t k = 0; k < N * (A + 1); k++) x[k] = u8(r) > 235 ? (float)f64(r) : (float)(k % 97);
    char names[3][32];
    memset(names, 0, sizeof names);
    for (int a = 0; a < A; a++) snprintf(names[a], 32, u8(r) < 240 ? "app%d" : "app0", a);
    hid_t s32 = H5Tcopy(H5T_C_S1);
    H5Tset_size(s32, 32);
    hid_t s16 = H5Tcopy(H5T_C_S1);
    H5Tset_size(s16, 16);
    if (!pdm) {
        put(f, "/households/id", H5T_NATIVE_INT64, H, 0, ids, mode(r));
        put(f, "/households/row_offset", H5T_NATIVE_INT64, H + 1, 0, off, mode(r));
        put(f, "/households/period_s", H5T_NATIVE_DOUBLE, H, 0, per, mode(r));
        float meta[3] = {(float)(u8(r) < 230 ? 50 : f64(r)), (float)(u8(r) < 230 ? 60 : f64(r)),
                         (float)(u8(r) < 230 ? 500 : f64(r))};
        float mv[3][3];
        for (int a = 0; a < 3; a++) mv[0][a] = meta[0], mv[1][a] = meta[1], mv[2][a] = meta[2];
        put(f, "/appliance_meta/name", s32, A, 0, names, mode(r));
        put(f, "/appliance_meta/on_power_w", H5T_NATIVE_FLOAT, A, 0, mv[0], mode(r));
        put(f, "/appliance_meta/on_duration_s", H5T_NATIVE_FLOAT, A, 0, mv[1], mode(r));
        put(f, "/appliance_meta/max_power_w", H5T_NATIVE_FLOAT, A, 0, mv[2], mode(r));
        put(f, "/timestamps", H5T_NATIVE_INT64, N, 0, ts, mode(r));
        put(f, "/aggregate", H5T_NATIVE_FLOAT, N, 0, x, mode(r));
        put(f, "/appliances", H5T_NATIVE_FLOAT, N, A, x + N, mode(r));
        if (u8(r) & 1) {
            uint8_t owns[12];
            for (int k = 0; k < 12; k++) owns[k] = (uint8_t)(u8(r) > 240 ? u8(r) : 1);
            put(f, "/households/owns", H5T_NATIVE_UINT8, H, A, owns, mode(r));
        }
        if (u8(r) & 1) {
            int64_t lo[8];
            offsets(r, lo, H, N);
            put(f, "/lowres/row_offset", H5T_NATIVE_INT64, H + 1, 0, lo, mode(r));
            put(f, "/lowres/timestamps", H5T_NATIVE_INT64, N, 0, ts, mode(r));
            put(f, "/lowres/aggregate", H5T_NATIVE_FLOAT, N, 0, x, mode(r));
            put(f, "/lowres/appliances", H5T_NATIVE_FLOAT, N, A, x + N, mode(r));
            hid_t g = H5Gopen2(f, "/lowres", H5P_DEFAULT);
            double p = u8(r) < 230 ? 900.0 : f64(r);
            if (g >= 0) attr_num(g, "period_s", H5T_NATIVE_DOUBLE, &p), H5Gclose(g);
        }
    } else {
        int32_t farm[4] = {0, 1, 2, 3}, mt[4] = {0, 1, 0, 1};
        if (u8(r) > 240) farm[0] = (int32_t)i64(r), mt[0] = (int32_t)i64(r);
        put(f, "/turbines/id", H5T_NATIVE_INT64, H, 0, ids, mode(r));
        put(f, "/turbines/farm", H5T_NATIVE_INT32, H, 0, farm, mode(r));
        put(f, "/turbines/machine_type", H5T_NATIVE_INT32, H, 0, mt, mode(r));
        for (int i = 0; i < H; i++) per[i] = per[i] == 6.0 ? 1.0 : per[i];
        put(f, "/turbines/rate_hz", H5T_NATIVE_DOUBLE, H, 0, per, mode(r));
        put(f, "/turbines/row_offset", H5T_NATIVE_INT64, H + 1, 0, off, mode(r));
        char units[3][16];
        memset(units, 0, sizeof units);
        for (int a = 0; a < A; a++) snprintf(units[a], 16, a ? "rpm" : "kW");
        put(f, "/channels/name", s32, A, 0, names, mode(r));
        put(f, "/channels/unit", s16, A, 0, units, mode(r));
        for (int64_t k = 0; k < N; k++) ts[k] = u8(r) > 250 ? i64(r) : 1767571200000 + k * 1000;
        put(f, "/timestamps", H5T_NATIVE_INT64, N, 0, ts, mode(r));
        put(f, "/signals", H5T_NATIVE_FLOAT, N, A, x, mode(r));
        uint8_t *lab = calloc((size_t)N, 1);
        for (int64_t k = 0; k < N; k++) lab[k] = (uint8_t)(u8(r) > 245 ? u8(r) : 0);
        put(f, "/labels", H5T_NATIVE_UINT8, N, 0, lab, mode(r));
        free(lab);
        static const char *const grp[2] = {"segments", "events"}, *const code[2] = {"condition", "kind"};
        for (int g = 0; g < 2; g++) {
            int S = (int)(u8(r) % 4);
            int32_t tu[4], cd[4];
            int64_t st[4], en[4];
            for (int k = 0; k < S; k++) {
                tu[k] = u8(r) < 230 ? k % H : (int32_t)i64(r);
                st[k] = u8(r) < 230 ? 0 : i64(r);
                en[k] = u8(r) < 230 ? 1 : i64(r);
                cd[k] = u8(r) < 230 ? 1 : (int32_t)i64(r);
            }
            char nm[64];
            snprintf(nm, sizeof nm, "/%s/turbine", grp[g]);
            put(f, nm, H5T_NATIVE_INT32, S, 0, tu, mode(r));
            snprintf(nm, sizeof nm, "/%s/start_row", grp[g]);
            put(f, nm, H5T_NATIVE_INT64, S, 0, st, mode(r));
            snprintf(nm, sizeof nm, "/%s/end_row", grp[g]);
            put(f, nm, H5T_NATIVE_INT64, S, 0, en, mode(r));
            snprintf(nm, sizeof nm, "/%s/%s", grp[g], code[g]);
            put(f, nm, H5T_NATIVE_INT32, S, 0, cd, mode(r));
        }
        if (u8(r) & 1) {
            char leg[3][32] = {"normal", "wear", "shock"};
            put(f, "/legend/event_kind", s32, 3, 0, leg, mode(r));
        }
    }
    H5Tclose(s32);
    H5Tclose(s16);
    free(ids);
    free(ts);
    free(per);
    free(x);
    H5Fclose(f);
}

/* after a longjmp out of a reader: close what it left open (the next
 * iteration truncates the same file) */
static void close_all(void) {
    ssize_t n = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
    if (n <= 0) return;
    hid_t *ids = malloc(sizeof(hid_t) * (size_t)n);
    n = H5Fget_obj_ids(H5F_OBJ_ALL, H5F_OBJ_ALL, (size_t)n, ids);
    for (ssize_t i = 0; i < n; i++) {
        H5I_type_t t = H5Iget_type(ids[i]);
        if (t == H5I_FILE) continue;
        if (t == H5I_DATASET) H5Dclose(ids[i]);
        else if (t == H5I_GROUP) H5Gclose(ids[i]);
        else if (t == H5I_DATATYPE) H5Tclose(ids[i]);
        else if (t == H5I_ATTR) H5Aclose(ids[i]);
    }
    for (ssize_t i = 0; i < n; i++)
        if (H5Iget_type(ids[i]) == H5I_FILE) H5Fclose(ids[i]);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rd r = {data, size, 0};
    const int pdm = (int)(u8(&r) & 1);
    write_file(&r, pdm);
    gt_file_index ix;
    char err[GT_IO_ERR_LEN];
    hid_t f = gt_io_open(g_path, MPI_COMM_WORLD, GT_KIND_UNKNOWN, &ix, err, sizeof err);
    if (f < 0) {
        if (strncmp(err, g_path, strlen(g_path)) != 0) {
            fprintf(stderr, "error message does not name the file: %s\n", err);
            abort();
        }
        unlink(g_path);
        return 0;
    }
    H5Fclose(f);
    gt_file_index_free(&ix);
    if (!setjmp(g_jmp)) { /* the readers' own checks end through gt_abort: back here */
        if (pdm) gt_pdm_shard_free(gt_pdm_shard_read(g_path, MPI_COMM_WORLD));
        else gt_nilm_shard_free(gt_nilm_shard_read(g_path, MPI_COMM_WORLD));
    } else {
        close_all();
    }
    unlink(g_path);
    return 0;
}
