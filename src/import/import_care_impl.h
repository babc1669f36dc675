/* import/import_care_impl.h: what the files of the CARE to Compare importer
 * share (import_care.c: the driver and the file's source; import_care_plan.c:
 * the farm folder's plan; import_care_rows.c: one turbine's rows on the
 * grid). Private to import/. */
#ifndef GT_IMPORT_IMPORT_CARE_IMPL_H
#define GT_IMPORT_IMPORT_CARE_IMPL_H

#include <limits.h>
#include <stdint.h>

#include "import/import_impl.h"
#include "io/format.h"

/* label / event kind codes (/legend/event_kind) */
enum { K_NORMAL = 0, K_ANOMALY = 1, K_DERATED = 2, K_SERVICE = 3, K_DOWNTIME = 4, K_OTHER = 5, N_KINDS = 6 };
/* segment condition codes (/legend/condition): the rows' train_test flag */
enum { C_TRAIN = 0, C_PRED = 1, C_BOTH = 2, C_NONE = 3, N_CONDS = 4 };

typedef struct {
    char path[PATH_MAX];
    int64_t event_id;
    int *colmap; /* [file columns] -> channel */
    int n_fcols;
} dfile;

typedef struct {
    int64_t id;
    int index; /* into the plan's ev */
} care_ev_ref;

typedef struct {
    int64_t asset;
    int n_files;
    int *files;  /* indices into plan.f */
    int64_t bytes;
} turbine;

typedef struct {
    int T, C, F;
    turbine *t;
    dfile *f;
    gt_io_channel *ch;  /* [C] */
    uint8_t *angle;     /* [C] */
    gt_care_event *ev;
    int n_ev;
    care_ev_ref *ev_by_id; /* [n_ev] sorted by id (ids are distinct): care_event_find */
    int farm;
    /* shared after parsing */
    int64_t *n_rows, *t0, *n_seg, *n_evt, *n_ce;
    gt_io_span **seg, **evs; /* [T] */
    int64_t **ce;            /* [T]: CARE event datasets, CE_K values each (/care_events) */
    void **blob;             /* [T]: signals [n, C], labels [n] */
    char config[1024];
} care_plan;

/* one /care_events entry: turbine, event_id, label (1 anomaly), pred_start, pred_end, event_start, event_end,
 * train_start, train_end (GT_CARE_EVENT_K) */
enum { CE_K = GT_CARE_EVENT_K };

typedef struct {
    gt_series_stats s;
    int64_t bytes, outside;
} care_stats;

/* import_care_plan.c: the plan of the farm folder o->src (files, channels,
 * turbines, event_info.csv); errors in d. */
void gt_care_plan_build(care_plan *P, const gt_import_opts *o, gt_diag *d);
void gt_care_plan_free(care_plan *P);
/* the event_info.csv event with this id, or NULL */
const gt_care_event *gt_care_event_find(const care_plan *P, int64_t id);

/* import_care_rows.c: turbine ti's files parsed, merged and resampled onto
 * the grid into the plan's shared arrays. 0, or -1 with the error in d. */
int gt_care_build_turbine(care_plan *P, int ti, const gt_import_opts *o, gt_diag *d, care_stats *cs);

#endif
