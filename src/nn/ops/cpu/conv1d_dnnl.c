/* nn/ops/cpu/conv1d_dnnl.c: conv1d on oneDNN's convolution primitives (see conv1d_dnnl.h).
 *
 * Per (precision, chunk size N, IC, OC, W, K) one cache entry holds the
 * three one-thread primitives (forward_training, backward_data,
 * backward_weights) on (N,W,C) activations and weights in the layouts the
 * primitives choose (format "any": blocked, which is what lets oneDNN 2.6
 * pick its brgemm/AMX kernels; its plain-weights kernels are the reference
 * ones), the reorders from and to the (OC,IC,K) fp32 weights and between
 * the (N,C,W) fp32 activations and the primitives' (N,W,C) ones, and the
 * largest user scratchpad of them (Debian's libdnnl shares a library
 * scratchpad between threads, so every primitive here gets the calling
 * thread's own). */
#include "nn/ops/cpu/conv1d_dnnl.h"

#ifdef GT_HAVE_DNNL

#include <dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "nn/ops/cpu/parallel.h"

static pthread_once_t g_engine_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t g_engine;
static void engine_init(void) { g_engine = gt_cpu_dnnl_engine(); } /* the process's one oneDNN engine */

typedef struct conv_key {
    int prec, N, IC, OC, W, K;
} conv_key;

typedef struct conv_entry {
    conv_key key;
    int ok; /* 0: no real kernel for this ISA/precision (oneDNN's reference one, or none) */
    dnnl_primitive_t fwd, bwd_d, bwd_w;
    dnnl_primitive_t r_wf, r_wd, r_dw; /* oiw -> fwd weights, oiw -> bwd_d weights (NULL: fwd's), dw -> oiw */
    dnnl_primitive_t r_src, r_dd, r_dst, r_ds; /* (N,C,W) fp32 <-> the primitives' (N,W,C) */
    dnnl_memory_desc_t src_md, dst_md, dd_md, ds_md, wf_md, wd_md, dw_md, wp_md, in_md, out_md;
    size_t scratch_bytes;
    char impl_fwd[96], impl_bwd_d[96], impl_bwd_w[96];
    struct conv_entry *next;
} conv_entry;

static conv_entry *g_entries;
static pthread_mutex_t g_entries_mu = PTHREAD_MUTEX_INITIALIZER;

static size_t pd_scratch(const_dnnl_primitive_desc_t pd) {
    return dnnl_memory_desc_get_size(dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0));
}

static void pd_impl(const_dnnl_primitive_desc_t pd, char *dst, size_t n) {
    const char *s = NULL;
    DNNL_CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s));
    snprintf(dst, n, "onednn %s", s ? s : "?");
}

/* a real kernel: oneDNN names its reference implementations "ref:" */
static int is_real(const char *impl) { return !strstr(impl, "ref"); }

static dnnl_primitive_t make_reorder(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to, size_t *scratch) {
    dnnl_primitive_attr_t attr;
    DNNL_CHECK(dnnl_primitive_attr_create(&attr));
    DNNL_CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    dnnl_primitive_desc_t pd;
    DNNL_CHECK(dnnl_reorder_primitive_desc_create(&pd, from, g_engine, to, g_engine, attr));
    dnnl_primitive_attr_destroy(attr);
    size_t s = pd_scratch(pd);
    if (s > *scratch) *scratch = s;
    dnnl_primitive_t p;
    DNNL_CHECK(dnnl_primitive_create(&p, pd));
    dnnl_primitive_desc_destroy(pd);
    return p;
}

static void entry_create(conv_entry *e) {
    const conv_key *k = &e->key;
    const dnnl_data_type_t dt = k->prec == GT_CPU_BF16 ? dnnl_bf16 : dnnl_f32;
    dnnl_dims_t sd = {k->N, k->IC, k->W}, wd = {k->OC, k->IC, k->K}, dd = {k->N, k->OC, k->W};
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&e->src_md, 3, sd, dt, dnnl_nwc));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&e->dst_md, 3, dd, dnnl_f32, dnnl_nwc));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&e->dd_md, 3, dd, dt, dnnl_nwc));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&e->ds_md, 3, sd, dnnl_f32, dnnl_nwc));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&e->wp_md, 3, wd, dnnl_f32, dnnl_oiw));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&e->in_md, 3, sd, dnnl_f32, dnnl_ncw));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&e->out_md, 3, dd, dnnl_f32, dnnl_ncw));
    dnnl_memory_desc_t w_any, dw_any;
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&w_any, 3, wd, dt, dnnl_format_tag_any));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&dw_any, 3, wd, dnnl_f32, dnnl_format_tag_any));
    dnnl_dims_t st = {1}, pl = {(k->K - 1) / 2}, pr = {k->K - 1 - (k->K - 1) / 2};
    dnnl_primitive_attr_t attr;
    DNNL_CHECK(dnnl_primitive_attr_create(&attr));
    DNNL_CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    dnnl_convolution_desc_t fd, bdd, bwd;
    DNNL_CHECK(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &e->src_md,
                                                  &w_any, NULL, &e->dst_md, st, pl, pr));
    DNNL_CHECK(dnnl_convolution_backward_data_desc_init(&bdd, dnnl_convolution_direct, &e->ds_md, &w_any, &e->dd_md,
                                                        st, pl, pr));
    DNNL_CHECK(dnnl_convolution_backward_weights_desc_init(&bwd, dnnl_convolution_direct, &e->src_md, &dw_any, NULL,
                                                           &e->dd_md, st, pl, pr));
    dnnl_primitive_desc_t fpd = NULL, bdpd = NULL, bwpd = NULL;
    e->ok = dnnl_primitive_desc_create(&fpd, &fd, attr, g_engine, NULL) == dnnl_success &&
            dnnl_primitive_desc_create(&bdpd, &bdd, attr, g_engine, fpd) == dnnl_success &&
            dnnl_primitive_desc_create(&bwpd, &bwd, attr, g_engine, fpd) == dnnl_success;
    dnnl_primitive_attr_destroy(attr);
    if (e->ok) {
        pd_impl(fpd, e->impl_fwd, sizeof e->impl_fwd);
        pd_impl(bdpd, e->impl_bwd_d, sizeof e->impl_bwd_d);
        pd_impl(bwpd, e->impl_bwd_w, sizeof e->impl_bwd_w);
        e->ok = is_real(e->impl_fwd) && is_real(e->impl_bwd_d) && is_real(e->impl_bwd_w);
    }
    if (e->ok) {
        e->wf_md = *dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0);
        e->wd_md = *dnnl_primitive_desc_query_md(bdpd, dnnl_query_weights_md, 0);
        e->dw_md = *dnnl_primitive_desc_query_md(bwpd, dnnl_query_diff_weights_md, 0);
        size_t s = pd_scratch(fpd);
        if (pd_scratch(bdpd) > s) s = pd_scratch(bdpd);
        if (pd_scratch(bwpd) > s) s = pd_scratch(bwpd);
        e->scratch_bytes = s;
        DNNL_CHECK(dnnl_primitive_create(&e->fwd, fpd));
        DNNL_CHECK(dnnl_primitive_create(&e->bwd_d, bdpd));
        DNNL_CHECK(dnnl_primitive_create(&e->bwd_w, bwpd));
        e->r_wf = make_reorder(&e->wp_md, &e->wf_md, &e->scratch_bytes);
        e->r_wd = dnnl_memory_desc_equal(&e->wf_md, &e->wd_md) ? NULL
                                                               : make_reorder(&e->wp_md, &e->wd_md, &e->scratch_bytes);
        e->r_dw = make_reorder(&e->dw_md, &e->wp_md, &e->scratch_bytes);
        e->r_src = make_reorder(&e->in_md, &e->src_md, &e->scratch_bytes);
        e->r_dd = make_reorder(&e->out_md, &e->dd_md, &e->scratch_bytes);
        e->r_dst = make_reorder(&e->dst_md, &e->out_md, &e->scratch_bytes);
        e->r_ds = make_reorder(&e->ds_md, &e->in_md, &e->scratch_bytes);
    }
    if (fpd) dnnl_primitive_desc_destroy(fpd);
    if (bdpd) dnnl_primitive_desc_destroy(bdpd);
    if (bwpd) dnnl_primitive_desc_destroy(bwpd);
}

static conv_entry *entry_get(gt_cpu_prec p, int N, int IC, int OC, int W, int K) {
    pthread_once(&g_engine_once, engine_init);
    omp_set_num_threads(1); /* primitives for a team of one: the engine's pool owns the cores */
    const conv_key k = {.prec = (int)p, .N = N, .IC = IC, .OC = OC, .W = W, .K = K};
    pthread_mutex_lock(&g_entries_mu);
    conv_entry *e = g_entries;
    for (; e; e = e->next)
        if (!memcmp(&e->key, &k, sizeof k)) break;
    if (!e) {
        e = gt_calloc(1, sizeof *e, __FILE__, __LINE__);
        e->key = k;
        entry_create(e);
        e->next = g_entries;
        g_entries = e;
    }
    pthread_mutex_unlock(&g_entries_mu);
    return e;
}

int gt_conv1d_dnnl_usable(gt_cpu_prec p, int B, int IC, int OC, int W, int K) {
    const int n = B < GT_CONV1D_DNNL_NB ? B : GT_CONV1D_DNNL_NB;
    if (n <= 0 || (p != GT_CPU_BF16 && p != GT_CPU_FP32)) return 0;
    if (!entry_get(p, n, IC, OC, W, K)->ok) return 0;
    return B % GT_CONV1D_DNNL_NB == 0 || B < GT_CONV1D_DNNL_NB ||
           entry_get(p, B % GT_CONV1D_DNNL_NB, IC, OC, W, K)->ok;
}

/* ------------------------------------------------------------- buffers -- */

typedef struct tls_bufs {
    void *scratch, *src, *dd;
    float *dst, *ds, *dwb, *dwp, *pdb;
    size_t scratch_cap, src_cap, dd_cap, dst_cap, ds_cap, dwb_cap, dwp_cap, pdb_cap;
} tls_bufs;
static _Thread_local tls_bufs t_bufs;

static void *grow(void *p, size_t *cap, size_t need) {
    if (need <= *cap) return p;
    free(p);
    size_t n = need + need / 4 + 64;
    p = gt_aligned_alloc(64, (n + 63) / 64 * 64, __FILE__, __LINE__);
    *cap = n;
    return p;
}

/* Runs prim with args (n of them) plus this thread's scratchpad. The memory
 * objects are made from (md, pointer) pairs. */
static void run(dnnl_primitive_t prim, size_t scratch_bytes, int n, const int *arg, const dnnl_memory_desc_t *const *md,
                void *const *ptr) {
    tls_bufs *t = &t_bufs;
    t->scratch = grow(t->scratch, &t->scratch_cap, scratch_bytes ? scratch_bytes : 1);
    dnnl_memory_t m[5];
    dnnl_exec_arg_t args[5];
    for (int i = 0; i < n; i++) {
        DNNL_CHECK(dnnl_memory_create(&m[i], md[i], g_engine, ptr[i]));
        args[i] = (dnnl_exec_arg_t){arg[i], m[i]};
    }
    dnnl_memory_desc_t s_md;
    dnnl_dims_t sd = {(dnnl_dim_t)(scratch_bytes ? scratch_bytes : 1)};
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&s_md, 1, sd, dnnl_u8, dnnl_a));
    DNNL_CHECK(dnnl_memory_create(&m[n], &s_md, g_engine, t->scratch));
    args[n] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, m[n]};
    DNNL_CHECK(dnnl_primitive_execute(prim, gt_cpu_dnnl_stream(), n + 1, args));
    DNNL_CHECK(dnnl_stream_wait(gt_cpu_dnnl_stream()));
    for (int i = 0; i <= n; i++) dnnl_memory_destroy(m[i]);
}

/* from (md_from, p_from) to (md_to, p_to) through reorder r (jit: oneDNN's fast transposes) */
static void reorder(const conv_entry *e, dnnl_primitive_t r, const dnnl_memory_desc_t *md_from, const void *p_from,
                    const dnnl_memory_desc_t *md_to, void *p_to) {
    const int arg[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
    const dnnl_memory_desc_t *md[2] = {md_from, md_to};
    void *ptr[2] = {(void *)p_from, p_to};
    run(r, e->scratch_bytes, 2, arg, md, ptr);
}

/* w (OC,IC,K) fp32 in e's forward (which 0) or backward-data (1) layout, in a
 * new buffer (freed by the caller): made at every call, on the calling thread
 * before the chunks run (a few thousand weights: no cache to go stale) */
static void *weights_for(const conv_entry *e, int which, const float *w) {
    if (which == 1 && !e->r_wd) which = 0; /* backward data reads the forward's layout */
    const dnnl_memory_desc_t *md = which ? &e->wd_md : &e->wf_md;
    const size_t n = dnnl_memory_desc_get_size(md);
    void *buf = gt_aligned_alloc(64, (n + 63) / 64 * 64, __FILE__, __LINE__);
    reorder(e, which ? e->r_wd : e->r_wf, &e->wp_md, w, md, buf);
    return buf;
}

/* ------------------------------------------------------------- forward -- */

typedef struct conv_args {
    float *out, *dinp, *dw, *db;
    const float *inp, *w, *b, *dout, *fout;
    int B, IC, OC, W, K, bf;
    gt_act act;
    const conv_entry *e[2]; /* full chunks, the last (smaller) chunk */
    void *w16[2];           /* weights in e[i]'s forward (or backward data) layout (or NULL) */
    gt_par_ordered order;
} conv_args;

static void forward_chunk(void *ctx, int task, int tid) {
    (void)tid;
    const conv_args *a = ctx;
    const int OC = a->OC, W = a->W, b0 = task * GT_CONV1D_DNNL_NB;
    const int nb = a->B - b0 < GT_CONV1D_DNNL_NB ? a->B - b0 : GT_CONV1D_DNNL_NB;
    const int last = nb < GT_CONV1D_DNNL_NB;
    const conv_entry *e = a->e[last];
    tls_bufs *t = &t_bufs;
    omp_set_num_threads(1);
    const size_t in_n = (size_t)a->IC * W, out_n = (size_t)OC * W;
    t->src = grow(t->src, &t->src_cap, dnnl_memory_desc_get_size(&e->src_md));
    t->dst = grow(t->dst, &t->dst_cap, nb * out_n * 4);
    reorder(e, e->r_src, &e->in_md, a->inp + b0 * in_n, &e->src_md, t->src);
    const int arg[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    const dnnl_memory_desc_t *md[3] = {&e->src_md, &e->wf_md, &e->dst_md};
    void *ptr[3] = {t->src, (void *)a->w16[last], t->dst};
    run(e->fwd, e->scratch_bytes, 3, arg, md, ptr);
    float *out = a->out + b0 * out_n;
    reorder(e, e->r_dst, &e->dst_md, t->dst, &e->out_md, out);
    for (int j = 0; j < nb; j++) /* out = act(out + bias), the im2col route's fp32 operations */
        for (int oc = 0; oc < OC; oc++) {
            float *d = out + j * out_n + (size_t)oc * W;
            const float bias = a->b ? a->b[oc] : 0.0f;
            if (a->act == GT_ACT_RELU)
                for (int s = 0; s < W; s++) d[s] = gt_relu(d[s] + bias);
            else
                for (int s = 0; s < W; s++) d[s] = d[s] + bias;
        }
}

static int n_chunks(int B) { return (B + GT_CONV1D_DNNL_NB - 1) / GT_CONV1D_DNNL_NB; }

static void setup(conv_args *a, gt_cpu_prec p, int which) {
    a->bf = p == GT_CPU_BF16;
    const int full = a->B >= GT_CONV1D_DNNL_NB, rem = a->B % GT_CONV1D_DNNL_NB;
    a->e[0] = full ? entry_get(p, GT_CONV1D_DNNL_NB, a->IC, a->OC, a->W, a->K) : NULL;
    a->e[1] = rem ? entry_get(p, rem, a->IC, a->OC, a->W, a->K) : NULL;
    for (int i = 0; i < 2; i++) {
        if (!a->e[i]) continue;
        GT_CHECK(a->e[i]->ok, GT_EXIT_INTERNAL, "conv1d: no oneDNN convolution for this shape (route rule)");
        a->w16[i] = a->w ? weights_for(a->e[i], which, a->w) : NULL;
    }
}

void gt_conv1d_dnnl_forward(gt_cpu_prec p, float *out, const float *inp, const float *w, const float *b, int B,
                            int IC, int OC, int W, int K, gt_act act) {
    if (B <= 0) return;
    conv_args a = {.out = out, .inp = inp, .w = w, .b = b, .B = B, .IC = IC, .OC = OC, .W = W, .K = K, .act = act};
    setup(&a, p, 0);
    for (int i = 0; i < 2; i++)
        if (a.e[i]) gt_gemm_note_impl(GT_GEMM_CONV1D, a.e[i]->impl_fwd);
    gt_par_for(n_chunks(B), forward_chunk, &a);
    free(a.w16[0]), free(a.w16[1]);
}

/* ------------------------------------------------------------ backward -- */

static void backward_chunk(void *ctx, int task, int tid) {
    (void)tid;
    conv_args *a = ctx;
    const int IC = a->IC, OC = a->OC, W = a->W, K = a->K, b0 = task * GT_CONV1D_DNNL_NB;
    const int nb = a->B - b0 < GT_CONV1D_DNNL_NB ? a->B - b0 : GT_CONV1D_DNNL_NB;
    const int last = nb < GT_CONV1D_DNNL_NB;
    const conv_entry *e = a->e[last];
    tls_bufs *t = &t_bufs;
    omp_set_num_threads(1);
    const size_t in_n = (size_t)IC * W, out_n = (size_t)OC * W, n_w = (size_t)OC * IC * K;
    t->src = grow(t->src, &t->src_cap, dnnl_memory_desc_get_size(&e->src_md));
    t->dd = grow(t->dd, &t->dd_cap, dnnl_memory_desc_get_size(&e->dd_md));
    t->dst = grow(t->dst, &t->dst_cap, nb * out_n * 4);
    t->dwb = grow(t->dwb, &t->dwb_cap, dnnl_memory_desc_get_size(&e->dw_md));
    t->dwp = grow(t->dwp, &t->dwp_cap, n_w * 4);
    t->pdb = grow(t->pdb, &t->pdb_cap, (size_t)OC * 4);
    float *pdb = t->pdb, *dz = t->dst; /* (nb,OC,W) dout' = dout * relu'(out) */
    for (int oc = 0; oc < OC; oc++) pdb[oc] = 0.0f;
    for (int j = 0; j < nb; j++)
        for (int oc = 0; oc < OC; oc++) {
            const size_t o = (size_t)(b0 + j) * out_n + (size_t)oc * W;
            const float *g = a->dout + o;
            float *d = dz + (size_t)j * out_n + (size_t)oc * W;
            float acc = 0.0f;
            if (a->act == GT_ACT_RELU) {
                const float *y = a->fout + o;
                for (int s = 0; s < W; s++) {
                    d[s] = gt_relu_grad_from_out(y[s], g[s]);
                    acc += d[s];
                }
            } else {
                for (int s = 0; s < W; s++) {
                    d[s] = g[s];
                    acc += d[s];
                }
            }
            pdb[oc] += acc;
        }
    reorder(e, e->r_dd, &e->out_md, dz, &e->dd_md, t->dd);
    if (a->dw) {
        reorder(e, e->r_src, &e->in_md, a->inp + b0 * in_n, &e->src_md, t->src);
        const int arg[3] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS};
        const dnnl_memory_desc_t *md[3] = {&e->src_md, &e->dd_md, &e->dw_md};
        void *ptr[3] = {t->src, t->dd, t->dwb};
        run(e->bwd_w, e->scratch_bytes, 3, arg, md, ptr);
        reorder(e, e->r_dw, &e->dw_md, t->dwb, &e->wp_md, t->dwp);
    }
    if (a->dinp) {
        t->ds = grow(t->ds, &t->ds_cap, nb * in_n * 4);
        const int arg[3] = {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC};
        const dnnl_memory_desc_t *md[3] = {&e->dd_md, e->r_wd ? &e->wd_md : &e->wf_md, &e->ds_md};
        void *ptr[3] = {t->dd, (void *)a->w16[last], t->ds};
        run(e->bwd_d, e->scratch_bytes, 3, arg, md, ptr);
        reorder(e, e->r_ds, &e->ds_md, t->ds, &e->in_md, a->dinp + b0 * in_n);
    }
    if (!a->dw) return; /* the input gradient alone */
    /* dw += pdw, db += pdb, in chunk order */
    gt_par_ordered_begin(&a->order, task);
    for (size_t i = 0; i < n_w; i++) a->dw[i] += t->dwp[i];
    if (a->db)
        for (int oc = 0; oc < OC; oc++) a->db[oc] += pdb[oc];
    gt_par_ordered_end(&a->order, task);
}

void gt_conv1d_dnnl_backward(gt_cpu_prec p, float *dinp, float *dw, float *db, const float *dout,
                             const float *inp, const float *w, const float *out, int B, int IC, int OC, int W,
                             int K, gt_act act) {
    if (B <= 0) return;
    conv_args a = {.dinp = dinp, .dw = dw, .db = db, .inp = inp, .w = dinp ? w : NULL, .dout = dout, .fout = out,
                   .B = B, .IC = IC, .OC = OC, .W = W, .K = K, .act = act};
    setup(&a, p, 1);
    for (int i = 0; i < 2; i++)
        if (a.e[i]) {
            if (dw) gt_gemm_note_impl(GT_GEMM_CONV1D, a.e[i]->impl_bwd_w);
            if (dinp) gt_gemm_note_impl(GT_GEMM_CONV1D, a.e[i]->impl_bwd_d);
        }
    gt_par_ordered_init(&a.order);
    gt_par_for(n_chunks(B), backward_chunk, &a);
    free(a.w16[0]), free(a.w16[1]);
}

#endif /* GT_HAVE_DNNL */
