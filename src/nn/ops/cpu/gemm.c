/* nn/ops/cpu/gemm.c: gt_gemm, OpenBLAS for fp32 and a oneDNN matmul for bf16 (see gemm.h).
 *
 * bf16 route. A and B are rounded into the calling thread's buffers in their
 * own orientation (a transposed operand is described to oneDNN by strides,
 * which its brgemm matmul reads directly); C is passed as is (row stride ldc).
 * The primitive for (M, N, K, transposes, ldc, alpha, beta, threads) is
 * looked up in a process-wide table under a mutex and created on a miss with
 * a user scratchpad, so that concurrent callers never share oneDNN's. */
#include "nn/ops/cpu/gemm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "nn/ops/cpu/parallel.h"

#ifdef GT_HAVE_DNNL
#include <dnnl.h>
#include <omp.h>
#endif


/* what ran each family: one string per family and precision, set once */
static _Atomic(const char *) g_impl[GT_GEMM_N_FAMILIES];
static const char *const k_family_names[GT_GEMM_N_FAMILIES] = {"linear", "conv1d", "lstm", "attention", "other"};

const char *gt_gemm_family_name(gt_gemm_family fam) {
    return (unsigned)fam < GT_GEMM_N_FAMILIES ? k_family_names[fam] : "?";
}

const char *gt_gemm_impl(gt_gemm_family fam) {
    if ((unsigned)fam >= GT_GEMM_N_FAMILIES) return "";
    const char *s = atomic_load_explicit(&g_impl[fam], memory_order_acquire);
    return s ? s : "";
}

/* Records s for fam unless a string is there already that names the same
 * route; a second route (fp32 then bf16) is appended once: "a + b". */
static void note_impl(gt_gemm_family fam, const char *s) {
    const char *cur = atomic_load_explicit(&g_impl[fam], memory_order_acquire);
    if (cur && strstr(cur, s)) return;
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    cur = atomic_load_explicit(&g_impl[fam], memory_order_acquire);
    if (!cur || !strstr(cur, s)) {
        size_t n = (cur ? strlen(cur) + 3 : 0) + strlen(s) + 1;
        char *t = gt_malloc(n, __FILE__, __LINE__); /* kept for the life of the process */
        snprintf(t, n, "%s%s%s", cur ? cur : "", cur ? " + " : "", s);
        atomic_store_explicit(&g_impl[fam], t, memory_order_release); /* the old string leaks: a few bytes, once */
    }
    pthread_mutex_unlock(&mu);
}

void gt_gemm_note_impl(gt_gemm_family fam, const char *s) {
    if ((unsigned)fam < GT_GEMM_N_FAMILIES) note_impl(fam, s);
}

float gt_bf16_round(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) == 0x7f800000u) {
        if (u & 0x007fffffu) u |= 0x00400000u; /* NaN stays a (quiet) NaN */
    } else {
        u += 0x7fffu + ((u >> 16) & 1u);
    }
    u &= 0xffff0000u;
    float y;
    memcpy(&y, &u, 4);
    return y;
}

static void sgemm(gt_gemm_family fam, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, float alpha,
                  const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (!atomic_load_explicit(&g_impl[fam], memory_order_relaxed)) note_impl(fam, "openblas sgemm (fp32)");
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* ------------------------------------------------------------ flags, ISA -- */

static pthread_once_t g_flags_once = PTHREAD_ONCE_INIT;
static char g_flags[256] = "?";

static void read_flags(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    static const char *const want[] = {"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"};
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        if (strncmp(line, "flags", 5)) continue;
        size_t o = 0;
        g_flags[0] = 0;
        for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
            char pat[32];
            snprintf(pat, sizeof pat, " %s", want[i]);
            const char *p = strstr(line, pat);
            size_t L = strlen(pat);
            if (p && (p[L] == ' ' || p[L] == '\n' || p[L] == 0))
                o += (size_t)snprintf(g_flags + o, sizeof g_flags - o, "%s%s", o ? " " : "", want[i]);
        }
        if (!o) snprintf(g_flags, sizeof g_flags, "(none of avx2, avx512f, avx512_bf16, amx_bf16)");
        break;
    }
    free(line);
    fclose(f);
}

const char *gt_cpu_flags(void) {
    pthread_once(&g_flags_once, read_flags);
    return g_flags;
}

#ifndef GT_HAVE_DNNL

int gt_cpu_bf16_available(void) { return 0; }
int gt_cpu_has_bf16_units(void) { return 0; }
const char *gt_cpu_isa_name(void) { return "none"; }
gt_cpu_prec gt_cpu_set_precision(gt_cpu_prec p) {
    (void)p;
    return GT_CPU_FP32;
}
gt_cpu_prec gt_cpu_get_precision(void) { return GT_CPU_FP32; }
void gt_cpu_params_changed(void) {}

void gt_gemm_prec(gt_cpu_prec p, int op, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K,
                  float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    (void)p;
    sgemm((gt_gemm_family)(op & 0xff), ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

#else /* GT_HAVE_DNNL */

int gt_cpu_bf16_available(void) { return 1; }

const char *gt_cpu_isa_name(void) {
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_sse41: return "sse41";
    default: return "other";
    }
}

int gt_cpu_has_bf16_units(void) {
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return isa == dnnl_cpu_isa_avx512_core_bf16 || isa == dnnl_cpu_isa_avx512_core_amx;
}

/* the calling thread's op context word (nn/ops/cpu/parallel.h) holds it */
gt_cpu_prec gt_cpu_set_precision(gt_cpu_prec p) {
    return (gt_cpu_prec)gt_par_set_ctx((unsigned)p <= GT_CPU_FP32_OPENBLAS ? (int)p : (int)GT_CPU_FP32);
}
gt_cpu_prec gt_cpu_get_precision(void) { return (gt_cpu_prec)gt_par_ctx(); }

static pthread_once_t g_engine_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t g_engine;

static void engine_init(void) { DNNL_CHECK(dnnl_engine_create(&g_engine, dnnl_cpu, 0)); }

dnnl_engine_t gt_cpu_dnnl_engine(void) {
    pthread_once(&g_engine_once, engine_init);
    return g_engine;
}

typedef struct mm_key {
    int M, N, K, ldc, ta, tb, nthr;
    int f32, lda, ldb; /* f32: oneDNN's fp32 matmul on A and B as given; else the bf16 copies; row strides */
    uint32_t alpha, beta;
} mm_key;

typedef struct mm_entry {
    mm_key key;
    dnnl_primitive_t prim;
    size_t scratch_bytes;
    char impl[96]; /* "onednn <impl_info_str>" */
    struct mm_entry *next;
} mm_entry;

#define MM_BUCKETS 256
static _Atomic(mm_entry *) g_table[MM_BUCKETS];
static pthread_mutex_t g_table_mu = PTHREAD_MUTEX_INITIALIZER;

static unsigned key_hash(const mm_key *k) {
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p = (const unsigned char *)k;
    for (size_t i = 0; i < sizeof *k; i++) h = (h ^ p[i]) * 1099511628211ull;
    return (unsigned)(h ^ (h >> 32)) % MM_BUCKETS;
}

/* logical (rows, cols), stored row-major with row stride ld, or transposed
 * (stored (cols, rows) with row stride ld) */
static void set_md(dnnl_memory_desc_t *md, int rows, int cols, int trans, int ld, dnnl_data_type_t dt) {
    dnnl_dims_t dims = {rows, cols};
    dnnl_dims_t strides = {trans ? 1 : ld, trans ? ld : 1};
    DNNL_CHECK(dnnl_memory_desc_init_by_strides(md, 2, dims, dt, strides));
}

static mm_entry *mm_create(const mm_key *k) {
    pthread_once(&g_engine_once, engine_init);
    dnnl_memory_desc_t a_md, b_md, c_md;
    /* bf16: row strides of the compact copies (or of the slice of them a task multiplies) */
    if (k->f32) {
        set_md(&a_md, k->M, k->K, k->ta, k->lda, dnnl_f32);
        set_md(&b_md, k->K, k->N, k->tb, k->ldb, dnnl_f32);
    } else {
        set_md(&a_md, k->M, k->K, k->ta, k->lda, dnnl_bf16);
        set_md(&b_md, k->K, k->N, k->tb, k->ldb, dnnl_bf16);
    }
    set_md(&c_md, k->M, k->N, 0, k->ldc, dnnl_f32);
    dnnl_matmul_desc_t desc;
    DNNL_CHECK(dnnl_matmul_desc_init(&desc, &a_md, &b_md, NULL, &c_md));
    dnnl_primitive_attr_t attr;
    DNNL_CHECK(dnnl_primitive_attr_create(&attr));
    DNNL_CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    float alpha, beta;
    memcpy(&alpha, &k->alpha, 4);
    memcpy(&beta, &k->beta, 4);
    if (alpha != 1.0f) DNNL_CHECK(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha));
    dnnl_post_ops_t po = NULL;
    if (beta != 0.0f) {
        DNNL_CHECK(dnnl_post_ops_create(&po));
        DNNL_CHECK(dnnl_post_ops_append_sum(po, beta));
        DNNL_CHECK(dnnl_primitive_attr_set_post_ops(attr, po));
    }
    dnnl_primitive_desc_t pd;
    dnnl_status_t st = dnnl_primitive_desc_create(&pd, &desc, attr, g_engine, NULL);
    if (po) dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    mm_entry *e = gt_calloc(1, sizeof *e, __FILE__, __LINE__);
    e->key = *k;
    if (st == dnnl_unimplemented) { /* no bf16 matmul for this ISA (AVX2 and older in oneDNN 2.6) */
        snprintf(e->impl, sizeof e->impl, "openblas sgemm on bf16-rounded inputs (emulated, %s)",
                 gt_cpu_isa_name());
        return e;
    }
    DNNL_CHECK(st);
    DNNL_CHECK(dnnl_primitive_create(&e->prim, pd));
    e->scratch_bytes = dnnl_memory_desc_get_size(dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0));
    const char *impl = NULL;
    DNNL_CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl));
    if (!impl) impl = "?";
    if (strstr(impl, "avx") || strstr(impl, "amx")) /* brg:avx512_core_amx_bf16 names its ISA */
        snprintf(e->impl, sizeof e->impl, "onednn %s", impl);
    else /* gemm:jit does not: the effective ISA is what its kernels use */
        snprintf(e->impl, sizeof e->impl, "onednn %s:%s", impl, gt_cpu_isa_name());
    dnnl_primitive_desc_destroy(pd);
    return e;
}

static mm_entry *mm_get(const mm_key *k) {
    const unsigned h = key_hash(k);
    for (mm_entry *e = atomic_load_explicit(&g_table[h], memory_order_acquire); e; e = e->next)
        if (!memcmp(&e->key, k, sizeof *k)) return e;
    pthread_mutex_lock(&g_table_mu);
    mm_entry *e = atomic_load_explicit(&g_table[h], memory_order_acquire);
    for (; e; e = e->next)
        if (!memcmp(&e->key, k, sizeof *k)) break;
    if (!e) {
        e = mm_create(k);
        e->next = atomic_load_explicit(&g_table[h], memory_order_relaxed);
        atomic_store_explicit(&g_table[h], e, memory_order_release); /* readers see a complete entry */
    }
    pthread_mutex_unlock(&g_table_mu);
    return e;
}

/* the calling thread's buffers: bf16 copies of A and B, oneDNN's scratchpad, its stream */
typedef struct tls_bufs {
    uint16_t *a, *b;
    size_t a_cap, b_cap;
    const float *a_src; /* what a holds: the storage (a_rows, a_cols, row stride a_ld) at a_src */
    int a_rows, a_cols, a_ld;
    float *fa, *fb; /* emulated route: bf16-rounded fp32 copies */
    size_t fa_cap, fb_cap;
    void *scratch;
    size_t scratch_cap;
    dnnl_stream_t stream;
} tls_bufs;
static _Thread_local tls_bufs t_bufs;

dnnl_stream_t gt_cpu_dnnl_stream(void) {
    if (!t_bufs.stream) DNNL_CHECK(dnnl_stream_create(&t_bufs.stream, gt_cpu_dnnl_engine(), dnnl_stream_default_flags));
    return t_bufs.stream;
}

static void *grow(void *p, size_t *cap, size_t need) {
    if (need <= *cap) return p;
    free(p);
    size_t n = need + need / 4 + 64;
    p = gt_aligned_alloc(64, (n + 63) / 64 * 64, __FILE__, __LINE__);
    *cap = n;
    return p;
}

/* dst (n) <- bf16 of src (n), round to nearest even, NaN kept quiet. Branch-free so that it
 * vectorises; compiled for AVX-512 and AVX2 too and picked at load time (the
 * conversion reads every operand once per product: a weight matrix of s2p_cnn's fc1
 * is 120 MB). */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void to_bf16_row(uint16_t *restrict d,
                                                                                    const uint32_t *restrict s,
                                                                                    size_t n) {
    for (size_t c = 0; c < n; c++) {
        const uint32_t u = s[c];
        const uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        const uint32_t q = (u >> 16) | 0x40u;
        d[c] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? q : r);
    }
}

void gt_to_bf16(unsigned short *dst, const float *src, size_t n) {
    to_bf16_row(dst, (const uint32_t *)(const void *)src, n);
}

/* dst (rows, cols) compact <- bf16 of src (rows, cols) with row stride ld */
static void to_bf16(uint16_t *dst, const float *src, int rows, int cols, int ld) {
    if (ld == cols) {
        to_bf16_row(dst, (const uint32_t *)(const void *)src, (size_t)rows * cols);
        return;
    }
    for (int r = 0; r < rows; r++)
        to_bf16_row(dst + (size_t)r * cols, (const uint32_t *)(const void *)(src + (size_t)r * ld), (size_t)cols);
}

/* The same in blocks of rows on the engine's threads, for an operand of a
 * product that is split over them (each element's rounding is the same). */
typedef struct cvt_args {
    uint16_t *dst;
    const float *src;
    int rows, cols, ld, block;
} cvt_args;

static void to_bf16_task(void *ctx, int task, int tid) {
    (void)tid;
    const cvt_args *c = ctx;
    const int r0 = task * c->block, n = r0 + c->block <= c->rows ? c->block : c->rows - r0;
    to_bf16(c->dst + (size_t)r0 * c->cols, c->src + (size_t)r0 * c->ld, n, c->cols, c->ld);
}

#define CVT_PAR_MIN_ELEMS ((size_t)1 << 16)

static void to_bf16_par(uint16_t *dst, const float *src, int rows, int cols, int ld, int T) {
    if (T <= 1 || (size_t)rows * cols < CVT_PAR_MIN_ELEMS || rows < 2 * T) {
        to_bf16(dst, src, rows, cols, ld);
        return;
    }
    cvt_args c = {.dst = dst, .src = src, .rows = rows, .cols = cols, .ld = ld};
    int per = (int)(CVT_PAR_MIN_ELEMS / (size_t)(cols > 0 ? cols : 1));
    c.block = per < 1 ? 1 : per;
    gt_par_for((rows + c.block - 1) / c.block, to_bf16_task, &c);
}

/* Products below this many FLOPs run on one thread (an LSTM step's 64x512x128
 * is 8.4 MFLOP): a fork and join per product costs more than it saves (with
 * oneDNN's own OpenMP team, which spins at the join, the LSTM at 2 threads
 * ran 14x slower on a loaded machine). */
#ifndef GT_GEMM_PAR_MIN_FLOPS
#define GT_GEMM_PAR_MIN_FLOPS 3.2e7
#endif

/* Threads for a product: 1 inside a task of the engine's pool or for a small
 * product, else the engine's thread count (gt_par_threads) */
static int gemm_threads(int M, int N, int K) {
    if (gt_par_in_task() || 2.0 * M * N * K < GT_GEMM_PAR_MIN_FLOPS) return 1;
    return gt_par_threads();
}

/* ---------------------------------------------- bf16 copies of parameters --
 * One entry per (pointer, storage rows, cols, row stride): the compact bf16
 * copy and the generation it was made in. Few entries (the model's weight
 * tensors); looked up and filled under one mutex, so that the tasks of a
 * conv1d asking for the same weights at once convert them once. */
typedef struct param_copy {
    const float *src;
    int rows, cols, ld;
    unsigned long gen;
    uint16_t *bf16;
    struct param_copy *next;
} param_copy;
static param_copy *g_params;
static pthread_mutex_t g_params_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_ulong g_params_gen = 1;

void gt_cpu_params_changed(void) { atomic_fetch_add_explicit(&g_params_gen, 1, memory_order_acq_rel); }

static void to_bf16(uint16_t *dst, const float *src, int rows, int cols, int ld);

/* the bf16 copy of parameter src (rows, cols) with row stride ld, current generation */
static const uint16_t *param_bf16(const float *src, int rows, int cols, int ld) {
    const unsigned long gen = atomic_load_explicit(&g_params_gen, memory_order_acquire);
    pthread_mutex_lock(&g_params_mu);
    param_copy *p = g_params;
    for (; p; p = p->next)
        if (p->src == src && p->rows == rows && p->cols == cols && p->ld == ld) break;
    if (!p) {
        p = gt_calloc(1, sizeof *p, __FILE__, __LINE__);
        *p = (param_copy){.src = src, .rows = rows, .cols = cols, .ld = ld, .next = g_params};
        p->bf16 = gt_aligned_alloc(64, ((size_t)rows * cols * 2 + 63) / 64 * 64, __FILE__, __LINE__);
        g_params = p;
    }
    if (p->gen != gen) {
        to_bf16(p->bf16, src, rows, cols, ld);
        p->gen = gen;
    }
    pthread_mutex_unlock(&g_params_mu);
    return p->bf16;
}

/* Runs the cached primitive e for C (M,N) (+)= A (M,K) B (K,N), A and B of
 * type dt with row strides lda, ldb, on this thread's scratchpad and stream. */
static void mm_exec(const mm_entry *e, int M, int N, int K, int ta, int tb, const void *A, int lda, const void *B,
                    int ldb, float *C, int ldc, dnnl_data_type_t dt) {
    tls_bufs *t = &t_bufs;
    t->scratch = grow(t->scratch, &t->scratch_cap, e->scratch_bytes ? e->scratch_bytes : 1);
    dnnl_memory_desc_t a_md, b_md, c_md, s_md;
    set_md(&a_md, M, K, ta, lda, dt);
    set_md(&b_md, K, N, tb, ldb, dt);
    set_md(&c_md, M, N, 0, ldc, dnnl_f32);
    dnnl_dims_t sd = {(dnnl_dim_t)(e->scratch_bytes ? e->scratch_bytes : 1)};
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&s_md, 1, sd, dnnl_u8, dnnl_a));
    dnnl_memory_t ma, mb, mc, ms;
    DNNL_CHECK(dnnl_memory_create(&ma, &a_md, g_engine, (void *)A));
    DNNL_CHECK(dnnl_memory_create(&mb, &b_md, g_engine, (void *)B));
    DNNL_CHECK(dnnl_memory_create(&mc, &c_md, g_engine, C));
    DNNL_CHECK(dnnl_memory_create(&ms, &s_md, g_engine, t->scratch));
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc},
                               {DNNL_ARG_SCRATCHPAD, ms}};
    DNNL_CHECK(dnnl_primitive_execute(e->prim, gt_cpu_dnnl_stream(), e->scratch_bytes ? 4 : 3, args));
    DNNL_CHECK(dnnl_stream_wait(gt_cpu_dnnl_stream()));
    dnnl_memory_destroy(ma);
    dnnl_memory_destroy(mb);
    dnnl_memory_destroy(mc);
    dnnl_memory_destroy(ms);
}

/* Runs the cached one-thread bf16 primitive for C (M,N) += A (M,K) B (K,N) on
 * the compact bf16 operands a16 (row stride lda) and b16 (ldb), on this
 * thread's scratchpad and stream. */
static void bf16_exec(gt_gemm_family fam, int ta, int tb, int M, int N, int K, float alpha, const uint16_t *a16,
                      int lda, const uint16_t *b16, int ldb, float beta, float *C, int ldc) {
    omp_set_num_threads(1); /* a team of one: the engine's pool owns the cores */
    mm_key k = {.M = M, .N = N, .K = K, .ldc = ldc, .ta = ta, .tb = tb, .nthr = 1, .lda = lda, .ldb = ldb};
    memcpy(&k.alpha, &alpha, 4);
    memcpy(&k.beta, &beta, 4);
    mm_entry *e = mm_get(&k);
    note_impl(fam, e->impl);
    mm_exec(e, M, N, K, ta, tb, a16, lda, b16, ldb, C, ldc, dnnl_bf16);
}

/* A product split over the engine's threads: task i computes a block of rows
 * (split_n = 0) or of columns (split_n = 1) of C. The blocks, hence the
 * results, depend only on the thread count. */
typedef struct split_args {
    gt_gemm_family fam;
    int ta, tb, M, N, K, lda, ldb, ldc, split_n, block;
    float alpha, beta;
    const uint16_t *a16, *b16;
    float *C;
} split_args;

static void split_task(void *ctx, int task, int tid) {
    (void)tid;
    const split_args *s = ctx;
    const int i0 = task * s->block, dim = s->split_n ? s->N : s->M;
    const int n = i0 + s->block <= dim ? s->block : dim - i0;
    if (n <= 0) return;
    if (s->split_n) { /* columns j0..: B's columns (rows of the stored B^T), C's columns */
        const uint16_t *b = s->tb ? s->b16 + (size_t)i0 * s->ldb : s->b16 + i0;
        bf16_exec(s->fam, s->ta, s->tb, s->M, n, s->K, s->alpha, s->a16, s->lda, b, s->ldb, s->beta, s->C + i0,
                  s->ldc);
    } else { /* rows i0..: A's rows (columns of the stored A^T), C's rows */
        const uint16_t *a = s->ta ? s->a16 + i0 : s->a16 + (size_t)i0 * s->lda;
        bf16_exec(s->fam, s->ta, s->tb, n, s->N, s->K, s->alpha, a, s->lda, s->b16, s->ldb, s->beta,
                  s->C + (size_t)i0 * s->ldc, s->ldc);
    }
}

static void bf16_gemm(gt_gemm_family fam, int op, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K,
                      float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C,
                      int ldc) {
    const int T = gemm_threads(M, N, K);
    const int tA = ta == CblasTrans, tB = tb == CblasTrans;
    tls_bufs *t = &t_bufs;
    const size_t na = (size_t)M * K, nb = (size_t)K * N;
    {
        omp_set_num_threads(1);
        mm_key k = {.M = M, .N = N, .K = K, .ldc = ldc, .ta = tA, .tb = tB, .nthr = 1, .lda = tA ? M : K,
                    .ldb = tB ? K : N};
        memcpy(&k.alpha, &alpha, 4);
        memcpy(&k.beta, &beta, 4);
        mm_entry *e = mm_get(&k); /* also tells whether this ISA has a bf16 matmul at all */
        if (!e->prim) { /* emulated: the same bf16 inputs, OpenBLAS's fp32 products */
            note_impl(fam, e->impl);
            t->fa = grow(t->fa, &t->fa_cap, na * 4);
            t->fb = grow(t->fb, &t->fb_cap, nb * 4);
            const int ar = tA ? K : M, ac = tA ? M : K, br = tB ? N : K, bc = tB ? K : N;
            for (int r = 0; r < ar; r++)
                for (int c = 0; c < ac; c++) t->fa[(size_t)r * ac + c] = gt_bf16_round(A[(size_t)r * lda + c]);
            for (int r = 0; r < br; r++)
                for (int c = 0; c < bc; c++) t->fb[(size_t)r * bc + c] = gt_bf16_round(B[(size_t)r * ldb + c]);
            cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, t->fa, ac, t->fb, bc, beta, C, ldc);
            return;
        }
    }
    const uint16_t *a16, *b16;
    if (op & GT_GEMM_A_PARAM) {
        a16 = tA ? param_bf16(A, K, M, lda) : param_bf16(A, M, K, lda);
    } else if ((op & GT_GEMM_A_AGAIN) && t->a_src == A && t->a_rows == (tA ? K : M) && t->a_cols == (tA ? M : K) &&
               t->a_ld == lda) {
        a16 = t->a; /* the previous product's A, the same storage, unchanged since */
    } else {
        t->a = grow(t->a, &t->a_cap, na * 2);
        if (tA) to_bf16_par(t->a, A, K, M, lda, T);
        else to_bf16_par(t->a, A, M, K, lda, T);
        a16 = t->a;
        t->a_src = A;
        t->a_rows = tA ? K : M;
        t->a_cols = tA ? M : K;
        t->a_ld = lda;
    }
    if (op & GT_GEMM_B_PARAM) {
        b16 = tB ? param_bf16(B, N, K, ldb) : param_bf16(B, K, N, ldb);
    } else {
        t->b = grow(t->b, &t->b_cap, nb * 2);
        if (tB) to_bf16_par(t->b, B, N, K, ldb, T);
        else to_bf16_par(t->b, B, K, N, ldb, T);
        b16 = t->b;
    }
    const int lda16 = tA ? M : K, ldb16 = tB ? K : N;
    if (T <= 1) {
        bf16_exec(fam, tA, tB, M, N, K, alpha, a16, lda16, b16, ldb16, beta, C, ldc);
        return;
    }
    /* split the larger of M and N (each thread then reads all of the smaller side's operand) in
     * blocks of a multiple of 32 rows or columns (whole AMX tiles) */
    split_args sa = {.fam = fam, .ta = tA, .tb = tB, .M = M, .N = N, .K = K, .lda = lda16, .ldb = ldb16,
                     .ldc = ldc, .split_n = N > M, .alpha = alpha, .beta = beta, .a16 = a16, .b16 = b16, .C = C};
    const int dim = sa.split_n ? N : M;
    sa.block = ((dim + T - 1) / T + 31) / 32 * 32;
    gt_par_for((dim + sa.block - 1) / sa.block, split_task, &sa);
}

/* ------------------------------------------------------------ fp32 route --
 * The one place that decides where an fp32 product runs (GT_CPU_FP32).
 *
 * Threads. A product of at least GT_GEMM_PAR_MIN_FLOPS issued outside the
 * engine's pool at more than one thread is split into blocks of rows or
 * columns that run as tasks of the pool (as in bf16), each a one-thread
 * product; a smaller one, or one issued inside a task, runs on the calling
 * thread. So the engine's pool owns the cores in fp32 too: OpenBLAS's own
 * threads are never started by a product (they would spin after it while
 * the pool's workers wait for the cores). The blocks depend on the thread
 * count only, so do the results (oneDNN's gemm:jit sums each element of C
 * in the same order in a block as in the whole product, OpenBLAS does not).
 * Measured at 2 threads on a Zen 3 CPU under load (docs/benchmarks.md,
 * train steps interleaved with GT_CPU_GEMM_F32=no-split and =openblas):
 * s2p_tf 1.7-2.4x the train samples/s of OpenBLAS's threads, s2p_cnn
 * level within the noise (+-15 %) and 4-17 % less CPU time.
 *
 * Kernel of a one-thread product: oneDNN's f32 matmul or OpenBLAS, by ISA
 * and size (f32_on_onednn below). For measurements GT_CPU_GEMM_F32=openblas
 * restores the route before both rules (every fp32 product cblas_sgemm with
 * OpenBLAS's own threads), GT_CPU_GEMM_F32=no-split keeps the kernel rule
 * but leaves the products issued outside the pool to OpenBLAS's threads. */

enum { F32_RULES = 0, F32_PLAIN_OPENBLAS = 1, F32_NO_SPLIT = 2 };

static int f32_mode(void) {
    static atomic_int mode = -1; /* -1: not read yet */
    int o = atomic_load(&mode);
    if (o < 0) {
        const char *v = getenv("GT_CPU_GEMM_F32");
        o = !v ? F32_RULES : !strcmp(v, "openblas") ? F32_PLAIN_OPENBLAS : !strcmp(v, "no-split") ? F32_NO_SPLIT : F32_RULES;
        atomic_store(&mode, o);
    }
    return o;
}

/* One-thread fp32 products on oneDNN's f32 matmul instead of OpenBLAS, by
 * ISA, for products of at least GT_GEMM_F32_DNNL_MIN_FLOPS. Measured op by
 * op at 1 thread on every workload shape and transpose pair (thread CPU
 * time, gt_gemm_lab, docs/benchmarks.md; ratio = OpenBLAS time / oneDNN's):
 * AVX-512 (brg:avx512_core against OpenBLAS's SkylakeX kernels): oneDNN
 *   1.01-1.10x on s2p_cnn's fc1, 1.09-1.42x on s2p_tf's linear layers,
 *   1.18-1.40x on the LSTM's products, 1.8-2.9x on fc2; 0.6-0.9x below ~2
 *   MFLOP (attention's 64 x 256 x 32 tiles): every product from 2 MFLOP on.
 * AVX2 (gemm:jit:avx2 against OpenBLAS's Zen/Haswell kernels, Zen 3, two
 *   runs): oneDNN 1.1-1.6x where A is not transposed (s2p_cnn's fc2 1.3-1.6,
 *   conv1d's im2col products 1.15-1.45, s2p_tf's forward and input-gradient
 *   products 1.0-1.5, the LSTM's dh and dx 1.1); but 0.88-0.97x on fc1,
 *   whose weights (B, 1024 x 29950: 122 MB) are far out of cache, and
 *   0.75-1.15x on the weight gradients (A transposed, K = the batch rows:
 *   the LSTM's dW_hh 0.75, dW_ih 0.9, s2p_tf's 0.85-1.15) except conv1d's
 *   dcol (K = 30-50 output channels: 1.2-1.3); attention's tiles 0.7-1.2.
 *   So: B of at most GT_GEMM_F32_AVX2_MAX_B elements, and A not transposed
 *   or K <= 64. */
#ifndef GT_GEMM_F32_DNNL_MIN_FLOPS
#define GT_GEMM_F32_DNNL_MIN_FLOPS 2.0e6
#endif
#ifndef GT_GEMM_F32_AVX2_MAX_B
#define GT_GEMM_F32_AVX2_MAX_B ((size_t)1 << 22) /* 16 MiB of fp32: fc1's 30.7 M weights stay on OpenBLAS */
#endif

static int f32_on_onednn(CBLAS_TRANSPOSE ta, int M, int N, int K) {
    if (2.0 * M * N * K < GT_GEMM_F32_DNNL_MIN_FLOPS) return 0;
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    if (isa == dnnl_cpu_isa_avx512_core || isa == dnnl_cpu_isa_avx512_core_vnni ||
        isa == dnnl_cpu_isa_avx512_core_bf16 || isa == dnnl_cpu_isa_avx512_core_amx)
        return 1;
    if (isa == dnnl_cpu_isa_avx2 || isa == dnnl_cpu_isa_avx2_vnni)
        return (size_t)K * N <= GT_GEMM_F32_AVX2_MAX_B && (ta == CblasNoTrans || K <= 64);
    return 0;
}

/* oneDNN's fp32 matmul on A, B and C as given, on nthr threads (oneDNN's OpenMP team above 1) */
static void f32_onednn_gemm(gt_gemm_family fam, int nthr, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N,
                            int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta,
                            float *C, int ldc) {
    omp_set_num_threads(nthr);
    mm_key k = {.M = M, .N = N, .K = K, .ldc = ldc, .ta = ta == CblasTrans, .tb = tb == CblasTrans, .nthr = nthr,
                .f32 = 1, .lda = lda, .ldb = ldb};
    memcpy(&k.alpha, &alpha, 4);
    memcpy(&k.beta, &beta, 4);
    mm_entry *e = mm_get(&k);
    note_impl(fam, e->impl);
    mm_exec(e, M, N, K, k.ta, k.tb, A, lda, B, ldb, C, ldc, dnnl_f32);
}

/* a one-thread fp32 product (OpenBLAS is at one thread: inside a task, or set so by the caller) */
static void f32_one_thread(gt_gemm_family fam, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K,
                           float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C,
                           int ldc) {
    if (f32_on_onednn(ta, M, N, K)) f32_onednn_gemm(fam, 1, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else sgemm(fam, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

typedef struct f32_split_args {
    gt_gemm_family fam;
    CBLAS_TRANSPOSE ta, tb;
    int M, N, K, lda, ldb, ldc, split_n, block;
    float alpha, beta;
    const float *A, *B;
    float *C;
} f32_split_args;

static void f32_split_task(void *ctx, int task, int tid) {
    (void)tid;
    const f32_split_args *s = ctx;
    const int i0 = task * s->block, dim = s->split_n ? s->N : s->M;
    const int n = i0 + s->block <= dim ? s->block : dim - i0;
    if (n <= 0) return;
    if (s->split_n) { /* columns i0..: B's columns (rows of the stored B^T), C's columns */
        const float *b = s->tb == CblasTrans ? s->B + (size_t)i0 * s->ldb : s->B + i0;
        f32_one_thread(s->fam, s->ta, s->tb, s->M, n, s->K, s->alpha, s->A, s->lda, b, s->ldb, s->beta, s->C + i0,
                       s->ldc);
    } else { /* rows i0..: A's rows (columns of the stored A^T), C's rows */
        const float *a = s->ta == CblasTrans ? s->A + i0 : s->A + (size_t)i0 * s->lda;
        f32_one_thread(s->fam, s->ta, s->tb, n, s->N, s->K, s->alpha, a, s->lda, s->B, s->ldb, s->beta,
                       s->C + (size_t)i0 * s->ldc, s->ldc);
    }
}

static void f32_gemm(gt_gemm_family fam, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, float alpha,
                     const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    const int mode = f32_mode();
    if (mode == F32_PLAIN_OPENBLAS) {
        sgemm(fam, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    if (gt_par_in_task() || gt_par_threads() <= 1) {
        f32_one_thread(fam, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    if (mode == F32_NO_SPLIT) {
        sgemm(fam, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    const int T = gemm_threads(M, N, K);
    if (T <= 1) { /* small: one thread, OpenBLAS's threads stay asleep */
        const int blas_threads = openblas_get_num_threads();
        openblas_set_num_threads(1);
        f32_one_thread(fam, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        openblas_set_num_threads(blas_threads);
        return;
    }
    /* split the larger of M and N (each thread then reads all of the smaller side's operand) in
     * blocks of a multiple of 64 rows or columns (whole micro-tiles of either library) */
    f32_split_args sa = {.fam = fam, .ta = ta, .tb = tb, .M = M, .N = N, .K = K, .lda = lda, .ldb = ldb,
                         .ldc = ldc, .split_n = N > M, .alpha = alpha, .beta = beta, .A = A, .B = B, .C = C};
    const int dim = sa.split_n ? N : M;
    sa.block = ((dim + T - 1) / T + 63) / 64 * 64;
    gt_par_for((dim + sa.block - 1) / sa.block, f32_split_task, &sa);
}

void gt_gemm_prec(gt_cpu_prec p, int op, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K,
                  float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    const gt_gemm_family fam = (gt_gemm_family)(op & 0xff);
    if (M <= 0 || N <= 0 || K <= 0 || p == GT_CPU_FP32_OPENBLAS) {
        sgemm(fam, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    } else if (p == GT_CPU_FP32_ONEDNN) {
        f32_onednn_gemm(fam, gemm_threads(M, N, K), ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    } else if (p == GT_CPU_BF16) {
        bf16_gemm(fam, op, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    } else {
        f32_gemm(fam, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
}

#endif /* GT_HAVE_DNNL */

void gt_gemm(int op, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, float alpha, const float *A,
             int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    gt_gemm_prec(gt_cpu_get_precision(), op, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
