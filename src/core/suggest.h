/* src/core/suggest.h: "did you mean" for mistyped names (config keys,
 * options, commands). */
#ifndef GT_CORE_SUGGEST_H
#define GT_CORE_SUGGEST_H

#include <stddef.h>

/* Optimal-string-alignment distance between a and b (insertions, deletions,
 * substitutions and swaps of two neighbours each cost 1), stopping at `cap`:
 * a result of cap means "cap or more". Strings over 255 bytes compare as
 * cap. */
int gt_edit_distance(const char *a, const char *b, int cap);

/* The candidate nearest to word when it is near enough to be a slip of the
 * keyboard: distance at most max(1, strlen(word) / 4) + 1, capped at 3
 * (train.max_stepz -> train.max_steps, tarin -> train); ties go to the
 * earlier candidate. NULL when none is that near. */
const char *gt_suggest(const char *word, const char *const *cands, size_t n);

#endif
