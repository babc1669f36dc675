#include <string.h>
#include <time.h>

#include "core/timer.h"
#include "test.h"

static void sleep_ms(int ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

int main(void) {
    int a = gt_event_register("read");
    int b = gt_event_register("forward");
    TEST_EQ_INT(gt_event_register("read"), a);
    TEST_CHECK(a != b);
    TEST_CHECK(!strcmp(gt_event_name(b), "forward"));
    gt_event_begin(a);
    gt_event_begin(a); /* nested: counted once */
    sleep_ms(20);
    gt_event_end(a);
    gt_event_end(a);
    gt_event_begin(b);
    sleep_ms(5);
    gt_event_end(b);
    TEST_EQ_INT(gt_event_calls(a), 1);
    /* lower bounds only: a sleep lasts at least its time, and any longer on a loaded machine (an upper
     * bound and "5 ms < 20 ms" were a test of the machine's load; issue #37, class 8) */
    TEST_CHECK(gt_event_seconds(a) >= 0.019);
    TEST_CHECK(gt_event_seconds(b) >= 0.004);
    const double b0 = gt_event_seconds(b);
    gt_event_add(b, 1.0, 3); /* recorded time: exact */
    TEST_EQ_INT(gt_event_calls(b), 4);
    TEST_CLOSE(gt_event_seconds(b), b0 + 1.0, 1e-12, 0);
    TEST_CHECK(gt_peak_rss_bytes() > 1024 * 1024);
    TEST_CHECK(gt_current_rss_bytes() > 0);
    gt_events_reset();
    TEST_EQ_INT(gt_event_calls(a), 0);
    TEST_DONE();
}
