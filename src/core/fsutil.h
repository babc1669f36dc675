/* core/fsutil.h: small file-system helpers shared by the layers that write run
 * directories (train/, eval/, doe/). */
#ifndef GT_CORE_FSUTIL_H
#define GT_CORE_FSUTIL_H

#include <stddef.h>

/* mkdir -p with mode 0755; 0, or -1 with errno set (ENOTDIR when a component
 * exists and is not a directory). */
int gt_mkdir_p(const char *path);

/* The whole file as a NUL-terminated string (malloc'd, caller frees), its
 * length in *n_bytes when not NULL; NULL with errno set when it cannot be read. */
char *gt_read_file(const char *path, size_t *n_bytes);

/* Writes text to path.tmp and renames it into place (readers never see a
 * partial file); 0, or -1 with errno set (the old file is left as it was). */
int gt_write_file_atomic(const char *path, const char *text);

#endif
