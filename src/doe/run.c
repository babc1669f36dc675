/* doe/run.c: cell runner, run-all and the "train" part of eval.json (run.h). */
#define _GNU_SOURCE
#include "doe/run.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/check.h"
#include "core/escape.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "core/timer.h"
#include "doe/run_int.h"
#include "doe/tasks.h"
#include "train/checkpoint.h"

/* ---------------------------------------------------------------- files -- */

/* Writes text to a unique temporary next to path, fsyncs and renames it into
 * place (core/fsutil.h). */
static int write_atomic(const char *path, const char *text) { return gt_write_file_atomic(path, text); }

int gt_doe_json_write(const char *path, const cJSON *j) {
    char *s = cJSON_Print(j);
    char *t = gt_utf8_dup(s, "\n"); /* factor levels, paths: valid UTF-8 JSON */
    int rc = write_atomic(path, t);
    free(t);
    cJSON_free(s);
    return rc;
}

static void now_iso(char *buf, size_t n) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int gt_doe_exists(const char *path) { return access(path, F_OK) == 0; }

/* ---------------------------------------------------------- the matrix -- */

char *gt_doe_cell_config(const gt_doe_matrix *m, const gt_doe_cell *c, const char *run_dir, char *err, size_t en) {
    char names[256][GT_DOE_NAME_LEN];
    int n_names = -2;
    const char *names_p[256];
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fprintf(f, "# cell %s (index %lld) of DOE matrix '%s' (%s): written by 'gridtrain doe run'\n", c->id,
            (long long)c->index, m->name, m->path);
    /* one line per key: fixed settings, then the factors' levels */
    for (int i = 0; i < m->n_fixed; i++) {
        const char *k = m->fixed[i].key, *dot = strchr(k, '.');
        fprintf(f, "[%.*s]\n%s = %s\n", (int)(dot - k), k, dot + 1, m->fixed[i].value);
    }
    for (int fi = 0; fi < m->n_factors; fi++) {
        const gt_doe_factor *F = &m->factors[fi];
        const char *level = F->levels[c->level[fi]];
        if (!strcmp(F->key, "data.conditions") && n_names == -2) {
            const char *file = gt_doe_fixed_get(m, "data.file");
            n_names = file ? gt_doe_condition_names(file, names, 256) : -1;
            for (int i = 0; i < n_names; i++) names_p[i] = names[i];
        }
        char *v = gt_doe_level_value(F, level, names_p, n_names > 0 ? n_names : 0, err, en);
        if (!v) {
            if (n_names < 0) {
                size_t l = strlen(err);
                snprintf(err + l, en - l, "; condition names need data.file (a PdM file with /legend/condition)");
            }
            fclose(f);
            free(buf);
            return NULL;
        }
        const char *dot = strchr(F->key, '.');
        fprintf(f, "[%.*s]\n%s = %s   ; factor %s = %s\n", (int)(dot - F->key), F->key, dot + 1, v, F->name, level);
        free(v);
    }
    fprintf(f, "[run]\ndir = %s\n", run_dir);
    fclose(f);
    return buf;
}

void gt_doe_print_cells(const gt_doe_matrix *m, FILE *out) {
    fprintf(out, "# DOE matrix '%s' (%s): %lld cells, sweep dir %s\n", m->name, m->path, (long long)m->n_cells, m->dir);
    fprintf(out, "%-6s %-12s", "index", "id");
    for (int f = 0; f < m->n_factors; f++) fprintf(out, " %s", m->factors[f].name);
    fputc('\n', out);
    for (int64_t i = 0; i < m->n_cells; i++) {
        gt_doe_cell c;
        gt_doe_cell_at(m, i, &c);
        fprintf(out, "%-6lld %-12s", (long long)i, c.id);
        for (int f = 0; f < m->n_factors; f++) fprintf(out, " %s", m->factors[f].levels[c.level[f]]);
        fputc('\n', out);
    }
    fprintf(out, "array: --array=0-%lld (%lld tasks)\n", (long long)m->n_cells - 1, (long long)m->n_cells);
}

static cJSON *factors_json(const gt_doe_matrix *m, const gt_doe_cell *c) {
    cJSON *o = cJSON_CreateObject();
    for (int f = 0; f < m->n_factors; f++) cJSON_AddStringToObject(o, m->factors[f].name, m->factors[f].levels[c->level[f]]);
    return o;
}

int gt_doe_write_sweep(const gt_doe_matrix *m) {
    if (gt_mkdir_out(m->dir)) {
        GT_WARN("doe: cannot create the sweep directory %s: %s", m->dir, gt_out_strerror(errno));
        return -1;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", m->name);
    cJSON_AddStringToObject(o, "matrix", m->path);
    if (m->metric) cJSON_AddStringToObject(o, "metric", m->metric);
    cJSON_AddStringToObject(o, "task", gt_doe_task_of_matrix(m)); /* the data file's (doe/tasks.h) */
    cJSON *fa = cJSON_AddArrayToObject(o, "factors");
    for (int f = 0; f < m->n_factors; f++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", m->factors[f].name);
        cJSON_AddStringToObject(x, "key", m->factors[f].key);
        cJSON *lv = cJSON_AddArrayToObject(x, "levels");
        for (int l = 0; l < m->factors[f].n_levels; l++) cJSON_AddItemToArray(lv, cJSON_CreateString(m->factors[f].levels[l]));
        cJSON_AddItemToArray(fa, x);
    }
    cJSON *cells = cJSON_AddArrayToObject(o, "cells");
    for (int64_t i = 0; i < m->n_cells; i++) {
        gt_doe_cell c;
        gt_doe_cell_at(m, i, &c);
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "index", (double)i);
        cJSON_AddStringToObject(x, "id", c.id);
        cJSON_AddItemToObject(x, "factors", factors_json(m, &c));
        cJSON_AddItemToArray(cells, x);
    }
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/sweep.json", m->dir);
    /* concurrent tasks write the same content: a rename race is harmless; each
     * writes its own unique temporary */
    char *s = cJSON_Print(o);
    char *withnl = gt_utf8_dup(s, "\n");
    int rc = gt_write_file_atomic(path, withnl) == 0 ? 0 : -1;
    free(withnl);
    cJSON_free(s);
    cJSON_Delete(o);
    if (rc) GT_WARN("doe: cannot write %s", path);
    return rc;
}

/* ----------------------------------------------------------- processes -- */

/* The environment this process started with (/proc/self/environ: what MPI_Init
 * added later is not there), less the variables of an MPI launcher that
 * started this process: a child started from here is a new MPI job. */
static char **clean_environ(void) {
    size_t cap = 256, n = 0;
    char **env = GT_MALLOC(sizeof(char *) * cap);
    FILE *f = fopen("/proc/self/environ", "r");
    if (!f) { /* no /proc: the current environment */
        extern char **environ;
        for (char **e = environ; *e; e++) {
            if (n + 2 > cap) env = GT_REALLOC(env, sizeof(char *) * (cap *= 2));
            env[n++] = GT_STRDUP(*e);
        }
        env[n] = NULL;
        return env;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, got, m);
    fputc(0, m);
    fclose(m);
    fclose(f);
    static const char *const drop[] = {"PMIX_", "PMI_", "OMPI_COMM_WORLD_", "OMPI_MCA_orte_", "OMPI_MCA_ess",
                                       "OMPI_MCA_pmix", "OMPI_UNIVERSE_SIZE", "OMPI_FIRST_RANKS", "OMPI_APP_CTX",
                                       "OMPI_NUM_APP_CTX", "OMPI_ARGV", "OMPI_COMMAND", "OMPI_FILE_LOCATION",
                                       "OMPI_MCA_initial_wdir", "OMPI_MCA_shmem_RUNTIME", "OMPI_MCA_ompi_",
                                       "OMPI_MCA_mpi_yield", "OMPI_MCA_plm", "OMPI_MCA_routed", "OMPI_MCA_ras",
                                       "OMPI_MCA_rmaps_ppr", "OMPI_MCA_btl_base_loopback", "OMPI_NPROC",
                                       "OMPI_LOCAL_", "OMPI_MCA_hwloc", "OMPI_MCA_orte", "OMPI_MCA_state",
                                       "OMPI_MCA_errmgr"};
    for (size_t i = 0; i < len;) {
        char *e = buf + i;
        size_t l = strlen(e);
        int keep = l > 0;
        for (size_t d = 0; keep && d < sizeof drop / sizeof drop[0]; d++)
            if (!strncmp(e, drop[d], strlen(drop[d]))) keep = 0;
        if (keep) {
            if (n + 2 > cap) env = GT_REALLOC(env, sizeof(char *) * (cap *= 2));
            env[n++] = GT_STRDUP(e);
        }
        i += l + 1;
    }
    env[n] = NULL;
    free(buf);
    return env;
}

static void free_strv(char **v) {
    for (char **p = v; p && *p; p++) free(*p);
    free(v);
}

/* Splits a launcher string on blanks (no quoting). */
static int split_words(const char *s, char **out, int max) {
    int n = 0;
    if (!s) return 0;
    char *dup = GT_STRDUP(s);
    for (char *tok = strtok(dup, " \t"); tok && n < max; tok = strtok(NULL, " \t")) out[n++] = GT_STRDUP(tok);
    free(dup);
    return n;
}

static volatile sig_atomic_t g_forward_sig = 0;
int gt_doe_forwarded_signal(void) { return g_forward_sig; }
static pid_t g_children[512];
static volatile sig_atomic_t g_n_children = 0;
static void on_signal(int sig) {
    g_forward_sig = sig;
    for (int i = 0; i < g_n_children; i++)
        if (g_children[i] > 0) kill(g_children[i], sig);
}
void gt_doe_forwarding_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

/* fork + execve(argv[0]) with the clean environment, stdout/stderr appended
 * to `log` (NULL: inherited). Returns the pid. */
pid_t gt_doe_spawn(char *const argv[], const char *log) {
    char **env = clean_environ();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    GT_CHECK(pid >= 0, GT_EXIT_RESOURCE, "doe: fork failed: %s", strerror(errno));
    if (pid == 0) {
        signal(SIGUSR1, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        if (log) {
            int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NOCTTY, 0644); /* never through a link */
            if (fd < 0) {
                fprintf(stderr, "gridtrain: error: doe: cannot open %s: %s\n", log, gt_out_strerror(errno));
                _exit(127);
            }
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0), close(devnull);
        if (strchr(argv[0], '/')) execve(argv[0], argv, env);
        else execvpe(argv[0], argv, env);
        fprintf(stderr, "gridtrain: error: doe: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    free_strv(env);
    return pid;
}

int gt_doe_wait_rc(pid_t pid) {
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return 127;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return 1;
}

static const char *self_exe(const gt_doe_run_opts *o) { return o && o->self ? o->self : "/proc/self/exe"; }

/* Runs [launch...] SELF args... with output appended to log; returns its exit code. */
int gt_doe_run_child(const gt_doe_run_opts *o, const char *const *args, int n_args, const char *log) {
    char *argv[96];
    int n = split_words(o ? o->launch : NULL, argv, 32);
    char self[PATH_MAX];
    if (o && o->self) {
        snprintf(self, sizeof self, "%s", o->self);
    } else {
        ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
        if (l < 0) snprintf(self, sizeof self, "%s", self_exe(o));
        else self[l] = 0;
    }
    argv[n++] = GT_STRDUP(self);
    for (int i = 0; i < n_args && n < 94; i++) argv[n++] = GT_STRDUP(args[i]);
    argv[n] = NULL;
    pid_t pid = gt_doe_spawn(argv, log);
    g_children[0] = pid;
    g_n_children = 1;
    if (g_forward_sig) kill(pid, g_forward_sig); /* a signal that came before the child */
    int rc = gt_doe_wait_rc(pid);
    g_n_children = 0;
    for (int i = 0; i < n; i++) free(argv[i]);
    return rc;
}

/* --------------------------------------------------------- train part -- */

/* The run's segments in train.log ("train: <why> after N steps (K skipped)
 * in S s: ... params xxh64 H"): their count, training seconds in *train_s and
 * the last parameter hash in params[32]. */
static int log_segments(const char *cell_dir, double *train_s, char *params) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/train.log", cell_dir);
    char why[160];
    char *log = gt_read_file_bounded(path, GT_READ_JSON_MAX_BYTES, "a cell's train.log", NULL, why, sizeof why);
    if (!log && errno == EFBIG) GT_WARN("%s: %s: not read", path, why);
    int segments = 0;
    for (char *p = log; p && (p = strstr(p, "train: ")); p++) {
        char *eol = strchr(p, '\n');
        size_t l = eol ? (size_t)(eol - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(l < sizeof line ? l : sizeof line - 1), p);
        char *in = strstr(line, " skipped) in ");
        char *px = strstr(line, "params xxh64 ");
        if (in && px) {
            *train_s += atof(in + 13);
            sscanf(px + 13, "%31[0-9a-f]", params);
            segments++;
        }
    }
    free(log);

    return segments;
}

/* metrics.jsonl: the last line per step wins (appended after resumes): the
 * last train row's loss, samples and time_s, the last validation's best_val. */
static void last_metrics(const char *cell_dir, double *final_loss, double *best_val, double *samples, double *time_s) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/metrics.jsonl", cell_dir);
    FILE *f = fopen(path, "r");
    double last_step = -1, last_val_step = -1;
    char *line = NULL;
    size_t cap = 0;
    long long ln = 0;
    while (f && gt_jsonl_getline(&line, &cap, f, path, &ln) > 0) {
        cJSON *j = cJSON_Parse(line);
        if (!j) continue;
        const cJSON *type = cJSON_GetObjectItem(j, "type"), *step = cJSON_GetObjectItem(j, "step");
        double s = cJSON_IsNumber(step) ? step->valuedouble : -1;
        if (cJSON_IsString(type) && !strcmp(type->valuestring, "train") && s >= last_step) {
            last_step = s;
            const cJSON *v = cJSON_GetObjectItem(j, "loss");
            *final_loss = cJSON_IsNumber(v) ? v->valuedouble : NAN;
            v = cJSON_GetObjectItem(j, "samples");
            if (cJSON_IsNumber(v)) *samples = v->valuedouble;
            v = cJSON_GetObjectItem(j, "time_s");
            if (cJSON_IsNumber(v)) *time_s = v->valuedouble;
        } else if (cJSON_IsString(type) && !strcmp(type->valuestring, "val") && s >= last_val_step) {
            last_val_step = s;
            const cJSON *v = cJSON_GetObjectItem(j, "best_val");
            *best_val = cJSON_IsNumber(v) ? v->valuedouble : NAN;
        }
        cJSON_Delete(j);
    }
    free(line);
    if (f) fclose(f);
}

int gt_doe_write_train_part(const char *cell_dir, double wall_s) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/manifest.json", cell_dir);
    cJSON *man = gt_doe_json_read(path);
    if (!man) {
        GT_WARN("doe: %s is missing or not JSON", path);
        return -1;
    }
    cJSON *tr = cJSON_CreateObject();
    const cJSON *x = cJSON_GetObjectItem(man, "steps");
    cJSON_AddNumberToObject(tr, "steps", cJSON_IsNumber(x) ? x->valuedouble : 0);
    x = cJSON_GetObjectItem(man, "ranks");
    int ranks = cJSON_IsNumber(x) ? x->valueint : 1;

    double train_s = 0;
    char params[32] = "";
    int segments = log_segments(cell_dir, &train_s, params);

    double final_loss = NAN, best_val = NAN, samples = 0, time_s = 0;
    last_metrics(cell_dir, &final_loss, &best_val, &samples, &time_s);
    if (time_s > train_s) train_s = time_s; /* the log line rounds to 0.1 s; time_s spans the segments */
    const char *ob = getenv("OPENBLAS_NUM_THREADS");
    int threads = ob && atoi(ob) > 0 ? atoi(ob) : 1;
    /* GPU-hours only for a run whose engine was cuda (manifest.json), not for
     * a CPU run on a machine that happens to have a GPU */
    const cJSON *eng = cJSON_GetObjectItem(man, "engine");
    int gpus = cJSON_IsString(eng) && !strcmp(eng->valuestring, "cuda") ? ranks : 0;
    cJSON_AddNumberToObject(tr, "train_time_s", train_s);
    cJSON_AddNumberToObject(tr, "samples_per_s", train_s > 0 ? samples / train_s : 0);
    cJSON_AddNumberToObject(tr, "ranks", ranks);
    cJSON_AddNumberToObject(tr, "cpu_hours", wall_s * ranks * threads / 3600.0);
    cJSON_AddNumberToObject(tr, "gpu_hours", wall_s * gpus / 3600.0);
    if (isfinite(final_loss)) cJSON_AddNumberToObject(tr, "final_loss", final_loss);
    else cJSON_AddNullToObject(tr, "final_loss");
    if (isfinite(best_val)) cJSON_AddNumberToObject(tr, "best_val_loss", best_val);
    else cJSON_AddNullToObject(tr, "best_val_loss");
    cJSON_AddNumberToObject(tr, "wall_s", wall_s);
    cJSON_AddNumberToObject(tr, "segments", segments);
    if (params[0]) cJSON_AddStringToObject(tr, "params_xxh64", params);

    snprintf(path, sizeof path, "%s/eval.json", cell_dir);
    cJSON *ev = gt_doe_json_read(path);
    cJSON *etr = ev ? cJSON_GetObjectItem(ev, "train") : NULL;
    if (cJSON_IsObject(etr)) { /* the evaluator wrote it: add what it lacks (wall_s, params_xxh64, ...) */
        cJSON *it;
        cJSON_ArrayForEach(it, tr)
            if (!cJSON_GetObjectItem(etr, it->string)) cJSON_AddItemToObject(etr, it->string, cJSON_Duplicate(it, 1));
        cJSON_Delete(tr);
        int rc = gt_doe_json_write(path, ev);
        cJSON_Delete(ev);
        cJSON_Delete(man);
        if (rc) GT_WARN("doe: cannot write %s", path);
        return rc;
    }
    if (!ev) {
        ev = cJSON_CreateObject();
        const cJSON *kind = cJSON_GetObjectItem(man, "model_kind"), *task = cJSON_GetObjectItem(man, "task");
        const cJSON *d = cJSON_GetObjectItem(man, "data");
        const cJSON *dp = d ? cJSON_GetObjectItem(d, "path") : NULL;
        const char *file = cJSON_IsString(dp) ? dp->valuestring : "";
        /* the task the run trained (manifest.json), else the one of its data file's kind */
        const char *tn = cJSON_IsString(task) ? task->valuestring : gt_doe_task_of_file(file);
        cJSON_AddStringToObject(ev, "task", tn ? tn : "");
        cJSON_AddStringToObject(ev, "model", cJSON_IsString(kind) ? kind->valuestring : "");
        cJSON_AddStringToObject(ev, "data_file", file);
        gt_doe_null_sections(ev);
        cJSON_AddStringToObject(ev, "note", "written by 'gridtrain doe run' from manifest.json, metrics.jsonl and "
                                            "train.log: no 'gridtrain eval' in this executable");
    }
    cJSON_AddItemToObject(ev, "train", tr);
    int rc = gt_doe_json_write(path, ev);
    cJSON_Delete(ev);
    cJSON_Delete(man);
    if (rc) GT_WARN("doe: cannot write %s", path);
    return rc;
}

/* ------------------------------------------------------------- one cell -- */

/* cell.json update: status and counters; job ids appended when under Slurm. */
void gt_doe_cell_state(const char *cell_dir, const gt_doe_matrix *m, const gt_doe_cell *c, const char *status,
                       int attempt_start, int rc, double wall_add) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/cell.json", cell_dir);
    cJSON *j = gt_doe_json_read(path);
    if (!j) {
        j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "id", c->id);
        cJSON_AddNumberToObject(j, "index", (double)c->index);
        cJSON_AddStringToObject(j, "sweep", m->name);
        cJSON_AddItemToObject(j, "factors", factors_json(m, c));
        cJSON_AddNumberToObject(j, "attempts", 0);
        cJSON_AddNumberToObject(j, "preemptions", 0);
        cJSON_AddNumberToObject(j, "failures", 0);
        cJSON_AddNumberToObject(j, "wall_s", 0);
        cJSON_AddItemToObject(j, "jobs", cJSON_CreateArray());
    }
    cJSON_ReplaceItemInObject(j, "index", cJSON_CreateNumber((double)c->index));
    cJSON_ReplaceItemInObject(j, "factors", factors_json(m, c));
#define BUMP(k, d)                                                                   \
    do {                                                                             \
        cJSON *it_ = cJSON_GetObjectItem(j, k);                                      \
        double v_ = (cJSON_IsNumber(it_) ? it_->valuedouble : 0) + (d);              \
        if (it_) cJSON_ReplaceItemInObject(j, k, cJSON_CreateNumber(v_));            \
        else cJSON_AddNumberToObject(j, k, v_);                                      \
    } while (0)
    char ts[32];
    now_iso(ts, sizeof ts);
    if (attempt_start) {
        BUMP("attempts", 1);
        cJSON_DeleteItemFromObject(j, "started");
        cJSON_AddStringToObject(j, "started", ts);
        const char *jid = getenv("SLURM_JOB_ID"), *ajid = getenv("SLURM_ARRAY_JOB_ID"),
                   *atid = getenv("SLURM_ARRAY_TASK_ID"), *rq = getenv("SLURM_RESTART_COUNT");
        if (jid) {
            char s[128];
            if (ajid && atid) snprintf(s, sizeof s, "%s_%s (job %s%s%s)", ajid, atid, jid, rq ? ", restart " : "", rq ? rq : "");
            else snprintf(s, sizeof s, "%s%s%s", jid, rq ? " restart " : "", rq ? rq : "");
            cJSON *jobs = cJSON_GetObjectItem(j, "jobs");
            if (!jobs) jobs = cJSON_AddArrayToObject(j, "jobs");
            cJSON_AddItemToArray(jobs, cJSON_CreateString(s));
        }
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        cJSON_DeleteItemFromObject(j, "host");
        cJSON_AddStringToObject(j, "host", host);
    } else {
        BUMP("wall_s", wall_add);
        cJSON_DeleteItemFromObject(j, "exit_code");
        cJSON_AddNumberToObject(j, "exit_code", rc);
        cJSON_DeleteItemFromObject(j, "finished");
        cJSON_AddStringToObject(j, "finished", ts);
        if (rc == GT_EXIT_PREEMPTED) BUMP("preemptions", 1);
        else if (rc != 0) BUMP("failures", 1);
    }
#undef BUMP
    cJSON_DeleteItemFromObject(j, "status");
    cJSON_AddStringToObject(j, "status", status);
    if (gt_doe_json_write(path, j)) GT_WARN("doe: cannot write %s", path);
    cJSON_Delete(j);
}

double gt_doe_cell_wall(const char *cell_dir) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/cell.json", cell_dir);
    cJSON *j = gt_doe_json_read(path);
    const cJSON *w = j ? cJSON_GetObjectItem(j, "wall_s") : NULL;
    double v = cJSON_IsNumber(w) ? w->valuedouble : 0;
    cJSON_Delete(j);
    return v;
}

int gt_doe_run_cell(const gt_doe_matrix *m, int64_t index, const gt_doe_run_opts *o) {
    GT_CHECK(index >= 0 && index < m->n_cells, GT_EXIT_USAGE,
             "doe run: task %lld is outside the matrix '%s' (%lld cells: 0-%lld)", (long long)index, m->path,
             (long long)m->n_cells, (long long)m->n_cells - 1);
    gt_doe_cell c;
    gt_doe_cell_at(m, index, &c);
    if (gt_doe_write_sweep(m)) return GT_EXIT_RESOURCE;
    char dir[PATH_MAX], path[PATH_MAX + 32];
    snprintf(path, sizeof path, "cells/%s", c.id); /* neither cells/ nor the cell's directory a symbolic link */
    GT_CHECK(gt_mkdir_out_below(m->dir, path, dir, sizeof dir) == 0, GT_EXIT_RESOURCE, "doe: cannot create %s: %s",
             dir, gt_out_strerror(errno));
    snprintf(dir, sizeof dir, "%s/cells/%s", m->dir, c.id);

    /* one runner per cell at a time */
    snprintf(path, sizeof path, "%s/cell.lock", dir);
    int lock = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
    GT_CHECK(lock >= 0, GT_EXIT_RESOURCE, "doe: cannot open %s: %s", path, gt_out_strerror(errno));
    if (flock(lock, LOCK_EX | LOCK_NB)) {
        GT_WARN("doe: cell %s (task %lld) is being run by another process (lock %s held): left alone", c.id,
                (long long)index, path);
        close(lock);
        return 0;
    }
    snprintf(path, sizeof path, "%s/eval.json", dir);
    if (gt_doe_exists(path)) {
        GT_INFO("doe: cell %s (task %lld) already finished (%s): skipped", c.id, (long long)index, path);
        close(lock);
        return 0;
    }

    char err[512];
    char *cfg = gt_doe_cell_config(m, &c, dir, err, sizeof err);
    GT_CHECK(cfg, GT_EXIT_USAGE, "doe: %s: cell %s: %s", m->path, c.id, err);
    snprintf(path, sizeof path, "%s/cell.ini", dir);
    GT_CHECK(write_atomic(path, cfg) == 0, GT_EXIT_RESOURCE, "doe: cannot write %s", path);
    free(cfg);

    gt_doe_forwarding_install();
    gt_doe_cell_state(dir, m, &c, "running", 1, 0, 0);
    char *ck = gt_ckpt_read_config(dir);
    int resume = ck != NULL;
    free(ck);
    char levels[512] = "";
    for (int f = 0; f < m->n_factors; f++)
        snprintf(levels + strlen(levels), sizeof levels - strlen(levels), "%s%s=%s", f ? " " : "", m->factors[f].name,
                 m->factors[f].levels[c.level[f]]);
    GT_INFO("doe: cell %s (task %lld of %lld: %s): %s", c.id, (long long)index, (long long)m->n_cells, levels,
            resume ? "resuming from its checkpoint" : "training");
    char log[PATH_MAX + 16], ini[PATH_MAX + 16];
    snprintf(log, sizeof log, "%s/train.log", dir);
    snprintf(ini, sizeof ini, "%s/cell.ini", dir);
    double t0 = gt_now();
    int rc;
    if (resume) {
        const char *args[] = {"train", "--resume", dir};
        rc = gt_doe_run_child(o, args, 3, log);
    } else {
        /* no committed checkpoint: an earlier attempt of this cell (if any)
         * has nothing to keep; its files would make the trainer refuse the
         * directory (one run per directory) */
        const char *args[] = {"train", ini, "run.overwrite=true"};
        rc = gt_doe_run_child(o, args, 3, log);
    }
    double wall = gt_now() - t0;
    /* the trainer's end-of-run hook may already have written eval.json */
    snprintf(path, sizeof path, "%s/eval.json", dir);
    if (rc == 0 && o && o->have_eval && !g_forward_sig && !gt_doe_exists(path)) {
        snprintf(log, sizeof log, "%s/eval.log", dir);
        const char *args[] = {"eval", dir};
        double t1 = gt_now();
        rc = gt_doe_run_child(o, args, 2, log);
        wall += gt_now() - t1;
        if (rc) GT_WARN("doe: cell %s: 'gridtrain eval' failed with exit code %d (see %s)", c.id, rc, log);
    }
    if (rc == 0) {
        gt_doe_cell_state(dir, m, &c, "done", 0, 0, wall);
        rc = gt_doe_write_train_part(dir, gt_doe_cell_wall(dir)) ? GT_EXIT_RESOURCE : 0;
        if (rc == 0) GT_INFO("doe: cell %s done in %.1f s (%s/eval.json)", c.id, wall, dir);
    } else if (rc == GT_EXIT_PREEMPTED) {
        gt_doe_cell_state(dir, m, &c, "preempted", 0, rc, wall);
        GT_WARN("doe: cell %s preempted after %.1f s: checkpoint written; run the task again to resume", c.id, wall);
    } else {
        gt_doe_cell_state(dir, m, &c, "failed", 0, rc, wall);
        GT_WARN("doe: cell %s failed with exit code %d after %.1f s (see %s/train.log)", c.id, rc, wall, dir);
    }
    close(lock);
    return rc;
}

/* --------------------------------------------------------------- run-all -- */

int gt_doe_run_tasks(const gt_doe_matrix *m, const int64_t *tasks, int64_t n_tasks, int rung, int jobs,
                     const gt_doe_run_opts *o) {
    if (jobs < 1) jobs = 1;
    if (jobs > 512) jobs = 512;
    if (gt_doe_write_sweep(m)) return 1;
    char logs[PATH_MAX];
    GT_CHECK(gt_mkdir_out_below(m->dir, "logs", logs, sizeof logs) == 0, GT_EXIT_RESOURCE, "doe: cannot create %s: %s",
             logs, gt_out_strerror(errno));
    snprintf(logs, sizeof logs, "%s/logs", m->dir);
    gt_doe_forwarding_install();
    char self[PATH_MAX];
    if (o && o->self) snprintf(self, sizeof self, "%s", o->self);
    else {
        ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
        GT_CHECK(l > 0, GT_EXIT_RESOURCE, "doe: cannot find this executable (/proc/self/exe)");
        self[l] = 0;
    }
    int64_t *task_of = GT_CALLOC((size_t)jobs, sizeof(int64_t));
    int running = 0;
    int64_t next = 0, n_fail = 0, n_pre = 0;
    double t0 = gt_now();
    for (int i = 0; i < jobs; i++) g_children[i] = 0;
    g_n_children = jobs;
    while (next < n_tasks || running > 0) {
        while (running < jobs && next < n_tasks && !g_forward_sig) {
            int slot = 0;
            while (g_children[slot] > 0) slot++;
            char task[32], rung_s[32], log[PATH_MAX + 64];
            snprintf(task, sizeof task, "%lld", (long long)tasks[next]);
            snprintf(rung_s, sizeof rung_s, "%d", rung);
            if (rung >= 0) snprintf(log, sizeof log, "%s/rung-%d-task-%lld.log", logs, rung, (long long)tasks[next]);
            else snprintf(log, sizeof log, "%s/task-%lld.log", logs, (long long)tasks[next]);
            char *argv[14];
            int n = 0;
            argv[n++] = self;
            argv[n++] = "doe";
            argv[n++] = "run";
            argv[n++] = m->path;
            argv[n++] = "--task";
            argv[n++] = task;
            if (rung >= 0) {
                argv[n++] = "--rung";
                argv[n++] = rung_s;
            }
            if (o && o->launch && *o->launch) {
                argv[n++] = "--launch";
                argv[n++] = (char *)o->launch;
            }
            argv[n] = NULL;
            g_children[slot] = gt_doe_spawn(argv, log);
            task_of[slot] = tasks[next++];
            running++;
        }
        if (g_forward_sig && next < n_tasks) next = n_tasks; /* start nothing more */
        int st;
        pid_t pid = wait(&st);
        if (pid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int s = 0; s < jobs; s++)
            if (g_children[s] == pid) {
                int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
                gt_doe_cell c;
                gt_doe_cell_at(m, task_of[s], &c);
                GT_INFO("doe: task %lld (cell %s) %s (exit %d) [%lld/%lld started, %d running]", (long long)task_of[s],
                        c.id, rc == 0 ? "finished" : rc == GT_EXIT_PREEMPTED ? "preempted" : "FAILED", rc,
                        (long long)next, (long long)n_tasks, running - 1);
                n_fail += rc != 0 && rc != GT_EXIT_PREEMPTED;
                n_pre += rc == GT_EXIT_PREEMPTED;
                g_children[s] = 0;
                running--;
            }
    }
    g_n_children = 0;
    const int64_t n_all = n_tasks;
    char what[32] = "";
    if (rung >= 0) snprintf(what, sizeof what, " rung %d:", rung);
    GT_INFO("doe: run-all '%s':%s %lld cells in %.1f s with -j %d: %lld failed, %lld preempted, %lld not started%s",
            m->name, what, (long long)n_all, gt_now() - t0, jobs, (long long)n_fail, (long long)n_pre,
            (long long)(n_all - next), n_fail ? " (see SWEEP_DIR/cells/<id>/train.log)" : "");
    free(task_of);
    return n_fail || n_pre || next < n_all ? 1 : 0;
}

