/* nn/ops/cpu/lstm_onednn.c: the bf16 LSTM layer on oneDNN's LSTM primitive, see lstm_onednn.h.
 *
 * Layouts. The engine's (B,T,n) buffers are oneDNN's ntc; one (block, chunk)
 * is the sub-tensor of Tc steps of N samples, described by strides (time n,
 * sample T*n, channel 1), so inputs, outputs and gradients are used in place
 * (the bf16 copies of x and h too). Weights: the engine's (4H, in) is ldgoi;
 * a reorder primitive rounds them to bf16 in the layout each primitive wants,
 * once per forward (and once per backward: the backward wants another). The
 * weight gradients come in ldigo (oneDNN accumulates into them) and are
 * transposed into the engine's (4H, in) when added. */
#include "nn/ops/cpu/lstm_onednn.h"

#include <stddef.h>

#ifndef GT_HAVE_DNNL

int gt_lstm_onednn_forward(const float *key, float *h, const float *x, const float *w_ih, const float *w_hh,
                           const float *b_ih, const float *b_hh, int B, int T, int C, int H) {
    (void)key, (void)h, (void)x, (void)w_ih, (void)w_hh, (void)b_ih, (void)b_hh, (void)B, (void)T, (void)C, (void)H;
    return 0;
}
int gt_lstm_onednn_backward(const float *key, float *dx, float *dw_ih, float *dw_hh, float *db_ih, float *db_hh,
                            const float *dh, const float *x, const float *w_ih, const float *w_hh, const float *h,
                            int B, int T, int C, int H, int K) {
    (void)key, (void)dx, (void)dw_ih, (void)dw_hh, (void)db_ih, (void)db_hh, (void)dh, (void)x, (void)w_ih;
    (void)w_hh, (void)h, (void)B, (void)T, (void)C, (void)H, (void)K;
    return 0;
}
void gt_lstm_onednn_release(const float *key) { (void)key; }

#else /* GT_HAVE_DNNL */

#include <dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "nn/ops/cpu/gemm.h"
#include "nn/ops/cpu/parallel.h"

/* Steps per chunk (measured: docs/benchmarks.md, "The LSTM in bf16"): a
 * whole window of 512 ran about as fast as chunks of 128 and faster than
 * chunks of 64; 128 keeps the benchmark's TBPTT 128 on the forward's chunks.
 * Samples per primitive run: the batch split evenly over the engine's
 * threads (one block at 1 thread: 1 x 64 ran faster than 2 x 32). */
#ifndef GT_LSTM_ONEDNN_CHUNK
#define GT_LSTM_ONEDNN_CHUNK 128
#endif


static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    int n = v ? atoi(v) : 0;
    return n > 0 ? n : dflt;
}

/* ------------------------------------------------------------ primitives --
 * One entry per shape: N samples, Tc steps of a window of T steps (the row
 * strides), C inputs, H hidden. Created once, kept for the process. */
enum { W_FWD_L, W_FWD_I, W_BWD_L, W_BWD_I, N_W };
static const int k_w_arg[N_W] = {DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER, DNNL_ARG_WEIGHTS_LAYER,
                                 DNNL_ARG_WEIGHTS_ITER};

typedef struct rnn_prims {
    int N, Tc, T, C, H;
    int ok; /* 0: oneDNN has no bf16 LSTM for this shape here */
    dnnl_primitive_desc_t fpd, bpd, rpd[N_W];
    dnnl_primitive_t fwd, bwd, reo[N_W]; /* reo: f32 ldgoi -> each primitive's bf16 weights */
    size_t w_bytes[N_W], ws_bytes, scratch_bytes;
    char impl[128];
    struct rnn_prims *next;
} rnn_prims;

static rnn_prims *g_prims;
static pthread_mutex_t g_prims_mu = PTHREAD_MUTEX_INITIALIZER;

static void md_tag(dnnl_memory_desc_t *md, int nd, const dnnl_dim_t *dims, dnnl_data_type_t dt,
                   dnnl_format_tag_t tag) {
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(md, nd, dims, dt, tag));
}

/* Tc steps of N samples with n channels inside an ntc buffer of T steps */
static void md_seq(dnnl_memory_desc_t *md, int Tc, int N, int n, int T, dnnl_data_type_t dt) {
    dnnl_dims_t dims = {Tc, N, n}, strides = {n, (dnnl_dim_t)T * n, 1};
    DNNL_CHECK(dnnl_memory_desc_init_by_strides(md, 3, dims, dt, strides));
}

static size_t md_bytes(const dnnl_primitive_desc_t pd, dnnl_query_t q) {
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, q, 0);
    return md ? dnnl_memory_desc_get_size(md) : 0;
}

static void prims_create(rnn_prims *p) {
    omp_set_num_threads(1); /* a team of one: the engine's pool owns the cores */
    dnnl_engine_t eng = gt_cpu_dnnl_engine();
    const int N = p->N, Tc = p->Tc, T = p->T, C = p->C, H = p->H;
    dnnl_dims_t d_st = {1, 1, N, H}, d_wl = {1, 1, C, 4, H}, d_wi = {1, 1, H, 4, H}, d_b = {1, 1, 4, H};
    dnnl_memory_desc_t sl, si, sic, wl, wi, b, dl, di, dic;
    md_seq(&sl, Tc, N, C, T, dnnl_bf16);
    md_tag(&si, 4, d_st, dnnl_bf16, dnnl_ldnc);
    md_tag(&sic, 4, d_st, dnnl_f32, dnnl_ldnc);
    md_tag(&wl, 5, d_wl, dnnl_bf16, dnnl_format_tag_any);
    md_tag(&wi, 5, d_wi, dnnl_bf16, dnnl_format_tag_any);
    md_tag(&b, 4, d_b, dnnl_f32, dnnl_ldgo);
    md_seq(&dl, Tc, N, H, T, dnnl_bf16);
    md_tag(&di, 4, d_st, dnnl_bf16, dnnl_ldnc);
    md_tag(&dic, 4, d_st, dnnl_f32, dnnl_ldnc);
    dnnl_primitive_attr_t attr;
    DNNL_CHECK(dnnl_primitive_attr_create(&attr));
    DNNL_CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    dnnl_rnn_desc_t fd, bd;
    DNNL_CHECK(dnnl_lstm_forward_desc_init(&fd, dnnl_forward_training, dnnl_unidirectional_left2right, &sl, &si, &sic, &wl,
                                   &wi, &b, &dl, &di, &dic, 0));
    if (dnnl_primitive_desc_create(&p->fpd, &fd, attr, eng, NULL) != dnnl_success) {
        dnnl_primitive_attr_destroy(attr);
        return;
    }
    dnnl_memory_desc_t dsl, dsi, dsic, dwl, dwi, db, ddl, ddi, ddic;
    md_seq(&dsl, Tc, N, C, T, dnnl_f32);
    md_tag(&dsi, 4, d_st, dnnl_f32, dnnl_ldnc);
    md_tag(&dsic, 4, d_st, dnnl_f32, dnnl_ldnc);
    md_tag(&dwl, 5, d_wl, dnnl_f32, dnnl_ldigo);
    md_tag(&dwi, 5, d_wi, dnnl_f32, dnnl_ldigo);
    md_tag(&db, 4, d_b, dnnl_f32, dnnl_ldgo);
    md_seq(&ddl, Tc, N, H, T, dnnl_f32);
    md_tag(&ddi, 4, d_st, dnnl_f32, dnnl_ldnc);
    md_tag(&ddic, 4, d_st, dnnl_f32, dnnl_ldnc);
    DNNL_CHECK(dnnl_lstm_backward_desc_init(&bd, dnnl_backward, dnnl_unidirectional_left2right, &sl, &si, &sic, &wl, &wi,
                                    &b, &dl, &di, &dic, &dsl, &dsi, &dsic, &dwl, &dwi, &db, &ddl, &ddi, &ddic, 0));
    dnnl_status_t st = dnnl_primitive_desc_create(&p->bpd, &bd, attr, eng, p->fpd);
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) return;
    DNNL_CHECK(dnnl_primitive_create(&p->fwd, p->fpd));
    DNNL_CHECK(dnnl_primitive_create(&p->bwd, p->bpd));
    p->ws_bytes = md_bytes(p->fpd, dnnl_query_workspace_md);
    const size_t s1 = md_bytes(p->fpd, dnnl_query_scratchpad_md), s2 = md_bytes(p->bpd, dnnl_query_scratchpad_md);
    p->scratch_bytes = s1 > s2 ? s1 : s2;
    for (int w = 0; w < N_W; w++) {
        const int layer = w == W_FWD_L || w == W_BWD_L;
        dnnl_memory_desc_t src;
        md_tag(&src, 5, layer ? d_wl : d_wi, dnnl_f32, dnnl_ldgoi);
        const dnnl_memory_desc_t *dst =
            dnnl_primitive_desc_query_md(w < W_BWD_L ? p->fpd : p->bpd, dnnl_query_exec_arg_md, k_w_arg[w]);
        DNNL_CHECK(dnnl_reorder_primitive_desc_create(&p->rpd[w], &src, eng, dst, eng, NULL));
        DNNL_CHECK(dnnl_primitive_create(&p->reo[w], p->rpd[w]));
        p->w_bytes[w] = dnnl_memory_desc_get_size(dst);
    }
    const char *fi = NULL, *bi = NULL;
    DNNL_CHECK(dnnl_primitive_desc_query(p->fpd, dnnl_query_impl_info_str, 0, &fi));
    DNNL_CHECK(dnnl_primitive_desc_query(p->bpd, dnnl_query_impl_info_str, 0, &bi));
    if (fi && bi && strcmp(fi, bi))
        snprintf(p->impl, sizeof p->impl, "onednn rnn %s:%s (backward %s)", fi, gt_cpu_isa_name(), bi);
    else
        snprintf(p->impl, sizeof p->impl, "onednn rnn %s:%s", fi ? fi : "?", gt_cpu_isa_name());
    p->ok = 1;
}

static rnn_prims *prims_get(int N, int Tc, int T, int C, int H) {
    pthread_mutex_lock(&g_prims_mu);
    rnn_prims *p = g_prims;
    for (; p; p = p->next)
        if (p->N == N && p->Tc == Tc && p->T == T && p->C == C && p->H == H) break;
    if (!p) {
        p = gt_calloc(1, sizeof *p, __FILE__, __LINE__);
        *p = (rnn_prims){.N = N, .Tc = Tc, .T = T, .C = C, .H = H, .next = g_prims};
        prims_create(p);
        g_prims = p;
    }
    pthread_mutex_unlock(&g_prims_mu);
    return p;
}

/* ------------------------------------------------------------- execution -- */
typedef struct arg_ptr {
    int arg;
    const void *ptr;
} arg_ptr;

typedef struct tls_rnn {
    void *scratch;
    size_t scratch_cap;
} tls_rnn;
static _Thread_local tls_rnn t_rnn;

/* runs prim (descriptor pd) on this thread with the given arguments, on this thread's stream and scratchpad */
static void run(dnnl_primitive_t prim, dnnl_primitive_desc_t pd, size_t scratch_bytes, const arg_ptr *a, int n) {
    enum { MAX_ARGS = 24 };
    GT_ASSERT(n < MAX_ARGS);
    dnnl_engine_t eng = gt_cpu_dnnl_engine();
    tls_rnn *t = &t_rnn;
    if (scratch_bytes > t->scratch_cap) {
        free(t->scratch);
        t->scratch_cap = scratch_bytes + scratch_bytes / 4 + 64;
        t->scratch = gt_aligned_alloc(64, (t->scratch_cap + 63) / 64 * 64, __FILE__, __LINE__);
    }
    dnnl_exec_arg_t args[MAX_ARGS];
    dnnl_memory_t mem[MAX_ARGS];
    int m = 0;
    for (int i = 0; i < n; i++, m++) {
        const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, a[i].arg);
        DNNL_CHECK(dnnl_memory_create(&mem[m], md, eng, (void *)a[i].ptr));
        args[m] = (dnnl_exec_arg_t){a[i].arg, mem[m]};
    }
    if (scratch_bytes) {
        const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        if (md && dnnl_memory_desc_get_size(md)) {
            DNNL_CHECK(dnnl_memory_create(&mem[m], md, eng, t->scratch));
            args[m] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, mem[m]};
            m++;
        }
    }
    omp_set_num_threads(1);
    DNNL_CHECK(dnnl_primitive_execute(prim, gt_cpu_dnnl_stream(), m, args));
    DNNL_CHECK(dnnl_stream_wait(gt_cpu_dnnl_stream()));
    for (int i = 0; i < m; i++) dnnl_memory_destroy(mem[i]);
}

/* ----------------------------------------------------------- layer state --
 * What one layer's forward leaves for its backward, keyed by the caller's
 * gates buffer. Shape index s of block b, chunk j: 2 * (partial last block)
 * + (partial last chunk). */
typedef struct lstm_ctx {
    const float *key;
    int valid; /* the last forward on key ran here and finished */
    int B, T, C, H, NB, TC, nb, nch, lastN, lastT;
    const float *x, *w_ih, *w_hh, *h; /* what that forward read and wrote */
    rnn_prims *pr[4];
    void *w16[4][N_W]; /* per shape: bf16 weights in each primitive's layout */
    size_t w16_cap[4][N_W];
    float *bias; /* (4H) b_ih + b_hh */
    uint16_t *x16, *h16; /* (B,T,C), (B,T,H) bf16 copies of the input and output */
    uint16_t *hs; /* [nb][nch+1][NB*H] h at the chunk edges (bf16) */
    float *cs; /* [nb][nch+1][NB*H] c at the chunk edges */
    unsigned char *ws; /* [nb][nch] oneDNN workspaces of ws_stride bytes */
    size_t ws_stride;
    float *dwl, *dwi, *db; /* per block: (C,4,H), (H,4,H) ldigo and (4,H) gradients */
    float *dsi, *dsic; /* per block: [2][NB*H] dL/dh, dL/dc handed to the previous chunk */
    float *zero; /* NB*H zeros: nothing from beyond a TBPTT boundary */
    float *dx_scratch; /* (B,T,C) when the caller wants no dx */
    size_t cap[14];
    struct lstm_ctx *next;
} lstm_ctx;

static lstm_ctx *g_ctx;
static pthread_mutex_t g_ctx_mu = PTHREAD_MUTEX_INITIALIZER;

static lstm_ctx *ctx_find(const float *key, int create) {
    pthread_mutex_lock(&g_ctx_mu);
    lstm_ctx *c = g_ctx;
    for (; c; c = c->next)
        if (c->key == key) break;
    if (!c && create) {
        c = gt_calloc(1, sizeof *c, __FILE__, __LINE__);
        c->key = key;
        c->next = g_ctx;
        g_ctx = c;
    }
    pthread_mutex_unlock(&g_ctx_mu);
    return c;
}

static void *grow(void *p, size_t *cap, size_t need) {
    if (need <= *cap && p) return p;
    free(p);
    *cap = need;
    return gt_aligned_alloc(64, (need + 63) / 64 * 64 + 64, __FILE__, __LINE__);
}

static void ctx_free_bufs(lstm_ctx *c) {
    void **bufs[] = {(void **)&c->bias, (void **)&c->x16, (void **)&c->h16, (void **)&c->hs, (void **)&c->cs,
                     (void **)&c->ws, (void **)&c->dwl, (void **)&c->dwi, (void **)&c->db, (void **)&c->dsi,
                     (void **)&c->dsic, (void **)&c->zero, (void **)&c->dx_scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) {
        free(*bufs[i]);
        *bufs[i] = NULL;
    }
    for (int s = 0; s < 4; s++)
        for (int w = 0; w < N_W; w++) {
            free(c->w16[s][w]);
            c->w16[s][w] = NULL;
            c->w16_cap[s][w] = 0;
        }
    memset(c->cap, 0, sizeof c->cap);
}

void gt_lstm_onednn_release(const float *key) {
    pthread_mutex_lock(&g_ctx_mu);
    for (lstm_ctx **pp = &g_ctx; *pp; pp = &(*pp)->next)
        if ((*pp)->key == key) {
            lstm_ctx *c = *pp;
            *pp = c->next;
            ctx_free_bufs(c);
            free(c);
            break;
        }
    pthread_mutex_unlock(&g_ctx_mu);
}

static int shape_of(const lstm_ctx *c, int b, int j) {
    return 2 * (b == c->nb - 1 && c->lastN != c->NB) + (j == c->nch - 1 && c->lastT != c->TC);
}
static size_t edge(const lstm_ctx *c, int b, int j) { return ((size_t)b * (c->nch + 1) + j) * c->NB * c->H; }
static unsigned char *ws_of(const lstm_ctx *c, int b, int j) {
    return c->ws + ((size_t)b * c->nch + j) * c->ws_stride;
}

/* the weights (f32, the engine's (4H, in)) into the bf16 layouts w0..w1 of every shape in use */
static void reorder_weights(lstm_ctx *c, int w0, const float *w_ih, const float *w_hh) {
    for (int s = 0; s < 4; s++) {
        rnn_prims *p = c->pr[s];
        if (!p) continue;
        for (int w = w0; w < w0 + 2; w++) {
            c->w16[s][w] = grow(c->w16[s][w], &c->w16_cap[s][w], p->w_bytes[w]);
            const arg_ptr a[2] = {{DNNL_ARG_FROM, (w == W_FWD_L || w == W_BWD_L) ? w_ih : w_hh},
                                  {DNNL_ARG_TO, c->w16[s][w]}};
            run(p->reo[w], p->rpd[w], 0, a, 2);
        }
    }
}

/* Sets the split of (B, T) in c and the primitives of its shapes; 0 when oneDNN has none. */
static int ctx_plan(lstm_ctx *c, int B, int T, int C, int H, int TC) {
    const int nthr = gt_par_threads();
    c->NB = env_int("GT_LSTM_BATCH_BLOCK", (B + nthr - 1) / nthr);
    if (c->NB > B) c->NB = B;
    c->TC = TC > T ? T : TC;
    c->B = B, c->T = T, c->C = C, c->H = H;
    c->nb = (B + c->NB - 1) / c->NB;
    c->nch = (T + c->TC - 1) / c->TC;
    c->lastN = B - (c->nb - 1) * c->NB;
    c->lastT = T - (c->nch - 1) * c->TC;
    memset(c->pr, 0, sizeof c->pr);
    c->ws_stride = 0;
    for (int s = 0; s < 4; s++) {
        const int N = (s & 2) ? c->lastN : c->NB, Tc = (s & 1) ? c->lastT : c->TC;
        if (((s & 2) && c->lastN == c->NB) || ((s & 1) && c->lastT == c->TC)) continue;
        rnn_prims *p = prims_get(N, Tc, T, C, H);
        if (!p->ok) return 0;
        c->pr[s] = p;
        if (p->ws_bytes > c->ws_stride) c->ws_stride = (p->ws_bytes + 63) / 64 * 64;
    }
    const size_t NH = (size_t)c->NB * H, G = 4 * (size_t)H, edges = (size_t)c->nb * (c->nch + 1) * NH;
    c->x16 = grow(c->x16, &c->cap[0], (size_t)B * T * C * 2);
    c->h16 = grow(c->h16, &c->cap[1], (size_t)B * T * H * 2);
    c->hs = grow(c->hs, &c->cap[2], edges * 2);
    c->cs = grow(c->cs, &c->cap[3], edges * 4);
    c->ws = grow(c->ws, &c->cap[4], (size_t)c->nb * c->nch * c->ws_stride);
    c->bias = grow(c->bias, &c->cap[5], G * 4);
    return 1;
}

static void fwd_task(void *ctx, int b, int tid) {
    (void)tid;
    lstm_ctx *c = ctx;
    const int T = c->T, C = c->C, H = c->H, n = b == c->nb - 1 ? c->lastN : c->NB;
    const size_t r0 = (size_t)b * c->NB * T; /* first (sample, step) row of the block */
    gt_to_bf16(c->x16 + r0 * C, c->x + r0 * C, (size_t)n * T * C);
    memset(c->hs + edge(c, b, 0), 0, (size_t)n * H * 2); /* every window starts from zero */
    memset(c->cs + edge(c, b, 0), 0, (size_t)n * H * 4);
    for (int j = 0; j < c->nch; j++) {
        const int s = shape_of(c, b, j);
        const rnn_prims *p = c->pr[s];
        const size_t r = r0 + (size_t)j * c->TC;
        const arg_ptr a[] = {{DNNL_ARG_SRC_LAYER, c->x16 + r * C},     {DNNL_ARG_SRC_ITER, c->hs + edge(c, b, j)},
                             {DNNL_ARG_SRC_ITER_C, c->cs + edge(c, b, j)}, {DNNL_ARG_WEIGHTS_LAYER, c->w16[s][W_FWD_L]},
                             {DNNL_ARG_WEIGHTS_ITER, c->w16[s][W_FWD_I]}, {DNNL_ARG_BIAS, c->bias},
                             {DNNL_ARG_DST_LAYER, c->h16 + r * H},     {DNNL_ARG_DST_ITER, c->hs + edge(c, b, j + 1)},
                             {DNNL_ARG_DST_ITER_C, c->cs + edge(c, b, j + 1)}, {DNNL_ARG_WORKSPACE, ws_of(c, b, j)}};
        run(p->fwd, p->fpd, p->scratch_bytes, a, (int)(sizeof a / sizeof *a));
    }
    if (c->h) { /* h = the bf16 output, exactly */
        const uint16_t *s = c->h16 + r0 * H;
        float *d = (float *)c->h + r0 * H;
        for (size_t i = 0; i < (size_t)n * T * H; i++) {
            const uint32_t u = (uint32_t)s[i] << 16;
            memcpy(d + i, &u, 4);
        }
    }
}

/* the forward on c's plan; c->bias already set; h NULL: not written */
static void ctx_forward(lstm_ctx *c, float *h, const float *x, const float *w_ih, const float *w_hh) {
    c->valid = 0;
    c->x = x, c->w_ih = w_ih, c->w_hh = w_hh, c->h = h;
    reorder_weights(c, W_FWD_L, w_ih, w_hh);
    gt_par_for(c->nb, fwd_task, c);
    gt_gemm_note_impl(GT_GEMM_LSTM, c->pr[0]->impl);
    c->valid = 1;
}

int gt_lstm_onednn_forward(const float *key, float *h, const float *x, const float *w_ih, const float *w_hh,
                           const float *b_ih, const float *b_hh, int B, int T, int C, int H) {
    if (gt_cpu_get_precision() != GT_CPU_BF16 || !gt_cpu_has_bf16_units()) return 0;
    lstm_ctx *c = ctx_find(key, 1);
    c->valid = 0;
    if (!ctx_plan(c, B, T, C, H, env_int("GT_LSTM_CHUNK", GT_LSTM_ONEDNN_CHUNK))) return 0;
    for (int k = 0; k < 4 * H; k++) c->bias[k] = (b_ih ? b_ih[k] : 0.0f) + (b_hh ? b_hh[k] : 0.0f);
    ctx_forward(c, h, x, w_ih, w_hh);
    return 1;
}

typedef struct bwd_args {
    lstm_ctx *c;
    float *dx;
    const float *dh;
    int K;
} bwd_args;

static void bwd_task(void *ctx, int b, int tid) {
    (void)tid;
    const bwd_args *ba = ctx;
    lstm_ctx *c = ba->c;
    const int T = c->T, C = c->C, H = c->H, G = 4 * H;
    const size_t NH = (size_t)c->NB * H, r0 = (size_t)b * c->NB * T;
    float *dwl = c->dwl + (size_t)b * C * G, *dwi = c->dwi + (size_t)b * H * G, *db = c->db + (size_t)b * G;
    float *dsi = c->dsi + (size_t)b * 2 * NH, *dsic = c->dsic + (size_t)b * 2 * NH;
    memset(dwl, 0, (size_t)C * G * 4);
    memset(dwi, 0, (size_t)H * G * 4);
    memset(db, 0, (size_t)G * 4);
    for (int j = c->nch - 1; j >= 0; j--) {
        const int s = shape_of(c, b, j), end = j * c->TC + ((s & 1) ? c->lastT : c->TC);
        const rnn_prims *p = c->pr[s];
        const size_t r = r0 + (size_t)j * c->TC;
        /* the successor's dL/dh, dL/dc unless a TBPTT boundary (or the window's end) lies between */
        const int cut = end == T || end % ba->K == 0;
        const float *ddi = cut ? c->zero : dsi + ((j + 1) & 1) * NH, *ddic = cut ? c->zero : dsic + ((j + 1) & 1) * NH;
        const arg_ptr a[] = {
            {DNNL_ARG_SRC_LAYER, c->x16 + r * C},
            {DNNL_ARG_SRC_ITER, c->hs + edge(c, b, j)},
            {DNNL_ARG_SRC_ITER_C, c->cs + edge(c, b, j)},
            {DNNL_ARG_WEIGHTS_LAYER, c->w16[s][W_BWD_L]},
            {DNNL_ARG_WEIGHTS_ITER, c->w16[s][W_BWD_I]},
            {DNNL_ARG_BIAS, c->bias},
            {DNNL_ARG_DST_LAYER, c->h16 + r * H},
            {DNNL_ARG_DST_ITER, c->hs + edge(c, b, j + 1)},
            {DNNL_ARG_DST_ITER_C, c->cs + edge(c, b, j + 1)},
            {DNNL_ARG_WORKSPACE, ws_of(c, b, j)},
            {DNNL_ARG_DIFF_SRC_LAYER, ba->dx + r * C},
            {DNNL_ARG_DIFF_SRC_ITER, dsi + (j & 1) * NH},
            {DNNL_ARG_DIFF_SRC_ITER_C, dsic + (j & 1) * NH},
            {DNNL_ARG_DIFF_WEIGHTS_LAYER, dwl},
            {DNNL_ARG_DIFF_WEIGHTS_ITER, dwi},
            {DNNL_ARG_DIFF_BIAS, db},
            {DNNL_ARG_DIFF_DST_LAYER, ba->dh + r * H},
            {DNNL_ARG_DIFF_DST_ITER, ddi},
            {DNNL_ARG_DIFF_DST_ITER_C, ddic},
        };
        run(p->bwd, p->bpd, p->scratch_bytes, a, (int)(sizeof a / sizeof *a));
    }
}

int gt_lstm_onednn_backward(const float *key, float *dx, float *dw_ih, float *dw_hh, float *db_ih, float *db_hh,
                            const float *dh, const float *x, const float *w_ih, const float *w_hh, const float *h,
                            int B, int T, int C, int H, int K) {
    lstm_ctx *c = ctx_find(key, 0);
    if (!c || !c->valid) return 0;
    GT_CHECK(c->x == x && c->w_ih == w_ih && c->w_hh == w_hh && c->h == h && c->B == B && c->T == T && c->C == C &&
                 c->H == H,
             GT_EXIT_INTERNAL, "gt_lstm_backward (bf16, oneDNN): not the buffers or shapes of the forward on them");
    if (K <= 0 || K > T) K = T;
    if (K < T && K % c->TC) { /* TBPTT boundaries inside the forward's chunks: again on chunks of K */
        GT_CHECK(ctx_plan(c, B, T, C, H, K), GT_EXIT_INTERNAL, "oneDNN: no bf16 LSTM for chunks of %d steps", K);
        ctx_forward(c, NULL, x, w_ih, w_hh);
        c->h = h;
    }
    const int G = 4 * H;
    const size_t NH = (size_t)c->NB * H;
    c->dwl = grow(c->dwl, &c->cap[6], (size_t)c->nb * C * G * 4);
    c->dwi = grow(c->dwi, &c->cap[7], (size_t)c->nb * H * G * 4);
    c->db = grow(c->db, &c->cap[8], (size_t)c->nb * G * 4);
    c->dsi = grow(c->dsi, &c->cap[9], (size_t)c->nb * 2 * NH * 4);
    c->dsic = grow(c->dsic, &c->cap[10], (size_t)c->nb * 2 * NH * 4);
    c->zero = grow(c->zero, &c->cap[11], NH * 4);
    memset(c->zero, 0, NH * 4);
    if (!dx) c->dx_scratch = grow(c->dx_scratch, &c->cap[12], (size_t)B * T * C * 4);
    reorder_weights(c, W_BWD_L, w_ih, w_hh);
    bwd_args ba = {.c = c, .dx = dx ? dx : c->dx_scratch, .dh = dh, .K = K};
    gt_par_for(c->nb, bwd_task, &ba);
    /* the blocks' sums in block order (the same bits for any thread count), then into the engine's (4H, in) */
    for (int b = 1; b < c->nb; b++) {
        const float *l = c->dwl + (size_t)b * C * G, *i = c->dwi + (size_t)b * H * G, *d = c->db + (size_t)b * G;
        for (size_t k = 0; k < (size_t)C * G; k++) c->dwl[k] += l[k];
        for (size_t k = 0; k < (size_t)H * G; k++) c->dwi[k] += i[k];
        for (int k = 0; k < G; k++) c->db[k] += d[k];
    }
    for (int i = 0; i < C; i++)
        for (int k = 0; k < G; k++) dw_ih[(size_t)k * C + i] += c->dwl[(size_t)i * G + k];
    for (int i = 0; i < H; i++)
        for (int k = 0; k < G; k++) dw_hh[(size_t)k * H + i] += c->dwi[(size_t)i * G + k];
    for (int k = 0; k < G; k++) {
        if (db_ih) db_ih[k] += c->db[k];
        if (db_hh) db_hh[k] += c->db[k];
    }
    return 1;
}

#endif /* GT_HAVE_DNNL */
