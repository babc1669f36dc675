/* cli/cmd_import.c: `gridtrain import ukdale|redd|refit|care SRC -o OUT.h5`:
 * imports a public dataset into the gridtrain HDF5 format (import/import.h),
 * parsing houses/turbines in parallel under mpirun. docs/importers.md. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "core/check.h"
#include "core/log.h"
#include "import/import.h"
#include "io/format.h"

static const gt_opt opts[] = {
    {"import.output", "o", GT_OPT_STR, "", "output HDF5 file (written as FILE.tmp.XXXXXX, renamed when complete; never inside SRC)", NULL},
    {"import.houses", "houses", GT_OPT_STR, "", "houses to import, e.g. 1,2,5 (default: every house found)", NULL},
    {"import.period_s", "period", GT_OPT_FLOAT, "0", "output period in s, whole ms (0: ukdale 6, redd 3, refit 8, care 600)", NULL},
    {"import.appliances", "appliances", GT_OPT_STR, "", "label -> canonical name map (default: datasets/appliance_map.ini)", NULL},
    {"import.max_gap_s", "max-gap", GT_OPT_FLOAT, "0", "aggregate holes longer than this are gap rows (NaN, flagged); 0: 5 periods", NULL},
    {"import.backward_tolerance_s", "backward-tolerance", GT_OPT_FLOAT, "60", "time stamps going back more than this are warnings (data is sorted anyway)", NULL},
    {"import.strict", "strict", GT_OPT_BOOL, "false", "warnings are errors (exit 3); a bad data line too", NULL},
    {"import.max_bad_lines", "max-bad-lines", GT_OPT_INT, "10", "bad data lines (malformed, a bad time stamp or value) skipped per file, one warning per file naming the first; one more ends the import naming FILE:LINE (exit 3); 0: the first does", NULL},
    {"import.ukdale_aggregate", "aggregate", GT_OPT_STR, "auto", "ukdale aggregate: mains.dat when present (auto), channel 1, or mains.dat", "auto|channel|mains"},
    {"import.lowres_period_s", "lowres-period", GT_OPT_FLOAT, "0", "nilm: also write the /lowres channel at this period (s); 0 none", NULL},
    {"import.farm", "farm", GT_OPT_INT, "-1", "care: the farm code of /turbines/farm; -1: the folder name's last letter (Wind Farm A -> 0, B -> 1, ...; a name that does not end in a letter is refused)", NULL},
    {"import.compress", "compress", GT_OPT_INT, "0", "deflate level 0-9 (with shuffle); 0 stores uncompressed", NULL},
    {"import.chunk_rows", "chunk-rows", GT_OPT_INT, "65536", "rows per chunk of the row datasets; 0 contiguous (needs compress 0)", NULL},
    {"import.batch", "batch", GT_OPT_SIZE, "256M", "per-rank buffer per collective write", NULL},
    {NULL, NULL, 0, NULL, NULL, NULL},
};

static int run(const gt_args *a, MPI_Comm comm) {
    gt_import_opts o;
    gt_import_opts_defaults(&o);
    int f = gt_import_format_parse(a->pos[0]);
    GT_CHECK(f >= 0, GT_EXIT_USAGE, "import: unknown dataset '%s' (expected ukdale, redd, refit or care)", a->pos[0]);
    o.format = (gt_import_format)f;
    o.src = a->pos[1];
    o.out = gt_args_str(a, "import.output");
    GT_CHECK(*o.out, GT_EXIT_USAGE, "import: no output file (use -o FILE or import.output=FILE)");
    o.period_s = gt_args_float(a, "import.period_s");
    o.max_gap_s = gt_args_float(a, "import.max_gap_s");
    o.backward_tol_s = gt_args_float(a, "import.backward_tolerance_s");
    o.strict = gt_args_bool(a, "import.strict");
    const int64_t max_bad = gt_args_int(a, "import.max_bad_lines");
    GT_CHECK(max_bad >= 0 && max_bad <= INT_MAX, GT_EXIT_USAGE, "import.max_bad_lines must be 0 to %d (got %lld)",
             INT_MAX, (long long)max_bad);
    o.max_bad_lines = (int)max_bad;
    o.map_path = gt_args_str(a, "import.appliances");
    o.lowres_period_s = gt_args_float(a, "import.lowres_period_s");
    const char *agg = gt_args_str(a, "import.ukdale_aggregate");
    o.ukdale_agg = !strcmp(agg, "channel") ? GT_UKDALE_AGG_CHANNEL : !strcmp(agg, "mains") ? GT_UKDALE_AGG_MAINS
                                                                                           : GT_UKDALE_AGG_AUTO;
    const int64_t deflate = gt_args_int(a, "import.compress"); /* checked before it narrows to int */
    GT_CHECK(deflate >= 0 && deflate <= 9, GT_EXIT_USAGE, "import.compress must be 0..9 (got %lld)", (long long)deflate);
    o.write.deflate = (int)deflate;
    o.write.chunk_rows = gt_args_int(a, "import.chunk_rows");
    o.write.batch_bytes = gt_args_size(a, "import.batch");
    GT_CHECK(o.period_s >= 0 && o.max_gap_s >= 0 && o.backward_tol_s >= 0 && o.lowres_period_s >= 0, GT_EXIT_USAGE,
             "import: periods, max_gap and backward_tolerance must be >= 0");
    GT_CHECK(o.write.chunk_rows >= 0 && !(o.write.chunk_rows == 0 && o.write.deflate > 0), GT_EXIT_USAGE,
             "import.chunk_rows must be >= 0, and > 0 with compression");
    GT_CHECK(o.write.batch_bytes >= 1 << 20, GT_EXIT_USAGE, "import.batch must be at least 1M");
    /* options of the other formats were ignored without a word */
    GT_CHECK(o.format != GT_IMPORT_CARE || o.lowres_period_s == 0, GT_EXIT_USAGE,
             "import: --lowres-period is for ukdale, redd and refit");
    GT_CHECK(o.format == GT_IMPORT_UKDALE || !strcmp(agg, "auto"), GT_EXIT_USAGE, "import: --aggregate is for ukdale");
    const int64_t farm = gt_args_int(a, "import.farm");
    GT_CHECK(farm >= -1 && farm < GT_IO_MAX_LEGEND, GT_EXIT_USAGE, "import.farm must be 0..%d, or -1 for the folder "
             "name's letter (got %lld)", GT_IO_MAX_LEGEND - 1, (long long)farm);
    GT_CHECK(o.format == GT_IMPORT_CARE || farm == -1, GT_EXIT_USAGE, "import: --farm is for care");
    o.farm = (int)farm;
    int houses[1024], nh = 0;
    const char *hs = gt_args_str(a, "import.houses");
    if (*hs) {
        GT_CHECK(o.format != GT_IMPORT_CARE, GT_EXIT_USAGE, "import: --houses is for ukdale, redd and refit");
        const char *p = hs;
        while (*p) {
            char *end;
            long v = strtol(p, &end, 10);
            GT_CHECK(end != p && v >= 0 && v < 1000000 && (*end == ',' || *end == 0) && nh < 1024, GT_EXIT_USAGE,
                     "import: --houses must be a comma separated list of house numbers (got '%s')", hs);
            houses[nh++] = (int)v;
            p = *end ? end + 1 : end;
        }
        o.houses = houses;
        o.n_houses = nh;
    }
    gt_import_stats st;
    gt_import_run(&o, comm, &st);
    int size = 1;
    MPI_Comm_size(comm, &size);
    if (gt_rank() == 0) {
        printf("import %s: wrote %s: %d %s, %d %s, %lld rows on %d rank%s in %.2f s\n", a->pos[0], o.out, st.n_items,
               o.format == GT_IMPORT_CARE ? "turbines" : "households", st.n_cols,
               o.format == GT_IMPORT_CARE ? "channels" : "appliances", (long long)st.n_rows, size, size == 1 ? "" : "s",
               st.total_s);
        printf("import %s: parsed %.1f MB of text (%lld lines) in %.2f s on the slowest rank, %.0f MB/s per core; "
               "exact duplicates %lld, conflicting duplicates %lld, backward steps %lld (beyond tolerance %lld), "
               "samples outside the span %lld, gap rows %lld, Issues=1 rows %lld, bad lines skipped %lld, "
               "leg holes bridged %lld, warnings %lld\n",
               a->pos[0], st.text_bytes / 1e6, (long long)st.n_lines, st.parse_s_max,
               st.parse_s_sum > 0 ? st.text_bytes / 1e6 / st.parse_s_sum : 0.0, (long long)st.n_exact_dup,
               (long long)st.n_conflict, (long long)st.n_backward, (long long)st.n_backward_far,
               (long long)st.n_outside, (long long)st.n_gap_rows, (long long)st.n_issues, (long long)st.n_bad_lines,
               (long long)st.n_bridged, (long long)st.n_warnings);
    }
    return 0;
}

const gt_cmd gt_cmd_import = {
    .name = "import",
    .usage = "import ukdale|redd|refit|care SRC -o OUT.h5 [options]",
    .summary = "import UK-DALE, REDD, REFIT or CARE to Compare into a gridtrain dataset file",
    .details = "SRC is the dataset's folder: UK-DALE / REDD low_freq (house_N/channel_M.dat, labels.dat),\n"
               "REFIT CLEAN (CLEAN_HouseN.csv), or one CARE wind farm (datasets/<event>.csv, event_info.csv,\n"
               "feature_description.csv). Channels are put on one clock: each row is the MEAN of the samples\n"
               "in [t, t+period) (NaN when none; never filled); aggregate holes longer than --max-gap are\n"
               "gap rows (/fault_flags bit 2). Labels map to canonical names via --appliances. Up to\n"
               "--max-bad-lines bad data lines per file (default 10) are skipped with one warning naming the\n"
               "file and the first; one more ends the import naming FILE:LINE (exit 3); --strict makes\n"
               "warnings and bad lines errors. The first 10 warnings of a house/turbine are printed, then one\n"
               "line counts the rest by kind. Houses/turbines are parsed in parallel under mpirun; the output\n"
               "does not depend on the rank count.\n"
               "See docs/importers.md.",
    .opts = opts,
    .min_pos = 2,
    .max_pos = 2,
    .run = run,
};
