/* tests/data/test_data_fill.c: hole filling of the NILM aggregate
 * (gt_nilm_fill_holes, gt_nilm_fill_max_rows): holes up to max_rows with a
 * finite neighbour on both sides become the straight line between the two
 * neighbours, exactly; longer holes, leading and trailing runs and Inf stay;
 * the count returned is what changed; data.fill_max_s in seconds -> rows by
 * the household's period (auto = 5 periods, 0 = off). */
#include <math.h>
#include <string.h>

#include "nilm/nilm.h"
#include "data/dataset.h"
#include "test.h"

int main(void) {
    /* rows:        0    1    2    3    4    5    6    7    8    9   10   11   12   13   14 */
    float x[15] = {NAN, 10, NAN, 30, 30, NAN, NAN, NAN, 70, NAN, NAN, NAN, NAN, 20, INFINITY};
    float y[15];
    memcpy(y, x, sizeof x);
    int64_t n = gt_nilm_fill_holes(y, 15, 3);
    TEST_EQ_INT((int)n, 4);                 /* row 2 and rows 5-7; not the 4-row hole 9-12, not the edges */
    TEST_CHECK(isnan(y[0]));                /* leading: one neighbour only */
    TEST_CHECK(y[2] == 20.0f);              /* midway between 10 and 30 */
    TEST_CHECK(y[5] == 40.0f && y[6] == 50.0f && y[7] == 60.0f); /* 30 -> 70 in four steps */
    for (int i = 9; i <= 12; i++) TEST_CHECK(isnan(y[i]));       /* longer than max_rows */
    TEST_CHECK(isinf(y[14]));               /* trailing */
    TEST_CHECK(y[1] == 10 && y[3] == 30 && y[8] == 70 && y[13] == 20); /* samples untouched */
    memcpy(y, x, sizeof x);
    TEST_EQ_INT((int)gt_nilm_fill_holes(y, 15, 4), 8); /* now the 4-row hole too: 70 -> 20 */
    TEST_CHECK(y[9] == 60.0f && y[10] == 50.0f && y[11] == 40.0f && y[12] == 30.0f);
    memcpy(y, x, sizeof x);
    TEST_EQ_INT((int)gt_nilm_fill_holes(y, 15, 0), 0); /* off */
    TEST_CHECK(!memcmp(x, y, sizeof x));

    gt_data_config c;
    gt_nilm_data_defaults(&c);
    TEST_CHECK(gt_nilm_data_cfg_set(&c)->fill_max_s < 0); /* the default: auto */
    TEST_EQ_INT((int)gt_nilm_fill_max_rows(&c, 6.0), GT_NILM_FILL_AUTO_PERIODS);
    gt_nilm_data_cfg_set(&c)->fill_max_s = 30;
    TEST_EQ_INT((int)gt_nilm_fill_max_rows(&c, 6.0), 5);
    TEST_EQ_INT((int)gt_nilm_fill_max_rows(&c, 8.0), 3);  /* whole rows only */
    TEST_EQ_INT((int)gt_nilm_fill_max_rows(&c, 0.0), 0);  /* a file without a period fills nothing */
    gt_nilm_data_cfg_set(&c)->fill_max_s = 0;
    TEST_EQ_INT((int)gt_nilm_fill_max_rows(&c, 6.0), 0);
    TEST_DONE();
}
