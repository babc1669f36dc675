/* tests/core/test_suggest.c: the edit distance behind "did you mean"
 * (core/suggest.h) against hand-counted cases, its cap, and the nearness
 * rule of gt_suggest. */
#include <string.h>

#include "core/suggest.h"
#include "test.h"

int main(void) {
    TEST_EQ_INT(gt_edit_distance("", "", 9), 0);
    TEST_EQ_INT(gt_edit_distance("abc", "", 9), 3);
    TEST_EQ_INT(gt_edit_distance("", "abcd", 9), 4);
    TEST_EQ_INT(gt_edit_distance("kitten", "sitting", 9), 3);
    TEST_EQ_INT(gt_edit_distance("train", "tarin", 9), 1);  /* one swap of neighbours */
    TEST_EQ_INT(gt_edit_distance("ca", "abc", 9), 3);       /* optimal string alignment, not full Damerau */
    TEST_EQ_INT(gt_edit_distance("max_stepz", "max_steps", 9), 1);
    TEST_EQ_INT(gt_edit_distance("flaw", "lawn", 9), 2);
    TEST_EQ_INT(gt_edit_distance("kitten", "sitting", 2), 2); /* capped */
    TEST_EQ_INT(gt_edit_distance("a", "abcdefgh", 3), 3);     /* length difference alone reaches the cap */
    char longer[300];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = 0;
    TEST_EQ_INT(gt_edit_distance(longer, longer, 5), 5); /* over 255 bytes: "too far", never a stack overflow */
    /* symmetric */
    TEST_EQ_INT(gt_edit_distance("sitting", "kitten", 9), gt_edit_distance("kitten", "sitting", 9));

    const char *keys[] = {"train.max_steps", "train.batch", NULL, "data.window", "train.lr"};
    size_t n = sizeof keys / sizeof *keys;
    TEST_CHECK(gt_suggest("train.max_stepz", keys, n) == keys[0]);
    TEST_CHECK(gt_suggest("data.windw", keys, n) == keys[3]);
    TEST_CHECK(gt_suggest("train.lr", keys, n) == keys[4]);
    TEST_CHECK(gt_suggest("zzzzzzzzzz", keys, n) == NULL);
    TEST_CHECK(gt_suggest("x", keys, n) == NULL);
    /* limit max(1, len/4) + 1, at most 3: "train.batxx" is 2 from train.batch (len 11: limit 3) */
    TEST_CHECK(gt_suggest("train.batxx", keys, n) == keys[1]);
    const char *cmds[] = {"eval", "train", "synth"};
    TEST_CHECK(gt_suggest("evl", cmds, 3) == cmds[0]);
    TEST_CHECK(gt_suggest("tarin", cmds, 3) == cmds[1]);
    TEST_CHECK(gt_suggest("doctor", cmds, 3) == NULL);
    TEST_DONE();
}
