/* synth/synth_gen.h: the generators of `gridtrain synth KIND`, one row each
 * (ggml's backend table is the model): the kind it writes, a line saying
 * what, its own settings and its run. cli/cmd_synth.c iterates the list
 * (synth_gens.c) for its usage line, its option rows, its help and its
 * errors, and runs the row KIND names; it names no generator.
 *
 * Adding a generator: a file filling gt_synth_gen_i (its settings read
 * through gt_synth_args, checked, then its io/write.h source written) and
 * its line in synth_gens.c. */
#ifndef GT_SYNTH_SYNTH_GEN_H
#define GT_SYNTH_SYNTH_GEN_H

#include <mpi.h>
#include <stdint.h>

#include "io/write.h"

/* One setting of a generator: a key of `gridtrain synth`'s option table. */
typedef enum { GT_SYNTH_INT, GT_SYNTH_FLOAT } gt_synth_type;
typedef struct gt_synth_setting {
    const char *key;  /* "synth.households" */
    const char *flag; /* its flag without dashes ("households") */
    gt_synth_type type;
    const char *help; /* one line */
} gt_synth_setting;

/* The settings every generator has (synth.seed, synth.days; empty: the
 * generator's default), key NULL at the end. */
extern const gt_synth_setting gt_synth_common_settings[];

/* The values the settings were given, from the caller's parser (cli/ owns
 * the command line and config files): not set means the generator's default. */
typedef struct gt_synth_args {
    const void *ctx;
    int (*is_set)(const void *ctx, const char *key);
    int64_t (*get_int)(const void *ctx, const char *key);
    double (*get_float)(const void *ctx, const char *key);
} gt_synth_args;

typedef struct gt_synth_gen_i {
    const char *name;    /* KIND of `gridtrain synth KIND`: the kind of file it writes ("nilm") */
    const char *dataset; /* what the command's summary calls its files ("NILM", "wind-farm") */
    const char *what;    /* one line for the help: what a file holds */
    const gt_synth_setting *settings; /* its own settings, key NULL at the end */
    /* Collective: reads the common and its own settings through a (a value
     * out of range ends the job, GT_EXIT_USAGE, with one line naming the
     * key), generates and writes `path` (io/write.h, options wo) and fills
     * st. */
    void (*run)(const char *path, const gt_synth_args *a, const gt_write_opts *wo, MPI_Comm comm,
                gt_write_stats *st);
} gt_synth_gen_i;

/* The i-th generator (NULL past the last), in the order of synth_gens.c. */
const gt_synth_gen_i *gt_synth_gen_at(int i);
/* The generator named `name`, NULL when none. */
const gt_synth_gen_i *gt_synth_gen_find(const char *name);
/* Their names joined: sep between two, last before the last ("nilm|pdm" with
 * "|", "|"; "nilm or pdm" with ", ", " or "), into out. */
void gt_synth_gen_names(char *out, size_t out_bytes, const char *sep, const char *last);

#endif
