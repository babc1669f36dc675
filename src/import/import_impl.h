/* import/import_impl.h: pieces shared by the importers' drivers (import.c,
 * import_nilm.c, import_care.c). Private to import/. */
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

/* Sorted house numbers of the "house_N" directories (ukdale, redd) or the
 * "CLEAN_HouseN.csv" files (refit) in dir. Returns the count (*out malloc'ed,
 * NULL when 0), or -1 with an error in d: dir cannot be listed, or a house
 * number above INT_MAX (named with its folder). */
int gt_import_list_houses(const char *dir, int refit, int **out, gt_diag *d);

int64_t gt_import_file_bytes(const char *path); /* -1 when missing */

void gt_import_nilm(const gt_import_opts *o, const gt_appliance_map *map, MPI_Comm comm, gt_import_stats *st);
void gt_import_care(const gt_import_opts *o, const gt_appliance_map *map, MPI_Comm comm, gt_import_stats *st);

#endif
