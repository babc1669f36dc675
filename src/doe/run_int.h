/* doe/run_int.h: what the runner's files share (run.c, ladder.c); not an
 * interface of doe/ (run.h is). */
#ifndef GT_DOE_RUN_INT_H
#define GT_DOE_RUN_INT_H

#include <cjson/cJSON.h>
#include <sys/types.h>

#include "doe/matrix.h"
#include "doe/run.h"

#include "doe/json.h" /* gt_doe_json_read */
/* written atomically, valid UTF-8; 0 or -1 */
int gt_doe_json_write(const char *path, const cJSON *j);
int gt_doe_exists(const char *path);
/* cell.json: status and counters (attempt_start: a new attempt; else the end
 * of one with exit code rc and wall_add seconds) */
void gt_doe_cell_state(const char *cell_dir, const gt_doe_matrix *m, const gt_doe_cell *c, const char *status,
                       int attempt_start, int rc, double wall_add);
/* cell.json's wall seconds over attempts */
double gt_doe_cell_wall(const char *cell_dir);
/* SIGUSR1/SIGTERM/SIGINT forwarded to the children; the signal received (0: none) */
void gt_doe_forwarding_install(void);
int gt_doe_forwarded_signal(void);
/* [launch...] SELF args... with output appended to log; its exit code */
int gt_doe_run_child(const gt_doe_run_opts *o, const char *const *args, int n_args, const char *log);
pid_t gt_doe_spawn(char *const argv[], const char *log);
int gt_doe_wait_rc(pid_t pid);

#endif
