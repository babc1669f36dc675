#include "core/fsutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

char *gt_read_file(const char *path, size_t *n_bytes) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = GT_MALLOC(cap);
    for (;;) {
        if (cap - len < 2) buf = GT_REALLOC(buf, cap *= 2);
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    buf[len] = 0;
    if (n_bytes) *n_bytes = len;
    return buf;
}

int gt_write_file_atomic(const char *path, const char *text) {
    size_t n = strlen(path) + 8;
    char *tmp = GT_MALLOC(n);
    snprintf(tmp, n, "%s.tmp", path);
    int rc = -1;
    FILE *f = fopen(tmp, "w");
    if (f) {
        fputs(text, f);
        int bad = fclose(f) != 0;
        if (!bad && rename(tmp, path) == 0) rc = 0;
        else unlink(tmp);
    }
    free(tmp);
    return rc;
}
