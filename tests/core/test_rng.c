/* Philox4x32-10 known-answer vectors (Random123 kat_vectors) and the
 * properties the pipeline relies on: determinism, stream independence,
 * seekability and sane distributions. */
#include <stdint.h>
#include <string.h>

#include "core/rng.h"
#include "test.h"

int main(void) {
    struct { uint32_t ctr[4], key[2], out[4]; } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
        {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu},
         {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
        {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u},
         {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        uint32_t out[4];
        gt_philox4x32(kat[i].ctr, kat[i].key, out);
        for (int j = 0; j < 4; j++) {
            if (out[j] != kat[i].out[j])
                fprintf(stderr, "kat %zu word %d: got %08x want %08x\n", i, j, out[j], kat[i].out[j]);
            TEST_CHECK(out[j] == kat[i].out[j]);
        }
    }

    /* determinism and seek: block k of a stream equals draws 4k..4k+3 */
    gt_rng a, b;
    gt_rng_init(&a, 42, gt_stream(GT_STREAM_TEST, 7));
    uint32_t seq[64];
    for (int i = 0; i < 64; i++) seq[i] = gt_rng_u32(&a);
    gt_rng_init(&b, 42, gt_stream(GT_STREAM_TEST, 7));
    gt_rng_seek(&b, 5);
    for (int i = 0; i < 8; i++) TEST_CHECK(gt_rng_u32(&b) == seq[20 + i]);

    /* different streams and seeds differ */
    gt_rng c;
    gt_rng_init(&c, 42, gt_stream(GT_STREAM_TEST, 8));
    int same = 0;
    for (int i = 0; i < 64; i++) same += gt_rng_u32(&c) == seq[i];
    TEST_CHECK(same < 2);
    gt_rng_init(&c, 43, gt_stream(GT_STREAM_TEST, 7));
    same = 0;
    for (int i = 0; i < 64; i++) same += gt_rng_u32(&c) == seq[i];
    TEST_CHECK(same < 2);

    /* distributions: uniform mean/var, normal mean/var, below() range */
    gt_rng r;
    gt_rng_init(&r, 1, 0);
    const int n = 200000;
    double su = 0, su2 = 0, sn = 0, sn2 = 0;
    int out_of_range = 0, counts[10] = {0};
    for (int i = 0; i < n; i++) {
        float u = gt_rng_uniform(&r);
        if (u < 0.0f || u >= 1.0f) out_of_range++;
        su += u; su2 += (double)u * u;
        double z = gt_rng_normal(&r);
        sn += z; sn2 += z * z;
        uint32_t k = gt_rng_below(&r, 10);
        if (k >= 10) out_of_range++; else counts[k]++;
    }
    TEST_EQ_INT(out_of_range, 0);
    TEST_CLOSE(su / n, 0.5, 0.005, 0);
    TEST_CLOSE(su2 / n - (su / n) * (su / n), 1.0 / 12.0, 0.002, 0);
    TEST_CLOSE(sn / n, 0.0, 0.01, 0);
    TEST_CLOSE(sn2 / n, 1.0, 0.015, 0);
    for (int k = 0; k < 10; k++) TEST_CLOSE(counts[k], n / 10.0, 0.03 * n / 10.0, 0);
    TEST_DONE();
}
