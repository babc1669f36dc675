/* core/fsopen.c: gt_open_append (core/fsutil.h), alone: it uses nothing else
 * of core/, so the run log (core/log.c) opens its file with it while the rest
 * of core/fsutil.c reports errors through core/check.c, which logs. */
#define _GNU_SOURCE
#include "core/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int gt_open_append(const char *path) {
    /* O_NONBLOCK: a FIFO without a reader fails (ENXIO) instead of waiting */
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0666);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}
