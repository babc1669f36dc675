/* core/fsutil.h: small file-system helpers shared by the layers that read
 * inputs and write outputs (io/, train/, eval/, doe/, cli/, import/). */
#ifndef GT_CORE_FSUTIL_H
#define GT_CORE_FSUTIL_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* mkdir -p with mode 0755; 0, or -1 with errno set (ENOTDIR when a component
 * exists and is not a directory). */
int gt_mkdir_p(const char *path);

/* The one whole-file reader: the whole regular file as a NUL-terminated string
 * (malloc'd, caller frees), its length in *n_bytes when not NULL. NULL with
 * errno set when it cannot be read (ENOENT, EINVAL: not a regular file, EFBIG:
 * larger than max_bytes, found from its size before anything is read, or while
 * reading a file that grows) and a short reason in why[why_bytes] when why is
 * not NULL ("1073741824 bytes, more than the 67108864 a manifest.json may
 * have"; `what` names the kind of file there, may be NULL). Never blocks on a
 * FIFO, never reads more than max_bytes + 1 bytes. */
char *gt_read_file_bounded(const char *path, size_t max_bytes, const char *what, size_t *n_bytes, char *why,
                           size_t why_bytes);
/* The limit of every JSON document gridtrain reads whole (manifest.json,
 * timing.json, eval.json, cell.json, sweep.json, plan-calibration.json) and of
 * the small text files read with them (config.ini, a DOE cell's train.log):
 * 64 MiB, far above what gridtrain writes (cJSON holds about 10x the text). */
#define GT_READ_JSON_MAX_BYTES ((size_t)64 << 20)

/* Writes text to a new unique temporary file next to path (gt_tmp_create),
 * fsyncs it and renames it into place (readers never see a partial file, two
 * writers never share a temporary); 0, or -1 with errno set (the old file is
 * left as it was, the temporary removed). */
int gt_write_file_atomic(const char *path, const char *text);

/* "a directory", "a FIFO", ... for the type bits of a st_mode. */
const char *gt_file_type_name(mode_t mode);

/* Opens an existing file for reading only if it is a regular file: a FIFO is
 * opened without blocking and refused, as are directories and devices. 0 with
 * *fd, or -1 with errno set and a short reason in why[why_bytes] ("No such
 * file or directory", "not a regular file (a FIFO)"). */
int gt_open_regular(const char *path, int *fd, char *why, size_t why_bytes);
/* The same as a stdio stream ("r" mode); NULL with why[] filled. */
FILE *gt_fopen_regular(const char *path, char *why, size_t why_bytes);

/* Creates a new, empty file "<path>.tmp.XXXXXX" (6 random characters, mode
 * 0666 less the umask, O_EXCL: never an existing file, nor a symbolic link) in
 * path's directory, so that a rename onto path stays on one file system and
 * concurrent writers of the same output never share a temporary. Its name goes
 * to tmp[tmp_bytes]. 0, or -1 with errno set. */
int gt_tmp_create(const char *path, char *tmp, size_t tmp_bytes);
/* The same, open for reading and writing: the descriptor, or -1 with errno. */
int gt_tmp_open(const char *path, char *tmp, size_t tmp_bytes);
/* The same in the directory open at dirfd (AT_FDCWD: the working
 * directory): name and tmp[] relative to it, so that a directory swapped for
 * a link after it was opened is never followed. */
int gt_tmp_openat(int dirfd, const char *name, char *tmp, size_t tmp_bytes);
/* Whether name in the directory open at dirfd (not followed) is still the
 * file open at fd: the same device and inode, a regular file of one link. 1,
 * or 0 with errno set (ESTALE: another file is there now). */
int gt_fd_is_at(int fd, int dirfd, const char *name);
/* The same name, chosen but not left behind (created O_EXCL, then removed):
 * for a library that creates the file itself with exclusive semantics
 * (H5Fcreate with H5F_ACC_EXCL), which a file or symbolic link planted at the
 * name meanwhile makes fail instead of being followed. 0, or -1 with errno. */
int gt_tmp_name(const char *path, char *tmp, size_t tmp_bytes);

/* ---- outputs never follow a symbolic link (docs/security.md, Writes) ----
 * Every file gridtrain writes goes through gt_fopen_atomic (a temporary
 * renamed over the name: a link planted there is replaced), gt_fopen_replace
 * (the name removed, then created O_EXCL) or gt_open_append (O_NOFOLLOW), into
 * directories checked by gt_mkdir_out / gt_out_dir_check. */

/* strerror(e), except ELOOP: "it is a symbolic link (outputs never follow one)". */
const char *gt_out_strerror(int e);

/* Whether path may hold outputs: it does not exist, or it is a directory and
 * not a symbolic link (a link to a directory included). 0, or -1 with errno
 * ELOOP (a symbolic link) or ENOTDIR. Only the last component is checked: links
 * above it (/scratch -> /mnt/...) are the user's choice. */
int gt_out_dir_check(const char *path);

/* gt_mkdir_p, then gt_out_dir_check: 0, or -1 with errno set. */
int gt_mkdir_out(const char *path);

/* The output directory root/rel, open (O_DIRECTORY, O_CLOEXEC): root as
 * gt_mkdir_out (the directory the user named: its last component not a link,
 * links above it the user's choice), then each component of rel ("plots",
 * "cells/<id>") opened from its parent's descriptor with O_NOFOLLOW and
 * created (mkdirat, 0755) when missing: no symbolic link below root is ever
 * followed, also one planted after an earlier check. rel NULL or "": root
 * itself. The descriptor, or -1 with errno set (ELOOP: a symbolic link,
 * ENOTDIR) and the path up to the failing component in bad[bad_bytes] when
 * bad is not NULL ("run/plots"). */
int gt_out_dir_open(const char *root, const char *rel, char *bad, size_t bad_bytes);
/* gt_out_dir_open, the descriptor closed: 0, or -1 with errno and bad[] set. */
int gt_mkdir_out_below(const char *root, const char *rel, char *bad, size_t bad_bytes);

/* A new output: writes go to a fresh temporary (gt_tmp_open) and fclose
 * flushes it, fsyncs it when sync is set and renames it over path (a file or
 * a symbolic link there is replaced, never written through); fclose returns
 * EOF with errno set and removes the temporary when a write, the flush or the
 * rename failed (path is then left as it was). NULL with errno set. */
FILE *gt_fopen_atomic(const char *path, int sync);

/* A stream written in place, for files read while they grow (metrics.jsonl,
 * run.log): whatever is at path (a file, or a symbolic link itself) is removed
 * and a new file created with O_EXCL. NULL with errno set (EISDIR: a
 * directory is there). */
FILE *gt_fopen_replace(const char *path);

/* Opens path for appending, creating it (mode 0666 less the umask): never
 * through a symbolic link (ELOOP), only a regular file (EINVAL otherwise; a
 * FIFO never blocks). The descriptor (O_CLOEXEC), or -1 with errno set.
 * Defined in core/fsopen.c. */
int gt_open_append(const char *path);
/* The same as a stdio stream ("a"); NULL with errno set. */
FILE *gt_fopen_append(const char *path);

/* The longest line a JSON-lines file gridtrain reads may have
 * (metrics.jsonl, forensics.jsonl): 1 MiB, far above the rows it writes. */
#define GT_JSONL_LINE_MAX ((size_t)1 << 20)
/* One line of f, its '\n' kept, into *line (grown as by getline; the caller
 * frees it), NUL-terminated: its length; -1 at the end of the file; -2 with
 * errno EFBIG when the line is longer than max_bytes (never more than
 * max_bytes + 1 bytes are held; f is left inside that line). */
long long gt_getline_max(char **line, size_t *cap, FILE *f, size_t max_bytes);
/* The reader of JSON-lines files (metrics.jsonl): gt_getline_max with
 * GT_JSONL_LINE_MAX, *lineno counting the lines read; a longer line ends the
 * program (GT_EXIT_DATA) with one line "error: PATH:LINE: a line longer than
 * 1048576 bytes". */
long long gt_jsonl_getline(char **line, size_t *cap, FILE *f, const char *path, long long *lineno);

/* Whether writing `out` would replace or write into input `in`: out is the
 * same file as in (same device and inode: hard links and symbolic links
 * included), or `in` is a directory and out lies inside it (out need not exist
 * yet). 1 with a reason in why[why_bytes], else 0 (also when `in` does not
 * exist). */
int gt_output_is_input(const char *out, const char *in, char *why, size_t why_bytes);

#endif
