/* io/kind_nilm.h: NILM (household) files: their layout, the shard reader and
 * the writer (the row of io/kind.h in io/kind_nilm.c).
 *
 *   NILM (root attribute kind = "nilm")
 *     /households/{id int64 [H], row_offset int64 [H+1], period_s float64 [H],
 *                  owns uint8 [H,A] (optional)}
 *     /appliance_meta/{name string32 [A], on_power_w, on_duration_s, max_power_w float32 [A]}
 *     /timestamps int64 [N] (ms since the Unix epoch), /aggregate float32 [N] (W),
 *     /appliances float32 [N,A] (W), /fault_flags uint8 [N] (optional)
 *     /lowres/{row_offset int64 [H+1], timestamps int64 [M], aggregate float32 [M],
 *              appliances float32 [M,A]} (optional; attribute period_s)
 *
 * gt_nilm_shard_read opens a file read-only on comm, validates it, assigns
 * households to ranks with gt_shard_assign (balanced by rows, deterministic)
 * and reads each rank's rows with collective H5Dread calls on the union of its
 * hyperslabs. A rank that gets no household still takes part (it selects
 * nothing). Households keep file order within a rank. A schema error ends the
 * job with one line printed by rank 0 (GT_EXIT_DATA).
 *
 * gt_nilm_write writes a file from a source of callbacks that produce one
 * household at a time, as pure functions of its index (synth/synth_source.c,
 * the importers): every rank queries the cheap `info` of every household, so
 * all ranks compute the same offsets and plan without communication; each
 * generates only its households. The data never depends on the number of
 * ranks. The file is written as a new unique "<path>.tmp.XXXXXX" and renamed
 * to `path` only when complete (gt_io_create_tmp). */
#ifndef GT_IO_KIND_NILM_H
#define GT_IO_KIND_NILM_H

#include <mpi.h>
#include <stdint.h>

#include "io/format.h"
#include "io/kind.h"

#define GT_KIND_NILM 1
/* data.power_limit_w's default: a power beyond +-1e8 W is not a measurement */
#define GT_NILM_POWER_LIMIT_W 1e8
/* inspect: NILM's own counts of an item (io/inspect.h gt_item_report.own):
 * the rows /fault_flags flags spike, gap, stuck (not findings: the file's
 * own record of its faults) */
enum { GT_NILM_OWN_FLAGGED_SPIKE, GT_NILM_OWN_FLAGGED_GAP, GT_NILM_OWN_FLAGGED_STUCK, GT_NILM_N_OWN };
extern const gt_io_kind_i gt_io_kind_nilm;

/* What the schema check learns of a NILM file beyond the shared index
 * (gt_file_index.kind_ix). */
typedef struct gt_nilm_index {
    int has_faults;         /* /fault_flags present */
    int has_owns;           /* /households/owns present */
    int has_lowres;         /* /lowres present */
    double lowres_period_s;
    int64_t n_lowres_rows;  /* M */
    int64_t *lowres_offset; /* [n_items + 1] or NULL */
} gt_nilm_index;
/* The NILM facts of an index; NULL when it is not a NILM file's. */
static inline const gt_nilm_index *gt_nilm_index_of(const gt_file_index *ix) {
    return ix->kind == GT_KIND_NILM ? (const gt_nilm_index *)ix->kind_ix : NULL;
}

/* A row of /appliance_meta. */
typedef struct gt_io_appliance {
    char name[GT_FORMAT_NAME_LEN]; /* canonical name, e.g. "fridge" */
    float on_power_w;              /* above this the appliance counts as on (W) */
    float on_duration_s;           /* typical length of one on period (s) */
    float max_power_w;             /* largest plausible power (W) */
} gt_io_appliance;

typedef struct gt_nilm_shard {
    int n_households_total; /* H in the file */
    int n_appliances;       /* A */
    gt_io_appliance *meta;  /* [A] (names, thresholds) */
    int n_households;       /* local count */
    int32_t *index;         /* [n_households] position in the file's /households */
    int64_t *id;            /* [n_households] */
    double *period_s;       /* [n_households] */
    uint8_t *owns;          /* [n_households, A] or NULL when the file has none */
    int64_t n_rows;         /* local rows */
    int64_t *row_offset;    /* [n_households + 1] local offsets into the arrays below */
    int64_t *timestamps;    /* [n_rows] ms since the Unix epoch */
    float *aggregate;       /* [n_rows] W */
    float *appliances;      /* [n_rows, A] W, row-major */
    uint8_t *fault_flags;   /* [n_rows] GT_FAULT_* bits, or NULL when absent */
    int has_lowres;
    double lowres_period_s;
    int64_t n_lowres_rows;
    int64_t *lowres_offset;    /* [n_households + 1] or NULL */
    int64_t *lowres_timestamps;/* [n_lowres_rows] */
    float *lowres_aggregate;   /* [n_lowres_rows] */
    float *lowres_appliances;  /* [n_lowres_rows, A] */
    gt_read_stats stats;
} gt_nilm_shard;

/* Collective over comm. This rank's share; free with gt_nilm_shard_free.
 * opts->value_limit: the power limit in W (data.power_limit_w); NULL:
 * GT_NILM_POWER_LIMIT_W. */
static inline gt_nilm_shard *gt_nilm_shard_read_opts(const char *path, const gt_read_opts *opts, MPI_Comm comm) {
    return (gt_nilm_shard *)gt_io_read(path, GT_KIND_NILM, opts, comm);
}
static inline gt_nilm_shard *gt_nilm_shard_read(const char *path, MPI_Comm comm) {
    return gt_nilm_shard_read_opts(path, NULL, comm);
}
void gt_nilm_shard_free(gt_nilm_shard *s);

/* Cheap description of one NILM household. */
typedef struct gt_nilm_item {
    int64_t id;      /* stable household id */
    int64_t n_rows;  /* rows at period_s (>= 1) */
    int64_t t0_ms;   /* time stamp of row 0, ms since the Unix epoch */
    double period_s; /* sample period; row i is at t0_ms + llround(i * period_s * 1000) */
} gt_nilm_item;

typedef struct gt_nilm_source {
    int n_households;
    int n_appliances;
    const gt_io_appliance *meta;   /* [n_appliances] */
    int has_faults;                /* write /fault_flags */
    double lowres_period_s;        /* > 0: write the /lowres channel (bin means) */
    const char *generator;         /* provenance, root attribute "generator" */
    const char *generator_config;  /* root attribute "generator_config" ("key=value; ...") */
    uint64_t seed;                 /* root attribute "generator_seed" */
    void *ctx;
    /* Sizes of household h; owns[n_appliances] (may be NULL) gets 1 for owned
     * appliances. Pure and cheap: called for every household on every rank. */
    void (*info)(void *ctx, int h, gt_nilm_item *item, uint8_t *owns);
    /* Whole household h: aggregate [n_rows] W, appliances [n_rows, n_appliances] W,
     * faults [n_rows] GT_FAULT_* bits (NULL when has_faults == 0). */
    void (*generate)(void *ctx, int h, float *aggregate, float *appliances, uint8_t *faults);
} gt_nilm_source;

/* Writes a NILM file. Collective over comm. opts NULL: defaults; stats may be
 * NULL. Errors end the job (GT_EXIT_RESOURCE when the file cannot be created,
 * GT_EXIT_LIBRARY for HDF5 failures). */
void gt_nilm_write(const char *path, const gt_nilm_source *src, const gt_write_opts *opts, MPI_Comm comm,
                   gt_write_stats *stats);

#endif
