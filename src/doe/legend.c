/* doe/legend.c: condition names of a wind-farm file (/legend/condition), so a
 * matrix can say `condition = low_wind,rated`, and its CARE event dataset ids
 * (/care_events/event_id, through io/'s checked reader), so it can say
 * `care_event = all`, and its household/turbine ids (the samples of a data
 * rung, doe/halving.h). Small independent (serial) HDF5 reads of optional
 * datasets; everything else about the file is io/'s.
 * TODO(io): move next to io/read.h when io/ grows a legend reader. */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "doe/matrix.h"
#include "doe/run.h"
#include "io/format.h"
#include "io/h5.h"
#include "io/read.h"
#include "synth/synth.h"

/* HDF5's error printing off while a file that may not be ours is probed:
 * open_quiet opens path read-only (< 0 when it cannot) and keeps the old
 * handler in *q for close_quiet, which closes f (when open) and restores it. */
typedef struct quiet_h5 {
    H5E_auto2_t fn;
    void *data;
} quiet_h5;
static hid_t open_quiet(const char *path, quiet_h5 *q) {
    H5Eget_auto2(H5E_DEFAULT, &q->fn, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    char why[1024];
    hid_t f = gt_h5_open_serial(path, why, sizeof why); /* links out of the file refused */
    if (f < 0) H5Eset_auto2(H5E_DEFAULT, q->fn, q->data);
    return f;
}
static void close_quiet(hid_t f, const quiet_h5 *q) {
    H5Fclose(f);
    H5Eset_auto2(H5E_DEFAULT, q->fn, q->data);
}

int gt_doe_condition_names(const char *path, char names[][GT_DOE_NAME_LEN], int max_names) {
    int n = 0;
    quiet_h5 q;
    hid_t f = open_quiet(path, &q);
    if (f < 0) return -1;
    if (H5Lexists(f, "/legend", H5P_DEFAULT) > 0 && H5Lexists(f, "/legend/condition", H5P_DEFAULT) > 0) {
        hid_t d = H5Dopen2(f, "/legend/condition", H5P_DEFAULT);
        hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
        hssize_t cnt = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : 0;
        if (cnt > 0 && cnt <= 256) {
            char buf[256][GT_FORMAT_NAME_LEN];
            hid_t t = H5Tcopy(H5T_C_S1);
            H5Tset_size(t, GT_FORMAT_NAME_LEN);
            H5Tset_strpad(t, H5T_STR_NULLPAD);
            if (H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0) {
                for (hssize_t i = 0; i < cnt && n < max_names; i++, n++) {
                    memcpy(names[n], buf[i], GT_FORMAT_NAME_LEN < GT_DOE_NAME_LEN ? GT_FORMAT_NAME_LEN : GT_DOE_NAME_LEN);
                    names[n][GT_DOE_NAME_LEN - 1] = 0;
                }
            }
            H5Tclose(t);
        }
        if (sp >= 0) H5Sclose(sp);
        if (d >= 0) H5Dclose(d);
    }
    close_quiet(f, &q);
    if (n == 0) /* no legend: the synthetic generator's codes (docs/data-format.md) */
        for (; n < GT_PDM_N_CONDITIONS && n < max_names; n++) snprintf(names[n], GT_DOE_NAME_LEN, "%s", gt_pdm_condition_name(n));
    return n;
}

int gt_doe_care_event_ids(const char *path, int64_t **ids, char *why, size_t why_bytes) {
    int64_t n = 0;
    *ids = gt_care_event_ids_read(path, &n, why, why_bytes);
    if (!*ids && why[0]) return -1;
    if (n > INT32_MAX / 2) {
        free(*ids);
        *ids = NULL;
        snprintf(why, why_bytes, "%s: /care_events: %lld event datasets", path, (long long)n);
        return -1;
    }
    return (int)n;
}

int64_t gt_doe_item_ids(const char *path, int64_t **ids, char *why, size_t why_bytes) {
    *ids = NULL;
    quiet_h5 q;
    hid_t f = open_quiet(path, &q);
    if (f < 0) {
        snprintf(why, why_bytes, "%s: cannot be opened as HDF5", path);
        return -1;
    }
    const char *name = H5Lexists(f, "/households", H5P_DEFAULT) > 0 ? "/households/id"
                       : H5Lexists(f, "/turbines", H5P_DEFAULT) > 0 ? "/turbines/id" : NULL;
    int64_t n = -1;
    hid_t d = name && H5Lexists(f, name, H5P_DEFAULT) > 0 ? H5Dopen2(f, name, H5P_DEFAULT) : -1;
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    hssize_t cnt = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    if (cnt >= 0 && cnt <= (hssize_t)GT_DOE_MAX_CELLS * 64) {
        *ids = GT_MALLOC(sizeof **ids * (size_t)(cnt + 1));
        if (H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, *ids) >= 0) n = cnt;
    }
    if (n < 0) {
        free(*ids);
        *ids = NULL;
        snprintf(why, why_bytes, "%s: no readable /households/id or /turbines/id", path);
    }
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    close_quiet(f, &q);
    return n;
}
