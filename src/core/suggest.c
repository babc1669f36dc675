/* src/core/suggest.c: edit distance and nearest-name suggestion. */
#include "core/suggest.h"

#include <string.h>

#define GT_SUGGEST_MAXLEN 255

int gt_edit_distance(const char *a, const char *b, int cap) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > GT_SUGGEST_MAXLEN || lb > GT_SUGGEST_MAXLEN) return cap;
    if ((la > lb ? la - lb : lb - la) >= (size_t)cap) return cap;
    /* three rows of the (la+1) x (lb+1) table: the swap rule looks two back */
    int rows[3][GT_SUGGEST_MAXLEN + 1];
    int *pp = rows[0], *p = rows[1], *c = rows[2];
    for (size_t j = 0; j <= lb; j++) p[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        c[0] = (int)i;
        int best = c[0];
        for (size_t j = 1; j <= lb; j++) {
            int sub = p[j - 1] + (a[i - 1] != b[j - 1]);
            int del = p[j] + 1, ins = c[j - 1] + 1;
            int d = sub < del ? sub : del;
            if (ins < d) d = ins;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < d) d = pp[j - 2] + 1;
            c[j] = d;
            if (d < best) best = d;
        }
        if (best >= cap) return cap; /* every path through this row already costs cap */
        int *t = pp;
        pp = p, p = c, c = t;
    }
    return p[lb] < cap ? p[lb] : cap;
}

const char *gt_suggest(const char *word, const char *const *cands, size_t n) {
    int limit = (int)(strlen(word) / 4) + 1;
    if (limit > 3) limit = 3;
    const char *best = NULL;
    int best_d = limit + 1;
    for (size_t i = 0; i < n; i++) {
        if (!cands[i]) continue;
        int d = gt_edit_distance(word, cands[i], best_d);
        if (d < best_d) best_d = d, best = cands[i];
    }
    return best;
}
