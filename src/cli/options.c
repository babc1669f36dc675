/* cli/options.c: parser, help and resolved-config printer, all driven by the
 * per-command option tables (see options.h). Config files are parsed by inih
 * (Debian's libinih): a small, well-kept INI reader; we wrap its line reader to
 * know the line number of every key for error messages. */
#define _GNU_SOURCE
#include "cli/options.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "core/suggest.h"

/* Options every command accepts. */
static const gt_opt g_common[] = {
    {"log.level", "log-level", GT_OPT_STR, "info", "log threshold", "debug|info|warn|quiet"},
    {"log.all_ranks", "log-all-ranks", GT_OPT_BOOL, "false", "every rank prints its info lines", NULL},
    {NULL, NULL, 0, NULL, NULL, NULL},
};

static int n_table(const gt_opt *t) {
    int n = 0;
    while (t && t[n].key) n++;
    return n;
}

static int find_key(const gt_args *a, const char *key) {
    for (int i = 0; i < a->n_values; i++)
        if (!strcmp(a->spec[i]->key, key)) return i;
    return -1;
}

static int find_flag(const gt_args *a, const char *flag) {
    for (int i = 0; i < a->n_values; i++)
        if (a->spec[i]->flag && !strcmp(a->spec[i]->flag, flag)) return i;
    return -1;
}

/* The name part of a key ("max_steps" of "train.max_steps"). */
static const char *key_name(const char *key) {
    const char *dot = strchr(key, '.');
    return dot ? dot + 1 : key;
}

/* ", did you mean X?" for a mistyped key or flag, or "" (core/suggest.h).
 * A key: a key whose name exists in exactly one section (model.lr ->
 * train.lr), else the nearest key. A flag: the nearest flag, else the key
 * whose name is nearest with '-' read as '_' (--max-stepz -> --steps,
 * train.max_steps). Returns buf. */
static const char *did_you_mean(const gt_args *a, const char *word, int is_flag, char *buf, size_t cap) {
    const char **cands = GT_CALLOC((size_t)a->n_values, sizeof *cands);
    const char *best = NULL;
    int by_name = -1;
    if (!is_flag && strchr(word, '.')) {
        for (int i = 0; i < a->n_values; i++)
            if (!strcmp(key_name(a->spec[i]->key), key_name(word))) by_name = by_name == -1 ? i : -2;
        if (by_name >= 0) best = a->spec[by_name]->key;
    }
    if (!best) {
        for (int i = 0; i < a->n_values; i++) cands[i] = is_flag ? a->spec[i]->flag : a->spec[i]->key;
        best = gt_suggest(word, cands, (size_t)a->n_values);
    }
    if (best && is_flag) {
        snprintf(buf, cap, ": did you mean --%s?", best);
    } else if (best) {
        snprintf(buf, cap, ": did you mean %s?", best);
    } else if (is_flag) {
        char name[128];
        snprintf(name, sizeof name, "%s", word);
        for (char *q = name; *q; q++)
            if (*q == '-') *q = '_';
        for (int i = 0; i < a->n_values; i++) cands[i] = key_name(a->spec[i]->key);
        const char *near = gt_suggest(name, cands, (size_t)a->n_values);
        int k = -1;
        for (int i = 0; near && i < a->n_values; i++)
            if (cands[i] == near) k = i;
        if (k >= 0 && a->spec[k]->flag)
            snprintf(buf, cap, ": did you mean --%s (%s)?", a->spec[k]->flag, a->spec[k]->key);
        else if (k >= 0)
            snprintf(buf, cap, ": did you mean %s=VALUE?", a->spec[k]->key);
        else
            buf[0] = 0;
    } else {
        buf[0] = 0;
    }
    free(cands);
    return buf;
}

/* ------------------------------------------------------------ validation -- */

static int parse_int(const char *s, int64_t *out) {
    if (!s || !*s) return 0;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return 0;
    *out = v;
    return 1;
}

static int parse_float(const char *s, double *out) {
    if (!s || !*s) return 0;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return 0;
    *out = v;
    return 1;
}

static int parse_bool(const char *s, int *out) {
    static const char *t[] = {"1", "true", "yes", "on"}, *f[] = {"0", "false", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(s, t[i])) { *out = 1; return 1; }
        if (!strcasecmp(s, f[i])) { *out = 0; return 1; }
    }
    return 0;
}

int gt_parse_size(const char *s, int64_t *out) {
    if (!s || !*s) return 0;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0) return 0;
    double mul = 1;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K': mul = 1024.0; break;
        case 'M': mul = 1024.0 * 1024; break;
        case 'G': mul = 1024.0 * 1024 * 1024; break;
        case 'T': mul = 1024.0 * 1024 * 1024 * 1024; break;
        default: return 0;
        }
        end++;
        if (*end == 'i' || *end == 'I') end++;
        if (*end == 'B' || *end == 'b') end++;
        if (*end) return 0;
    }
    *out = (int64_t)llround(v * mul);
    return 1;
}

static int in_choices(const char *choices, const char *v) {
    size_t n = strlen(v);
    const char *p = choices;
    while (p && *p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, v, n)) return 1;
        p = bar ? bar + 1 : NULL;
    }
    return 0;
}

static const char *type_name(gt_opt_type t) {
    switch (t) {
    case GT_OPT_STR: return "string";
    case GT_OPT_INT: return "integer";
    case GT_OPT_FLOAT: return "number";
    case GT_OPT_BOOL: return "true|false";
    case GT_OPT_SIZE: return "size (e.g. 64K, 4M, 2G)";
    }
    return "?";
}

/* Validates value v for spec o; returns NULL or a static reason. */
static const char *invalid(const gt_opt *o, const char *v) {
    int64_t i;
    double d;
    int b;
    switch (o->type) {
    case GT_OPT_INT: if (!parse_int(v, &i)) return "not an integer"; break;
    case GT_OPT_FLOAT: if (!parse_float(v, &d)) return "not a finite number"; break;
    case GT_OPT_BOOL: if (!parse_bool(v, &b)) return "not a boolean (true/false)"; break;
    case GT_OPT_SIZE: if (!gt_parse_size(v, &i)) return "not a size (e.g. 512, 64K, 4M, 2G)"; break;
    case GT_OPT_STR: break;
    }
    if (o->choices && !in_choices(o->choices, v)) return "not one of the allowed values";
    return NULL;
}

const char *gt_opt_invalid(const gt_opt *o, const char *v) { return invalid(o, v); }

static void set_value(gt_args *a, int idx, const char *v, const char *origin) {
    const gt_opt *o = a->spec[idx];
    const char *why = invalid(o, v);
    if (why) {
        if (o->choices)
            GT_FAIL(GT_EXIT_USAGE, "%s: %s = '%s' is %s (%s)", origin, o->key, v, why, o->choices);
        GT_FAIL(GT_EXIT_USAGE, "%s: %s = '%s' is %s", origin, o->key, v, why);
    }
    free(a->value[idx]);
    free(a->origin[idx]);
    a->value[idx] = GT_STRDUP(v);
    a->origin[idx] = GT_STRDUP(origin);
}

/* ---------------------------------------------------------- config files -- */

typedef struct {
    gt_args *a;
    const char *path;
    FILE *f;
    int line;
    int continuation;  /* the current line starts with white space */
    char **seen;       /* [n_seen] "section.key" set by this file, and the line */
    int *seen_line, n_seen, cap_seen;
} ini_ctx;

/* fgets for inih, but a NUL byte is an error naming FILE:LINE (with fgets it
 * ended the line's text silently: "window = 3\0001" read as 3). */
static char *line_reader(char *str, int num, void *stream) {
    ini_ctx *c = stream;
    int n_read = 0, ch = 0;
    while (n_read < num - 1 && (ch = getc(c->f)) != EOF) {
        if (ch == 0)
            GT_FAIL(GT_EXIT_USAGE, "%s:%d: a NUL byte at column %d (a binary or damaged file?)", c->path, c->line + 1,
                    n_read + 1);
        str[n_read++] = (char)ch;
        if (ch == '\n') break;
    }
    str[n_read] = 0;
    char *r = n_read ? str : NULL;
    if (r) {
        c->line++;
        size_t n = (size_t)n_read;
        if (n == (size_t)num - 1 && r[n - 1] != '\n')
            GT_FAIL(GT_EXIT_USAGE, "%s:%d: line longer than %d characters", c->path, c->line, num - 2);
        c->continuation = r[0] == ' ' || r[0] == '\t';
    }
    return r;
}

/* A key set twice in one file is a mistake (which one was meant?): an error
 * naming both lines. Later files and the command line still override. The
 * keys of one file are few (tens): a linear scan. */
static void note_key(ini_ctx *c, const char *key) {
    for (int i = 0; i < c->n_seen; i++)
        if (!strcmp(c->seen[i], key))
            GT_FAIL(GT_EXIT_USAGE, "%s:%d: duplicate key '%s' (already set at line %d); set each key once", c->path,
                    c->line, key, c->seen_line[i]);
    if (c->n_seen == c->cap_seen) {
        c->cap_seen = c->cap_seen ? 2 * c->cap_seen : 32;
        c->seen = GT_REALLOC(c->seen, sizeof *c->seen * (size_t)c->cap_seen);
        c->seen_line = GT_REALLOC(c->seen_line, sizeof *c->seen_line * (size_t)c->cap_seen);
    }
    c->seen[c->n_seen] = GT_STRDUP(key);
    c->seen_line[c->n_seen++] = c->line;
}

static int key_handler(void *user, const char *section, const char *name, const char *value) {
    ini_ctx *c = user;
    char key[256], origin[512];
    snprintf(key, sizeof key, "%s.%s", section, name);
    snprintf(origin, sizeof origin, "%s:%d", c->path, c->line);
    if (!*section) return 0; /* reported as a syntax error at the first bad line */
    /* inih hands an indented line to the previous key as a continuation */
    if (c->continuation)
        GT_FAIL(GT_EXIT_USAGE, "%s: indented line continues '%s' (a value must fit on one line; remove the indent)",
                origin, key);
    note_key(c, key);
    int idx = find_key(c->a, key);
    if (idx < 0) {
        /* a key another command uses is fine in a shared config file */
        if (c->a->keys && c->a->keys->known(key)) return 1;
        char hint[300];
        GT_FAIL(GT_EXIT_USAGE, "%s: unknown key '%s'%s (see 'gridtrain %s --help')", origin, key,
                did_you_mean(c->a, key, 0, hint, sizeof hint), c->a->cmd->name);
    }
    set_value(c->a, idx, value, origin);
    return 1;
}

static void load_config(gt_args *a, const char *path) {
    ini_ctx c = {a, path, NULL, 0, 0, NULL, NULL, 0, 0};
    char why[256];
    /* a directory or a FIFO (which would block) is refused, not read as empty */
    c.f = gt_fopen_regular(path, why, sizeof why);
    if (!c.f) GT_FAIL(GT_EXIT_USAGE, "cannot open config file '%s': %s", path, why);
    int rc = ini_parse_stream(line_reader, &c, key_handler, &c);
    fclose(c.f);
    for (int i = 0; i < c.n_seen; i++) free(c.seen[i]);
    free(c.seen);
    free(c.seen_line);
    if (rc > 0) GT_FAIL(GT_EXIT_USAGE, "%s:%d: syntax error (expected [section], or key = value inside a section)", path, rc);
    if (rc < 0) GT_FAIL(GT_EXIT_USAGE, "cannot read config file '%s'", path);
}

/* --------------------------------------------------------------- parsing -- */

static int looks_like_override(const char *s) {
    const char *eq = strchr(s, '=');
    const char *dot = strchr(s, '.');
    if (!eq || !dot || dot > eq || s[0] == '-' || s[0] == '/' || s[0] == '.') return 0;
    for (const char *p = s; p < eq; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '.')) return 0;
    return 1;
}

/* A key of the command that cmd passes its overrides to (cmd->passes_keys_of). */
static int passed_through(const gt_args *a, const char *key) {
    const gt_cmd *to = a->cmd->passes_keys_of && a->keys ? a->keys->find(a->cmd->passes_keys_of) : NULL;
    for (const gt_opt *o = to ? gt_cmd_opts(to) : NULL; o && o->key; o++)
        if (!strcmp(o->key, key)) return 1;
    return 0;
}

void gt_args_parse(gt_args *a, const gt_cmd *cmd, const gt_cmd_keys *keys, int argc, char **argv) {
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->keys = keys;
    const gt_opt *opts = gt_cmd_opts(cmd);
    int nc = n_table(g_common), nt = n_table(opts);
    a->n_values = nc + nt;
    a->spec = GT_CALLOC((size_t)a->n_values, sizeof *a->spec);
    a->value = GT_CALLOC((size_t)a->n_values, sizeof *a->value);
    a->origin = GT_CALLOC((size_t)a->n_values, sizeof *a->origin);
    for (int i = 0; i < nt; i++) a->spec[i] = &opts[i];
    for (int i = 0; i < nc; i++) a->spec[nt + i] = &g_common[i];
    for (int i = 0; i < a->n_values; i++) {
        GT_ASSERT(a->spec[i]->def != NULL);
        if (*a->spec[i]->def) GT_ASSERT(invalid(a->spec[i], a->spec[i]->def) == NULL);
        a->value[i] = GT_STRDUP(a->spec[i]->def);
        a->origin[i] = GT_STRDUP("default");
    }
    /* config files first, wherever --config appears, so argv overrides them */
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--config")) {
            if (i + 1 >= argc) GT_FAIL(GT_EXIT_USAGE, "--config needs a file name");
            load_config(a, argv[++i]);
        } else if (!strncmp(argv[i], "--config=", 9)) {
            load_config(a, argv[i] + 9);
        }
    }
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--config")) { i++; continue; }
        if (!strncmp(s, "--config=", 9)) continue;
        if (!strcmp(s, "--")) {
            for (i++; i < argc; i++) {
                if (a->n_pos >= GT_MAX_POS) GT_FAIL(GT_EXIT_USAGE, "too many arguments");
                a->pos[a->n_pos++] = argv[i];
            }
            break;
        }
        if (s[0] == '-' && s[1] && !(s[1] >= '0' && s[1] <= '9')) {
            const char *name = s + 1 + (s[1] == '-');
            char flag[128];
            const char *val = NULL;
            const char *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            if (len >= sizeof flag) GT_FAIL(GT_EXIT_USAGE, "unknown option '%s'", s);
            memcpy(flag, name, len);
            flag[len] = 0;
            if (eq) val = eq + 1;
            int idx = find_flag(a, flag);
            int negated = 0;
            if (idx < 0 && !strncmp(flag, "no-", 3)) {
                idx = find_flag(a, flag + 3);
                negated = idx >= 0 && a->spec[idx]->type == GT_OPT_BOOL;
                if (!negated) idx = -1;
            }
            if (idx < 0) {
                char hint[300];
                GT_FAIL(GT_EXIT_USAGE, "unknown option '%s'%s (see 'gridtrain %s --help')", s,
                        did_you_mean(a, flag, 1, hint, sizeof hint), cmd->name);
            }
            if (a->spec[idx]->type == GT_OPT_BOOL && !val) {
                val = negated ? "false" : "true";
            } else if (!val) {
                if (i + 1 >= argc) GT_FAIL(GT_EXIT_USAGE, "option '%s' needs a value", s);
                val = argv[++i];
            }
            set_value(a, idx, val, "command line");
        } else if (looks_like_override(s)) {
            const char *eq = strchr(s, '=');
            char key[256];
            size_t len = (size_t)(eq - s);
            if (len >= sizeof key) GT_FAIL(GT_EXIT_USAGE, "key too long in '%s'", s);
            memcpy(key, s, len);
            key[len] = 0;
            int idx = find_key(a, key);
            if (idx < 0 && passed_through(a, key)) {
                if (a->n_extra >= GT_MAX_POS) GT_FAIL(GT_EXIT_USAGE, "too many key=value overrides");
                a->extra[a->n_extra++] = s;
                continue;
            }
            if (idx < 0) {
                char hint[300];
                GT_FAIL(GT_EXIT_USAGE, "unknown key '%s'%s (see 'gridtrain %s --help')", key,
                        did_you_mean(a, key, 0, hint, sizeof hint), cmd->name);
            }
            set_value(a, idx, eq + 1, "command line");
        } else {
            if (a->n_pos >= GT_MAX_POS) GT_FAIL(GT_EXIT_USAGE, "too many arguments");
            a->pos[a->n_pos++] = s;
        }
    }
    if (a->n_pos < cmd->min_pos || a->n_pos > cmd->max_pos)
        GT_FAIL(GT_EXIT_USAGE, "usage: gridtrain %s (got %d argument%s; see --help)", cmd->usage,
                a->n_pos, a->n_pos == 1 ? "" : "s");
}

void gt_args_free(gt_args *a) {
    for (int i = 0; i < a->n_values; i++) {
        free(a->value[i]);
        free(a->origin[i]);
    }
    free(a->spec);
    free(a->value);
    free(a->origin);
    memset(a, 0, sizeof *a);
}

/* --------------------------------------------------------------- getters -- */

static int must_find(const gt_args *a, const char *key, gt_opt_type type) {
    int idx = find_key(a, key);
    GT_ASSERT(idx >= 0);
    GT_ASSERT(a->spec[idx]->type == type);
    return idx;
}

const char *gt_args_str_any(const gt_args *a, const char *key) {
    int idx = find_key(a, key);
    GT_ASSERT(idx >= 0);
    return a->value[idx];
}

const char *gt_args_str(const gt_args *a, const char *key) {
    return a->value[must_find(a, key, GT_OPT_STR)];
}
int64_t gt_args_int(const gt_args *a, const char *key) {
    int64_t v = 0;
    GT_ASSERT(parse_int(a->value[must_find(a, key, GT_OPT_INT)], &v));
    return v;
}
double gt_args_float(const gt_args *a, const char *key) {
    double v = 0;
    GT_ASSERT(parse_float(a->value[must_find(a, key, GT_OPT_FLOAT)], &v));
    return v;
}
double gt_args_auto_nonneg(const gt_args *a, const char *key) {
    const char *v = gt_args_str(a, key);
    if (!strcmp(v, "auto")) return -1;
    char *end = NULL;
    double x = strtod(v, &end);
    GT_CHECK(end != v && *end == '\0' && isfinite(x) && x >= 0, GT_EXIT_USAGE, "%s = '%s': give auto or a number >= 0",
             key, v);
    return x;
}
int gt_args_bool(const gt_args *a, const char *key) {
    int v = 0;
    GT_ASSERT(parse_bool(a->value[must_find(a, key, GT_OPT_BOOL)], &v));
    return v;
}
int64_t gt_args_size(const gt_args *a, const char *key) {
    int64_t v = 0;
    GT_ASSERT(gt_parse_size(a->value[must_find(a, key, GT_OPT_SIZE)], &v));
    return v;
}
int gt_args_is_set(const gt_args *a, const char *key) {
    int idx = find_key(a, key);
    GT_ASSERT(idx >= 0);
    return strcmp(a->origin[idx], "default") != 0;
}

static const char *v_text(const void *a, const char *key) { return gt_args_str_any(a, key); }
static const char *v_str(const void *a, const char *key) { return gt_args_str(a, key); }
static int64_t v_integer(const void *a, const char *key) { return gt_args_int(a, key); }
static double v_number(const void *a, const char *key) { return gt_args_float(a, key); }
static int v_flag(const void *a, const char *key) { return gt_args_bool(a, key); }
static double v_auto_nonneg(const void *a, const char *key) { return gt_args_auto_nonneg(a, key); }
static int v_is_set(const void *a, const char *key) { return gt_args_is_set(a, key); }

gt_opt_values gt_args_values(const gt_args *a) {
    return (gt_opt_values){a, v_text, v_str, v_integer, v_number, v_flag, v_auto_nonneg, v_is_set};
}

const gt_opt *gt_cmd_opts(const gt_cmd *cmd) {
    if (cmd->opts_init) cmd->opts_init();
    return cmd->opts;
}

/* ---------------------------------------------------------------- output -- */

void gt_args_print(const gt_args *a, FILE *out) {
    fprintf(out, "# resolved configuration of 'gridtrain %s'\n", a->cmd->name);
    const char *cur = "";
    size_t cur_len = 0;
    for (int i = 0; i < a->n_values; i++) {
        const char *key = a->spec[i]->key;
        const char *dot = strchr(key, '.');
        size_t len = (size_t)(dot - key);
        if (len != cur_len || strncmp(key, cur, len)) {
            fprintf(out, "[%.*s]\n", (int)len, key);
            cur = key;
            cur_len = len;
        }
        fprintf(out, "%-22s = %-24s ; %s\n", dot + 1, a->value[i], a->origin[i]);
    }
}

static int listed(const gt_opt *o, const char *own, const char *hide) {
    if (own && strncmp(o->key, own, strlen(own))) return 0;
    return !(hide && !strncmp(o->key, hide, strlen(hide)));
}

static void help_table_own(const gt_opt *t, const char *prefix, const char *hide, FILE *out) {
    for (int i = 0; t[i].key; i++) {
        if (!listed(&t[i], prefix, hide)) continue;
        char lhs[96];
        if (t[i].flag)
            snprintf(lhs, sizeof lhs, "%s%s%s", strlen(t[i].flag) == 1 ? "-" : "--", t[i].flag,
                     t[i].type == GT_OPT_BOOL ? "" : " V");
        else
            snprintf(lhs, sizeof lhs, "%s=V", t[i].key);
        fprintf(out, "  %-24s %s", lhs, t[i].help);
        if (t[i].choices) fprintf(out, " (%s)", t[i].choices);
        else if (t[i].type != GT_OPT_STR) fprintf(out, " [%s]", type_name(t[i].type));
        if (*t[i].def) fprintf(out, "; default %s", t[i].def);
        if (t[i].flag) fprintf(out, "; key %s", t[i].key);
        fputc('\n', out);
    }
}

static void help_table(const gt_opt *t, FILE *out) { help_table_own(t, NULL, NULL, out); }

void gt_cmd_help(const gt_cmd *cmd, FILE *out) {
    fprintf(out, "usage: gridtrain %s\n\n%s\n", cmd->usage, cmd->summary);
    if (cmd->details) fprintf(out, "\n%s\n", cmd->details);
    const gt_opt *opts = gt_cmd_opts(cmd);
    if (n_table(opts)) {
        fputs("\noptions (also settable as section.key=value or in a --config file):\n", out);
        help_table_own(opts, cmd->own_prefix, cmd->hide_prefix, out);
        if (cmd->shares_keys_of)
            fprintf(out, "  and every key of 'gridtrain %s' (see 'gridtrain %s --help')\n", cmd->shares_keys_of,
                    cmd->shares_keys_of);
    }
    fputs("\ncommon options:\n", out);
    fprintf(out, "  %-24s %s\n", "--config FILE", "read settings from an INI file ([section] key = value)");
    help_table(g_common, out);
    fprintf(out, "  %-24s %s\n", "-h, --help", "this text");
}

/* Markdown reference of every command's table (docs/configuration.md is
 * generated from this by 'gridtrain help --markdown'). */
void gt_cmd_markdown(const gt_cmd *cmd, FILE *out) {
    fprintf(out, "## `gridtrain %s`\n\n%s\n\n", cmd->usage, cmd->summary);
    if (cmd->details) fprintf(out, "%s\n\n", cmd->details);
    const gt_opt *opts = gt_cmd_opts(cmd);
    if (!n_table(opts)) return;
    if (cmd->shares_keys_of)
        fprintf(out, "Takes every key of `gridtrain %s`, and these:\n\n", cmd->shares_keys_of);
    fputs("| key | flag | type | default | meaning |\n|---|---|---|---|---|\n", out);
    for (int i = 0; opts[i].key; i++) {
        const gt_opt *o = &opts[i];
        if (!listed(o, cmd->own_prefix, cmd->hide_prefix)) continue;
        char type[256];
        size_t n = 0;
        for (const char *p = o->choices ? o->choices : type_name(o->type); *p && n + 3 < sizeof type; p++) {
            if (*p == '|') type[n++] = '\\';
            type[n++] = *p;
        }
        type[n] = 0;
        fprintf(out, "| `%s` | %s%s%s%s | %s | %s%s%s | %s |\n", o->key, o->flag ? "`" : "",
                o->flag ? (strlen(o->flag) == 1 ? "-" : "--") : "", o->flag ? o->flag : "",
                o->flag ? "`" : "", type, *o->def ? "`" : "", o->def, *o->def ? "`" : "", o->help);
    }
    fputc('\n', out);
}
