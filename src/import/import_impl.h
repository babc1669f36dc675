/* import/import_impl.h: pieces shared by the importers' dispatcher (import.c)
 * and drivers (import_nilm.c, import_care.c), defined in import_common.c; the
 * drivers' entry points. Private to import/. */
#ifndef GT_IMPORT_IMPORT_IMPL_H
#define GT_IMPORT_IMPORT_IMPL_H

#include <mpi.h>
#include <stdint.h>

#include "import/import.h"
#include "import/import_parse.h"

#define GT_IMPORT_GAP_BIT 2 /* /fault_flags bit of a gap row (GT_FAULT gap) */

/* Collective: when any rank's diag holds an error, the error of the lowest
 * item index (err_item; INT32_MAX when none on this rank) ends the job on every
 * rank (printed once by rank 0). Returns when no rank has an error. */
void gt_import_agree(MPI_Comm comm, const gt_diag *d, int err_item);

/* Collective: moves blob[i] (blob_bytes[i] bytes, known on every rank) from
 * rank from[i] to rank to[i] for every item with from != to. The sender frees
 * its copy; the receiver allocates. Deadlock free: every rank walks the items
 * in the same order. */
void gt_import_move(void **blob, const int64_t *blob_bytes, const int *from, const int *to, int n_items,
                    MPI_Comm comm);

/* Loads the appliance map: path when given (an error when unreadable), else the
 * default datasets/appliance_map.ini searched in $GT_DATA_DIR, next to the
 * executable (../datasets, ../share/gridtrain) and ./datasets; NULL map when
 * none is found (labels are kept as they are). Every rank reads it. */
int gt_import_map_load(const char *path, gt_appliance_map *m, gt_diag *d);

/* The number of a file or folder name PREFIX<digits>SUFFIX ("house_3",
 * "CLEAN_House3.csv", "10.csv"): GT_NAME_OK with *v, GT_NAME_OTHER for a name
 * of another form (a sign, a blank, a fraction, no digits: strtol's "+7" and
 * " 7" are not numbers here), GT_NAME_RANGE above max, GT_NAME_ZERO for a
 * leading zero ("010": one number has one spelling, so two names never give
 * one id; *v is the number it would be). */
enum { GT_NAME_OK = 0, GT_NAME_OTHER = 1, GT_NAME_RANGE = 2, GT_NAME_ZERO = 3 };
int gt_import_name_number(const char *name, const char *prefix, const char *suffix, int64_t max, int64_t *v);
/* The error of a GT_NAME_RANGE or GT_NAME_ZERO name in dir: one line naming
 * it, `what` the number is ("house number"), and the canonical name beside it
 * when that exists. Returns -1. */
int gt_import_name_error(const char *dir, const char *name, const char *what, int rc, const char *prefix,
                         const char *suffix, int64_t v, int64_t max, gt_diag *d);

/* Sorted house numbers of the "house_N" directories (ukdale, redd) or the
 * "CLEAN_HouseN.csv" files (refit) in dir. Returns the count (*out malloc'ed,
 * NULL when 0), or -1 with an error in d: dir cannot be listed, a house
 * number above INT_MAX or with a leading zero (named with its folder). */
int gt_import_list_houses(const char *dir, int refit, int **out, gt_diag *d);

int64_t gt_import_file_bytes(const char *path); /* -1 when missing */

void gt_import_nilm(const gt_import_opts *o, const gt_appliance_map *map, MPI_Comm comm, gt_import_stats *st);
void gt_import_care(const gt_import_opts *o, const gt_appliance_map *map, MPI_Comm comm, gt_import_stats *st);

#endif
