/* tests/gpu/smem_fit.c: every attention kernel the runtime may launch fits
 * the shared memory of every architecture of the build (ctest gpu_smem_fit,
 * label gpu-build: driven by tests/gpu/check_smem.cmake, no GPU needed).
 *
 *   gt_smem_fit PTXAS_LOG ARCH...      (ARCH: 80, 86, 89, 90, 90a ...)
 *
 * PTXAS_LOG is the `ptxas -v` output of attention.cu, attention_tc.cu and
 * attention_mma.cu compiled for every ARCH with the build's flags
 * ("Compiling entry function 'NAME' for 'sm_XX'" then "... N bytes smem"
 * per kernel: the static shared memory). For each ARCH, at that
 * architecture's opt-in limit per block (the table below: the CUDA C
 * Programming Guide's "maximum amount of shared memory per thread block"),
 * for each precision's tiles (bf16, fp16), kernel request (wmma, mma),
 * padded head size (16, 32, 64, 128) and pass (forward, backward), the
 * variant gt_attn_choose picks (nn/ops/cuda/attention_plan.h: the function
 * attention.cu calls at every call) is looked up: each of its kernels must be
 * in the log for that ARCH, and its static shared memory plus the dynamic
 * shared memory the code asks for (gt_attn_smem_bytes) must not exceed the
 * limit. Every SIMT kernel (static only, launched without an opt-in) must
 * fit the 48 KiB default. First a planted log (a wmma kernel with 16 KiB of
 * static shared memory) must be caught, so the check cannot pass by reading
 * nothing; the real log must name every kernel at every ARCH. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/ops/cuda/attention_plan.h"

#define MAX_FN 4096
#define DEFAULT_SMEM 49152 /* without an opt-in */

typedef struct fn_usage {
    char name[256];
    int arch;    /* 80, 86, ... (an 'a' or 'f' suffix dropped) */
    long smem;   /* static shared memory, bytes */
} fn_usage;

typedef struct usage_log {
    fn_usage fn[MAX_FN];
    int n;
} usage_log;

/* The opt-in limit of dynamic + static shared memory per block, bytes; 0: unknown. */
static long arch_limit(int arch) {
    switch (arch) {
    case 80: case 87: return 166912;          /* 163 KiB */
    case 86: case 89: case 120: return 101376; /* 99 KiB */
    case 90: case 100: case 103: return 232448; /* 227 KiB */
    default: return 0;
    }
}

static int arch_number(const char *s) { return atoi(s); }

/* Parse ptxas -v text: entry functions, the architecture each was compiled for, their smem. */
static void parse_log(const char *text, usage_log *u) {
    u->n = 0;
    fn_usage *cur = NULL;
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[1024];
        if (len >= sizeof line) len = sizeof line - 1;
        memcpy(line, p, len);
        line[len] = 0;
        const char *q = strstr(line, "Compiling entry function '");
        if (q && u->n < MAX_FN) {
            q += strlen("Compiling entry function '");
            const char *e = strchr(q, '\'');
            const char *a = strstr(line, "for 'sm_");
            if (e && a) {
                cur = &u->fn[u->n++];
                size_t n = (size_t)(e - q) < sizeof cur->name - 1 ? (size_t)(e - q) : sizeof cur->name - 1;
                memcpy(cur->name, q, n);
                cur->name[n] = 0;
                cur->arch = arch_number(a + strlen("for 'sm_"));
                cur->smem = 0;
            }
        } else if (cur && (q = strstr(line, "Used ")) && strstr(line, "registers")) {
            const char *s = strstr(line, " bytes smem");
            if (s) { /* "..., 33024 bytes smem, ..." */
                const char *b = s;
                while (b > line && isdigit((unsigned char)b[-1])) b--;
                cur->smem = atol(b);
            }
            cur = NULL; /* one "Used" line per entry function */
        }
        p = eol ? eol + 1 : p + len;
    }
}

/* The mangled name of kernel `base` at padded head size hsp, tile type elem
 * (NULL: a kernel templated on HSP only) is "_Z<len><base>ILi<hsp>E[<elem>]E...". */
static int name_is(const char *mangled, const char *base, int hsp, const char *elem) {
    char want[256];
    if (elem) snprintf(want, sizeof want, "_Z%zu%sILi%dE%sE", strlen(base), base, hsp, elem);
    else snprintf(want, sizeof want, "_Z%zu%sILi%dEE", strlen(base), base, hsp);
    return strncmp(mangled, want, strlen(want)) == 0;
}

static const fn_usage *find(const usage_log *u, int arch, const char *base, int hsp, const char *elem) {
    for (int i = 0; i < u->n; i++)
        if (u->fn[i].arch == arch && name_is(u->fn[i].name, base, hsp, elem)) return &u->fn[i];
    return NULL;
}

/* the kernels of a variant's pass, in gt_attn_smem_bytes's order (0, 1) */
static int kernels_of(gt_attn_variant v, int pass, const char *names[2]) {
    static const char *simt[2][2] = {{"k_attn_fwd", NULL}, {"k_attn_dq", "k_attn_dkv"}};
    static const char *tc[2][2] = {{"k_attn_tc_fwd", NULL}, {"k_attn_tc_dq", "k_attn_tc_dkv"}};
    static const char *mm[2][2] = {{"k_attn_mma_fwd", NULL}, {"k_attn_mma_dq", "k_attn_mma_dkv"}};
    const char *(*t)[2] = v == GT_ATTN_SIMT ? simt : v == GT_ATTN_WMMA ? tc : mm;
    names[0] = t[pass][0];
    names[1] = t[pass][1];
    return names[1] ? 2 : 1;
}

static const char *variant_name(gt_attn_variant v) {
    return v == GT_ATTN_SIMT ? "simt" : v == GT_ATTN_WMMA ? "wmma" : "mma";
}

/* One architecture: returns the number of violations (printed), missing kernels included. */
static int check_arch(const usage_log *u, int arch, int verbose) {
    const long limit = arch_limit(arch);
    if (!limit) {
        fprintf(stderr, "smem_fit: no shared-memory limit known for sm_%d: add it to tests/gpu/smem_fit.c\n", arch);
        return 1;
    }
    int bad = 0, checked = 0;
    static const char *elems[2] = {"13__nv_bfloat16", "6__half"};
    const int cc_major = arch / 10;
    for (int tiles = GT_ATTN_TILES_BF16; tiles <= GT_ATTN_TILES_FP16; tiles++)
        for (int want_mma = 0; want_mma <= 1; want_mma++)
            for (int hsp = 16; hsp <= 128; hsp *= 2)
                for (int pass = GT_ATTN_FWD; pass <= GT_ATTN_BWD; pass++) {
                    const gt_attn_choice c = gt_attn_choose(pass, tiles, want_mma, hsp, GT_ATTN_TC_MIN_ROWS,
                                                            cc_major, (size_t)limit);
                    const char *names[2];
                    const int nk = kernels_of(c.variant, pass, names);
                    for (int k = 0; k < nk; k++) {
                        const char *elem = c.variant == GT_ATTN_WMMA ? elems[tiles - 1] : NULL;
                        const fn_usage *f = find(u, arch, names[k], c.hsp, elem);
                        if (!f) {
                            fprintf(stderr, "smem_fit: sm_%d: kernel %s<%d%s%s> not in the ptxas log\n", arch,
                                    names[k], c.hsp, elem ? ", " : "", elem ? elem : "");
                            bad++;
                            continue;
                        }
                        const long need = f->smem + (long)c.smem[k];
                        const long cap = c.smem[k] ? limit : DEFAULT_SMEM;
                        checked++;
                        if (verbose)
                            printf("  sm_%d %s %s hsp %3d %-8s -> %-4s %-15s static %6ld + dynamic %6zu = %6ld "
                                   "of %6ld\n",
                                   arch, tiles == GT_ATTN_TILES_BF16 ? "bf16" : "fp16", want_mma ? "mma " : "wmma",
                                   hsp, pass == GT_ATTN_FWD ? "forward" : "backward", variant_name(c.variant),
                                   names[k], f->smem, c.smem[k], need, cap);
                        if (need > cap) {
                            fprintf(stderr,
                                    "smem_fit: sm_%d: %s (%s, head size class %d): %ld B static + %zu B dynamic "
                                    "= %ld B > %ld B per block\n",
                                    arch, f->name, variant_name(c.variant), c.hsp, f->smem, c.smem[k], need, cap);
                            bad++;
                        }
                    }
                }
    /* the SIMT kernels at every head-size class (the fallback of every other) */
    static const char *simt[3] = {"k_attn_fwd", "k_attn_dq", "k_attn_dkv"};
    long simt_max = 0;
    for (int hsp = 8; hsp <= 128; hsp *= 2)
        for (int k = 0; k < 3; k++) {
            const fn_usage *f = find(u, arch, simt[k], hsp, NULL);
            if (!f) {
                fprintf(stderr, "smem_fit: sm_%d: kernel %s<%d> not in the ptxas log\n", arch, simt[k], hsp);
                bad++;
                continue;
            }
            checked++;
            if (f->smem > simt_max) simt_max = f->smem;
            if (f->smem > DEFAULT_SMEM) {
                fprintf(stderr, "smem_fit: sm_%d: %s: %ld B static > %d B\n", arch, f->name, f->smem, DEFAULT_SMEM);
                bad++;
            }
        }
    /* the parse read real numbers: k_attn_fwd<128> stages two 32 x 128 float tiles */
    if (simt_max < 2 * 32 * 128 * 4) {
        fprintf(stderr, "smem_fit: sm_%d: the SIMT kernels' static shared memory read as %ld B (expected >= %d): "
                        "the log was not parsed\n", arch, simt_max, 2 * 32 * 128 * 4);
        bad++;
    }
    printf("smem_fit: sm_%d (limit %ld B): %d kernel launches checked, %d violation%s\n", arch, limit, checked, bad,
           bad == 1 ? "" : "s");
    return bad;
}

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 >= cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (buf) buf[n] = 0;
    return buf;
}

/* A log every kernel is in at sm_86, where the wmma
 * backward kernels at HSP 64 get 16 KiB of static shared memory on top of
 * their dynamic 80896 B (dQ: fits) and 90624 B (dK/dV: must be caught). */
static int planted(void) {
    static char text[1 << 17];
    size_t n = 0;
    static const char *tc[3] = {"k_attn_tc_fwd", "k_attn_tc_dq", "k_attn_tc_dkv"};
    static const char *mm[3] = {"k_attn_mma_fwd", "k_attn_mma_dq", "k_attn_mma_dkv"};
    static const char *simt[3] = {"k_attn_fwd", "k_attn_dq", "k_attn_dkv"};
    static const char *elems[2] = {"13__nv_bfloat16", "6__half"};
    for (int hsp = 8; hsp <= 128; hsp *= 2)
        for (int k = 0; k < 3; k++) {
            n += (size_t)snprintf(text + n, sizeof text - n,
                                  "ptxas info    : Compiling entry function '_Z%zu%sILi%dEEvPf' for 'sm_86'\n"
                                  "ptxas info    : Used 64 registers, used 1 barriers, %d bytes smem, 400 bytes "
                                  "cmem[0]\n",
                                  strlen(simt[k]), simt[k], hsp, 2 * 32 * hsp * 4);
            if (hsp < 16) continue;
            for (int e = 0; e < 2; e++)
                n += (size_t)snprintf(text + n, sizeof text - n,
                                      "ptxas info    : Compiling entry function '_Z%zu%sILi%dE%sEvPf' for 'sm_86'\n"
                                      "ptxas info    : Used 96 registers, used 1 barriers, %d bytes smem, 400 "
                                      "bytes cmem[0]\n",
                                      strlen(tc[k]), tc[k], hsp, elems[e], hsp == 64 && k > 0 ? 16384 : 0);
            n += (size_t)snprintf(text + n, sizeof text - n,
                                  "ptxas info    : Compiling entry function '_Z%zu%sILi%dEEvPf' for 'sm_86'\n"
                                  "ptxas info    : Used 128 registers, used 1 barriers, 400 bytes cmem[0]\n",
                                  strlen(mm[k]), mm[k], hsp);
        }
    static usage_log u;
    parse_log(text, &u);
    return check_arch(&u, 86, 0);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: gt_smem_fit PTXAS_LOG ARCH...\n");
        return 2;
    }
    printf("smem_fit: planted log (16 KiB of static shared memory in the sm_86 wmma backward at HSP 64):\n");
    /* the dK/dV kernel (90624 + 16384 > 101376 B; dQ's 80896 + 16384 fits) of bf16 and fp16 on wmma,
     * and of fp16 with mma asked for (wmma then); bf16 with mma asked for runs mma, which fits */
    const int caught = planted();
    if (caught != 3) {
        fprintf(stderr, "smem_fit: the planted log gave %d violations, expected 3\n", caught);
        return 1;
    }
    printf("smem_fit: planted violations caught (3 of 3); now the build's kernels\n");
    char *text = read_all(argv[1]);
    if (!text) {
        fprintf(stderr, "smem_fit: cannot read %s\n", argv[1]);
        return 1;
    }
    static usage_log u;
    parse_log(text, &u);
    free(text);
    int bad = 0;
    for (int i = 2; i < argc; i++) bad += check_arch(&u, arch_number(argv[i]), 1);
    if (bad) fprintf(stderr, "smem_fit: %d violation%s\n", bad, bad == 1 ? "" : "s");
    return bad ? 1 : 0;
}
