/* doe/matrix.c: matrix files, cells and cell ids (see matrix.h). */
#define _GNU_SOURCE
#include "doe/matrix.h"

#include <ctype.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "core/check.h"
#include "core/fsutil.h"

/* Special factor names -> train key (filters take '+' joined sets). */
static const struct {
    const char *name, *key;
    int filter;
} k_special[] = {
    {"farm", "data.farms", 1},          {"farms", "data.farms", 1},
    {"machine_type", "data.machine_types", 1}, {"machine_types", "data.machine_types", 1},
    {"condition", "data.conditions", 1}, {"conditions", "data.conditions", 1},
    {"household", "data.items", 1},     {"households", "data.items", 1},
    {"turbine", "data.items", 1},       {"turbines", "data.items", 1},
    {"items", "data.items", 1},         {"appliances", "data.appliances", 0},
    {"seed", "train.seed", 0},
    {"care_event", "data.care_event", 0}, {"care_events", "data.care_event", 0},
};
static int is_filter_key(const char *key) {
    return !strcmp(key, "data.items") || !strcmp(key, "data.farms") || !strcmp(key, "data.machine_types") ||
           !strcmp(key, "data.conditions");
}

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = 0;
    return s;
}

/* Removes a comment: ';' or '#' at the start or after white space. */
static void strip_comment(char *s) {
    for (char *p = s; *p; p++)
        if ((*p == ';' || *p == '#') && (p == s || isspace((unsigned char)p[-1]))) {
            *p = 0;
            return;
        }
}

static int fail(char *err, size_t n, const char *path, int line, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) snprintf(err, n, "%s:%d: %s", path, line, msg);
    else snprintf(err, n, "%s: %s", path, msg);
    return -1;
}

void gt_doe_matrix_free(gt_doe_matrix *m) {
    for (int f = 0; f < m->n_factors; f++) {
        for (int l = 0; l < m->factors[f].n_levels; l++) free(m->factors[f].levels[l]);
        free(m->factors[f].levels);
        free(m->factors[f].name);
        free(m->factors[f].key);
    }
    for (int i = 0; i < m->n_fixed; i++) free(m->fixed[i].key), free(m->fixed[i].value);
    free(m->fixed);
    free(m->path);
    free(m->name);
    free(m->dir);
    free(m->metric);
    memset(m, 0, sizeof *m);
}

static int cmp_strp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int parse_factor(gt_doe_matrix *m, const char *name, char *value, int line, gt_doe_key_fn known_key,
                        char *err, size_t en) {
    const char *key = NULL;
    int filter = 0;
    for (size_t i = 0; i < sizeof k_special / sizeof k_special[0]; i++)
        if (!strcmp(name, k_special[i].name)) key = k_special[i].key, filter = k_special[i].filter;
    if (!key) {
        if (!strchr(name, '.') || (known_key && !known_key(name)))
            return fail(err, en, m->path, line,
                        "unknown factor '%s' (use farm, machine_type, condition, households, appliances, seed, "
                        "or a 'gridtrain train' key such as model.hidden; see 'gridtrain train --help')",
                        name);
        key = name;
        filter = is_filter_key(name);
    }
    if (m->n_factors == GT_DOE_MAX_FACTORS)
        return fail(err, en, m->path, line, "more than %d factors", GT_DOE_MAX_FACTORS);
    for (int f = 0; f < m->n_factors; f++)
        if (!strcmp(m->factors[f].key, key))
            return fail(err, en, m->path, line, "factor '%s' sets %s, which factor '%s' (line %d) already sets",
                        name, key, m->factors[f].name, m->factors[f].line);
    gt_doe_factor *F = &m->factors[m->n_factors];
    memset(F, 0, sizeof *F);
    F->name = GT_STRDUP(name);
    F->key = GT_STRDUP(key);
    F->is_filter = filter;
    F->line = line;
    m->n_factors++;
    if (!*value) return fail(err, en, m->path, line, "factor '%s' has no levels", name);
    int cap = 8;
    F->levels = GT_MALLOC(sizeof(char *) * (size_t)cap);
    char *save = NULL;
    /* strtok would merge empty fields: walk the commas by hand */
    for (char *p = value;; ) {
        char *c = strchr(p, ',');
        if (c) *c = 0;
        char *lv = trim(p);
        if (!*lv) return fail(err, en, m->path, line, "factor '%s' has an empty level (check the commas)", name);
        if (F->n_levels == INT32_MAX / 2)
            return fail(err, en, m->path, line, "factor '%s' has more than %d levels", name, INT32_MAX / 2);
        if (F->n_levels == cap) F->levels = GT_REALLOC(F->levels, sizeof(char *) * (size_t)(cap *= 2));
        F->levels[F->n_levels++] = GT_STRDUP(lv);
        if (!c) break;
        p = c + 1;
    }
    (void)save;
    /* duplicate levels: sorted copy, neighbours compared (n log n; a pairwise
     * check never finished on a factor of 10^6 levels) */
    char **sorted = GT_MALLOC(sizeof(char *) * (size_t)F->n_levels);
    memcpy(sorted, F->levels, sizeof(char *) * (size_t)F->n_levels);
    qsort(sorted, (size_t)F->n_levels, sizeof(char *), cmp_strp);
    int rc = 0;
    for (int l = 1; l < F->n_levels && !rc; l++)
        if (!strcmp(sorted[l], sorted[l - 1]))
            rc = fail(err, en, m->path, line, "factor '%s' lists level '%s' twice (duplicate cells)", name, sorted[l]);
    free(sorted);
    return rc;
}

/* One "k = v" line of [section] into m; 0, or fail()'s code. */
static int matrix_setting(gt_doe_matrix *m, const char *section, const char *k, char *v, int line,
                          gt_doe_key_fn known_key, int *cap_fixed, char *err, size_t en) {
    const char *path = m->path;
    if (!strcmp(section, "doe")) {
        char **dst = !strcmp(k, "name") ? &m->name : !strcmp(k, "dir") ? &m->dir : !strcmp(k, "metric") ? &m->metric
                     : NULL;
        if (!strcmp(k, "description")) return 0;
        if (!dst) return fail(err, en, path, line, "unknown [doe] key '%s' (name, dir, metric, description)", k);
        free(*dst);
        *dst = GT_STRDUP(v);
        return 0;
    }
    if (!strcmp(section, "factors")) return parse_factor(m, k, v, line, known_key, err, en);
    if (!strcmp(section, "search")) {
        char why[512];
        if (gt_doe_search_set(&m->search, k, v, why, sizeof why)) return fail(err, en, path, line, "%s", why);
        return 0;
    }
    char *key = NULL;
    if (!strcmp(section, "fixed")) key = GT_STRDUP(k);
    else GT_CHECK(asprintf(&key, "%s.%s", section, k) >= 0, GT_EXIT_RESOURCE, "out of memory");
    int rc = 0;
    if (!strchr(key, '.') || (known_key && !known_key(key))) {
        rc = fail(err, en, path, line, "unknown setting '%s' (see 'gridtrain train --help')", key);
        free(key);
        return rc;
    }
    for (int i = 0; i < m->n_fixed; i++)
        if (!strcmp(m->fixed[i].key, key)) {
            rc = fail(err, en, path, line, "'%s' is set twice (first on line %d)", key, m->fixed[i].line);
            break;
        }
    if (rc) {
        free(key);
        return rc;
    }
    if (m->n_fixed == *cap_fixed) {
        *cap_fixed = *cap_fixed ? 2 * *cap_fixed : 16;
        m->fixed = GT_REALLOC(m->fixed, sizeof *m->fixed * (size_t)*cap_fixed);
    }
    m->fixed[m->n_fixed++] = (gt_doe_setting){key, GT_STRDUP(v), line};
    return 0;
}

/* The lines of the matrix file f into m; the line of [doe] in *doe_line. 0,
 * or fail()'s code. */
static int matrix_read(gt_doe_matrix *m, FILE *f, gt_doe_key_fn known_key, int *doe_line, char *err, size_t en) {
    const char *path = m->path;
    char *buf = NULL, section[64] = "";
    size_t cap = 0;
    int line = 0, rc = 0, cap_fixed = 0;
    while (getline(&buf, &cap, f) >= 0) {
        line++;
        strip_comment(buf);
        char *s = trim(buf);
        if (!*s) continue;
        if (*s == '[') {
            char *e = strchr(s, ']');
            if (!e || e[1]) {
                rc = fail(err, en, path, line, "bad section header '%s'", s);
                break;
            }
            *e = 0;
            snprintf(section, sizeof section, "%s", trim(s + 1));
            if (!*section) {
                rc = fail(err, en, path, line, "empty section name");
                break;
            }
            if (!strcmp(section, "doe")) *doe_line = line;
            if (!strcmp(section, "search")) m->search.line = line;
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = fail(err, en, path, line, "expected 'key = value', got '%s'", s);
            break;
        }
        *eq = 0;
        char *k = trim(s), *v = trim(eq + 1);
        if (!*k) {
            rc = fail(err, en, path, line, "missing key before '='");
            break;
        }
        if (!*section) {
            rc = fail(err, en, path, line, "'%s' outside a section ([doe], [factors], [search], [fixed] or a train section)", k);
            break;
        }
        if ((rc = matrix_setting(m, section, k, v, line, known_key, &cap_fixed, err, en))) break;
    }
    free(buf);
    return rc;
}

/* [doe] name, at least one factor, no key both fixed and a factor, none of
 * the keys 'doe run' sets. 0, or fail()'s code. */
static int matrix_check_keys(const gt_doe_matrix *m, int doe_line, char *err, size_t en) {
    const char *path = m->path;
    if (!m->name || !*m->name) return fail(err, en, path, doe_line, "[doe] name is missing");
    /* the name becomes a directory (sweeps/<name>): one plain path component,
     * never '.', '..' or a hidden name */
    for (const char *p = m->name; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("-_.", *p))
            return fail(err, en, path, doe_line, "[doe] name '%s': use letters, digits, '-', '_', '.'", m->name);
    if (m->name[0] == '.' || strlen(m->name) > 200)
        return fail(err, en, path, doe_line,
                    "[doe] name '%s': it names a directory: start with a letter, digit, '-' or '_' "
                    "(not '.', '..' or a hidden name), at most 200 characters", m->name);
    if (m->n_factors == 0) return fail(err, en, path, 0, "no [factors]: a matrix needs at least one factor");
    for (int i = 0; i < m->n_factors; i++)
        for (int j = 0; j < m->n_fixed; j++)
            if (!strcmp(m->factors[i].key, m->fixed[j].key))
                return fail(err, en, path, m->fixed[j].line, "'%s' is fixed here and a factor on line %d",
                            m->fixed[j].key, m->factors[i].line);
    for (int j = 0; j < m->n_fixed; j++)
        if (!strcmp(m->fixed[j].key, "run.dir") || !strcmp(m->fixed[j].key, "run.resume"))
            return fail(err, en, path, m->fixed[j].line, "'%s' is set by 'doe run' (cells live in SWEEP_DIR/cells/<id>)",
                        m->fixed[j].key);
    return 0;
}

/* care_event = all: one cell per event dataset of data.file (the authors' CARE
 * protocol). 0, or fail()'s code. */
static int matrix_expand_care_all(gt_doe_matrix *m, char *err, size_t en) {
    const char *path = m->path;
    for (int i = 0; i < m->n_factors; i++) {
        gt_doe_factor *F = &m->factors[i];
        int all = 0;
        for (int l = 0; l < F->n_levels; l++) all |= !strcmp(F->levels[l], "all");
        if (!all || strcmp(F->key, "data.care_event")) continue;
        if (F->n_levels != 1)
            return fail(err, en, path, F->line, "factor '%s': 'all' (every event dataset of data.file) stands alone",
                        F->name);
        const char *file = gt_doe_fixed_get(m, "data.file");
        if (!file)
            return fail(err, en, path, F->line, "factor '%s' = all needs a fixed data.file (its /care_events lists the "
                        "event datasets)", F->name);
        int64_t *ids = NULL;
        char why[512] = "";
        int k = gt_doe_care_event_ids(file, &ids, why, sizeof why);
        if (k <= 0) {
            free(ids);
            if (k < 0) return fail(err, en, path, F->line, "factor '%s' = all: %s", F->name, why);
            return fail(err, en, path, F->line, "factor '%s' = all: %s has no /care_events (import a CARE to Compare "
                        "farm with 'gridtrain import care')", F->name, file);
        }
        if (k > GT_DOE_MAX_CELLS) {
            free(ids);
            return fail(err, en, path, F->line, "factor '%s' = all: %s lists %d event datasets in /care_events, more "
                        "than the %d cells a matrix may have", F->name, file, k, GT_DOE_MAX_CELLS);
        }
        /* ids are >= 0 and unique: the checked reader refused a file with a repeat (it would be two
         * identical cells, two array tasks training into one directory) */
        free(F->levels[0]);
        F->levels = GT_REALLOC(F->levels, sizeof(char *) * (size_t)k);
        for (int l = 0; l < k; l++) GT_CHECK(asprintf(&F->levels[l], "%lld", (long long)ids[l]) >= 0, GT_EXIT_RESOURCE,
                                             "out of memory");
        F->n_levels = k;
        free(ids);
    }
    return 0;
}

/* [search]: the budgets against the fixed steps and validation interval. 0,
 * or fail()'s code. */
static int matrix_check_search(gt_doe_matrix *m, char *err, size_t en) {
    const char *path = m->path;
    const char *ms = gt_doe_fixed_get(m, "train.max_steps"), *ee = gt_doe_fixed_get(m, "train.eval_every");
    char why[512];
    for (int i = 0; m->search.strategy == GT_DOE_HALVING && i < m->n_factors; i++) {
        const char *key = m->factors[i].key;
        if (!strcmp(key, "train.max_steps") || !strcmp(key, "train.eval_every") ||
            (m->search.unit == GT_DOE_UNIT_DATA && !strcmp(key, "data.items")))
            return fail(err, en, path, m->factors[i].line,
                        "factor '%s': with [search] strategy = halving, %s is not a factor (the rung "
                        "budgets rest on it: fixed, or the data sample the ladder draws)",
                        m->factors[i].name, key);
    }
    if (m->search.strategy == GT_DOE_HALVING && m->search.unit == GT_DOE_UNIT_DATA)
        for (int j = 0; j < m->n_fixed; j++)
            if (!strcmp(m->fixed[j].key, "data.items"))
                return fail(err, en, path, m->fixed[j].line, "data.items with [search] unit = data: the rungs "
                            "sample the file's households/turbines themselves");
    if (m->search.per[0]) {
        int pf = -1;
        for (int i = 0; i < m->n_factors; i++)
            if (!strcmp(m->factors[i].name, m->search.per) || !strcmp(m->factors[i].key, m->search.per)) pf = i;
        if (pf < 0 || !strcmp(m->factors[pf].key, "train.seed"))
            return fail(err, en, path, m->search.line, "[search] per = %s: %s", m->search.per,
                        pf < 0 ? "no such factor" : "the seed is averaged over, not a ladder of its own");
    }
    if (gt_doe_search_finish(&m->search, ms ? atoll(ms) : 0, ee ? atoll(ee) : 0, why, sizeof why))
        return fail(err, en, path, m->search.line, "%s", why);
    if (m->search.strategy == GT_DOE_HALVING && m->search.unit == GT_DOE_UNIT_DATA && !gt_doe_fixed_get(m, "data.file"))
        return fail(err, en, path, m->search.line, "[search] unit = data needs a fixed data.file (its households or "
                    "turbines are sampled)");
    return 0;
}

/* distinct ids (a hash collision would merge two cells' directories):
 * sorted, n log n. 0, or fail()'s code. */
static int matrix_check_ids(const gt_doe_matrix *m, char *err, size_t en) {
    const int64_t n = m->n_cells;
    char(*ids)[GT_DOE_ID_LEN] = GT_ALLOC_ARRAY(n, GT_DOE_ID_LEN, "doe: cell ids");
    for (int64_t i = 0; i < n; i++) {
        gt_doe_cell c;
        gt_doe_cell_at(m, i, &c);
        memcpy(ids[i], c.id, GT_DOE_ID_LEN);
    }
    qsort(ids, (size_t)n, GT_DOE_ID_LEN, (int (*)(const void *, const void *))strcmp);
    for (int64_t i = 1; i < n; i++)
        if (!strcmp(ids[i], ids[i - 1])) {
            char id[GT_DOE_ID_LEN];
            memcpy(id, ids[i], GT_DOE_ID_LEN);
            free(ids);
            return fail(err, en, m->path, 0, "two cells share the id %s (duplicate cells)", id);
        }
    free(ids);
    return 0;
}

int gt_doe_matrix_load(const char *path, gt_doe_key_fn known_key, gt_doe_matrix *m, char *err, size_t en) {
    memset(m, 0, sizeof *m);
    gt_doe_search_init(&m->search);
    m->path = GT_STRDUP(path);
    char why[256];
    FILE *f = gt_fopen_regular(path, why, sizeof why); /* a FIFO would block, a directory read as empty */
    if (!f) return fail(err, en, path, 0, "cannot open the matrix file: %s", why);
    int doe_line = 0;
    int rc = matrix_read(m, f, known_key, &doe_line, err, en);
    fclose(f);
    if (rc || (rc = matrix_check_keys(m, doe_line, err, en))) return rc;
    if (!m->dir || !*m->dir) {
        free(m->dir);
        GT_CHECK(asprintf(&m->dir, "sweeps/%s", m->name) >= 0, GT_EXIT_RESOURCE, "out of memory");
    }
    if ((rc = matrix_expand_care_all(m, err, en))) return rc;
    int64_t n = 1;
    for (int i = 0; i < m->n_factors; i++) {
        n *= m->factors[i].n_levels; /* <= 2^20 x (INT32_MAX / 2): no overflow */
        if (n > GT_DOE_MAX_CELLS)
            return fail(err, en, path, m->factors[i].line, "more than %d cells (the limit of one matrix, docs/doe.md): "
                        "factor '%s' brings them to %lld at least", GT_DOE_MAX_CELLS, m->factors[i].name, (long long)n);
    }
    m->n_cells = n;
    if ((rc = matrix_check_search(m, err, en))) return rc;
    return matrix_check_ids(m, err, en);
}

typedef struct {
    const char *name, *level;
} kv;
static int cmp_kv(const void *a, const void *b) { return strcmp(((const kv *)a)->name, ((const kv *)b)->name); }

void gt_doe_cell_at(const gt_doe_matrix *m, int64_t index, gt_doe_cell *c) {
    GT_ASSERT(index >= 0 && index < m->n_cells);
    memset(c, 0, sizeof *c);
    c->index = index;
    int64_t r = index;
    for (int f = m->n_factors - 1; f >= 0; f--) { /* last factor fastest */
        c->level[f] = (int)(r % m->factors[f].n_levels);
        r /= m->factors[f].n_levels;
    }
    /* id: hash of "key=level\n" sorted by train key (the canonical name of a factor) */
    kv pairs[GT_DOE_MAX_FACTORS];
    for (int f = 0; f < m->n_factors; f++) pairs[f] = (kv){m->factors[f].key, m->factors[f].levels[c->level[f]]};
    qsort(pairs, (size_t)m->n_factors, sizeof(kv), cmp_kv);
    XXH64_state_t *st = XXH64_createState();
    XXH64_reset(st, 0);
    for (int f = 0; f < m->n_factors; f++) {
        XXH64_update(st, pairs[f].name, strlen(pairs[f].name));
        XXH64_update(st, "=", 1);
        XXH64_update(st, pairs[f].level, strlen(pairs[f].level));
        XXH64_update(st, "\n", 1);
    }
    unsigned long long h = XXH64_digest(st);
    XXH64_freeState(st);
    snprintf(c->id, sizeof c->id, "%012llx", h >> 16);
}

const char *gt_doe_fixed_get(const gt_doe_matrix *m, const char *key) {
    for (int i = 0; i < m->n_fixed; i++)
        if (!strcmp(m->fixed[i].key, key)) return m->fixed[i].value;
    return NULL;
}

char *gt_doe_level_value(const gt_doe_factor *f, const char *level, const char *const *names, int n_names,
                         char *err, size_t en) {
    char *out = GT_MALLOC(strlen(level) * 4 + 64);
    out[0] = 0;
    if (!f->is_filter) {
        strcpy(out, level);
        return out;
    }
    const int cond = !strcmp(f->key, "data.conditions");
    const char *p = level;
    while (*p) {
        size_t n = strcspn(p, "+,");
        char part[128];
        if (n == 0 || n >= sizeof part) {
            snprintf(err, en, "factor '%s': bad level '%s'", f->name, level);
            free(out);
            return NULL;
        }
        memcpy(part, p, n);
        part[n] = 0;
        char *t = trim(part);
        int numeric = 1;
        for (const char *q = t; *q; q++)
            if (!isdigit((unsigned char)*q) && *q != '-') numeric = 0;
        if (out[0]) strcat(out, ",");
        if (numeric || !cond) {
            strcat(out, t);
        } else {
            int code = -1;
            for (int i = 0; i < n_names; i++)
                if (names[i] && !strcmp(names[i], t)) code = i;
            if (code < 0) {
                char known[512] = "";
                for (int i = 0; i < n_names; i++)
                    if (names[i]) snprintf(known + strlen(known), sizeof known - strlen(known), "%s%d=%s", i ? ", " : "", i, names[i]);
                snprintf(err, en, "factor '%s': no condition named '%s' in the data file's legend (%s)", f->name, t,
                         known[0] ? known : "none");
                free(out);
                return NULL;
            }
            sprintf(out + strlen(out), "%d", code);
        }
        p += n;
        if (*p) p++;
    }
    return out;
}
