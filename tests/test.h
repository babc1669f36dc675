/* tests/test.h: tiny assertion helpers shared by the C tests.
 * A failing check prints file:line and the values, and the test exits 1 at
 * the end (or at once with TEST_REQUIRE). TEST_SKIP exits 77 (ctest skip). */
#ifndef GT_TESTS_TEST_H
#define GT_TESTS_TEST_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int gt_test_failures = 0;

#define TEST_CHECK(cond)                                                         \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            gt_test_failures++;                                                  \
        }                                                                        \
    } while (0)
#define TEST_REQUIRE(cond)                                                       \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: required check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)
/* |a - b| <= atol + rtol * |b| */
#define TEST_CLOSE(a, b, atol, rtol)                                                      \
    do {                                                                                  \
        double ta_ = (double)(a), tb_ = (double)(b);                                      \
        if (!(fabs(ta_ - tb_) <= (atol) + (rtol)*fabs(tb_))) {                            \
            fprintf(stderr, "%s:%d: %s = %.9g, expected %s = %.9g (atol %g rtol %g)\n",   \
                    __FILE__, __LINE__, #a, ta_, #b, tb_, (double)(atol), (double)(rtol)); \
            gt_test_failures++;                                                           \
        }                                                                                 \
    } while (0)
#define TEST_EQ_INT(a, b)                                                                  \
    do {                                                                                   \
        long long ta_ = (long long)(a), tb_ = (long long)(b);                              \
        if (ta_ != tb_) {                                                                  \
            fprintf(stderr, "%s:%d: %s = %lld, expected %lld\n", __FILE__, __LINE__, #a, ta_, tb_); \
            gt_test_failures++;                                                            \
        }                                                                                  \
    } while (0)
#define TEST_SKIP(...)                      \
    do {                                    \
        fprintf(stderr, "skipped: ");       \
        fprintf(stderr, __VA_ARGS__);       \
        fputc('\n', stderr);                \
        exit(77);                           \
    } while (0)
/* A test (or part) that needs a GPU and has none: skip (77), or fail when
 * GT_TEST_REQUIRE_GPU=1 (tests/gpu/run.sh sets it where nvidia-smi sees a
 * GPU: there a skip would hide a broken device setup). */
#define TEST_SKIP_NO_GPU(...)                                                  \
    do {                                                                       \
        const char *gt_req_ = getenv("GT_TEST_REQUIRE_GPU");                   \
        if (gt_req_ && gt_req_[0] == '1') {                                    \
            fprintf(stderr, "GT_TEST_REQUIRE_GPU=1, but: ");                   \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            exit(1);                                                           \
        }                                                                      \
        TEST_SKIP(__VA_ARGS__);                                                \
    } while (0)
#define TEST_DONE()                                                          \
    do {                                                                     \
        if (gt_test_failures) {                                              \
            fprintf(stderr, "%d check(s) failed\n", gt_test_failures);       \
            return 1;                                                        \
        }                                                                    \
        return 0;                                                            \
    } while (0)
#endif
