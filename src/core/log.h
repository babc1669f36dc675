/* core/log.h: rank-aware logging.
 * By default only rank 0 prints info/debug lines; warnings print on every rank
 * (prefixed with the rank in parallel runs). GT_LOG_ALL_RANKS=1 (or
 * gt_log_set_all_ranks(1), from --log-all-ranks) makes every rank print info too.
 * GT_LOG_LEVEL=debug|info|warn|quiet sets the threshold. Lines go to stderr so
 * stdout stays clean for machine-readable output (inspect tables, JSON). */
#ifndef GT_CORE_LOG_H
#define GT_CORE_LOG_H

enum gt_log_level { GT_LOG_DEBUG = 0, GT_LOG_INFO = 1, GT_LOG_WARN = 2, GT_LOG_QUIET = 3 };

void gt_log_init_from_env(void);
void gt_log_set_level(int level);
int gt_log_level(void);
void gt_log_set_all_ranks(int on);
void gt_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define GT_DEBUG(...) gt_log(GT_LOG_DEBUG, __VA_ARGS__)
#define GT_INFO(...) gt_log(GT_LOG_INFO, __VA_ARGS__)
#define GT_WARN(...) gt_log(GT_LOG_WARN, __VA_ARGS__)

#endif
