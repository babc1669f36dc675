/* core/opt.h: one option row ("section.key", its type, default, help) and
 * what reads the values a command line and configuration files gave them.
 * The parser, the help and the reference are cli/'s (cli/options.h); the
 * rows are here so that a task's folder can list its own rows (task/task.h
 * gt_task_opts) and read their values without naming cli/. */
#ifndef GT_CORE_OPT_H
#define GT_CORE_OPT_H

#include <stdint.h>

typedef enum { GT_OPT_STR, GT_OPT_INT, GT_OPT_FLOAT, GT_OPT_BOOL, GT_OPT_SIZE } gt_opt_type;

typedef struct gt_opt {
    const char *key;     /* "section.key", e.g. "synth.households" */
    const char *flag;    /* alias without dashes ("households"), or NULL */
    gt_opt_type type;
    const char *def;     /* default as text; "" for none */
    const char *help;    /* one line */
    const char *choices; /* "nilm|pdm" for enumerations, or NULL */
} gt_opt;

/* The parsed values of a command's rows, by key (cli/'s gt_args behind
 * `args`; the getters of cli/options.h). The key must be a row of the
 * command's table, the getter its type's (internal error otherwise). */
typedef struct gt_opt_values {
    const void *args;
    const char *(*text)(const void *args, const char *key);   /* the value as given, any type ("": none) */
    const char *(*str)(const void *args, const char *key);    /* GT_OPT_STR */
    int64_t (*integer)(const void *args, const char *key);    /* GT_OPT_INT */
    double (*number)(const void *args, const char *key);      /* GT_OPT_FLOAT */
    int (*flag)(const void *args, const char *key);           /* GT_OPT_BOOL */
    /* GT_OPT_STR holding "auto" (-1) or a finite number >= 0; anything else ends the run (exit 2) */
    double (*auto_nonneg)(const void *args, const char *key);
    int (*is_set)(const void *args, const char *key);         /* not left at its default */
} gt_opt_values;

#endif
