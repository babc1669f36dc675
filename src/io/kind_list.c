/* io/kind_list.c: the built-in file kinds, listed once (io/kind.h). A kind
 * of a folder above io/ registers itself instead (gt_io_kind_register). */
#include "io/kind.h"
#include "io/kind_nilm.h"
#include "io/kind_pdm.h"

const gt_io_kind_i *const gt_io_kinds_builtin[] = {&gt_io_kind_nilm, &gt_io_kind_pdm};
const int gt_io_n_kinds_builtin = (int)(sizeof gt_io_kinds_builtin / sizeof gt_io_kinds_builtin[0]);
