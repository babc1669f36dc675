/* tests/train/test_train_plateau.c (np 1): the learning-rate plateau rule
 * (train.lr_plateau, train.plateau_patience) as metrics.jsonl records it.
 *
 * A run with the rule on and a run with it off (same schedule: warmup +
 * cosine over the same total steps) log every step. Replaying the rule on the
 * first run's own "val" rows (a validation that does not beat the best so far
 * counts; plateau_patience of them multiply the factor by lr_plateau and
 * restart the count; an improvement restarts it; never below optim.lr_min)
 * gives the factor in force at every step; every "train" row's lr must equal
 * the schedule's lr (the second run's row) times that factor, as the trainer
 * rounds it to float, bit for bit. The run must reduce at least twice, and
 * have a validation without improvement that did not reduce (the patience
 * count is exercised); early stopping is off (train.patience = 0). */
#include "train_test_util.h"
#include "task/task_registry.h"

#define MAX_ROWS 256

typedef struct {
    int n_train, n_val;
    long long t_step[MAX_ROWS], v_step[MAX_ROWS];
    double t_lr[MAX_ROWS], v_loss[MAX_ROWS];
} metrics;

static int field(const char *line, const char *key, double *out) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p) return 0;
    return sscanf(p + strlen(pat), "%lf", out) == 1;
}

static void read_metrics(const char *run, metrics *m) {
    char path[700], line[4096];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run);
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "r");
    TEST_REQUIRE(f);
    while (fgets(line, sizeof line, f)) {
        double step = 0, v = 0;
        if (!field(line, "step", &step)) continue;
        if (strstr(line, "\"type\":\"train\"") && m->n_train < MAX_ROWS && field(line, "lr", &v)) {
            m->t_step[m->n_train] = (long long)step;
            m->t_lr[m->n_train++] = v;
        } else if (strstr(line, "\"type\":\"val\"") && m->n_val < MAX_ROWS && field(line, "val_loss", &v)) {
            m->v_step[m->n_val] = (long long)step;
            m->v_loss[m->n_val++] = v;
        }
    }
    fclose(f);
}

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    gt_task_register_builtins(); /* the file's kind chooses the task */
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank;
    MPI_Comm_rank(comm, &rank);
    char dir[512], file[600], run_on[600], run_off[600];
    tt_scratch(dir, sizeof dir, "plateau", comm);
    snprintf(file, sizeof file, "%s/nilm.h5", dir);
    snprintf(run_on, sizeof run_on, "%s/run-on", dir);
    snprintf(run_off, sizeof run_off, "%s/run-off", dir);
    tt_write_nilm(file, -1, 0, comm);

    const int N = 40;
    const double factor_step = 0.5;
    const int plateau_patience = 2;
    gt_train_config c;
    tt_cnn_config(&c, file);
    c.max_steps = N;
    c.write_outputs = 1;
    c.log_every = 1;
    c.eval_every = 2;
    c.lr = 2e-2; /* high: the validation loss bounces, so plateaus come early */
    c.lr_min = 1e-4;
    c.patience = 0;
    c.lr_plateau = factor_step;
    c.plateau_patience = plateau_patience;
    c.run_dir = run_on;
    gt_train_result r_on, r_off;
    TEST_EQ_INT(gt_train_run(&c, comm, &r_on), 0);
    c.lr_plateau = 0;
    c.run_dir = run_off;
    TEST_EQ_INT(gt_train_run(&c, comm, &r_off), 0);
    TEST_EQ_INT(r_off.lr_reductions, 0);

    if (rank == 0) {
        metrics on, off;
        read_metrics(run_on, &on);
        read_metrics(run_off, &off);
        TEST_EQ_INT(on.n_train, N);
        TEST_EQ_INT(off.n_train, N);
        TEST_EQ_INT(on.n_val, N / 2);
        /* replay the rule on the run's own validations */
        double best = INFINITY, factor = 1.0, floor = c.lr_min / c.lr;
        int count = 0, reductions = 0, idle_without_reduction = 0, v = 0, mismatches = 0;
        for (int i = 0; i < on.n_train && i < off.n_train; i++) {
            TEST_EQ_INT(on.t_step[i], off.t_step[i]);
            /* the validations before this row's update decide its factor */
            for (; v < on.n_val && on.v_step[v] < on.t_step[i]; v++) {
                if (on.v_loss[v] < best) {
                    best = on.v_loss[v];
                    count = 0;
                } else if (++count >= plateau_patience) {
                    count = 0;
                    if (factor > floor) {
                        factor = factor * factor_step > floor ? factor * factor_step : floor;
                        reductions++;
                    }
                } else {
                    idle_without_reduction++;
                }
            }
            float sched = (float)off.t_lr[i];
            float want = factor >= 1.0 ? sched : (float)(sched * factor);
            float lo = sched < (float)c.lr_min ? sched : (float)c.lr_min;
            if (want < lo) want = lo;
            if ((float)on.t_lr[i] != want) {
                if (mismatches++ < 5)
                    fprintf(stderr, "step %lld: lr %.9g, expected %.9g (schedule %.9g x factor %g)\n", on.t_step[i],
                            on.t_lr[i], (double)want, (double)sched, factor);
            }
        }
        fprintf(stderr, "plateau: %d reductions replayed (trainer: %lld), %d idle validations below the patience, "
                "final factor %g (trainer %g), %d lr mismatches\n", reductions, (long long)r_on.lr_reductions,
                idle_without_reduction, factor, r_on.lr_factor, mismatches);
        TEST_EQ_INT(mismatches, 0);
        TEST_CHECK(reductions >= 2);
        TEST_CHECK(idle_without_reduction >= 1);
        /* the last validation (step N) can reduce after the last train row */
        TEST_CHECK(r_on.lr_reductions == reductions || r_on.lr_reductions == reductions + 1);
    }
    gt_train_result_free(&r_on);
    gt_train_result_free(&r_off);
    int fails = gt_test_failures, any = 0;
    MPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_MAX, comm);
    gt_dist_finalize();
    return any ? 1 : 0;
}
