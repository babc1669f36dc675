/* tests/doe/test_doe_filters.c (np 1, 2): the data filters DOE cells train on
 * (data/dataset.h gt_data_config items/farms/machine_types/conditions and
 * appliances). On a 2 farms x 2 turbines synthetic wind farm (farm 0: rated
 * only; farm 1: turbulent and low_wind segments):
 *  - the range parser ("0,2,5-9", errors);
 *  - no filter == "all" filters (same windows per turbine);
 *  - farms / machine types / ids keep exactly the windows of the selected
 *    turbines (counts per turbine equal to the unfiltered ones);
 *  - train_conditions restrict the train and validation windows as conditions
 *    would, and keep every test window;
 *  - conditions keep only windows lying wholly in segments of the selected
 *    conditions, some but not all of the turbine's windows; rated on farm 1
 *    leaves none;
 *  - nilm appliances: only the selected appliance's targets count (mask).
 * Global counts are reduced over ranks, so the checks hold at any rank count. */
#include "pdm/pdm.h"
#include "nilm/nilm.h"
#include "task/task_registry.h"
#include "train/train_test_util.h"

#include "data/dataset.h"
#include "io/read.h"

#define T_MAX 8
static const gt_split k_splits[3] = {GT_SPLIT_TRAIN, GT_SPLIT_VAL, GT_SPLIT_TEST};

static void write_farm(const char *path, MPI_Comm comm) {
    gt_pdm_synth_cfg c;
    gt_pdm_synth_defaults(&c);
    c.seed = 3;
    c.n_farms = 2;
    c.turbines_per_farm = 2;
    c.days = 0.2;
    c.rate_hz = 1;
    gt_pdm_source *src = gt_synth_pdm_source(&c);
    gt_write_opts wo;
    gt_write_opts_defaults(&wo);
    wo.chunk_rows = 4096;
    gt_pdm_write(path, src, &wo, comm, NULL);
    gt_synth_pdm_source_free(src);
}

static void base_cfg(gt_data_config *d) {
    gt_pdm_data_defaults(d);
    d->window = 48;
    d->stride = 24;
}

/* windows per (split, turbine file index) over all ranks; with `check_cond`
 * every window must lie in segments (of its turbine, from a fresh read) whose
 * condition passes data.conditions (cfg's PdM block) */
static void count(const char *file, const gt_data_config *cfg, int64_t out[3][T_MAX], int check_cond, MPI_Comm comm) {
    gt_pdm_shard *ref = gt_pdm_shard_read(file, comm); /* same assignment as the dataset's */
    gt_dataset *ds = gt_dataset_pdm(gt_pdm_shard_read(file, comm), cfg, comm);
    int64_t loc[3][T_MAX] = {{0}};
    const int64_t W = cfg->window;
    for (int s = 0; s < 3; s++) {
        int64_t n = gt_dataset_n_windows_local(ds, k_splits[s]);
        int64_t *idx = GT_MALLOC(sizeof(int64_t) * (size_t)(n + 1));
        gt_dataset_local_range(ds, k_splits[s], 0, n, idx);
        float *x = GT_MALLOC(sizeof(float) * (size_t)(W * gt_dataset_n_targets(ds)));
        for (int64_t i = 0; i < n; i++) {
            gt_window_ref r;
            gt_dataset_fill(ds, k_splits[s], idx + i, 1, x, NULL, NULL, &r);
            TEST_REQUIRE(r.file_index >= 0 && r.file_index < T_MAX);
            loc[s][r.file_index]++;
            /* train and validation windows: also in data.train_conditions */
            const gt_pdm_data_config *pc = gt_pdm_data_cfg(cfg);
            const gt_data_filter *fc = k_splits[s] != GT_SPLIT_TEST && pc->train_conditions.n > 0
                                           ? &pc->train_conditions : &pc->conditions;
            if (!check_cond || fc->n == 0) continue;
            /* every row of [start, start + W) in a passing segment of this turbine */
            int li = -1;
            for (int t = 0; t < ref->n_turbines; t++)
                if (ref->index[t] == r.file_index) li = t;
            TEST_REQUIRE(li >= 0);
            int64_t covered = 0;
            for (int k = 0; k < ref->n_segments; k++) {
                if (ref->segment_turbine[k] != li || !gt_data_filter_has(fc, ref->segments[k].code)) continue;
                int64_t a = ref->segments[k].start_row > r.start ? ref->segments[k].start_row : r.start;
                int64_t b = ref->segments[k].end_row < r.start + W ? ref->segments[k].end_row : r.start + W;
                if (b > a) covered += b - a;
            }
            if (covered != W) {
                fprintf(stderr, "window of turbine %d at row %lld: %lld of %lld rows in the selected conditions\n",
                        r.file_index, (long long)r.start, (long long)covered, (long long)W);
                gt_test_failures++;
            }
        }
        free(idx);
        free(x);
    }
    MPI_Allreduce(loc, out, 3 * T_MAX, MPI_INT64_T, MPI_SUM, comm);
    gt_dataset_free(ds);
    gt_pdm_shard_free(ref);
}

static int64_t total(int64_t c[3][T_MAX], int s) {
    int64_t n = 0;
    for (int t = 0; t < T_MAX; t++) n += c[s][t];
    return n;
}

static void set(gt_data_filter *f, const char *text) {
    char err[256];
    TEST_REQUIRE(gt_data_filter_parse(f, text, err, sizeof err) == 0);
}

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    gt_task_register_builtins(); /* task/task_registry.h */
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank;
    MPI_Comm_rank(comm, &rank);

    /* ---- the parser */
    gt_data_filter f;
    char err[256];
    TEST_EQ_INT(gt_data_filter_parse(&f, "0, 2,5-9", err, sizeof err), 0);
    TEST_EQ_INT(f.n, 3);
    TEST_CHECK(gt_data_filter_has(&f, 0) && !gt_data_filter_has(&f, 1) && gt_data_filter_has(&f, 2));
    TEST_CHECK(gt_data_filter_has(&f, 5) && gt_data_filter_has(&f, 9) && !gt_data_filter_has(&f, 10));
    TEST_EQ_INT(gt_data_filter_parse(&f, "all", err, sizeof err), 0);
    TEST_CHECK(f.n == 0 && gt_data_filter_has(&f, 12345));
    TEST_EQ_INT(gt_data_filter_parse(&f, "", err, sizeof err), 0);
    TEST_EQ_INT(f.n, 0);
    TEST_EQ_INT(gt_data_filter_parse(&f, "3-1", err, sizeof err), -1);
    TEST_CHECK(strstr(err, "empty range") != NULL);
    TEST_EQ_INT(gt_data_filter_parse(&f, "1,a", err, sizeof err), -1);
    TEST_CHECK(strstr(err, "not a list of integers") != NULL);
    TEST_EQ_INT(gt_data_filter_parse(&f, "1,", err, sizeof err), -1);
    /* an id beyond long long is refused (it was taken as LLONG_MAX, and a range up to it as a valid one) */
    TEST_EQ_INT(gt_data_filter_parse(&f, "99999999999999999999", err, sizeof err), -1);
    TEST_CHECK(strstr(err, "not a list of integers") != NULL);
    TEST_EQ_INT(gt_data_filter_parse(&f, "0-99999999999999999999", err, sizeof err), -1);
    TEST_EQ_INT(gt_data_filter_parse(&f, "-99999999999999999999-0", err, sizeof err), -1);
    TEST_EQ_INT(gt_data_filter_parse(&f, "0-9223372036854775807", err, sizeof err), 0);

    char dir[512], file[600], nfile[600];
    tt_scratch(dir, sizeof dir, "doe-filters", comm);
    snprintf(file, sizeof file, "%s/farm.h5", dir);
    write_farm(file, comm);

    gt_data_config d;
    int64_t all[3][T_MAX], c[3][T_MAX];
    base_cfg(&d);
    count(file, &d, all, 0, comm);
    TEST_REQUIRE(total(all, 0) > 100);
    for (int t = 0; t < 4; t++) TEST_CHECK(all[0][t] > 0);
    /* explicit "all" == default */
    set(&gt_pdm_data_cfg_set(&d)->farms, "all");
    set(&gt_pdm_data_cfg_set(&d)->conditions, "");
    count(file, &d, c, 0, comm);
    TEST_CHECK(!memcmp(c, all, sizeof all));

    /* ---- farms = 1: turbines 2, 3 only, with all of their windows */
    base_cfg(&d);
    set(&gt_pdm_data_cfg_set(&d)->farms, "1");
    count(file, &d, c, 0, comm);
    for (int s = 0; s < 3; s++)
        for (int t = 0; t < 4; t++) TEST_EQ_INT(c[s][t], t >= 2 ? all[s][t] : 0);
    /* machine types: the file's types are 0, 1, 1, 2 -> turbines 1, 2 */
    base_cfg(&d);
    set(&gt_pdm_data_cfg_set(&d)->machine_types, "1");
    count(file, &d, c, 0, comm);
    for (int s = 0; s < 3; s++)
        for (int t = 0; t < 4; t++) TEST_EQ_INT(c[s][t], (t == 1 || t == 2) ? all[s][t] : 0);
    /* ids 1..4 in file order: ids 1 and 4 -> turbines 0 and 3 */
    base_cfg(&d);
    set(&d.items, "1,4");
    count(file, &d, c, 0, comm);
    for (int s = 0; s < 3; s++)
        for (int t = 0; t < 4; t++) TEST_EQ_INT(c[s][t], (t == 0 || t == 3) ? all[s][t] : 0);

    /* ---- conditions: low_wind (0) exists on farm 1 only, in segments */
    base_cfg(&d);
    set(&gt_pdm_data_cfg_set(&d)->conditions, "0");
    count(file, &d, c, 1, comm);
    TEST_EQ_INT(c[0][0] + c[0][1], 0);
    TEST_CHECK(c[0][2] > 0 && c[0][2] < all[0][2]);
    TEST_CHECK(c[0][3] > 0 && c[0][3] < all[0][3]);
    int64_t low = total(c, 0);
    /* turbulent (2) is the complement on farm 1: low + turbulent < all (windows across a switch drop out) */
    set(&gt_pdm_data_cfg_set(&d)->conditions, "2");
    count(file, &d, c, 1, comm);
    TEST_CHECK(c[0][2] + c[0][3] > 0);
    TEST_CHECK(low + c[0][2] + c[0][3] < all[0][2] + all[0][3]);
    /* 0,2 together: every turbine-2/3 window that lies in either: at least both counts */
    set(&gt_pdm_data_cfg_set(&d)->conditions, "0,2");
    count(file, &d, c, 1, comm);
    TEST_CHECK(c[0][2] + c[0][3] == all[0][2] + all[0][3]);
    /* rated (1) on farm 1: none; rated alone: farm 0 fully */
    set(&gt_pdm_data_cfg_set(&d)->conditions, "1");
    set(&gt_pdm_data_cfg_set(&d)->farms, "1");
    count(file, &d, c, 1, comm);
    TEST_EQ_INT(total(c, 0) + total(c, 1) + total(c, 2), 0);
    base_cfg(&d);
    set(&gt_pdm_data_cfg_set(&d)->conditions, "1");
    count(file, &d, c, 1, comm);
    TEST_EQ_INT(c[0][0], all[0][0]);
    TEST_EQ_INT(c[0][1], all[0][1]);

    /* ---- train_conditions: train and validation windows in those conditions (checked), the test
     * windows all kept; the same windows as data.conditions in train and validation */
    base_cfg(&d);
    set(&gt_pdm_data_cfg_set(&d)->train_conditions, "0");
    count(file, &d, c, 1, comm);
    int64_t ref_c[3][T_MAX];
    gt_data_config dref;
    base_cfg(&dref);
    set(&gt_pdm_data_cfg_set(&dref)->conditions, "0");
    count(file, &dref, ref_c, 0, comm);
    for (int t = 0; t < 4; t++) {
        TEST_EQ_INT(c[0][t], ref_c[0][t]);
        TEST_EQ_INT(c[1][t], ref_c[1][t]);
        TEST_EQ_INT(c[2][t], all[2][t]);
    }
    TEST_CHECK(total(c, 0) > 0 && total(c, 0) < total(all, 0));

    /* ---- nilm: only the selected appliance's targets count */
    snprintf(nfile, sizeof nfile, "%s/nilm.h5", dir);
    tt_write_nilm(nfile, -1, 0, comm);
    gt_nilm_shard *sh = gt_nilm_shard_read(nfile, comm);
    char name[GT_FORMAT_NAME_LEN];
    snprintf(name, sizeof name, "%s", sh->meta[1].name);
    const int A = sh->n_appliances;
    gt_data_config dn;
    gt_nilm_data_defaults(&dn);
    dn.window = 63;
    dn.stride = 16;
    gt_nilm_data_config *nc = gt_nilm_data_cfg_set(&dn);
    snprintf(nc->appliances, sizeof nc->appliances, "%s", name);
    gt_dataset *ds = gt_dataset_nilm(sh, &dn, comm);
    int64_t n = gt_dataset_n_windows_local(ds, GT_SPLIT_TRAIN);
    int64_t *idx = GT_MALLOC(sizeof(int64_t) * (size_t)(n + 1));
    gt_dataset_local_range(ds, GT_SPLIT_TRAIN, 0, n, idx);
    float *x = GT_MALLOC(sizeof(float) * 63 * (size_t)(n + 1)), *y = GT_MALLOC(sizeof(float) * (size_t)(A * (n + 1))),
          *m = GT_MALLOC(sizeof(float) * (size_t)(A * (n + 1)));
    gt_dataset_fill(ds, GT_SPLIT_TRAIN, idx, n, x, y, m, NULL);
    int64_t on[GT_DATA_MAX_TARGETS] = {0}, on_g[GT_DATA_MAX_TARGETS];
    for (int64_t i = 0; i < n; i++)
        for (int a = 0; a < A; a++) on[a] += m[i * A + a] != 0;
    MPI_Allreduce(on, on_g, A, MPI_INT64_T, MPI_SUM, comm);
    for (int a = 0; a < A; a++) TEST_CHECK(a == 1 ? on_g[a] > 0 : on_g[a] == 0);
    if (rank == 0) fprintf(stderr, "appliances=%s: %lld targets of %d appliances count\n", name, (long long)on_g[1], A);
    free(idx), free(x), free(y), free(m);
    gt_dataset_free(ds);

    if (rank == 0 && !gt_test_failures) {
        char cmd[700];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd)) fprintf(stderr, "cannot remove %s\n", dir);
    }
    int fails = gt_test_failures, any = 0;
    MPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_MAX, comm);
    gt_dist_finalize();
    return any ? 1 : 0;
}
