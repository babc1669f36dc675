#define _GNU_SOURCE
#include "core/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/check.h"

int gt_mkdir_p(const char *path) {
    size_t n = strlen(path);
    char *tmp = GT_MALLOC(n + 1);
    memcpy(tmp, path, n + 1);
    int rc = 0;
    for (char *p = tmp + 1; *p && rc == 0; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) && errno != EEXIST) rc = -1;
            *p = '/';
        }
    if (rc == 0 && mkdir(tmp, 0755) && errno != EEXIST) rc = -1;
    free(tmp);
    if (rc == 0) {
        struct stat st;
        if (stat(path, &st) != 0) return -1;
        if (!S_ISDIR(st.st_mode)) {
            errno = ENOTDIR;
            return -1;
        }
    }
    return rc;
}

const char *gt_file_type_name(mode_t mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

int gt_open_regular(const char *path, int *fd_out, char *why, size_t why_bytes) {
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer forever */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        if (why) snprintf(why, why_bytes, "%s", strerror(e));
        errno = e;
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        if (why) snprintf(why, why_bytes, "not a regular file (%s)", gt_file_type_name(st.st_mode));
        close(fd);
        errno = e;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    *fd_out = fd;
    return 0;
}

FILE *gt_fopen_regular(const char *path, char *why, size_t why_bytes) {
    int fd = -1;
    if (gt_open_regular(path, &fd, why, why_bytes) != 0) return NULL;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        int e = errno;
        if (why) snprintf(why, why_bytes, "%s", strerror(e));
        close(fd);
        errno = e;
    }
    return f;
}

/* n_bytes 0: the file grew past the limit while it was read */
static void too_large(char *why, size_t why_bytes, const char *what, unsigned long long n_bytes, size_t max_bytes) {
    if (why && n_bytes)
        snprintf(why, why_bytes, "%llu bytes, more than the %zu %s may have", n_bytes, max_bytes, what ? what : "it");
    else if (why)
        snprintf(why, why_bytes, "grew past the %zu bytes %s may have while it was read", max_bytes, what ? what : "it");
    errno = EFBIG;
}

char *gt_read_file_bounded(const char *path, size_t max_bytes, const char *what, size_t *n_bytes, char *why,
                           size_t why_bytes) {
    FILE *f = gt_fopen_regular(path, why, why_bytes);
    if (!f) return NULL;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && st.st_size > 0 && (unsigned long long)st.st_size > max_bytes) {
        fclose(f);
        too_large(why, why_bytes, what, (unsigned long long)st.st_size, max_bytes);
        return NULL;
    }
    /* the size may change while reading: the loop stops one byte past the limit */
    size_t cap = 1 << 16, len = 0;
    char *buf = GT_MALLOC(cap);
    for (;;) {
        if (cap - len < 2) buf = GT_REALLOC(buf, cap *= 2);
        size_t want = cap - len - 1;
        if (want > max_bytes + 1 - len) want = max_bytes + 1 - len;
        size_t got = fread(buf + len, 1, want, f);
        len += got;
        if (got == 0 || len > max_bytes) break;
    }
    int err = ferror(f);
    fclose(f);
    if (len > max_bytes) {
        free(buf);
        too_large(why, why_bytes, what, 0, max_bytes);
        return NULL;
    }
    if (err) {
        free(buf);
        if (why) snprintf(why, why_bytes, "%s", strerror(EIO));
        errno = EIO;
        return NULL;
    }
    buf[len] = 0;
    if (n_bytes) *n_bytes = len;
    return buf;
}

int gt_tmp_create(const char *path, char *tmp, size_t tmp_bytes) {
    int fd = gt_tmp_open(path, tmp, tmp_bytes);
    if (fd < 0) return -1;
    close(fd);
    return 0;
}

int gt_tmp_name(const char *path, char *tmp, size_t tmp_bytes) {
    int fd = gt_tmp_open(path, tmp, tmp_bytes);
    if (fd < 0) return -1;
    close(fd);
    return unlink(tmp);
}

int gt_tmp_open(const char *path, char *tmp, size_t tmp_bytes) { return gt_tmp_openat(AT_FDCWD, path, tmp, tmp_bytes); }

int gt_tmp_openat(int dirfd, const char *path, char *tmp, size_t tmp_bytes) {
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static uint64_t counter = 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40) ^ (uintptr_t)tmp;
    for (int attempt = 0; attempt < 100; attempt++) {
        x += 0x9E3779B97F4A7C15ull * ++counter; /* splitmix64 */
        uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        char sfx[7];
        for (int i = 0; i < 6; i++, z /= 62) sfx[i] = alphabet[z % 62];
        sfx[6] = 0;
        int n = snprintf(tmp, tmp_bytes, "%s.tmp.%s", path, sfx);
        if (n < 0 || (size_t)n >= tmp_bytes) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd >= 0) return fd;
        if (errno != EEXIST) return -1;
    }
    errno = EEXIST;
    return -1;
}

int gt_fd_is_at(int fd, int dirfd, const char *name) {
    struct stat a, b;
    if (fstat(fd, &a) != 0 || fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) != 0) return 0;
    if (a.st_dev != b.st_dev || a.st_ino != b.st_ino || !S_ISREG(b.st_mode) || b.st_nlink != 1) {
        errno = ESTALE;
        return 0;
    }
    return 1;
}

int gt_write_file_atomic(const char *path, const char *text) {
    FILE *f = gt_fopen_atomic(path, 1);
    if (!f) return -1;
    size_t len = strlen(text);
    int bad = fwrite(text, 1, len, f) != len;
    int e = errno;
    if (fclose(f) != 0) return -1; /* the temporary removed, errno set */
    if (bad) errno = e ? e : EIO;
    return bad ? -1 : 0;
}

/* ------------------------------------------------------------ outputs -- */

const char *gt_out_strerror(int e) {
    return e == ELOOP ? "it is a symbolic link (outputs never follow one)" : strerror(e);
}

int gt_out_dir_check(const char *path) {
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    while (n > 1 && buf[n - 1] == '/') buf[--n] = 0; /* lstat("link/") would follow it */
    struct stat st;
    if (lstat(buf, &st) != 0) return errno == ENOENT ? 0 : -1;
    if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
        errno = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
        return -1;
    }
    return 0;
}

int gt_mkdir_out(const char *path) {
    if (gt_out_dir_check(path) != 0 || gt_mkdir_p(path) != 0) return -1;
    return gt_out_dir_check(path); /* created by someone else meanwhile */
}

int gt_out_dir_open(const char *root, const char *rel, char *bad, size_t bad_bytes) {
    if (bad && bad_bytes) snprintf(bad, bad_bytes, "%s", root);
    if (gt_mkdir_out(root) != 0) return -1;
    char buf[PATH_MAX];
    size_t n = strlen(root);
    if (n >= sizeof buf || (rel && strlen(rel) >= sizeof buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, root, n + 1);
    while (n > 1 && buf[n - 1] == '/') buf[--n] = 0; /* "link/" would be followed */
    int fd = open(buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1; /* swapped for a link since the check: ELOOP or ENOTDIR */
    if (!rel) return fd;
    memcpy(buf, rel, strlen(rel) + 1);
    size_t done = strlen(root); /* bad[]: root and the components met so far */
    for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (bad && bad_bytes && done < bad_bytes) done += (size_t)snprintf(bad + done, bad_bytes - done, "/%s", c);
        if (!strcmp(c, ".") || !strcmp(c, "..")) {
            close(fd);
            errno = EINVAL;
            return -1;
        }
        if (mkdirat(fd, c, 0755) != 0 && errno != EEXIST) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        /* O_NOFOLLOW: a link there (planted at any time) fails with ELOOP */
        int next = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) { /* with O_DIRECTORY Linux says ENOTDIR for a link */
            int e = errno;
            struct stat st;
            if (fstatat(fd, c, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) e = ELOOP;
            close(fd);
            errno = e;
            return -1;
        }
        close(fd);
        fd = next;
    }
    return fd;
}

int gt_mkdir_out_below(const char *root, const char *rel, char *bad, size_t bad_bytes) {
    int fd = gt_out_dir_open(root, rel, bad, bad_bytes);
    if (fd < 0) return -1;
    close(fd);
    return 0;
}

long long gt_getline_max(char **line, size_t *cap, FILE *f, size_t max_bytes) {
    if (!*line || *cap < 2) {
        *cap = *cap < 256 ? 256 : *cap;
        *line = GT_REALLOC(*line, *cap);
    }
    size_t len = 0;
    for (;;) {
        if (*cap - len < 2) *line = GT_REALLOC(*line, *cap *= 2);
        size_t room = *cap - len;
        if (room > max_bytes + 2 - len) room = max_bytes + 2 - len; /* reads one byte past the limit at most */
        if (!fgets(*line + len, (int)(room > INT_MAX ? INT_MAX : room), f)) break;
        len += strlen(*line + len);
        if (len > max_bytes) {
            errno = EFBIG;
            return -2;
        }
        if ((*line)[len - 1] == '\n') break;
    }
    (*line)[len] = 0;
    return len ? (long long)len : -1;
}

long long gt_jsonl_getline(char **line, size_t *cap, FILE *f, const char *path, long long *lineno) {
    long long n = gt_getline_max(line, cap, f, GT_JSONL_LINE_MAX);
    if (n != -1) ++*lineno;
    GT_CHECK(n != -2, GT_EXIT_DATA, "%s:%lld: a line longer than %zu bytes (not a file gridtrain wrote)", path,
             *lineno, GT_JSONL_LINE_MAX);
    return n;
}

/* gt_fopen_atomic's stream: stdio writes into the temporary's descriptor */
typedef struct {
    int fd, sync, err; /* err: the first write error, 0 if none */
    char *tmp, *path;
} atomic_out;

static ssize_t atomic_write(void *cookie, const char *buf, size_t n) {
    atomic_out *a = cookie;
    size_t done = 0;
    while (!a->err && done < n) {
        ssize_t w = write(a->fd, buf + done, n - done);
        if (w > 0) done += (size_t)w;
        else if (w == 0) a->err = ENOSPC;
        else if (errno != EINTR) a->err = errno;
    }
    return a->err ? 0 : (ssize_t)n; /* 0: an error, for stdio */
}

static int atomic_seek(void *cookie, off64_t *pos, int whence) {
    atomic_out *a = cookie;
    off64_t r = lseek64(a->fd, *pos, whence);
    if (r < 0) return -1;
    *pos = r;
    return 0;
}

static int atomic_close(void *cookie) {
    atomic_out *a = cookie;
    int e = a->err;
    if (!e && a->sync && fsync(a->fd) != 0) e = errno;
    if (close(a->fd) != 0 && !e) e = errno;
    if (!e && rename(a->tmp, a->path) != 0) e = errno; /* replaces a link, never follows it */
    if (e) unlink(a->tmp);
    gt_output_end(a->tmp);
    free(a->tmp);
    free(a->path);
    free(a);
    errno = e;
    return e ? -1 : 0;
}

FILE *gt_fopen_atomic(const char *path, int sync) {
    char tmp[PATH_MAX + 16];
    int fd = gt_tmp_open(path, tmp, sizeof tmp);
    if (fd < 0) return NULL;
    atomic_out *a = GT_MALLOC(sizeof *a);
    a->fd = fd, a->sync = sync, a->err = 0;
    a->tmp = GT_STRDUP(tmp);
    a->path = GT_STRDUP(path);
    gt_output_begin(tmp); /* removed on a fatal error or SIGINT/SIGTERM */
    cookie_io_functions_t io = {NULL, atomic_write, atomic_seek, atomic_close};
    FILE *f = fopencookie(a, "w", io);
    if (!f) {
        int e = errno;
        a->err = e ? e : ENOMEM;
        atomic_close(a);
        errno = e;
    }
    return f;
}

FILE *gt_fopen_replace(const char *path) {
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            errno = EISDIR;
            return NULL;
        }
        if (unlink(path) != 0 && errno != ENOENT) return NULL; /* a link: the link itself */
    }
    /* O_EXCL: a link planted again meanwhile is refused (EEXIST), not followed */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0666);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

FILE *gt_fopen_append(const char *path) {
    int fd = gt_open_append(path);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "a");
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

/* realpath of the directory that holds path (path need not exist) */
static int parent_real(const char *path, char *out) {
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/') buf[--n] = 0; /* "dir/" names dir */
    char *slash = strrchr(buf, '/');
    const char *dir = ".";
    if (slash == buf) dir = "/";
    else if (slash) *slash = 0, dir = buf;
    return realpath(dir, out) ? 0 : -1;
}

int gt_output_is_input(const char *out, const char *in, char *why, size_t why_bytes) {
    struct stat si, so;
    if (!out || !in || stat(in, &si) != 0) return 0;
    if (stat(out, &so) == 0 && so.st_dev == si.st_dev && so.st_ino == si.st_ino) {
        snprintf(why, why_bytes, "'%s' is the input '%s'", out, in);
        return 1;
    }
    if (!S_ISDIR(si.st_mode)) return 0;
    char pin[PATH_MAX], pout[PATH_MAX];
    if (!realpath(in, pin) || parent_real(out, pout) != 0) return 0;
    size_t n = strlen(pin);
    if (!strncmp(pout, pin, n) && (pout[n] == 0 || pout[n] == '/' || (n == 1 && pin[0] == '/'))) {
        snprintf(why, why_bytes, "'%s' lies inside the input directory '%s'", out, in);
        return 1;
    }
    return 0;
}
