/* core/repeat.h: finding a repeated id in n log n.
 *
 * Inputs name things by id (event ids of a CARE farm, a DOE factor's event
 * datasets): an id listed twice is refused by its reader, and the check must
 * stay n log n on inputs of 10^6 entries and more (a pairwise search of
 * event_info.csv took 110 s at 400k lines). Not collective. */
#ifndef GT_CORE_REPEAT_H
#define GT_CORE_REPEAT_H

#include <stdint.h>

/* How many entries of v[0..n) repeat an earlier entry (0: all distinct). When
 * there is one, *first < *again are the indices of the earliest repeat in
 * order (v[*again] == v[*first], no entry before *again repeats an earlier
 * one, *first the earliest entry with that value), so a reader can name both
 * lines as a pairwise scan would. Sorts (value, index) pairs: O(n log n) time,
 * 16 n bytes. first and again may be NULL. */
int64_t gt_repeats_i64(const int64_t *v, int64_t n, int64_t *first, int64_t *again);

#endif
