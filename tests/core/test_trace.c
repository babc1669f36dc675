/* core/trace.h: the bounded span buffer behind train.trace. Off: the timer
 * records nothing; on: timer events become spans; the buffer never grows
 * (spans beyond the capacity are counted as dropped); step sampling is the
 * first N steps, then every k-th; gt_trace_sample forces and restores. */
#include <string.h>

#include "core/timer.h"
#include "core/trace.h"
#include "test.h"

int main(void) {
    int ev = gt_event_register("phase");
    gt_event_begin(ev);
    gt_event_end(ev);
    TEST_EQ_INT(gt_trace_count(), 0); /* off: nothing recorded, nothing allocated */
    TEST_CHECK(gt_trace_spans() == NULL);
    TEST_EQ_INT(gt_trace_step(0), 0);

    TEST_REQUIRE(gt_trace_start(5, 2, 10) == 0);
    gt_event_begin(ev);
    gt_event_begin(ev); /* nested calls of one event: one span (the outer) */
    gt_event_end(ev);
    gt_event_end(ev);
    TEST_EQ_INT(gt_trace_count(), 1);
    TEST_CHECK(!strcmp(gt_trace_spans()[0].name, "phase"));
    TEST_CHECK(gt_trace_spans()[0].t1 >= gt_trace_spans()[0].t0);
    TEST_EQ_INT(gt_trace_spans()[0].tid, 0);

    /* sampling: steps 0, 1 (first 2), then 10, 20 ... */
    int want[25] = {0};
    want[0] = want[1] = want[10] = want[20] = 1;
    for (int s = 0; s < 25; s++) TEST_EQ_INT(gt_trace_step(s), want[s]);
    TEST_EQ_INT(gt_trace_step(3), 0);
    TEST_EQ_INT(GT_TRACE_ON(), 0);
    gt_event_begin(ev);
    gt_event_end(ev);
    TEST_EQ_INT(gt_trace_count(), 1); /* an unsampled step records nothing */
    int was = gt_trace_sample(1);     /* validation, checkpoints: always */
    TEST_EQ_INT(was, 0);
    gt_trace_record("forced", 1.0, 2.0, "step", 3);
    gt_trace_sample(was);
    TEST_EQ_INT(GT_TRACE_ON(), 0);
    TEST_EQ_INT(gt_trace_count(), 2);
    TEST_EQ_INT(gt_trace_spans()[1].arg, 3);
    TEST_CHECK(!strcmp(gt_trace_spans()[1].arg_name, "step"));

    /* bounded: capacity 5, 10 more spans -> 5 kept, 7 dropped */
    gt_trace_sample(1);
    for (int i = 0; i < 10; i++) gt_trace_record("x", i, i + 1, NULL, 0);
    TEST_EQ_INT(gt_trace_count(), 5);
    TEST_EQ_INT(gt_trace_dropped(), 7);
    TEST_EQ_INT(gt_trace_capacity(), 5);

    gt_trace_stop();
    TEST_EQ_INT(GT_TRACE_ON(), 0);
    TEST_EQ_INT(gt_trace_count(), 0);
    TEST_CHECK(gt_trace_start(0, 1, 1) != 0); /* no room: refused, stays off */
    TEST_CHECK(gt_trace_start(4, 0, 0) != 0);
    TEST_EQ_INT(gt_trace_enabled(), 0);
    TEST_DONE();
}
