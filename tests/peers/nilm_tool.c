/* tests/peers/nilm_tool.c: gridtrain's NILM metrics (gt_nilm_acc_add,
 * gt_nilm_metrics_from_acc, the functions eval uses) on given samples, for
 * nilm_identity.py.
 * stdin: n on_power_w, then n lines "y yhat" (true and predicted power, W)
 * stdout: "mae sae nde precision recall f1 ea" (%.17g, nan when undefined) */
#include <stdio.h>

#include "nilm/nilm_metrics.h"

int main(void) {
    long n;
    double on;
    if (scanf("%ld %lf", &n, &on) != 2 || n < 0) return 2;
    gt_nilm_acc a = {0};
    for (long i = 0; i < n; i++) {
        double y, yh;
        if (scanf("%lf %lf", &y, &yh) != 2) return 2;
        gt_nilm_acc_add(&a, y, yh, on, 1.0 / 3600);
    }
    gt_nilm_metrics m;
    gt_nilm_metrics_from_acc(&a, &m);
    printf("%.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", m.mae_w, m.sae, m.nde, m.precision, m.recall, m.f1, m.ea);
    return 0;
}
