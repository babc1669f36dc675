/* cli/options.h: the one option table per subcommand.
 *
 * Every setting has a key "section.key" (the same key in a config file's
 * [section] and on the command line as section.key=value) and optionally a
 * short flag alias (--flag VALUE or --flag=VALUE). The parser, the --help text,
 * the resolved-config print-out and docs/configuration.md are all generated
 * from these tables, so they cannot drift apart.
 *
 * Precedence: defaults < config file (--config FILE) < flags and section.key=value
 * in command-line order. Unknown keys, bad numbers and values outside `choices`
 * are user errors naming the key and where it came from (file:line or argv). */
#ifndef GT_CLI_OPTIONS_H
#define GT_CLI_OPTIONS_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "core/opt.h" /* gt_opt: one row */


struct gt_args;
typedef struct gt_cmd {
    const char *name;     /* "synth" */
    const char *usage;    /* "synth nilm|pdm -o FILE [options]" */
    const char *summary;  /* one line for the top-level help */
    const char *details;  /* paragraph printed by --help, or NULL */
    const gt_opt *opts;   /* table, terminated by an entry with key == NULL */
    int min_pos, max_pos; /* positional arguments accepted */
    /* Runs on every rank after MPI is initialised; returns the exit code
     * (collectively: every rank must return the same code). */
    int (*run)(const struct gt_args *a, MPI_Comm comm);
    /* 1: the command resolves further settings itself (a positional CONFIG,
     * --resume) and prints the resolved configuration; the dispatcher does not */
    int prints_config;
    /* Set when the table is another command's (named here) plus keys of this
     * command under `own_prefix`: help and the reference list only those and
     * point to the other command for the rest. */
    const char *shares_keys_of;
    const char *own_prefix;
    const char *hide_prefix; /* keys of the table that belong to another command (not listed) */
    /* Set when the command hands section.key=value overrides of another command
     * (named here) through: keys of that command's table that this one lacks
     * are kept in gt_args.extra, in command-line order (bench train CONFIG key=value). */
    const char *passes_keys_of;
    /* Set when opts is assembled at run time (train's: its shared rows and every registered task's,
     * cli/cmd_train.c): fills it; called before every use of the table (gt_cmd_opts) */
    void (*opts_init)(void);
} gt_cmd;
/* cmd's table (after cmd->opts_init, when set): read a command's rows through this. */
const gt_opt *gt_cmd_opts(const gt_cmd *cmd);

/* What the parser needs to know of the other commands, handed in by the
 * caller (the registry, cli/commands.c: gt_commands_keys), so that the parser
 * names no command. */
typedef struct gt_cmd_keys {
    int (*known)(const char *key);           /* some command's table has this "section.key" (shared config files) */
    const gt_cmd *(*find)(const char *name); /* a command by name (passes_keys_of), NULL if absent */
} gt_cmd_keys;

#define GT_MAX_POS 16
typedef struct gt_args {
    const gt_cmd *cmd;
    const gt_cmd_keys *keys; /* as given to gt_args_parse (NULL: no other command known) */
    int n_pos;
    const char *pos[GT_MAX_POS];
    int n_values;
    const gt_opt **spec; /* [n_values], parallel to value/origin */
    char **value;
    char **origin;       /* "default", "file.ini:12", "argv" */
    int n_extra;         /* overrides for cmd->passes_keys_of, "section.key=value" (point into argv) */
    const char *extra[GT_MAX_POS];
} gt_args;

/* Typed getters; the key must be in the command's table (internal error otherwise). */
const char *gt_args_str(const gt_args *a, const char *key);
const char *gt_args_str_any(const gt_args *a, const char *key); /* the value as given, any type */
int64_t gt_args_int(const gt_args *a, const char *key);
double gt_args_float(const gt_args *a, const char *key);
/* A string option holding "auto" (-1) or a finite number >= 0; anything else
 * ends the run (exit 2) naming the key and the value. */
double gt_args_auto_nonneg(const gt_args *a, const char *key);
int gt_args_bool(const gt_args *a, const char *key);
int64_t gt_args_size(const gt_args *a, const char *key); /* bytes: 512, 64K, 4M, 2G */
/* "512", "64K", "4M", "2G", "1.5TiB" -> bytes (binary units); 0 if malformed. */
int gt_parse_size(const char *s, int64_t *out);
int gt_args_is_set(const gt_args *a, const char *key);   /* not left at its default */

/* The getters above as a core/opt.h gt_opt_values over a (what a task's
 * option reader reads, task/task.h gt_task_opts). */
gt_opt_values gt_args_values(const gt_args *a);

/* Parse argv (after the subcommand name). Collective only in that every rank
 * parses the same argv; errors are user errors (exit 2). keys: the other
 * commands (a key of theirs in a config file is fine; passes_keys_of); NULL
 * for a configuration that holds cmd's keys only (a run's stored config.ini). */
void gt_args_parse(gt_args *a, const gt_cmd *cmd, const gt_cmd_keys *keys, int argc, char **argv);
/* NULL when v is a valid value of o (its type and choices), else a short reason. */
const char *gt_opt_invalid(const gt_opt *o, const char *v);
void gt_args_free(gt_args *a);
/* Resolved configuration as INI, with where each value came from. */
void gt_args_print(const gt_args *a, FILE *out);
/* --help text of one command. */
void gt_cmd_help(const gt_cmd *cmd, FILE *out);
/* Its reference section (docs/cli.md). */
void gt_cmd_markdown(const gt_cmd *cmd, FILE *out);

#endif
