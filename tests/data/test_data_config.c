/* The tasks' data settings in gt_data_config (data/dataset.h): every added
 * task data table gets an aligned slice of the configuration's arena when it
 * is added, filled with its defaults by gt_data_config_defaults; a lookup
 * goes by the table's name, whatever order the tables were added in; a
 * configuration copies by value (the copy's blocks are its own); a lookup of
 * a table added after the configuration was made, two tables of one name and
 * blocks that outgrow the arena together end the job (GT_EXIT_INTERNAL) with
 * one line naming the table. */
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/check.h"
#include "data/dataset_impl.h"
#include "test.h"

/* a table's defaults: its bytes set to a value of its own */
static void fill_a(void *c) { memset(c, 0xa1, 100); }
static void fill_b(void *c) { memset(c, 0xb2, 1000); }
static void fill_c(void *c) { memset(c, 0xc3, 3); }
static void fill_big(void *c) { memset(c, 0xee, 3000); }
static const gt_data_task_i ta = {.name = "alpha", .config_bytes = 100, .config_defaults = fill_a};
static const gt_data_task_i tb = {.name = "beta", .config_bytes = 1000, .config_defaults = fill_b};
static const gt_data_task_i tc = {.name = "gamma", .config_bytes = 3, .config_defaults = fill_c};
static const gt_data_task_i tb2 = {.name = "beta", .config_bytes = 8, .config_defaults = fill_c};
static const gt_data_task_i tbig = {.name = "big", .config_bytes = 3000, .config_defaults = fill_big};

static int all(const void *p, int v, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != v) return 0;
    return 1;
}

static int aligned(const void *p) { return (uintptr_t)p % alignof(max_align_t) == 0; }

/* the block of each table holds its own defaults, inside cfg's arena, aligned, apart from the others */
static int blocks_ok(const gt_data_config *cfg, int with_c) {
    const unsigned char *a = gt_data_task_config_c(cfg, "alpha"), *b = gt_data_task_config_c(cfg, "beta");
    const unsigned char *lo = cfg->task_arena.bytes, *hi = lo + sizeof cfg->task_arena.bytes;
    int ok = all(a, 0xa1, 100) && all(b, 0xb2, 1000) && aligned(a) && aligned(b);
    ok = ok && a >= lo && a + 100 <= hi && b >= lo && b + 1000 <= hi && (a + 100 <= b || b + 1000 <= a);
    if (with_c) {
        const unsigned char *c = gt_data_task_config_c(cfg, "gamma");
        ok = ok && all(c, 0xc3, 3) && aligned(c) && c >= lo && c + 3 <= hi;
        ok = ok && (c + 3 <= a || a + 100 <= c) && (c + 3 <= b || b + 1000 <= c);
    }
    return ok;
}

/* runs fn in a child; its exit code, the first line of its stderr in line[n] */
static int child(void (*fn)(void), char *line, size_t n) {
    char path[] = "/tmp/gt_test_data_config_XXXXXX";
    int fd = mkstemp(path);
    TEST_REQUIRE(fd >= 0);
    fflush(NULL);
    pid_t pid = fork();
    TEST_REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(fd, 2);
        fn();
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    FILE *f = fopen(path, "r");
    line[0] = 0;
    if (f && !fgets(line, (int)n, f)) line[0] = 0;
    if (f) fclose(f);
    close(fd);
    unlink(path);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static gt_data_config g_old; /* made before gamma was added */
static void look_up_late(void) { (void)gt_data_task_config(&g_old, "gamma"); }
static void add_same_name(void) { gt_data_task_add(&tb2); }
static void add_too_big(void) { gt_data_task_add(&tbig); }
static void add_in_order_ba(void) { /* another order: the same answers */
    gt_data_task_add(&tb);
    gt_data_task_add(&ta);
    gt_data_config c;
    gt_data_config_defaults(&c);
    _exit(blocks_ok(&c, 0) ? 0 : 7);
}

int main(void) {
    char line[512];
    TEST_EQ_INT(child(add_in_order_ba, line, sizeof line), 0);
    gt_data_task_add(&ta);
    gt_data_task_add(&tb);
    gt_data_task_add(&ta); /* again: nothing */
    gt_data_config_defaults(&g_old);
    TEST_CHECK(blocks_ok(&g_old, 0));
    gt_data_task_add(&tc);
    gt_data_config c;
    gt_data_config_defaults(&c);
    TEST_CHECK(blocks_ok(&c, 1));
    /* a copy by value: its blocks are its own */
    gt_data_config d = c;
    memset(gt_data_task_config(&d, "alpha"), 0x5a, 100);
    TEST_CHECK(all(gt_data_task_config_c(&d, "alpha"), 0x5a, 100));
    TEST_CHECK(all(gt_data_task_config_c(&c, "alpha"), 0xa1, 100));
    TEST_CHECK(all(gt_data_task_config_c(&d, "beta"), 0xb2, 1000));
    const unsigned char *db = gt_data_task_config_c(&d, "beta");
    TEST_CHECK(db >= d.task_arena.bytes && db < d.task_arena.bytes + GT_DATA_TASK_ARENA_BYTES);
    /* the errors: one line naming the table, GT_EXIT_INTERNAL */
    TEST_EQ_INT(child(look_up_late, line, sizeof line), GT_EXIT_INTERNAL);
    TEST_CHECK(strstr(line, "data: the settings have no block of task gamma") != NULL);
    TEST_EQ_INT(child(add_same_name, line, sizeof line), GT_EXIT_INTERNAL);
    TEST_CHECK(strstr(line, "data: two task data tables named beta have settings") != NULL);
    TEST_EQ_INT(child(add_too_big, line, sizeof line), GT_EXIT_INTERNAL);
    TEST_CHECK(strstr(line, "data: task big's settings take 3000 bytes, but ") != NULL &&
               strstr(line, " of the 4096 the tasks share are taken") != NULL);
    printf("sizeof(gt_data_config) = %zu\n", sizeof(gt_data_config));
    TEST_DONE();
}
