/* import/import_common.c: what the importers' drivers (import_nilm.c,
 * import_care.c) and their dispatcher (import.c) share: the formats' names
 * and default periods, the options' defaults, and the parallel plumbing
 * (agreement on errors, moving items between ranks, listing houses, the
 * appliance map). Calls no driver. */
#define _GNU_SOURCE
#include "import/import.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/fsutil.h"
#include "io/format.h"
#include "import/import_impl.h"

static const char *const fmt_names[] = {"ukdale", "redd", "refit", "care"};

int gt_import_format_parse(const char *name) {
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, fmt_names[i])) return i;
    return -1;
}
const char *gt_import_format_name(gt_import_format f) { return (unsigned)f < 4 ? fmt_names[f] : "?"; }
double gt_import_default_period(gt_import_format f) {
    switch (f) {
    case GT_IMPORT_UKDALE: return 6;
    case GT_IMPORT_REDD: return 3;
    case GT_IMPORT_REFIT: return 8;
    case GT_IMPORT_CARE: return 600;
    }
    return 0;
}

void gt_import_opts_defaults(gt_import_opts *o) {
    memset(o, 0, sizeof *o);
    o->backward_tol_s = 60;
    o->max_bad_lines = GT_IMPORT_MAX_BAD_LINES;
    o->farm = -1;
    gt_write_opts_defaults(&o->write);
}

/* --------------------------------------------------------------- agreement -- */

void gt_import_agree(MPI_Comm comm, const gt_diag *d, int err_item) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    struct {
        int item, rank;
    } mine = {d->err_code ? err_item : INT_MAX, rank}, first;
    MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_2INT, MPI_MINLOC, comm));
    if (first.item == INT_MAX) return;
    struct {
        int code;
        char msg[GT_IMPORT_MSG_LEN];
    } e;
    memset(&e, 0, sizeof e);
    if (rank == first.rank) {
        e.code = d->err_code;
        memcpy(e.msg, d->err, sizeof e.msg);
    }
    MPI_CHECK(MPI_Bcast(&e, (int)sizeof e, MPI_BYTE, first.rank, comm));
    e.msg[sizeof e.msg - 1] = 0;
    gt_io_fail(comm, e.code ? e.code : GT_EXIT_DATA, e.msg);
}

/* ---------------------------------------------------------------- moving --- */

void gt_import_move(void **blob, const int64_t *blob_bytes, const int *from, const int *to, int n_items,
                    MPI_Comm comm) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    const int64_t piece = (int64_t)1 << 30;
    for (int i = 0; i < n_items; i++) {
        if (from[i] == to[i] || (rank != from[i] && rank != to[i])) continue;
        int64_t nb = blob_bytes[i];
        if (rank == to[i]) blob[i] = GT_ALLOC_ARRAY(nb, 1, "import: an item's rows");
        for (int64_t s = 0; s < nb; s += piece) {
            int k = (int)(nb - s < piece ? nb - s : piece);
            if (rank == from[i]) MPI_CHECK(MPI_Send((char *)blob[i] + s, k, MPI_BYTE, to[i], i & 0x7fff, comm));
            else MPI_CHECK(MPI_Recv((char *)blob[i] + s, k, MPI_BYTE, from[i], i & 0x7fff, comm, MPI_STATUS_IGNORE));
        }
        if (rank == from[i]) {
            free(blob[i]);
            blob[i] = NULL;
        }
    }
}

/* ----------------------------------------------------------------- files --- */

int64_t gt_import_file_bytes(const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return -1;
    return (int64_t)sb.st_size;
}

static int int_cmp(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int gt_import_name_number(const char *name, const char *prefix, const char *suffix, int64_t max, int64_t *v) {
    size_t lp = strlen(prefix), ls = strlen(suffix), n = strlen(name);
    *v = -1;
    if (n <= lp + ls || strncmp(name, prefix, lp) || strcmp(name + n - ls, suffix)) return GT_NAME_OTHER;
    int64_t x = 0;
    for (size_t i = lp; i < n - ls; i++) {
        if (name[i] < '0' || name[i] > '9') return GT_NAME_OTHER; /* no sign, blank or fraction: strtol's "+7", " 7" */
        x = x * 10 + (name[i] - '0');
        if (x > max) x = max + 1; /* saturate: no overflow on any length */
    }
    *v = x > max ? -1 : x;
    if (x > max) return GT_NAME_RANGE;
    /* one number, one spelling: "010" beside "10" would be one item read twice */
    if (name[lp] == '0' && n - ls - lp > 1) return GT_NAME_ZERO;
    return GT_NAME_OK;
}

int gt_import_name_error(const char *dir, const char *name, const char *what, int rc, const char *prefix,
                         const char *suffix, int64_t v, int64_t max, gt_diag *d) {
    if (rc == GT_NAME_RANGE)
        return gt_diag_error(d, GT_EXIT_DATA, "%s/%s: %s out of range (at most %lld)", dir, name, what, (long long)max);
    char canon[64];
    snprintf(canon, sizeof canon, "%s%lld%s", prefix, (long long)v, suffix);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%.3900s/%s", dir, canon);
    struct stat sb;
    if (stat(path, &sb) == 0)
        return gt_diag_error(d, GT_EXIT_DATA, "%s/%s: the %s has a leading zero: it and %s name the same %lld", dir,
                             name, what, canon, (long long)v);
    return gt_diag_error(d, GT_EXIT_DATA, "%s/%s: the %s has a leading zero (rename it %s)", dir, name, what, canon);
}

int gt_import_list_houses(const char *dir, int refit, int **out, gt_diag *d) {
    *out = NULL;
    DIR *dp = opendir(dir);
    if (!dp) return gt_diag_error(d, GT_EXIT_DATA, "%s: cannot list the directory", dir);
    int n = 0, cap = 0;
    int *h = NULL;
    struct dirent *e;
    while ((e = readdir(dp))) {
        const char *pre = refit ? "CLEAN_House" : "house_", *suf = refit ? ".csv" : "";
        int64_t num;
        int rc = gt_import_name_number(e->d_name, pre, suf, INT_MAX, &num);
        if (rc == GT_NAME_OTHER) continue;
        if (rc != GT_NAME_OK) {
            gt_import_name_error(dir, e->d_name, "house number", rc, pre, suf, num, INT_MAX, d);
            closedir(dp);
            free(h);
            return -1;
        }
        if (n == cap) h = GT_REALLOC(h, sizeof(int) * (size_t)(cap = cap ? cap * 2 : 16));
        h[n++] = (int)num;
    }
    closedir(dp);
    if (n > 1) qsort(h, (size_t)n, sizeof(int), int_cmp); /* h is NULL when none */
    *out = h;
    return n;
}

int gt_import_map_load(const char *path, gt_appliance_map *m, gt_diag *d) {
    memset(m, 0, sizeof *m);
    char found[PATH_MAX] = "";
    if (path && *path) {
        snprintf(found, sizeof found, "%s", path);
    } else {
        char cand[4][PATH_MAX];
        int nc = 0;
        const char *env = getenv("GT_DATA_DIR");
        if (env && *env) snprintf(cand[nc++], PATH_MAX, "%s/appliance_map.ini", env);
        char exe[PATH_MAX];
        ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (l > 0) {
            exe[l] = 0;
            char *slash = strrchr(exe, '/');
            if (slash) *slash = 0;
            snprintf(cand[nc++], PATH_MAX, "%.3800s/../datasets/appliance_map.ini", exe);
            snprintf(cand[nc++], PATH_MAX, "%.3800s/../share/gridtrain/appliance_map.ini", exe);
        }
        snprintf(cand[nc++], PATH_MAX, "datasets/appliance_map.ini");
        for (int i = 0; i < nc && !found[0]; i++)
            if (gt_import_file_bytes(cand[i]) >= 0) snprintf(found, sizeof found, "%.4000s", cand[i]);
        if (!found[0]) return 0; /* no map: labels kept */
    }
    gt_text t;
    if (gt_text_open(&t, found, d)) {
        d->err_code = GT_EXIT_USAGE;
        return -1;
    }
    int rc = gt_map_parse(t.p, t.n, found, m, d);
    gt_text_close(&t);
    return rc;
}
