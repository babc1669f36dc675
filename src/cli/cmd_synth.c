/* cli/cmd_synth.c: `gridtrain synth KIND -o FILE [options]`: writes one
 * synthetic dataset file collectively with the generator KIND names
 * (synth/synth_gen.h: nilm, pdm, ...; io/write.h). */
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "cli/commands.h"
#include "core/check.h"
#include "core/log.h"
#include "dist/reduce.h"
#include "io/write.h"
#include "synth/synth_gen.h"

/* The option table: the output, the settings of the generators
 * (synth/synth_gen.h: the common ones, then each generator's own, "KIND:
 * ..." in its help), then the write options. The generators are synth/'s
 * list, so the rows, the usage line, the summary and the help's list of
 * kinds are put together before main (build_table), not written twice;
 * generator settings left empty keep the generator's defaults. */
#define N_OPTS_MAX 48
static gt_opt opts[N_OPTS_MAX];
static char helps[N_OPTS_MAX][160];
static char usage[160], summary[200], details[1200];

static const gt_opt k_write_opts[] = {
    {"synth.compress", "compress", GT_OPT_INT, "0", "deflate level 0-9 (with shuffle); 0 stores uncompressed", NULL},
    {"synth.chunk_rows", "chunk-rows", GT_OPT_INT, "65536", "rows per chunk of the row datasets; 0 contiguous (needs compress 0)", NULL},
    {"synth.batch", "batch", GT_OPT_SIZE, "256M", "per-rank generation buffer per collective write", NULL},
};

static void add_settings(int *n, const gt_synth_setting *s, const char *kind) {
    for (; s->key; s++) {
        GT_ASSERT(*n < N_OPTS_MAX - 1);
        if (kind) snprintf(helps[*n], sizeof helps[*n], "%s: %s", kind, s->help);
        else snprintf(helps[*n], sizeof helps[*n], "%s", s->help);
        opts[*n] = (gt_opt){s->key, s->flag, s->type == GT_SYNTH_INT ? GT_OPT_INT : GT_OPT_FLOAT, "", helps[*n], NULL};
        (*n)++;
    }
}

__attribute__((constructor)) static void build_table(void) {
    int n = 0;
    opts[n++] = (gt_opt){"synth.output", "o", GT_OPT_STR, "", "output HDF5 file (written as FILE.tmp.XXXXXX, renamed when complete)", NULL};
    add_settings(&n, gt_synth_common_settings, NULL);
    for (int g = 0; gt_synth_gen_at(g); g++) add_settings(&n, gt_synth_gen_at(g)->settings, gt_synth_gen_at(g)->name);
    GT_ASSERT(n + sizeof k_write_opts / sizeof k_write_opts[0] < N_OPTS_MAX);
    for (size_t k = 0; k < sizeof k_write_opts / sizeof k_write_opts[0]; k++) opts[n++] = k_write_opts[k];
    opts[n] = (gt_opt){NULL, NULL, 0, NULL, NULL, NULL};
    char names[96], datasets[128] = "";
    gt_synth_gen_names(names, sizeof names, "|", "|");
    snprintf(usage, sizeof usage, "synth %s -o FILE [options]", names);
    size_t l = 0, d = 0;
    for (int g = 0; gt_synth_gen_at(g); g++) {
        const gt_synth_gen_i *G = gt_synth_gen_at(g);
        const char *sep = g == 0 ? "" : gt_synth_gen_at(g + 1) ? ", " : " or ";
        l += (size_t)snprintf(datasets + l, sizeof datasets - l, "%s%s", sep, G->dataset);
        d += (size_t)snprintf(details + d, sizeof details - d, "synth %s: %s.\n", G->name, G->what);
        GT_ASSERT(l < sizeof datasets && d < sizeof details);
    }
    snprintf(summary, sizeof summary, "write a synthetic %s dataset (collectively under mpirun)", datasets);
    snprintf(details + d, sizeof details - d,
             "Each rank generates the households/turbines assigned to it and writes them at their\n"
             "offsets; the file's data does not depend on the number of ranks. The file is written\n"
             "as FILE.tmp.XXXXXX and renamed into place when complete. Format: docs/data-format.md.");
}

/* the parser's values, as a generator reads them (synth/synth_gen.h) */
static int args_is_set(const void *a, const char *key) { return gt_args_is_set(a, key); }
static int64_t args_int(const void *a, const char *key) { return gt_args_int(a, key); }
static double args_float(const void *a, const char *key) { return gt_args_float(a, key); }

static void report(const char *kind, const char *path, const gt_write_stats *st, MPI_Comm comm) {
    /* maxima over the ranks, on rank 0 (which prints them) */
    const double t_max = gt_dist_reduce_max_d(st->total_s, comm);
    const double gen_max = gt_dist_reduce_max_d(st->gen_s, comm);
    const double write_max = gt_dist_reduce_max_d(st->write_s, comm);
    const int64_t rows_max = gt_dist_reduce_max_i64(st->n_rows, comm);
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (rank == 0)
        printf("synth %s: wrote %s: %lld rows on %d rank%s in %.2f s (generate %.2f s, write %.2f s, "
               "%d collective rounds, rows imbalance %.3f)\n",
               kind, path, (long long)st->n_rows_total, size, size == 1 ? "" : "s", t_max, gen_max, write_max,
               st->n_rounds, st->n_rows_total > 0 ? (double)rows_max * size / (double)st->n_rows_total : 1.0);
}

static int run(const gt_args *a, MPI_Comm comm) {
    const char *kind = a->pos[0];
    const char *out = gt_args_str(a, "synth.output");
    GT_CHECK(*out, GT_EXIT_USAGE, "synth: no output file (use -o FILE or synth.output=FILE)");
    gt_write_opts wo;
    gt_write_opts_defaults(&wo);
    wo.chunk_rows = gt_args_int(a, "synth.chunk_rows");
    const int64_t deflate = gt_args_int(a, "synth.compress"); /* checked before it narrows to int */
    wo.batch_bytes = gt_args_size(a, "synth.batch");
    GT_CHECK(deflate >= 0 && deflate <= 9, GT_EXIT_USAGE, "synth.compress must be 0..9 (got %lld)", (long long)deflate);
    wo.deflate = (int)deflate;
    GT_CHECK(wo.chunk_rows >= 0, GT_EXIT_USAGE, "synth.chunk_rows must be >= 0");
    GT_CHECK(!(wo.chunk_rows == 0 && wo.deflate > 0), GT_EXIT_USAGE,
             "synth.compress > 0 needs a chunked layout (synth.chunk_rows > 0)");
    GT_CHECK(wo.batch_bytes >= 1 << 20, GT_EXIT_USAGE, "synth.batch must be at least 1M");
    const gt_synth_gen_i *gen = gt_synth_gen_find(kind);
    if (!gen) {
        char names[96];
        gt_synth_gen_names(names, sizeof names, ", ", " or ");
        GT_FAIL(GT_EXIT_USAGE, "synth: unknown kind '%s' (expected %s)", kind, names);
    }
    const gt_synth_args ga = {a, args_is_set, args_int, args_float};
    gt_write_stats st;
    gen->run(out, &ga, &wo, comm, &st);
    report(kind, out, &st, comm);
    return 0;
}

const gt_cmd gt_cmd_synth = {
    .name = "synth",
    .usage = usage,   /* build_table: from the generators */
    .summary = summary,
    .details = details,
    .opts = opts,
    .min_pos = 1,
    .max_pos = 1,
    .run = run,
};
