/* doe/matrix.h: design-of-experiments matrices (docs/doe.md).
 *
 * A matrix file is INI text:
 *
 *   [doe]
 *   name = gearbox-ga660m          ; required
 *   dir = sweeps/gearbox           ; SWEEP_DIR (default sweeps/<name>), relative to the cwd
 *   metric = pdm.event.f05         ; primary metric of the report (optional)
 *   [factors]                      ; full factorial over these levels
 *   farm = 0,1
 *   machine_type = 0,1,2
 *   condition = low_wind,rated     ; names from the file's /legend/condition, or codes
 *   seed = 1,2                     ; replicates: the report averages over seeds
 *   model.hidden = 64,128          ; any key of 'gridtrain train'
 *   [fixed]                        ; train keys shared by every cell
 *   data.file = farm.h5
 *   model.kind = lstm
 *   [train]                        ; any train section works like [fixed] (train.max_steps = 200)
 *   max_steps = 200
 *   [search]                       ; optional: strategy = grid | halving, eta, unit, min/max_budget
 *                                  ; (doe/halving.h)
 *
 * Special factor names and the train key they set: farm -> data.farms,
 * machine_type -> data.machine_types, condition -> data.conditions,
 * households / turbines / items -> data.items, appliances -> data.appliances,
 * seed -> train.seed, care_event -> data.care_event (plural spellings
 * accepted). care_event = all stands for every event dataset id of the fixed
 * data.file's /care_events (the CARE to Compare protocol: one training per
 * event dataset). A level of a filter factor
 * may join several values with '+' (households = 0-4,5-9 or appliances =
 * fridge+kettle,washer).
 *
 * Cells. Cell `index` (0 .. n_cells-1, the Slurm array index) enumerates the
 * full factorial in mixed radix, the first factor slowest. Cell `id` is the
 * first 12 hex digits of xxh64 over the cell's "factor=level" lines sorted by
 * factor name: it names the cell's directory and does not change when levels
 * are appended to a factor or factors are reordered, so a sweep can grow
 * without redoing finished cells.
 *
 * Parsing is not collective; errors name the file and line. */
#ifndef GT_DOE_MATRIX_H
#define GT_DOE_MATRIX_H

#include <stddef.h>
#include <stdint.h>

#include "doe/halving.h"

#define GT_DOE_MAX_FACTORS 16
#define GT_DOE_ID_LEN 13 /* 12 hex digits + NUL */
/* The most cells one matrix may have (docs/doe.md): every cell is a Slurm
 * array task and a directory; a matrix beyond it is refused at load. */
#define GT_DOE_MAX_CELLS (1 << 20)

typedef struct gt_doe_factor {
    char *name;    /* as written: "farm", "model.hidden" */
    char *key;     /* the train key it sets: "data.farms", "model.hidden" */
    int is_filter; /* a data filter key: '+' in a level becomes ',' */
    int line;      /* line in the matrix file */
    int n_levels;
    char **levels; /* [n_levels] as written (trimmed) */
} gt_doe_factor;

typedef struct gt_doe_setting {
    char *key;   /* "data.file" */
    char *value;
    int line;
} gt_doe_setting;

typedef struct gt_doe_matrix {
    char *path;     /* the matrix file */
    char *name;     /* [doe] name */
    char *dir;      /* SWEEP_DIR */
    char *metric;   /* [doe] metric or NULL */
    int n_factors;
    gt_doe_factor factors[GT_DOE_MAX_FACTORS];
    int n_fixed;
    gt_doe_setting *fixed; /* [n_fixed] */
    int64_t n_cells;
    gt_doe_search search; /* [search]: grid (default) or halving (doe/halving.h) */
} gt_doe_matrix;

typedef struct gt_doe_cell {
    int64_t index;
    char id[GT_DOE_ID_LEN];
    int level[GT_DOE_MAX_FACTORS]; /* level index per factor */
} gt_doe_cell;

/* 1 when `key` ("section.key") is a setting of 'gridtrain train' (cli/ passes
 * its option table's lookup; doe/ does not know the table). */
typedef int (*gt_doe_key_fn)(const char *key);

/* Reads and checks a matrix: unknown sections or factor names, keys that
 * 'train' does not know, empty levels, duplicate levels or factors (duplicate
 * cells), a key both fixed and a factor, more than 2^31 cells. Returns 0, or
 * -1 with "FILE:LINE: message" in err. */
int gt_doe_matrix_load(const char *path, gt_doe_key_fn known_key, gt_doe_matrix *m, char *err, size_t err_bytes);
void gt_doe_matrix_free(gt_doe_matrix *m);

/* Cell `index` (0 <= index < n_cells): levels and id. */
void gt_doe_cell_at(const gt_doe_matrix *m, int64_t index, gt_doe_cell *c);
/* The fixed value of `key`, or NULL. */
const char *gt_doe_fixed_get(const gt_doe_matrix *m, const char *key);

/* The event dataset ids of a PdM file's /care_events, in file order
 * (malloc'd into *ids): the levels of a factor care_event = all. Read by
 * io/'s checked reader (gt_care_event_ids_read: the file's schema, ids >= 0
 * and none twice). Returns the count (0 without the table), or -1 with one
 * line in why when the file cannot be opened or fails the check. */
int gt_doe_care_event_ids(const char *path, int64_t **ids, char *why, size_t why_bytes);

/* The household (NILM) or turbine (PdM) ids of a file, in file order
 * (malloc'd into *ids): what a data rung samples (doe/halving.h). Returns the
 * count, or -1 with one line in why. */
int64_t gt_doe_item_ids(const char *path, int64_t **ids, char *why, size_t why_bytes);

/* Maps a level text to the value written to the train key: '+' -> ',' for
 * filters; for data.conditions, names are replaced by codes using `names`
 * (n_names condition names indexed by code; may be NULL). Returns a malloc'd
 * string, or NULL with a message in err. */
char *gt_doe_level_value(const gt_doe_factor *f, const char *level, const char *const *names, int n_names,
                         char *err, size_t err_bytes);

#endif
