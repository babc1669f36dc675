/* core/log.h: rank-aware logging.
 * By default only rank 0 prints info/debug lines; warnings print on every rank
 * (prefixed with the rank in parallel runs). GT_LOG_ALL_RANKS=1 (or
 * gt_log_set_all_ranks(1), from --log-all-ranks) makes every rank print info too.
 * GT_LOG_LEVEL=debug|info|warn|quiet sets the threshold. Lines go to stderr so
 * stdout stays clean for machine-readable output (inspect tables, JSON). */
#ifndef GT_CORE_LOG_H
#define GT_CORE_LOG_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gt_log_level { GT_LOG_DEBUG = 0, GT_LOG_INFO = 1, GT_LOG_WARN = 2, GT_LOG_QUIET = 3 };

void gt_log_init_from_env(void);
void gt_log_set_level(int level);
int gt_log_level(void);
void gt_log_set_all_ranks(int on);
void gt_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The run log: from gt_log_set_file on, every line this process prints
 * through gt_log (what passes the level and rank filters), every fatal error
 * (gt_fatal*, the watchdog; with " (exit N)") and every gt_log_error line is
 * also appended to `path`, prefixed with the UTC time (O_APPEND, one write per
 * line: ranks sharing the file do not interleave within a line). NULL closes it.
 * Returns 0, or -1 with errno when the file cannot be opened (nothing is copied
 * then; ELOOP: path is a symbolic link, never followed: gt_open_append). */
int gt_log_set_file(const char *path);
/* Appends text (one or more whole lines) to the run log, if any;
 * no stdio and no allocation (write(2); safe from the watchdog thread). */
void gt_log_file_write(const char *text, size_t len);
/* An error line that does not end the process (the caller decides the exit):
 * "gridtrain: error: <msg>" on stderr (with "[rank r]" in parallel runs), and
 * in the run log. */
void gt_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Writes "gridtrain: error: " ("gridtrain[rank R]: error: " in a parallel run)
 * into buf (n bytes); returns its length. The one prefix of error lines. */
size_t gt_log_error_prefix(char *buf, size_t n);

#define GT_DEBUG(...) gt_log(GT_LOG_DEBUG, __VA_ARGS__)
#define GT_INFO(...) gt_log(GT_LOG_INFO, __VA_ARGS__)
#define GT_WARN(...) gt_log(GT_LOG_WARN, __VA_ARGS__)

#ifdef __cplusplus
}
#endif
#endif
