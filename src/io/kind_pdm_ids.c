/* io/kind_pdm_ids.c: the serial reader of a PdM file's /care_events ids (see
 * kind_pdm.h). A file of its own: it opens the file through gt_io_open,
 * which reaches the kinds' rows, so kind_pdm.c (a row) cannot. */
#include <stdlib.h>

#include "core/check.h"
#include "io/format.h"
#include "io/h5.h"
#include "io/kind_pdm.h"

int64_t *gt_care_event_ids_read(const char *path, int64_t *n, char *err, size_t err_bytes) {
    *n = 0;
    gt_file_index ix;
    hid_t f = gt_io_open(path, MPI_COMM_SELF, GT_KIND_PDM, &ix, err, err_bytes); /* the schema, ids included */
    if (f < 0) return NULL;
    int64_t k = gt_pdm_index_of(&ix)->n_care_events, *ids = NULL;
    if (k > 0) {
        ids = GT_MALLOC(sizeof(int64_t) * (size_t)k);
        gt_h5_read_all(f, "/care_events/event_id", H5T_NATIVE_INT64, ids);
    }
    gt_file_index_free(&ix);
    H5Fclose(f);
    *n = k;
    return ids;
}
