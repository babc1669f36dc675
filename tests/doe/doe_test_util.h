/* tests/doe/doe_test_util.h: what the DOE unit tests share: the train
 * table's key check a matrix is loaded with, and a file written into the
 * test's scratch directory g_dir (each test defines it). */
#ifndef GT_TESTS_DOE_TEST_UTIL_H
#define GT_TESTS_DOE_TEST_UTIL_H
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "test.h"

static char g_dir[256];

/* gt_doe_key_fn: a key of `gridtrain train`'s table */
static int train_knows(const char *key) {
    for (const gt_opt *o = gt_cmd_opts(&gt_cmd_train); o && o->key; o++)
        if (!strcmp(o->key, key)) return 1;
    return 0;
}

/* g_dir/name holding text; the path (valid until the next call) */
static const char *write_file(const char *name, const char *text) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "w");
    TEST_REQUIRE(f);
    fputs(text, f);
    fclose(f);
    return path;
}

#endif
