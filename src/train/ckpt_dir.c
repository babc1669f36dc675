/* train/ckpt_dir.c: the checkpoint directory protocol (train/ckpt_impl.h):
 * file names, commit markers, listing and pruning. POSIX only: no MPI, no
 * HDF5. */
#define _GNU_SOURCE
#include "train/ckpt_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/fsutil.h"
#include "core/log.h"

char *gt_ckpt_strf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    GT_CHECK(n >= 0 && s, GT_EXIT_RESOURCE, "out of memory");
    return s;
}

char *gt_ckpt_dir(const char *run_dir) { return gt_ckpt_strf("%s/checkpoints", run_dir); }
char *gt_ckpt_name(const char *dir, long long step, const char *suffix) {
    return gt_ckpt_strf("%s/ckpt-%09lld%s", dir, step, suffix);
}

void gt_ckpt_err_set(ckpt_err *e, int err_no, const char *fmt, ...) {
    if (e->failed) return;
    e->failed = 1;
    e->err_no = err_no;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->what, sizeof e->what, fmt, ap);
    va_end(ap);
}

int gt_ckpt_fsync(const char *path, int dir) {
    int fd = open(path, O_RDONLY | (dir ? O_DIRECTORY : 0) | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* XXH64 (seed 0) and size of what read_chunk returns until 0 (-1: an error) */
static int hash_stream(ssize_t (*read_chunk)(void *src, char *buf, size_t n, int64_t at), void *src, uint64_t *hash,
                       int64_t *size_bytes) {
    XXH64_state_t *st = XXH64_createState();
    GT_CHECK(st != NULL, GT_EXIT_RESOURCE, "out of memory");
    XXH64_reset(st, 0);
    size_t buf_bytes = (size_t)1 << 20;
    char *buf = GT_MALLOC(buf_bytes);
    int64_t total = 0;
    ssize_t n;
    while ((n = read_chunk(src, buf, buf_bytes, total)) > 0) {
        XXH64_update(st, buf, (size_t)n);
        total += (int64_t)n;
    }
    int e = errno;
    *hash = XXH64_digest(st);
    *size_bytes = total;
    XXH64_freeState(st);
    free(buf);
    errno = e;
    return n < 0 ? -1 : 0;
}

static ssize_t read_stdio(void *src, char *buf, size_t n, int64_t at) {
    (void)at;
    size_t got = fread(buf, 1, n, src);
    return got == 0 && ferror((FILE *)src) ? -1 : (ssize_t)got;
}

static ssize_t read_fd(void *src, char *buf, size_t n, int64_t at) {
    ssize_t got;
    do got = pread(*(const int *)src, buf, n, (off_t)at);
    while (got < 0 && errno == EINTR);
    return got;
}

/* XXH64 (seed 0) and size of a whole regular file (a FIFO is refused, not
 * waited on). 0, or -1 with errno set and, when why is not NULL, the reason
 * in why[128]. */
int gt_ckpt_file_hash(const char *path, uint64_t *hash, int64_t *size_bytes, char *why) {
    char why_[128];
    FILE *f = gt_fopen_regular(path, why ? why : why_, 128); /* a FIFO in checkpoints/ would block */
    if (!f) return -1;
    int rc = hash_stream(read_stdio, f, hash, size_bytes);
    int e = errno;
    if (rc && why) snprintf(why, 128, "%s", strerror(e));
    fclose(f);
    errno = e;
    return rc;
}

int gt_ckpt_fd_hash(int fd, uint64_t *hash, int64_t *size_bytes) { return hash_stream(read_fd, &fd, hash, size_bytes); }

/* Writes text to path via path.tmp + fsync + rename + directory fsync, each
 * relative to dirfd (the directory checked once, never looked up again). */
int gt_ckpt_write_marker(int dirfd, const char *path, const char *text, ckpt_err *e) {
    char *tmp = gt_ckpt_strf("%s.tmp", path);
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path, *tname = strrchr(tmp, '/') ? strrchr(tmp, '/') + 1 : tmp;
    int rc = -1;
    /* a leftover (or a planted link) is removed: O_EXCL never follows one */
    if (unlinkat(dirfd, tname, 0) != 0 && errno != ENOENT) gt_ckpt_err_set(e, errno, "cannot remove %s", tmp);
    int fd = e->failed ? -1 : openat(dirfd, tname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        if (!e->failed) gt_ckpt_err_set(e, errno, "cannot create the commit marker %s", tmp);
    } else {
        size_t len = strlen(text);
        ssize_t w = write(fd, text, len);
        if (w != (ssize_t)len)
            gt_ckpt_err_set(e, w < 0 ? errno : ENOSPC, "cannot write the commit marker %s", tmp);
        else if (fsync(fd) != 0)
            gt_ckpt_err_set(e, errno, "cannot fsync the commit marker %s", tmp);
        if (close(fd) != 0) gt_ckpt_err_set(e, errno, "cannot close the commit marker %s", tmp);
        if (!e->failed && renameat(dirfd, tname, dirfd, name) != 0) gt_ckpt_err_set(e, errno, "cannot rename %s", tmp);
        if (!e->failed && fsync(dirfd) != 0) gt_ckpt_err_set(e, errno, "cannot fsync the directory of %s", path);
        if (e->failed) unlinkat(dirfd, tname, 0);
        else rc = 0;
    }
    free(tmp);
    return rc;
}

int gt_ckpt_read_marker(const char *path, uint64_t *hash, int64_t *size_bytes, char *why) {
    snprintf(why, 128, "malformed");
    FILE *f = gt_fopen_regular(path, why, 128);
    if (!f) return -1;
    char buf[256];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    unsigned long long h = 0;
    long long s = -1;
    int used = 0;
    if (sscanf(buf, "xxh64 %16llx size %lld\n%n", &h, &s, &used) != 2 || used != (int)n || s < 0)
        return -1;
    *hash = (uint64_t)h;
    *size_bytes = (int64_t)s;
    return 0;
}

/* ----------------------------------------------------- directory listing -- */

static int entry_cmp_desc(const void *a, const void *b) {
    long long x = ((const ckpt_entry *)a)->step, y = ((const ckpt_entry *)b)->step;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Entries of dir by step, newest first; *n_out entries (malloc'd, caller
 * frees). NULL with *n_out = 0 when the directory does not exist. */
ckpt_entry *gt_ckpt_list(const char *dir, int *n_out) {
    *n_out = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    int n = 0, cap = 16;
    ckpt_entry *v = GT_MALLOC(sizeof *v * (size_t)cap);
    struct dirent *de;
    static const struct {
        const char *suffix;
        int flag;
    } kinds[] = {{".h5", CK_H5}, {".ok", CK_OK}, {".h5.tmp", CK_H5_TMP}, {".ok.tmp", CK_OK_TMP}};
    while ((de = readdir(d)) != NULL) {
        const char *s = de->d_name;
        if (strncmp(s, "ckpt-", 5) != 0) continue;
        const char *p = s + 5, *q = p;
        while (*q >= '0' && *q <= '9') q++;
        if (q == p || q - p > 18) continue;
        int flag = 0;
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            if (strcmp(q, kinds[k].suffix) == 0) flag = kinds[k].flag;
        if (!strncmp(q, ".h5.tmp.", 8)) flag = CK_H5_TMP; /* a unique temporary (gt_tmp_create) */
        if (!flag) continue;
        long long step = strtoll(p, NULL, 10);
        int i = 0;
        while (i < n && v[i].step != step) i++;
        if (i == n) {
            if (n == cap) v = GT_REALLOC(v, sizeof *v * (size_t)(cap *= 2));
            v[n++] = (ckpt_entry){step, 0};
        }
        v[i].flags |= flag;
    }
    closedir(d);
    qsort(v, (size_t)n, sizeof *v, entry_cmp_desc);
    *n_out = n;
    return v;
}

/* Removes dir/ckpt-<step>.h5.tmp.XXXXXX leftovers of crashed saves. */
static void remove_unique_tmps(const char *dir, long long step) {
    char *prefix = gt_ckpt_strf("ckpt-%09lld.h5.tmp.", step);
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL)
            if (!strncmp(de->d_name, prefix, strlen(prefix))) {
                if (unlinkat(dirfd(d), de->d_name, 0) != 0 && errno != ENOENT)
                    GT_WARN("checkpoint: cannot remove %s/%s: %s", dir, de->d_name, strerror(errno));
                else GT_DEBUG("checkpoint: removed the uncommitted leftover %s/%s", dir, de->d_name);
            }
        closedir(d);
    }
    free(prefix);
}

/* Rank 0 of the save: keep the newest `keep` committed checkpoints (and always
 * `cur` and `best`, the step of the best validation loss), remove uncommitted
 * leftovers older than the newest committed one. Failures are warnings. */
void gt_ckpt_prune(const char *dir, long long cur, long long best, int keep) {
    int n = 0;
    ckpt_entry *v = gt_ckpt_list(dir, &n);
    long long newest_committed = -1;
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if ((v[i].flags & (CK_H5 | CK_OK)) != (CK_H5 | CK_OK)) continue;
        if (newest_committed < 0) newest_committed = v[i].step;
        if (v[i].step == best && best != cur) continue; /* kept outside the count */
        if (keep <= 0 || kept < keep || v[i].step == cur) {
            kept++;
            continue;
        }
        /* marker first: a crash in between leaves an uncommitted file */
        char *ok = gt_ckpt_name(dir, v[i].step, ".ok"), *h5 = gt_ckpt_name(dir, v[i].step, ".h5");
        if (unlink(ok) != 0 && errno != ENOENT) GT_WARN("checkpoint: cannot remove %s: %s", ok, strerror(errno));
        else if (unlink(h5) != 0 && errno != ENOENT) GT_WARN("checkpoint: cannot remove %s: %s", h5, strerror(errno));
        else GT_DEBUG("checkpoint: pruned %s", h5);
        v[i].flags = 0;
        free(ok);
        free(h5);
    }
    for (int i = 0; i < n; i++) {
        if (v[i].step >= newest_committed || v[i].step == cur) continue;
        int f = v[i].flags;
        const char *rm[4] = {NULL, NULL, NULL, NULL};
        if (f & CK_H5_TMP) rm[0] = ".h5.tmp";
        if (f & CK_OK_TMP) rm[1] = ".ok.tmp";
        if ((f & CK_H5) && !(f & CK_OK)) rm[2] = ".h5";
        if ((f & CK_OK) && !(f & CK_H5)) rm[3] = ".ok";
        for (int k = 0; k < 4; k++) {
            if (!rm[k]) continue;
            char *p = gt_ckpt_name(dir, v[i].step, rm[k]);
            if (unlink(p) != 0 && errno != ENOENT) GT_WARN("checkpoint: cannot remove %s: %s", p, strerror(errno));
            else GT_DEBUG("checkpoint: removed the uncommitted leftover %s", p);
            free(p);
        }
        if (f & CK_H5_TMP) remove_unique_tmps(dir, v[i].step);
    }
    free(v);
}
