/* tests/nn/test_attention_mma_host.c: the mma.sync attention kernels
 * (nn/ops/cuda/attention_mma.cu) on the CPU, no GPU: one warp's ldmatrix and
 * mma.m16n8k16 are emulated from the lane -> (row, column) maps of
 * nn/ops/cuda/mma_frag.h, the maps the kernels index their fragments with.
 *   1. the maps against the PTX ISA's tables, transcribed here element by
 *      element (a0..a7, b0..b3, c0..c3; ldmatrix's rows and columns); every
 *      map a bijection onto its matrix
 *   2. the three ways the kernels feed an mma (A by ldmatrix, B by ldmatrix
 *      from an (n, k) tile, B by ldmatrix.trans from a (k, n) tile) and the
 *      C -> A repacking of a score tile, each against a plain matrix product
 *      on random data, at the kernels' padded row stride and tile offsets
 *   3. the kernels' whole tile loops, emulated warp by warp and block by block
 *      through the same maps and the same per-fragment maths (online softmax
 *      on the C fragments, the quad shuffles, P and dS rounded to bf16 as the
 *      kernels pack them): forward (out, lse), dQ, dK/dV, against the CPU
 *      attention (nn/ops/cpu/attention.c) on inputs that are bf16 values,
 *      within the bounds tests/gpu/test_attention_tc.c sets for that case
 *      (out 3.75e-3, each gradient 7.5e-3 relative L2; lse 5e-3 + 2.5e-3 |lse|),
 *      at head sizes 5, 24, 32, 64, 100 and 128 (HSP 16 to 128), several key and query
 *      tiles with partial last tiles, a query row range, more than one head.
 * The emulation keeps the kernels' block shape (8 warps, 128 owned rows,
 * 64-row streamed tiles) and their padded shared-memory row stride. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/ops/attention.h"
#include "nn/ops/cuda/mma_frag.h"
#include "nn/ops/cuda/sizes.h"
#include "nn_test_util.h"
#include "test.h"

#define OWN GT_ATTN_MMA_OWN /* the kernels' block shape */
#define STR GT_ATTN_MMA_STR
#define WARPS GT_ATTN_MMA_WARPS
#define LOG2E 1.4426950408889634f

/* ------------------------------------------------------- the emulator -- */

/* ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16: lane l gives the
 * address sm + off[l] of row gt_ldm_src_row(l) of matrix gt_ldm_src_matrix(l)
 * (8 consecutive b16 elements); register j of lane l receives element e =
 * matrix j's (gt_ldm_dst_row, gt_ldm_dst_col). */
static void emu_ldm_x4(float out[32][4][2], const float *sm, const int off[32], int trans) {
    int row_off[4][8], seen[4][8] = {{0}};
    for (int l = 0; l < 32; l++) {
        const int j = gt_ldm_src_matrix(l), r = gt_ldm_src_row(l);
        row_off[j][r] = off[l];
        seen[j][r]++;
    }
    for (int j = 0; j < 4; j++)
        for (int r = 0; r < 8; r++) TEST_REQUIRE(seen[j][r] == 1);
    for (int l = 0; l < 32; l++)
        for (int j = 0; j < 4; j++)
            for (int e = 0; e < 2; e++) {
                const int r = gt_ldm_dst_row(l, e, trans), c = gt_ldm_dst_col(l, e, trans);
                out[l][j][e] = sm[row_off[j][r] + c];
            }
}

/* d += A B, mma.m16n8k16 (fp32 accumulate; the products of bf16 values are
 * exact, the sum is taken in double and rounded once) */
static void emu_mma(float d[32][4], float a[32][4][2], float b0[32][2], float b1[32][2]) {
    double A[16][16], B[16][8];
    for (int l = 0; l < 32; l++)
        for (int r = 0; r < 4; r++)
            for (int e = 0; e < 2; e++) A[gt_mma_a_row(l, r, e)][gt_mma_a_col(l, r, e)] = a[l][r][e];
    for (int l = 0; l < 32; l++)
        for (int e = 0; e < 2; e++) {
            B[gt_mma_b_k(l, 0, e)][gt_mma_b_n(l, 0, e)] = b0[l][e];
            B[gt_mma_b_k(l, 1, e)][gt_mma_b_n(l, 1, e)] = b1[l][e];
        }
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < 4; i++) {
            const int row = gt_mma_c_row(l, i), col = gt_mma_c_col(l, i);
            double acc = d[l][i];
            for (int k = 0; k < 16; k++) acc += A[row][k] * B[k][col];
            d[l][i] = (float)acc;
        }
}

/* The kernels' ldmatrix addresses: the block at (r0, c0) of a tile of row stride ld, per lane */
typedef enum { LDM_A, LDM_BN, LDM_BK } ldm_kind;
static void ldm_offsets(ldm_kind k, int r0, int c0, int ld, int off[32]) {
    for (int l = 0; l < 32; l++)
        off[l] = k == LDM_A ? gt_ldm_a_off(l, r0, c0, ld) : k == LDM_BN ? gt_ldm_bn_off(l, r0, c0, ld)
                                                                       : gt_ldm_bk_off(l, r0, c0, ld);
}
/* an A fragment: ldmatrix.x4 (no .trans) of the 16x16 block at (r0, c0) */
static void load_a(float a[32][4][2], const float *sm, int ld, int r0, int c0) {
    int off[32];
    ldm_offsets(LDM_A, r0, c0, ld, off);
    emu_ldm_x4(a, sm, off, 0);
}
/* B fragments of two n-tiles: registers 0, 1 -> b0 (n-tile 0), 2, 3 -> b1 */
static void load_b(float b0[32][2][2], float b1[32][2][2], ldm_kind k, const float *sm, int ld, int r0, int c0) {
    int off[32];
    float x[32][4][2];
    ldm_offsets(k, r0, c0, ld, off);
    emu_ldm_x4(x, sm, off, k == LDM_BK);
    for (int l = 0; l < 32; l++)
        for (int r = 0; r < 2; r++)
            for (int e = 0; e < 2; e++) {
                b0[l][r][e] = x[l][r][e];
                b1[l][r][e] = x[l][2 + r][e];
            }
}
static void mma(float d[32][4], float a[32][4][2], float b[32][2][2]) {
    float b0[32][2], b1[32][2];
    for (int l = 0; l < 32; l++)
        for (int e = 0; e < 2; e++) {
            b0[l][e] = b[l][0][e];
            b1[l][e] = b[l][1][e];
        }
    emu_mma(d, a, b0, b1);
}
/* the A fragment of a 16-column chunk from C fragments c0, c1 (mm_c2a), rounded to bf16 as mm_pack does */
static void c2a(float a[32][4][2], float c0[32][4], float c1[32][4]) {
    for (int l = 0; l < 32; l++)
        for (int r = 0; r < 4; r++)
            for (int e = 0; e < 2; e++)
                a[l][r][e] = gt_bf16_round((gt_c2a_tile(r) ? c1 : c0)[l][gt_c2a_elem(r, e)]);
}

/* ------------------------------------------------- 1. the maps vs PTX -- */
static void test_maps(void) {
    int n_bad = 0;
    for (int lane = 0; lane < 32; lane++) {
        const int groupID = lane >> 2, tig = lane % 4;
        for (int i = 0; i < 8; i++) { /* A: a_i, register i / 2, element i % 2 */
            const int row = (i < 2 || (i >= 4 && i < 6)) ? groupID : groupID + 8;
            const int col = i < 4 ? tig * 2 + (i & 1) : tig * 2 + (i & 1) + 8;
            n_bad += gt_mma_a_row(lane, i / 2, i % 2) != row || gt_mma_a_col(lane, i / 2, i % 2) != col;
        }
        for (int i = 0; i < 4; i++) { /* B: b_i */
            const int row = i < 2 ? tig * 2 + (i & 1) : tig * 2 + (i & 1) + 8, col = groupID;
            n_bad += gt_mma_b_k(lane, i / 2, i % 2) != row || gt_mma_b_n(lane, i / 2, i % 2) != col;
        }
        for (int i = 0; i < 4; i++) { /* C, D: c_i */
            const int row = i < 2 ? groupID : groupID + 8, col = tig * 2 + (i & 1);
            n_bad += gt_mma_c_row(lane, i) != row || gt_mma_c_col(lane, i) != col;
        }
        /* ldmatrix: threads 8j..8j+7 address matrix j's rows 0..7; each thread
         * receives row lane / 4, elements 2 (lane % 4) and + 1 (transposed: the
         * column lane / 4 of rows 2 (lane % 4) and + 1) */
        n_bad += gt_ldm_src_matrix(lane) != lane / 8 || gt_ldm_src_row(lane) != lane % 8;
        for (int e = 0; e < 2; e++) {
            n_bad += gt_ldm_dst_row(lane, e, 0) != lane / 4 || gt_ldm_dst_col(lane, e, 0) != 2 * (lane % 4) + e;
            n_bad += gt_ldm_dst_row(lane, e, 1) != 2 * (lane % 4) + e || gt_ldm_dst_col(lane, e, 1) != lane / 4;
        }
    }
    TEST_EQ_INT(n_bad, 0);
    /* bijections: every element of A (16x16), B (16x8), C (16x8) held exactly once */
    int a[16][16] = {{0}}, b[16][8] = {{0}}, c[16][8] = {{0}};
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < 8; i++) {
            a[gt_mma_a_row(l, i / 2, i % 2)][gt_mma_a_col(l, i / 2, i % 2)]++;
            if (i < 4) {
                b[gt_mma_b_k(l, i / 2, i % 2)][gt_mma_b_n(l, i / 2, i % 2)]++;
                c[gt_mma_c_row(l, i)][gt_mma_c_col(l, i)]++;
            }
        }
    int n_off = 0;
    for (int r = 0; r < 16; r++)
        for (int k = 0; k < 16; k++) n_off += a[r][k] != 1 || (k < 8 && (b[r][k] != 1 || c[r][k] != 1));
    TEST_EQ_INT(n_off, 0);
    /* the kernels' ldmatrix address plans give every row of a 16x16 block once per 8-column half */
    for (int k = 0; k < 3; k++) { /* at row stride 40 (HSP 32 + 8), block (16, 8) */
        int off[32], hit[16][2] = {{0}};
        ldm_offsets((ldm_kind)k, 16, 8, 40, off);
        for (int l = 0; l < 32; l++) {
            const int r = off[l] / 40 - 16, c = off[l] % 40 - 8;
            TEST_REQUIRE(r >= 0 && r < 16 && (c == 0 || c == 8));
            hit[r][c / 8]++;
        }
        for (int r = 0; r < 16; r++) TEST_CHECK(hit[r][0] == 1 && hit[r][1] == 1);
    }
    printf("maps: A, B, C and ldmatrix as the PTX ISA tables; bijections\n");
}

/* ------------------------------------------- 2. one mma each way vs a product -- */
static float rnd_bf16(uint32_t *st) {
    *st = *st * 1664525u + 1013904223u;
    return gt_bf16_round(((float)(*st >> 8) / 16777216.0f - 0.5f) * 4.0f);
}
static double max_rel(const float *got, const double *ref, int n) {
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        num = fmax(num, fabs(got[i] - ref[i]));
        den = fmax(den, fabs(ref[i]));
    }
    return num / (den > 0 ? den : 1);
}
static void test_products(void) {
    enum { LD = 40, R = 48 }; /* a padded tile (HSP 32 + 8), blocks at row 16, 32 and column 16 */
    float X[R * LD], Y[R * LD];
    uint32_t st = 7;
    for (int i = 0; i < R * LD; i++) {
        X[i] = rnd_bf16(&st);
        Y[i] = rnd_bf16(&st);
    }
    const int xr = 16, xc = 16, yr = 32, yc = 16;
    float a[32][4][2], b0[32][2][2], b1[32][2][2];
    /* S (16x16) = X_blk Y_blk^T: A from X, B from Y stored (n, k) */
    float s[2][32][4] = {{{0}}};
    load_a(a, X, LD, xr, xc);
    load_b(b0, b1, LDM_BN, Y, LD, yr, yc);
    mma(s[0], a, b0);
    mma(s[1], a, b1);
    double ref[16 * 16];
    float got[16 * 16];
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 16; n++) {
            double acc = 0;
            for (int k = 0; k < 16; k++) acc += (double)X[(xr + m) * LD + xc + k] * Y[(yr + n) * LD + yc + k];
            ref[m * 16 + n] = acc;
        }
    for (int j = 0; j < 2; j++)
        for (int l = 0; l < 32; l++)
            for (int i = 0; i < 4; i++) got[gt_mma_c_row(l, i) * 16 + 8 * j + gt_mma_c_col(l, i)] = s[j][l][i];
    double e1 = max_rel(got, ref, 256);
    /* O (16x16) = X_blk Y_blk: B from Y stored (k, n), ldmatrix.trans */
    float o[2][32][4] = {{{0}}};
    load_b(b0, b1, LDM_BK, Y, LD, yr, yc);
    mma(o[0], a, b0);
    mma(o[1], a, b1);
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 16; n++) {
            double acc = 0;
            for (int k = 0; k < 16; k++) acc += (double)X[(xr + m) * LD + xc + k] * Y[(yr + k) * LD + yc + n];
            ref[m * 16 + n] = acc;
        }
    for (int j = 0; j < 2; j++)
        for (int l = 0; l < 32; l++)
            for (int i = 0; i < 4; i++) got[gt_mma_c_row(l, i) * 16 + 8 * j + gt_mma_c_col(l, i)] = o[j][l][i];
    double e2 = max_rel(got, ref, 256);
    /* P (the C fragments s, rounded to bf16) times Y_blk: A from registers */
    float pa[32][4][2], po[2][32][4] = {{{0}}};
    c2a(pa, s[0], s[1]);
    mma(po[0], pa, b0);
    mma(po[1], pa, b1);
    double sr[16 * 16];
    for (int j = 0; j < 2; j++)
        for (int l = 0; l < 32; l++)
            for (int i = 0; i < 4; i++)
                sr[gt_mma_c_row(l, i) * 16 + 8 * j + gt_mma_c_col(l, i)] = gt_bf16_round(s[j][l][i]);
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 16; n++) {
            double acc = 0;
            for (int k = 0; k < 16; k++) acc += sr[m * 16 + k] * Y[(yr + k) * LD + yc + n];
            ref[m * 16 + n] = acc;
        }
    for (int j = 0; j < 2; j++)
        for (int l = 0; l < 32; l++)
            for (int i = 0; i < 4; i++) got[gt_mma_c_row(l, i) * 16 + 8 * j + gt_mma_c_col(l, i)] = po[j][l][i];
    double e3 = max_rel(got, ref, 256);
    printf("products: A.B^T (ldmatrix) %.1e, A.B (ldmatrix.trans) %.1e, C->A repack . B %.1e (max abs / max |ref|)\n",
           e1, e2, e3);
    TEST_CHECK(e1 < 1e-6 && e2 < 1e-6 && e3 < 1e-6);
}

/* ------------------------------------------- 3. the kernels' tile loops -- */

typedef struct shape {
    int B, L, C, NH, q0, nq;
} shape;
static int hsp_of(int hs) { return gt_attention_mma_hsp(hs); }
#define LDH_OF(hsp) gt_attn_mma_ldh(hsp)

/* k_mm_to_bf16: (L, HSP) head-major copy of head h of batch b, rows [t0, t1), zero elsewhere */
static float *to_bf16_copy(const float *src, int ld, const shape *s, int b, int h, int t0, int t1) {
    const int hs = s->C / s->NH, hsp = hsp_of(hs);
    float *d = calloc((size_t)s->L * hsp, sizeof(float));
    for (int t = t0; t < t1; t++)
        for (int c = 0; c < hs; c++) d[(size_t)t * hsp + c] = gt_bf16_round(src[((size_t)b * s->L + t) * ld + h * hs + c]);
    return d;
}
/* mm_load: rows [r0, r0 + R) of a (L, HSP) copy into a (R, HSP + 8) tile; rows at or past rend zero */
static void stage(float *tile, const float *src, int hsp, int R, int r0, int rend) {
    const int ld = LDH_OF(hsp);
    memset(tile, 0, sizeof(float) * (size_t)R * ld);
    for (int r = 0; r < R && r0 + r < rend; r++) memcpy(tile + (size_t)r * ld, src + (size_t)(r0 + r) * hsp, sizeof(float) * hsp);
}
/* __shfl_xor_sync over the warp's values v[32] */
static void shfl_xor(float out[32], const float v[32], int mask) {
    for (int l = 0; l < 32; l++) out[l] = v[l ^ mask];
}

/* k_attn_mma_fwd, block bx, head (b, h): out rows, lse */
static void emu_fwd(float *out, float *lse, const float *qb, const float *kb, const float *vb, const shape *s, int b,
                    int h, int bx) {
    const int hs = s->C / s->NH, HSP = hsp_of(hs), LDH = LDH_OF(HSP), NK = HSP / 16, NN = HSP / 8;
    const int L = s->L, i0 = s->q0 + bx * OWN, q1 = s->q0 + s->nq, ntiles = (L + STR - 1) / STR;
    const float scale = 1.0f / sqrtf((float)hs), sl2 = scale * LOG2E;
    float *qs = malloc(sizeof(float) * OWN * LDH), *ks = malloc(sizeof(float) * STR * LDH),
          *vs = malloc(sizeof(float) * STR * LDH);
    stage(qs, qb, HSP, OWN, i0, q1);
    for (int warp = 0; warp < WARPS; warp++) {
        static float qf[8][32][4][2], o[16][32][4], sc[STR / 8][32][4];
        float m[32][2], lp[32][2];
        for (int kk = 0; kk < NK; kk++) load_a(qf[kk], qs, LDH, warp * 16, kk * 16);
        memset(o, 0, sizeof o);
        for (int l = 0; l < 32; l++) m[l][0] = m[l][1] = -INFINITY, lp[l][0] = lp[l][1] = 0.0f;
        for (int jt = 0; jt < ntiles; jt++) {
            const int j0 = jt * STR, bc = L - j0 < STR ? L - j0 : STR;
            stage(ks, kb, HSP, STR, j0, L);
            stage(vs, vb, HSP, STR, j0, L);
            memset(sc, 0, sizeof sc);
            for (int np = 0; np < STR / 16; np++)
                for (int kk = 0; kk < NK; kk++) {
                    float b0[32][2][2], b1[32][2][2];
                    load_b(b0, b1, LDM_BN, ks, LDH, np * 16, kk * 16);
                    mma(sc[2 * np], qf[kk], b0);
                    mma(sc[2 * np + 1], qf[kk], b1);
                }
            float mx[2][32], t[32];
            for (int l = 0; l < 32; l++) {
                float x[2] = {m[l][0], m[l][1]};
                for (int j = 0; j < STR / 8; j++) gt_attn_frag_max(sc[j][l], sl2, 8 * j, l, bc, x);
                mx[0][l] = x[0];
                mx[1][l] = x[1];
            }
            for (int r = 0; r < 2; r++) {
                shfl_xor(t, mx[r], 1);
                for (int l = 0; l < 32; l++) mx[r][l] = fmaxf(mx[r][l], t[l]);
                shfl_xor(t, mx[r], 2);
                for (int l = 0; l < 32; l++) mx[r][l] = fmaxf(mx[r][l], t[l]);
                for (int l = 0; l < 32; l++) {
                    const float alpha = gt_attn_alpha(m[l][r], mx[r][l]);
                    m[l][r] = mx[r][l];
                    lp[l][r] *= alpha;
                    for (int n = 0; n < NN; n++) {
                        o[n][l][2 * r] *= alpha;
                        o[n][l][2 * r + 1] *= alpha;
                    }
                }
            }
            for (int l = 0; l < 32; l++)
                for (int j = 0; j < STR / 8; j++) gt_attn_frag_exp(sc[j][l], sl2, 8 * j, l, bc, m[l], lp[l]);
            for (int kk = 0; kk < STR / 16; kk++) {
                float pa[32][4][2];
                c2a(pa, sc[2 * kk], sc[2 * kk + 1]);
                for (int np = 0; np < NN / 2; np++) {
                    float b0[32][2][2], b1[32][2][2];
                    load_b(b0, b1, LDM_BK, vs, LDH, kk * 16, np * 16);
                    mma(o[2 * np], pa, b0);
                    mma(o[2 * np + 1], pa, b1);
                }
            }
        }
        float lsum[2][32], t[32];
        for (int r = 0; r < 2; r++) {
            float v[32];
            for (int l = 0; l < 32; l++) v[l] = lp[l][r];
            shfl_xor(t, v, 1);
            for (int l = 0; l < 32; l++) lsum[r][l] = v[l] + t[l];
            shfl_xor(t, lsum[r], 2);
            for (int l = 0; l < 32; l++) lsum[r][l] += t[l];
        }
        const int t0 = i0 + warp * 16;
        for (int l = 0; l < 32; l++) {
            for (int n = 0; n < NN; n++)
                for (int i = 0; i < 4; i++) {
                    const int row = t0 + gt_mma_c_row(l, i), col = 8 * n + gt_mma_c_col(l, i);
                    if (row < q1 && col < hs)
                        out[((size_t)b * L + row) * s->C + h * hs + col] = o[n][l][i] * (1.0f / lsum[i >> 1][l]);
                }
            if (gt_mma_quad(l) == 0)
                for (int r = 0; r < 2; r++) {
                    const int row = t0 + gt_mma_c_row(l, 2 * r);
                    if (row < q1) lse[((size_t)b * s->NH + h) * L + row] = gt_attn_lse(m[l][r], lsum[r][l]);
                }
        }
    }
    free(qs);
    free(ks);
    free(vs);
}

/* k_attn_mma_dq, block bx, head (b, h): the dq rows of dqkv */
static void emu_dq(float *dqkv, const float *qb, const float *kb, const float *vb, const float *gb, const float *lse,
                   const float *D, const shape *s, int b, int h, int bx) {
    const int hs = s->C / s->NH, HSP = hsp_of(hs), LDH = LDH_OF(HSP), NK = HSP / 16, NN = HSP / 8;
    const int L = s->L, i0 = s->q0 + bx * OWN, q1 = s->q0 + s->nq, ntiles = (L + STR - 1) / STR;
    const size_t bh = (size_t)b * s->NH + h;
    const float scale = 1.0f / sqrtf((float)hs), sl2 = scale * LOG2E;
    float *qs = malloc(sizeof(float) * OWN * LDH), *gs = malloc(sizeof(float) * OWN * LDH),
          *ks = malloc(sizeof(float) * STR * LDH), *vs = malloc(sizeof(float) * STR * LDH);
    stage(qs, qb, HSP, OWN, i0, q1);
    stage(gs, gb, HSP, OWN, i0, q1);
    for (int warp = 0; warp < WARPS; warp++) {
        static float qf[8][32][4][2], gf[8][32][4][2], dq[16][32][4];
        const int t0 = i0 + warp * 16;
        float lr[32][2], dr[32][2];
        for (int l = 0; l < 32; l++)
            for (int r = 0; r < 2; r++) {
                const int row = t0 + gt_mma_c_row(l, 2 * r);
                lr[l][r] = row < q1 ? lse[bh * L + row] * LOG2E : 0.0f;
                dr[l][r] = row < q1 ? D[bh * L + row] : 0.0f;
            }
        for (int kk = 0; kk < NK; kk++) {
            load_a(qf[kk], qs, LDH, warp * 16, kk * 16);
            load_a(gf[kk], gs, LDH, warp * 16, kk * 16);
        }
        memset(dq, 0, sizeof dq);
        for (int jt = 0; jt < ntiles; jt++) {
            const int j0 = jt * STR, bc = L - j0 < STR ? L - j0 : STR;
            stage(ks, kb, HSP, STR, j0, L);
            stage(vs, vb, HSP, STR, j0, L);
            for (int kc = 0; kc < STR / 16; kc++) {
                float sc[2][32][4] = {{{0}}}, dp[2][32][4] = {{{0}}}, ds[2][32][4];
                for (int kk = 0; kk < NK; kk++) {
                    float b0[32][2][2], b1[32][2][2];
                    load_b(b0, b1, LDM_BN, ks, LDH, kc * 16, kk * 16);
                    mma(sc[0], qf[kk], b0);
                    mma(sc[1], qf[kk], b1);
                    load_b(b0, b1, LDM_BN, vs, LDH, kc * 16, kk * 16);
                    mma(dp[0], gf[kk], b0);
                    mma(dp[1], gf[kk], b1);
                }
                for (int j = 0; j < 2; j++)
                    for (int l = 0; l < 32; l++)
                        for (int i = 0; i < 4; i++) {
                            float p;
                            gt_attn_elem_bwd(sc[j][l][i], dp[j][l][i], sl2, lr[l][i >> 1], dr[l][i >> 1], scale,
                                             kc * 16 + 8 * j + gt_mma_c_col(l, i) < bc, &p, &ds[j][l][i]);
                        }
                float da[32][4][2];
                c2a(da, ds[0], ds[1]);
                for (int np = 0; np < NN / 2; np++) {
                    float b0[32][2][2], b1[32][2][2];
                    load_b(b0, b1, LDM_BK, ks, LDH, kc * 16, np * 16);
                    mma(dq[2 * np], da, b0);
                    mma(dq[2 * np + 1], da, b1);
                }
            }
        }
        for (int l = 0; l < 32; l++)
            for (int n = 0; n < NN; n++)
                for (int i = 0; i < 4; i++) {
                    const int row = t0 + gt_mma_c_row(l, i), col = 8 * n + gt_mma_c_col(l, i);
                    if (row < q1 && col < hs) dqkv[((size_t)b * L + row) * 3 * s->C + h * hs + col] = dq[n][l][i];
                }
    }
    free(qs);
    free(gs);
    free(ks);
    free(vs);
}

/* k_attn_mma_dkv, block bx, head (b, h): the dk, dv rows of dqkv */
static void emu_dkv(float *dqkv, const float *qb, const float *kb, const float *vb, const float *gb, const float *lse,
                    const float *D, const shape *s, int b, int h, int bx) {
    const int hs = s->C / s->NH, HSP = hsp_of(hs), LDH = LDH_OF(HSP), NK = HSP / 16, NN = HSP / 8;
    const int L = s->L, s0 = bx * OWN, q1 = s->q0 + s->nq, ntiles = (s->nq + STR - 1) / STR;
    const size_t bh = (size_t)b * s->NH + h;
    const float scale = 1.0f / sqrtf((float)hs), sl2 = scale * LOG2E;
    float *ks = malloc(sizeof(float) * OWN * LDH), *vs = malloc(sizeof(float) * OWN * LDH),
          *qs = malloc(sizeof(float) * STR * LDH), *gs = malloc(sizeof(float) * STR * LDH);
    float lt[STR], dt[STR];
    stage(ks, kb, HSP, OWN, s0, L);
    stage(vs, vb, HSP, OWN, s0, L);
    for (int warp = 0; warp < WARPS; warp++) {
        static float kf[8][32][4][2], vf[8][32][4][2], dk[16][32][4], dv[16][32][4];
        for (int kk = 0; kk < NK; kk++) {
            load_a(kf[kk], ks, LDH, warp * 16, kk * 16);
            load_a(vf[kk], vs, LDH, warp * 16, kk * 16);
        }
        memset(dk, 0, sizeof dk);
        memset(dv, 0, sizeof dv);
        for (int it = 0; it < ntiles; it++) {
            const int i0 = s->q0 + it * STR, br = q1 - i0 < STR ? q1 - i0 : STR;
            stage(qs, qb, HSP, STR, i0, q1);
            stage(gs, gb, HSP, STR, i0, q1);
            for (int c = 0; c < STR; c++) {
                lt[c] = i0 + c < q1 ? lse[bh * L + i0 + c] * LOG2E : 0.0f;
                dt[c] = i0 + c < q1 ? D[bh * L + i0 + c] : 0.0f;
            }
            for (int qc = 0; qc < STR / 16; qc++) {
                float sc[2][32][4] = {{{0}}}, dp[2][32][4] = {{{0}}}, p[2][32][4], ds[2][32][4];
                for (int kk = 0; kk < NK; kk++) {
                    float b0[32][2][2], b1[32][2][2];
                    load_b(b0, b1, LDM_BN, qs, LDH, qc * 16, kk * 16);
                    mma(sc[0], kf[kk], b0);
                    mma(sc[1], kf[kk], b1);
                    load_b(b0, b1, LDM_BN, gs, LDH, qc * 16, kk * 16);
                    mma(dp[0], vf[kk], b0);
                    mma(dp[1], vf[kk], b1);
                }
                for (int j = 0; j < 2; j++)
                    for (int l = 0; l < 32; l++)
                        for (int i = 0; i < 4; i++) {
                            const int c = qc * 16 + 8 * j + gt_mma_c_col(l, i);
                            gt_attn_elem_bwd(sc[j][l][i], dp[j][l][i], sl2, lt[c], dt[c], scale, c < br, &p[j][l][i],
                                             &ds[j][l][i]);
                        }
                float pa[32][4][2], da[32][4][2];
                c2a(pa, p[0], p[1]);
                c2a(da, ds[0], ds[1]);
                for (int np = 0; np < NN / 2; np++) {
                    float b0[32][2][2], b1[32][2][2];
                    load_b(b0, b1, LDM_BK, gs, LDH, qc * 16, np * 16);
                    mma(dv[2 * np], pa, b0);
                    mma(dv[2 * np + 1], pa, b1);
                    load_b(b0, b1, LDM_BK, qs, LDH, qc * 16, np * 16);
                    mma(dk[2 * np], da, b0);
                    mma(dk[2 * np + 1], da, b1);
                }
            }
        }
        const int t0 = s0 + warp * 16;
        for (int l = 0; l < 32; l++)
            for (int n = 0; n < NN; n++)
                for (int i = 0; i < 4; i++) {
                    const int row = t0 + gt_mma_c_row(l, i), col = 8 * n + gt_mma_c_col(l, i);
                    if (row < L && col < hs) {
                        float *r = dqkv + ((size_t)b * L + row) * 3 * s->C + h * hs + col;
                        r[s->C] = dk[n][l][i];
                        r[2 * s->C] = dv[n][l][i];
                    }
                }
    }
    free(ks);
    free(vs);
    free(qs);
    free(gs);
}

static double rel_l2(const float *got, const float *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)got[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}
static void check_rel(const char *what, const float *got, const float *ref, size_t n, double tol) {
    const double e = rel_l2(got, ref, n);
    printf("  %-6s rel L2 %.2e (tol %.2e)%s\n", what, e, tol, e <= tol ? "" : "  FAIL");
    TEST_CHECK(e <= tol);
}

static void test_loops(shape s, uint32_t tag) {
    const int B = s.B, L = s.L, C = s.C, NH = s.NH, hs = C / NH, q1 = s.q0 + s.nq;
    const size_t nqkv = (size_t)B * L * 3 * C, no = (size_t)B * L * C, nl = (size_t)B * NH * L;
    printf("tile loops: B%d L%d C%d NH%d (hs %d, HSP %d) rows [%d,%d)\n", B, L, C, NH, hs, hsp_of(hs), s.q0, q1);
    float *qkv = malloc(nqkv * 4), *g = malloc(no * 4);
    nt_fill(qkv, nqkv, 1.5f, tag);
    nt_fill(g, no, 1.0f, tag + 1);
    for (size_t i = 0; i < nqkv; i++) qkv[i] = gt_bf16_round(qkv[i]); /* the "exact" inputs of test_attention_tc */
    for (size_t i = 0; i < no; i++) g[i] = gt_bf16_round(g[i]);
    /* the CPU reference */
    float *out = calloc(no, 4), *lse = calloc(nl, 4), *gq = calloc(nqkv, 4);
    float *scr = malloc(gt_attention_scratch_elems(L) * 4);
    gt_attention_forward_rows(out, lse, scr, qkv, B, L, C, NH, s.q0, s.nq);
    gt_attention_backward_rows(gq, scr, g, qkv, out, lse, B, L, C, NH, s.q0, s.nq);
    /* the emulated kernels, per head: forward; then the backward from the CPU's out and lse */
    float *eo = calloc(no, 4), *el = calloc(nl, 4), *eg = calloc(nqkv, 4), *D = calloc(nl, 4);
    for (int b = 0; b < B; b++)
        for (int t = s.q0; t < q1; t++)
            for (int h = 0; h < NH; h++) { /* k_attn_d: D = rowsum(dO * O) in fp32 */
                float a = 0.0f;
                for (int i = 0; i < hs; i++)
                    a += out[((size_t)b * L + t) * C + h * hs + i] * g[((size_t)b * L + t) * C + h * hs + i];
                D[((size_t)b * NH + h) * L + t] = a;
            }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            float *qb = to_bf16_copy(qkv, 3 * C, &s, b, h, s.q0, q1), *kb = to_bf16_copy(qkv + C, 3 * C, &s, b, h, 0, L),
                  *vb = to_bf16_copy(qkv + 2 * C, 3 * C, &s, b, h, 0, L), *gb = to_bf16_copy(g, C, &s, b, h, s.q0, q1);
            for (int bx = 0; bx * OWN < s.nq; bx++) {
                emu_fwd(eo, el, qb, kb, vb, &s, b, h, bx);
                emu_dq(eg, qb, kb, vb, gb, lse, D, &s, b, h, bx);
            }
            for (int bx = 0; bx * OWN < L; bx++) emu_dkv(eg, qb, kb, vb, gb, lse, D, &s, b, h, bx);
            free(qb);
            free(kb);
            free(vb);
            free(gb);
        }
    check_rel("out", eo, out, no, 3.75e-3);
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < nl; i++) {
        const double err = fabs((double)el[i] - lse[i]), lim = 5e-3 + 2.5e-3 * fabs((double)lse[i]);
        bad += !(err <= lim);
        worst = fmax(worst, err / lim);
    }
    printf("  lse    max err/tol %.3f\n", worst);
    TEST_EQ_INT(bad, 0);
    float *part[2][3];
    for (int w = 0; w < 2; w++)
        for (int p = 0; p < 3; p++) {
            part[w][p] = malloc(no * 4);
            for (size_t row = 0; row < (size_t)B * L; row++)
                memcpy(part[w][p] + row * C, (w ? gq : eg) + row * 3 * C + (size_t)p * C, (size_t)C * 4);
        }
    check_rel("dq", part[0][0], part[1][0], no, 7.5e-3);
    check_rel("dk", part[0][1], part[1][1], no, 7.5e-3);
    check_rel("dv", part[0][2], part[1][2], no, 7.5e-3);
    for (int w = 0; w < 2; w++)
        for (int p = 0; p < 3; p++) free(part[w][p]);
    free(qkv); free(g); free(out); free(lse); free(gq); free(scr); free(eo); free(el); free(eg); free(D);
}

int main(void) {
    test_maps();
    test_products();
    test_loops((shape){1, 100, 48, 2, 0, 100}, 11);   /* hs 24 -> HSP 32: 2 key tiles, the last partial */
    test_loops((shape){1, 200, 64, 2, 0, 200}, 13);   /* hs 32 (s2p_tf's): 4 key tiles, 2 query blocks */
    test_loops((shape){2, 150, 64, 1, 10, 130}, 17);  /* hs 64, B 2: a row range over 3 query tiles */
    test_loops((shape){1, 70, 15, 3, 0, 70}, 19);     /* hs 5 -> HSP 16, 3 heads */
    test_loops((shape){1, 1, 64, 2, 0, 1}, 23);       /* L 1 */
    test_loops((shape){1, 90, 200, 2, 0, 90}, 29);    /* hs 100 -> HSP 128 */
    test_loops((shape){1, 140, 128, 1, 5, 120}, 31);  /* hs 128, a row range */
    TEST_DONE();
}
