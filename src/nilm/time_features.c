/* nilm/time_features.c: NILM time-of-day / week features of the rows (see
 * nilm.h). */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/check.h"
#include "core/log.h"
#include "nilm/nilm.h"

int gt_nilm_time_features_parse(const char *text) {
    if (!text || !*text || !strcmp(text, "none")) return 0;
    if (!strcmp(text, "day")) return 2;
    if (!strcmp(text, "day+week")) return 4;
    return -1;
}

static int zone_is_utc(const char *zone) { return !zone || !*zone || !strcmp(zone, "UTC"); }

/* The UTC offset comes from the C library's time-zone database (localtime_r
 * with TZ = zone), looked up again whenever the time crosses a quarter hour
 * (zones change offset on quarter hours) or goes back (the next item), so
 * daylight saving moves the features at the right row. */
void gt_nilm_time_features(const int64_t *ts, int64_t n_rows, int F, const char *zone, float *out) {
    if (F == 0) return;
    const int utc = zone_is_utc(zone);
    char *old_tz = NULL;
    if (!utc) {
        const char *o = getenv("TZ");
        old_tz = o ? strdup(o) : NULL;
        setenv("TZ", zone, 1);
        tzset();
    }
    const double two_pi = 6.283185307179586;
    int64_t next_check = INT64_MIN; /* s */
    double off = 0.0;               /* s east of UTC */
    for (int64_t r = 0; r < n_rows; r++) {
        int64_t ms = ts[r];
        int64_t sec = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
        if (!utc && (sec >= next_check || sec < next_check - 900)) {
            time_t tt = (time_t)sec;
            struct tm tmv;
            off = localtime_r(&tt, &tmv) ? (double)tmv.tm_gmtoff : 0.0;
            int64_t q = sec >= 0 ? sec / 900 : -((-sec + 899) / 900);
            next_check = (q + 1) * 900;
        }
        double local = (double)ms / 1000.0 + off;
        double day = fmod(local, 86400.0);
        if (day < 0) day += 86400.0;
        float *f = out + r * F;
        f[0] = (float)sin(two_pi * day / 86400.0);
        f[1] = (float)cos(two_pi * day / 86400.0);
        if (F == 4) { /* 1970-01-01 was a Thursday: +3 days puts Monday 00:00 at phase 0 */
            double week = fmod(local + 3.0 * 86400.0, 604800.0);
            if (week < 0) week += 604800.0;
            f[2] = (float)sin(two_pi * week / 604800.0);
            f[3] = (float)cos(two_pi * week / 604800.0);
        }
    }
    if (!utc) {
        if (old_tz) setenv("TZ", old_tz, 1);
        else unsetenv("TZ");
        tzset();
        free(old_tz);
    }
}
