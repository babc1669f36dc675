/* tests/core/test_sizes.c: sizes that wrap or explode (issue #37, class 5).
 * gt_array_bytes / gt_alloc_array refuse a count whose byte size overflows or
 * passes GT_ALLOC_MAX_BYTES with one line naming what (exit 4), before any
 * allocation; gt_trace_start refuses a capacity whose buffer would wrap;
 * gt_read_file_bounded refuses a sparse 1 GiB file from its size alone (nothing
 * is read: the refusal is immediate whatever the disk), names the limit, and
 * reads a file of exactly the limit; gt_repeats_i64 finds the same earliest
 * repeat as a pairwise scan, on random arrays and on 10^6 ids. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fsutil.h"
#include "core/repeat.h"
#include "core/trace.h"
#include "test.h"

static jmp_buf g_jmp;
static int g_code = -1;
static void on_abort(int code) {
    g_code = code;
    longjmp(g_jmp, 1);
}

/* Runs gt_alloc_array(n, size, what) with stderr in a file; returns the exit
 * code of the refusal (-1: allocated) and the message in msg. */
static int try_alloc(long long n, size_t size, char *msg, size_t msg_bytes) {
    char path[] = "/tmp/gt_test_sizes_XXXXXX";
    int fd = mkstemp(path);
    TEST_REQUIRE(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    g_code = -1;
    void *volatile p = NULL;
    if (!setjmp(g_jmp)) p = GT_ALLOC_ARRAY(n, size, "test spans");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    free(p);
    lseek(fd, 0, SEEK_SET);
    ssize_t got = read(fd, msg, msg_bytes - 1);
    msg[got > 0 ? got : 0] = 0;
    close(fd);
    unlink(path);
    return g_code;
}

static void test_array_bytes(void) {
    size_t b = 0;
    TEST_CHECK(gt_array_bytes(10, 8, &b) && b == 80);
    TEST_CHECK(gt_array_bytes(0, 8, &b) && b == 0);
    TEST_CHECK(!gt_array_bytes(-1, 8, &b));
    /* 2^62 x 48 wraps a 64-bit size_t to 0 bytes: refused, not allocated short */
    TEST_CHECK(!gt_array_bytes(1LL << 62, 48, &b));
    TEST_CHECK(gt_array_bytes((long long)(GT_ALLOC_MAX_BYTES / 8), 8, &b) && b == GT_ALLOC_MAX_BYTES);
    TEST_CHECK(!gt_array_bytes((long long)(GT_ALLOC_MAX_BYTES / 8) + 1, 8, &b));
    char msg[1024];
    TEST_EQ_INT(try_alloc(1LL << 62, 48, msg, sizeof msg), GT_EXIT_RESOURCE);
    TEST_CHECK(strstr(msg, "test spans: 4611686018427387904 elements of 48 bytes are beyond the limit") != NULL);
    TEST_CHECK(strchr(msg, '\n') == msg + strlen(msg) - 1); /* one line */
    TEST_EQ_INT(try_alloc(-5, 4, msg, sizeof msg), GT_EXIT_INTERNAL);
    TEST_CHECK(strstr(msg, "test spans: a negative element count (-5)") != NULL);
    TEST_EQ_INT(try_alloc(1000, 4, msg, sizeof msg), -1);
    /* the trace buffer: a capacity whose size wraps is refused (it used to allocate short and crash) */
    TEST_EQ_INT(gt_trace_start(1LL << 62, 0, 1), -1);
    TEST_CHECK(gt_trace_spans() == NULL);
    TEST_EQ_INT(gt_trace_start(16, 0, 1), 0);
    gt_trace_stop();
}

static void test_read_bounded(void) {
    char path[] = "/tmp/gt_test_sizes_json_XXXXXX";
    int fd = mkstemp(path);
    TEST_REQUIRE(fd >= 0);
    /* 1 GiB sparse: refused from its size, nothing read (a read of 1 GiB would show in the time) */
    TEST_REQUIRE(ftruncate(fd, (off_t)1 << 30) == 0);
    char why[256] = "";
    size_t n = 7;
    errno = 0;
    char *t = gt_read_file_bounded(path, GT_READ_JSON_MAX_BYTES, "a manifest.json", &n, why, sizeof why);
    TEST_CHECK(t == NULL && errno == EFBIG);
    TEST_CHECK(!strcmp(why, "1073741824 bytes, more than the 67108864 a manifest.json may have"));
    TEST_EQ_INT(n, 7); /* untouched */
    /* exactly the limit: read; one byte more: refused */
    TEST_REQUIRE(ftruncate(fd, 0) == 0);
    TEST_REQUIRE(write(fd, "{\"a\": 1}", 8) == 8);
    t = gt_read_file_bounded(path, 8, "x", &n, why, sizeof why);
    TEST_CHECK(t && n == 8 && !strcmp(t, "{\"a\": 1}"));
    free(t);
    t = gt_read_file_bounded(path, 7, "an eval.json", &n, why, sizeof why);
    TEST_CHECK(t == NULL && errno == EFBIG && strstr(why, "8 bytes, more than the 7 an eval.json may have"));
    close(fd);
    unlink(path);
    /* missing, and not a regular file: the reason, errno */
    t = gt_read_file_bounded(path, 100, "x", NULL, why, sizeof why);
    TEST_CHECK(t == NULL && errno == ENOENT && strstr(why, "No such file"));
    t = gt_read_file_bounded("/tmp", 100, "x", NULL, why, sizeof why);
    TEST_CHECK(t == NULL && strstr(why, "not a regular file") != NULL);
}

/* the pairwise scan the readers used to run: the earliest j repeating an i < j */
static int64_t pairwise(const int64_t *v, int64_t n, int64_t *first, int64_t *again) {
    int64_t reps = 0;
    *first = *again = -1;
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < j; i++)
            if (v[i] == v[j]) {
                if (*again < 0) *first = i, *again = j;
                reps++;
                break;
            }
    return reps;
}

static void test_repeats(void) {
    uint64_t x = 42;
    int64_t v[200];
    for (int trial = 0; trial < 300; trial++) {
        int n = 1 + trial % 200;
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            v[i] = (int64_t)(x >> 33) % (trial % 3 == 0 ? 1000000 : 3 * n); /* some arrays all distinct */
        }
        int64_t f1, a1, f2, a2;
        int64_t r1 = gt_repeats_i64(v, n, &f1, &a1), r2 = pairwise(v, n, &f2, &a2);
        TEST_EQ_INT(r1, r2);
        if (r2 > 0) {
            TEST_EQ_INT(f1, f2);
            TEST_EQ_INT(a1, a2);
        }
    }
    /* 10^6 distinct ids, then one repeat of the first at the end (a pairwise scan: 5 x 10^11 comparisons) */
    const int64_t n = 1000001;
    int64_t *big = malloc(sizeof *big * (size_t)n);
    TEST_REQUIRE(big);
    for (int64_t i = 0; i < n - 1; i++) big[i] = (i * 7919) % (n - 1) + 1000; /* a permutation: 7919 is prime */
    big[n - 1] = big[0];
    int64_t f = -1, a = -1;
    TEST_EQ_INT(gt_repeats_i64(big, n - 1, &f, &a), 0);
    TEST_EQ_INT(gt_repeats_i64(big, n, &f, &a), 1);
    TEST_EQ_INT(f, 0);
    TEST_EQ_INT(a, n - 1);
    free(big);
}

int main(void) {
    gt_set_abort_handler_reentrant(on_abort);
    test_array_bytes();
    test_read_bounded();
    test_repeats();
    TEST_DONE();
}
