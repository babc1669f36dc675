/* train/trace.c: train.trace, the run's timeline (docs/training.md, Timeline).
 *
 * Every rank records its spans into core/trace.h's bounded buffer (the
 * trainer's phases through core/timer.h's events, the step, the data wait and
 * the prefetch thread's batch fills, the all-reduce buckets of dist/); at the
 * end rank 0 gathers them into RUN_DIR/trace.json in the Chrome trace event
 * format (Perfetto and chrome://tracing open it): one process per rank (pid =
 * rank), one thread per host thread (tid 0 the training loop, 1 the prefetch
 * thread), "X" complete events with ts/dur in microseconds from the common
 * origin (a barrier at the start of the run: every rank's clock reads 0 there). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/escape.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "core/timer.h"
#include "core/trace.h"
#include "dist/reduce.h"
#include "train/train_impl.h"

#ifndef GT_VERSION
#define GT_VERSION "dev"
#endif

double gt_train_trace_start(const trainer *t) {
    const gt_train_config *c = t->cfg;
    GT_CHECK(c->trace_events >= 1 && c->trace_events <= GT_TRAIN_MAX_TRACE_EVENTS && c->trace_steps >= 0 &&
                 c->trace_every >= 1,
             GT_EXIT_USAGE, "train.trace_events must be 1 to %d (got %lld), train.trace_steps >= 0 and "
             "train.trace_every >= 1", GT_TRAIN_MAX_TRACE_EVENTS, (long long)c->trace_events);
    gt_dist_barrier(t->comm); /* the common origin of every rank's clock */
    double origin = gt_now();
    if (gt_trace_start(c->trace_events, c->trace_steps, c->trace_every))
        GT_WARN("train.trace: cannot allocate %lld spans; no timeline for this run", (long long)c->trace_events);
    return origin;
}

/* Nanoseconds from the origin: integers, so a span that nests in another
 * still does after the conversion (llround is monotonic). */
static long long ns_of(double t, double origin) { return llround((t - origin) * 1e9); }

/* This rank's part: one JSON object {"rank","host","dropped","events":[...]},
 * each event printed by cJSON on its own (no tree of every event in memory). */
static char *rank_part(int rank, double origin, size_t *len) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    GT_CHECK(f, GT_EXIT_RESOURCE, "out of memory");
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    cJSON *head = cJSON_CreateObject();
    cJSON_AddNumberToObject(head, "rank", rank);
    cJSON_AddStringToObject(head, "host", host);
    cJSON_AddNumberToObject(head, "dropped", (double)gt_trace_dropped());
    cJSON_AddArrayToObject(head, "events");
    char *hj = cJSON_PrintUnformatted(head); /* ...,"events":[]} */
    char *h = gt_utf8_dup(hj, NULL);         /* the host name: valid UTF-8 JSON */
    size_t hl = strlen(h);
    fwrite(h, 1, hl - 2, f); /* without the closing "]}" */
    free(h);
    cJSON_free(hj);
    cJSON_Delete(head);
    const gt_trace_span *sp = gt_trace_spans();
    const int64_t n = gt_trace_count();
    for (int64_t i = 0; i < n; i++) {
        long long a = ns_of(sp[i].t0, origin), b = ns_of(sp[i].t1, origin);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", sp[i].name);
        cJSON_AddStringToObject(e, "cat", "train");
        cJSON_AddStringToObject(e, "ph", "X");
        cJSON_AddNumberToObject(e, "ts", a / 1000.0);
        cJSON_AddNumberToObject(e, "dur", (b - a) / 1000.0);
        cJSON_AddNumberToObject(e, "pid", rank);
        cJSON_AddNumberToObject(e, "tid", sp[i].tid);
        if (sp[i].arg_name) {
            cJSON *args = cJSON_AddObjectToObject(e, "args");
            cJSON_AddNumberToObject(args, sp[i].arg_name, (double)sp[i].arg);
        }
        char *s = cJSON_PrintUnformatted(e);
        fputs(i ? "," : "", f);
        gt_fputs_utf8(f, s);
        cJSON_free(s);
        cJSON_Delete(e);
    }
    fputs("]}", f);
    fclose(f);
    return buf;
}

/* Metadata events: the process (rank) and thread names Perfetto shows. */
static void add_meta(cJSON *arr, const char *what, int pid, int tid, const char *key, const char *name, double num) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", what);
    cJSON_AddStringToObject(m, "ph", "M");
    cJSON_AddNumberToObject(m, "pid", pid);
    cJSON_AddNumberToObject(m, "tid", tid);
    cJSON *args = cJSON_AddObjectToObject(m, "args");
    if (name) cJSON_AddStringToObject(args, key, name);
    else cJSON_AddNumberToObject(args, key, num);
    cJSON_AddItemToArray(arr, m);
}

/* Rank 0: the parts of every rank spliced into one {"traceEvents":[...]}. The
 * parts are cJSON's own text; only the metadata is parsed back. */
static void write_merged(const trainer *t, const char *all, int64_t n_all, int64_t events) {
    char *out = NULL;
    size_t out_len = 0;
    FILE *f = open_memstream(&out, &out_len);
    GT_CHECK(f, GT_EXIT_RESOURCE, "out of memory");
    cJSON *meta = cJSON_CreateArray(), *dropped = cJSON_CreateArray();
    const int gpu = t->dev.engine != GT_ENGINE_HOST;
    fputs("{\"traceEvents\":[", f);
    int first = 1;
    const char *p = all, *end = all + n_all;
    while (p < end) {
        size_t part_len = strnlen(p, (size_t)(end - p));
        const char *ev = strstr(p, "\"events\":[");
        GT_CHECK(ev && ev < p + part_len, GT_EXIT_INTERNAL, "train.trace: malformed rank part");
        /* the header fields only (rank, host, dropped), parsed from a copy */
        size_t hl = (size_t)(ev - p);
        char *hdr = GT_MALLOC(hl + 16);
        memcpy(hdr, p, hl);
        memcpy(hdr + hl, "\"events\":[]}", 13);
        cJSON *h = cJSON_Parse(hdr);
        free(hdr);
        GT_CHECK(h, GT_EXIT_INTERNAL, "train.trace: malformed rank part");
        int rank = cJSON_GetObjectItem(h, "rank")->valueint;
        char pname[320];
        snprintf(pname, sizeof pname, "rank %d (%s)", rank, cJSON_GetObjectItem(h, "host")->valuestring);
        add_meta(meta, "process_name", rank, 0, "name", pname, 0);
        add_meta(meta, "process_sort_index", rank, 0, "sort_index", NULL, rank);
        add_meta(meta, "thread_name", rank, 0, "name", "training loop", 0);
        add_meta(meta, "thread_name", rank, 1, "name", "prefetch thread", 0);
        if (t->size > 1) add_meta(meta, "thread_name", rank, GT_TRACE_TID_COMM, "name", "gradient exchange", 0);
        if (gpu) add_meta(meta, "thread_name", rank, GT_TRACE_TID_GPU, "name", "GPU stream (CUDA events)", 0);
        cJSON_AddItemToArray(dropped, cJSON_CreateNumber(cJSON_GetObjectItem(h, "dropped")->valuedouble));
        cJSON_Delete(h);
        const char *body = ev + strlen("\"events\":["), *body_end = p + part_len - 2; /* before "]}" */
        if (body_end > body) {
            if (!first) fputc(',', f);
            fwrite(body, 1, (size_t)(body_end - body), f);
            first = 0;
        }
        p += part_len + 1; /* past its terminating 0 */
    }
    for (cJSON *m = meta->child; m; m = m->next) {
        char *s = cJSON_PrintUnformatted(m);
        fputs(first ? "" : ",", f);
        gt_fputs_utf8(f, s);
        first = 0;
        cJSON_free(s);
    }
    cJSON *other = cJSON_CreateObject();
    cJSON_AddStringToObject(other, "gridtrain_version", GT_VERSION);
    cJSON_AddNumberToObject(other, "ranks", t->size);
    cJSON_AddNumberToObject(other, "capacity_per_rank", (double)gt_trace_capacity());
    char sampling[160];
    snprintf(sampling, sizeof sampling, "every step of the first %lld, then every %lld-th; validation and checkpoints always",
             (long long)gt_trace_first_steps(), (long long)gt_trace_every());
    cJSON_AddStringToObject(other, "sampling", sampling);
    cJSON_AddStringToObject(other, "clock", "CLOCK_MONOTONIC of each rank, 0 at a barrier at the start of the run");
    cJSON_AddItemToObject(other, "dropped_per_rank", dropped);
    char *o = cJSON_PrintUnformatted(other);
    fputs("],\"displayTimeUnit\":\"ms\",\"otherData\":", f);
    gt_fputs_utf8(f, o);
    fputs("}\n", f);
    cJSON_free(o);
    cJSON_Delete(other);
    cJSON_Delete(meta);
    fclose(f);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/trace.json", t->run_dir);
    if (gt_write_file_atomic(path, out)) GT_WARN("train.trace: cannot write %s: %s", path, strerror(errno));
    else if (!t->cfg->quiet)
        GT_INFO("train.trace: %s (%lld spans of %d rank%s; open it in https://ui.perfetto.dev or chrome://tracing)",
                path, (long long)events, t->size, t->size == 1 ? "" : "s");
    free(out);
}

void gt_train_write_trace(const trainer *t, double origin) {
    if (!gt_trace_enabled()) return;
    gt_engine_trace_flush(t->e); /* a GPU's spans from its CUDA events (thread GT_TRACE_TID_GPU) */
    gt_trace_sample(0);
    const int64_t events = gt_dist_sum_i64(gt_trace_count(), t->comm);
    size_t len = 0;
    char *mine = rank_part(t->rank, origin, &len);
    GT_CHECK(len < (size_t)INT32_MAX, GT_EXIT_RESOURCE, "train.trace: this rank's timeline is over 2 GiB; lower train.trace_events");
    int64_t n_all = 0; /* each part with its terminating 0 */
    char *all = gt_dist_gatherv(mine, (int)len + 1, MPI_CHAR, &n_all,
                                "train.trace: the timelines of all ranks exceed 2 GiB; lower train.trace_events", t->comm);
    free(mine);
    if (t->rank == 0) write_merged(t, all, n_all, events);
    free(all);
    gt_trace_stop();
}
