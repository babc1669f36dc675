/* import/import.c: the importers' entry point: checks the options, loads the
 * appliance map and hands the run to the driver of the format (the table
 * below: import_nilm.c for the household formats, import_care.c for CARE).
 * The helpers the drivers share are in import_common.c. */
#define _GNU_SOURCE
#include "import/import.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/check.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "core/timer.h"
#include "io/format.h"
#include "import/import_impl.h"

/* the driver of each format (gt_import_format order) */
typedef void (*import_driver)(const gt_import_opts *o, const gt_appliance_map *map, MPI_Comm comm,
                              gt_import_stats *st);
static const import_driver drivers[] = {
    [GT_IMPORT_UKDALE] = gt_import_nilm,
    [GT_IMPORT_REDD] = gt_import_nilm,
    [GT_IMPORT_REFIT] = gt_import_nilm,
    [GT_IMPORT_CARE] = gt_import_care,
};

/* ------------------------------------------------------------------- run --- */

void gt_import_run(const gt_import_opts *o_in, MPI_Comm comm, gt_import_stats *st_out) {
    double t0 = gt_now();
    gt_import_opts o = *o_in;
    GT_CHECK((unsigned)o.format < sizeof drivers / sizeof drivers[0], GT_EXIT_USAGE, "import: unknown format %d",
             (int)o.format);
    if (o.period_s <= 0) o.period_s = gt_import_default_period(o.format);
    double pms = o.period_s * 1000.0;
    GT_CHECK(pms >= 1 && pms == (double)(int64_t)pms, GT_EXIT_USAGE,
             "import: the period must be a whole number of ms >= 1 ms (got %g s)", o.period_s);
    if (o.max_gap_s <= 0) o.max_gap_s = 5 * o.period_s;
    GT_CHECK(o.backward_tol_s >= 0, GT_EXIT_USAGE, "import: the backward tolerance must be >= 0 s");
    GT_CHECK(o.max_bad_lines >= 0, GT_EXIT_USAGE, "import: --max-bad-lines must be >= 0 (got %d)", o.max_bad_lines);
    GT_CHECK(o.src && *o.src && o.out && *o.out, GT_EXIT_USAGE, "import: needs SRC and -o OUT");
    struct stat sb;
    GT_CHECK(stat(o.src, &sb) == 0 && S_ISDIR(sb.st_mode), GT_EXIT_DATA, "%s: not a directory (the dataset's folder)",
             o.src);

    gt_appliance_map map;
    gt_diag d = {0};
    d.strict = o.strict;
    d.quiet = gt_rank() != 0; /* the map's warnings are the same on every rank */
    gt_import_map_load(o.map_path, &map, &d);
    gt_diag_item_end(&d, map.n ? map.path : "appliance map", NULL, 0);
    gt_import_agree(comm, &d, 0);
    /* the output must not replace an input: a file of the dataset's folder
     * (or a new file inside it, which a later import would read), or the map */
    char why[2 * PATH_MAX + 64];
    if (gt_output_is_input(o.out, o.src, why, sizeof why) || (map.n && gt_output_is_input(o.out, map.path, why, sizeof why))) {
        char msg[sizeof why + 128];
        snprintf(msg, sizeof msg, "import: refusing to write the output: %s; choose an -o outside the dataset's folder", why);
        gt_map_free(&map);
        gt_io_fail(comm, GT_EXIT_USAGE, msg);
    }
    if (!map.n && o.format != GT_IMPORT_CARE && gt_rank() == 0)
        GT_WARN("import: no appliance map found (--appliances FILE): labels are kept as they are");
    gt_import_stats st;
    memset(&st, 0, sizeof st);
    drivers[o.format](&o, &map, comm, &st);
    gt_map_free(&map);
    st.total_s = gt_now() - t0;
    if (st_out) *st_out = st;
}
