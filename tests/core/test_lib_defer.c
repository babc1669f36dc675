/* tests/core/test_lib_defer.c: the deferral the check macros use while a CUDA
 * graph is captured (core/check.h; no GPU needed). Between
 * gt_lib_defer_begin and gt_lib_defer_end, gt_lib_failed returns, counts
 * every failure and keeps the first one's text; gt_lib_defer_end turns the
 * deferral off; outside it gt_lib_failed ends the job with
 * GT_EXIT_LIBRARY (the abort hook turns that into a longjmp back here); a
 * deferral on one thread does not reach another. */
#include <pthread.h>
#include <setjmp.h>
#include <string.h>

#include "core/check.h"
#include "test.h"

static jmp_buf g_jmp;
static int g_code = -1;
static void on_abort(int code) {
    g_code = code;
    longjmp(g_jmp, 1);
}

/* 1 when gt_lib_failed ended the job (the hook ran) */
static int fails_fatally(void) {
    g_code = -1;
    if (!setjmp(g_jmp)) {
        gt_lib_failed("CUDA", "cudaFree(p)", "invalid argument", NULL, "x.cu", 3);
        return 0;
    }
    return g_code == GT_EXIT_LIBRARY;
}

static void *other_thread(void *arg) {
    (void)arg;
    static int fatal;
    fatal = fails_fatally();
    return &fatal;
}

int main(void) {
    gt_set_abort_handler_reentrant(on_abort);
    /* deferred: returns, counts, keeps the first */
    gt_lib_defer_begin();
    gt_lib_failed("CUDA", "cudaStreamSynchronize(st)", "operation not permitted when stream is capturing", "hint",
                  "cuda_model.cu", 10);
    gt_lib_failed("cuBLAS", "cublasSgemm(h)", "CUBLAS_STATUS_EXECUTION_FAILED", NULL, "context.cu", 20);
    gt_lib_failed("CUDA", "cudaGetLastError()", NULL, NULL, "dense.cu", 30);
    /* another thread is not deferred */
    pthread_t th;
    void *ret = NULL;
    TEST_REQUIRE(pthread_create(&th, NULL, other_thread, NULL) == 0);
    TEST_REQUIRE(pthread_join(th, &ret) == 0);
    TEST_CHECK(*(int *)ret == 1);
    char first[512];
    TEST_EQ_INT(gt_lib_defer_end(first, sizeof first), 3);
    printf("first: %s\n", first);
    TEST_CHECK(strcmp(first, "CUDA call failed: cudaStreamSynchronize(st): operation not permitted when stream is "
                             "capturing [cuda_model.cu:10]") == 0);
    /* a new deferral starts from zero; NULL first is allowed */
    gt_lib_defer_begin();
    TEST_EQ_INT(gt_lib_defer_end(NULL, 0), 0);
    /* after the end: fatal again */
    TEST_CHECK(fails_fatally());
    TEST_DONE();
}
