/* io/kind.c: the table of file kinds: the built-in rows (io/kind_list.c) and
 * those registered from outside io/ (see kind.h). */
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "io/format.h"
#include "io/kind.h"

enum { GT_IO_MAX_KINDS = 16 };
/* Kinds added by gt_io_kind_register: set once at start-up, before any file
 * is opened, and only read after (the rows themselves are constant). */
static const gt_io_kind_i *g_registered[GT_IO_MAX_KINDS];
static int g_n_registered;

static const gt_io_kind_i *kind_at(int i) {
    return i < gt_io_n_kinds_builtin ? gt_io_kinds_builtin[i] : g_registered[i - gt_io_n_kinds_builtin];
}
static int n_kinds(void) { return gt_io_n_kinds_builtin + g_n_registered; }

const gt_io_kind_i *gt_io_kind_get(gt_file_kind id) {
    for (int i = 0; i < n_kinds(); i++)
        if (kind_at(i)->id == id) return kind_at(i);
    return NULL;
}

const gt_io_kind_i *gt_io_kind_by_name(const char *name) {
    for (int i = 0; i < n_kinds(); i++)
        if (!strcmp(kind_at(i)->name, name)) return kind_at(i);
    return NULL;
}

void gt_io_kind_register(const gt_io_kind_i *k) {
    GT_CHECK(k && k->id > GT_KIND_UNKNOWN && k->name && k->validate, GT_EXIT_INTERNAL,
             "file kind: a row needs an id > 0, a name and a validate");
    GT_CHECK(!gt_io_kind_get(k->id) && !gt_io_kind_by_name(k->name), GT_EXIT_INTERNAL,
             "file kind '%s' (id %d): the id or the name is taken", k->name, (int)k->id);
    GT_CHECK(g_n_registered < GT_IO_MAX_KINDS, GT_EXIT_INTERNAL, "file kind '%s': more than %d kinds registered",
             k->name, GT_IO_MAX_KINDS);
    g_registered[g_n_registered++] = k;
}

const char *gt_file_kind_name(gt_file_kind id) {
    const gt_io_kind_i *k = gt_io_kind_get(id);
    return k ? k->name : "unknown";
}

void gt_io_kinds_text(char *out, size_t out_bytes) {
    size_t at = 0;
    out[0] = 0;
    const int n = n_kinds();
    for (int i = 0; i < n && at < out_bytes; i++) {
        const char *sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
        int w = snprintf(out + at, out_bytes - at, "%s%s", sep, kind_at(i)->name);
        if (w < 0) break;
        at += (size_t)w;
    }
}
