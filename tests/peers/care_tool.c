/* tests/peers/care_tool.c: gridtrain's CARE score (gt_care_event_score,
 * gt_care_protocol_final) on crafted predictions, for care_identity.py.
 * stdin: the number of events E, then per event
 *   n ev_start ev_end anomaly     (rows [ev_start, ev_end) of n prediction rows)
 *   pred   n characters 0/1       (predicted anomaly)
 *   normal n characters 0/1       (normal_index)
 * stdout: per event "event detected max_criticality coverage accuracy
 * earliness", then "final score coverage accuracy earliness reliability
 * n_detected" (%.17g, nan for undefined values). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "eval/metrics.h"

static int read_bits(uint8_t *v, long n) {
    for (long i = 0; i < n; i++) {
        int c;
        do c = getchar();
        while (c == ' ' || c == '\n' || c == '\r');
        if (c != '0' && c != '1') return -1;
        v[i] = (uint8_t)(c == '1');
    }
    return 0;
}

int main(void) {
    int ne;
    if (scanf("%d", &ne) != 1 || ne < 0 || ne > 100000) return 2;
    gt_care_event_eval *ev = calloc((size_t)ne + 1, sizeof *ev);
    for (int e = 0; e < ne; e++) {
        long n, s, z;
        int an;
        if (scanf("%ld %ld %ld %d", &n, &s, &z, &an) != 4 || n <= 0 || n > 100000000) return 2;
        uint8_t *p = malloc((size_t)n), *nm = malloc((size_t)n);
        if (!p || !nm || read_bits(p, n) || read_bits(nm, n)) return 2;
        gt_care_event_score(p, nm, n, s, z, an, GT_CARE_CRITICALITY_THRESHOLD, &ev[e]);
        printf("event %d %.17g %.17g %.17g %.17g\n", ev[e].detected, ev[e].max_criticality, ev[e].coverage,
               ev[e].accuracy, ev[e].earliness);
        free(p), free(nm);
    }
    gt_care_protocol o;
    gt_care_protocol_final(ev, ne, &o);
    printf("final %.17g %.17g %.17g %.17g %.17g %d\n", o.score, o.coverage, o.accuracy, o.earliness, o.reliability,
           o.n_detected);
    free(ev);
    return 0;
}
