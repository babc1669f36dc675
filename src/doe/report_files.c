/* doe/report_files.c: what every part of the sweep report uses: an output
 * file of the report opened for an atomic write, whether gnuplot is on PATH,
 * and a configuration's label (factor = level, ...). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "doe/report.h"
#include "doe/report_int.h"

FILE *gt_doe_report_open(const char *dir, const char *name) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = gt_fopen_atomic(p, 0); /* renamed into place at fclose: a link there is replaced, never followed */
    if (!f) GT_WARN("doe report: cannot write %s: %s", p, gt_out_strerror(errno));
    return f;
}

int gt_doe_have_gnuplot(void) {
    const char *path = getenv("PATH");
    if (!path) return 0;
    char *dup = GT_STRDUP(path), *save = NULL;
    int found = 0;
    for (char *d = strtok_r(dup, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/gnuplot", d);
        found = access(p, X_OK) == 0;
    }
    free(dup);
    return found;
}

void gt_doe_config_label(const gt_doe_sweep *s, const gt_doe_config *c, char *b, size_t n) {
    b[0] = 0;
    for (int f = 0; f < s->n_factors; f++) {
        if (f == s->seed_factor) continue;
        snprintf(b + strlen(b), n - strlen(b), "%s%s=%s", b[0] ? " " : "", s->factor[f], s->levels[f][c->level[f]]);
    }
    if (!b[0]) snprintf(b, n, "(all)");
}
