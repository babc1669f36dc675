/* gt_model_plan_sizes (the planner's view) equals what gt_model_create
 * allocates, for every kind and several micro-batches; gt_model_device_bytes
 * equals the list of device buffers of gt_cuda_model_create, checked by hand
 * on a tiny s2p_cnn (the GPU test compares it with the real allocation). */
#include <stdlib.h>
#include <string.h>

#include "nn/model.h"
#include "nn/ops/cuda/sizes.h"
#include "test.h"

static void cfg_of(gt_model_kind k, int variant, gt_model_config *c) {
    gt_model_config_default(c, k);
    if (k == GT_MODEL_S2P_CNN) {
        c->window = 99 + variant * 100;
        c->n_in = 1 + 2 * variant; /* time features */
        c->n_out = variant ? 30 : 15;
        c->hidden = 64;
    } else if (k == GT_MODEL_S2P_TF) {
        c->window = 64 << variant;
        c->n_in = 1 + 2 * variant;
        c->d_model = 32, c->n_heads = 4, c->d_ff = 64, c->n_layers = 2;
    } else {
        c->window = 64 << variant;
        c->hidden = 32;
        c->tbptt = variant ? 16 : 0;
    }
}

int main(void) {
    int checked = 0;
    for (int k = 0; k < GT_MODEL_KIND_COUNT; k++)
        for (int v = 0; v < 2; v++)
            for (int b = 1; b <= 64; b *= 7) {
                gt_model_config c;
                cfg_of((gt_model_kind)k, v, &c);
                c.max_batch = b;
                gt_model_sizes s;
                gt_model_plan_sizes(&c, &s);
                gt_model *m = gt_model_create(&c);
                TEST_EQ_INT(s.n_params, m->n_params);
                TEST_EQ_INT(s.n_act_elems, m->n_act_elems);
                TEST_EQ_INT(s.n_x, m->n_x);
                TEST_EQ_INT(s.n_y, m->n_y);
                TEST_EQ_INT(s.host_bytes, gt_model_state_bytes(m) + gt_model_act_bytes(m));
                gt_model_free(m);
                checked++;
            }
    /* device buffers by hand: s2p_cnn, one conv layer 1 -> 2 channels (k 3), W 8, fc1 4, 1 output, B 2 */
    gt_model_config c;
    gt_model_config_default(&c, GT_MODEL_S2P_CNN);
    c.window = 8, c.n_in = 1, c.n_out = 1, c.hidden = 4, c.n_layers = 1, c.max_batch = 2;
    c.conv_channels[0] = 2, c.conv_kernels[0] = 3;
    gt_model_sizes s;
    gt_model_plan_sizes(&c, &s);
    TEST_EQ_INT(s.n_params, 6 + 2 + 4 * 16 + 4 + 4 + 1);
    size_t work = (1 * 3 + 2) * GT_CONV1D_CUDA_NB * 8; /* im2col chunk of the one layer */
    TEST_EQ_INT(gt_model_device_work_elems(&c), work);
    size_t want = 4 * 81 * 4          /* params, grads, adam m, adam v */
                  + s.n_act_elems_device * 4 /* the device activation layout */
                  + 2 * (2 * 1) * 4   /* targets and mask */
                  + 2 * 8 * 4         /* the second input buffer (B x n_x) */
                  + work * 4 + 2 * 4 + 4 * 4 /* work area, loss, norm scratch */
                  + 81;               /* weight-decay flags */
    TEST_EQ_INT(gt_model_device_bytes(&c, &s), want);
    TEST_EQ_INT(s.n_act_elems_device, s.n_act_elems); /* fp32: the host plan's layout */
    /* bf16 activation storage: s2p_tf's pre-GELU activations take half on the
     * device under train.precision=bf16 (each entry 16-float aligned), nothing else */
    {
        gt_model_config b;
        cfg_of(GT_MODEL_S2P_TF, 0, &b);
        b.max_batch = 3;
        gt_model_sizes s32, s16;
        gt_model_plan_sizes(&b, &s32);
        b.precision = GT_PRECISION_BF16;
        gt_model_plan_sizes(&b, &s16);
        gt_model *m = gt_model_create(&b);
        size_t saved = 0, n_kept = 0;
        for (int j = 0; j < m->n_acts; j++) {
            const gt_act_tensor *a = &m->act_table[j];
            if (!gt_model_act_device_bf16(&b, a->name)) continue;
            n_kept++;
            saved += (a->n_elem + 15) / 16 * 16 - ((a->n_elem + 1) / 2 + 15) / 16 * 16;
        }
        TEST_EQ_INT(n_kept, (size_t)b.n_layers);
        TEST_CHECK(saved > 0);
        TEST_EQ_INT(s16.n_act_elems, s32.n_act_elems); /* the host plan does not change */
        TEST_EQ_INT(s16.n_act_elems_device, s32.n_act_elems_device - saved);
        TEST_EQ_INT(gt_model_device_bytes(&b, &s16) + saved * 4, gt_model_device_bytes(&b, &s32));
        TEST_CHECK(!gt_model_act_device_bf16(&b, "blocks.0.fc1.x") && !gt_model_act_device_bf16(&b, "blocks.0.qkv"));
        b.precision = GT_PRECISION_FP16; /* fp16 range: not kept */
        TEST_CHECK(!gt_model_act_device_bf16(&b, "blocks.0.fc1"));
        gt_model_free(m);
    }
    /* attention's work is linear in L: doubling L doubles it */
    gt_model_config t;
    cfg_of(GT_MODEL_S2P_TF, 0, &t);
    t.max_batch = 4;
    size_t w1 = gt_model_device_work_elems(&t);
    t.window *= 2;
    TEST_EQ_INT(gt_model_device_work_elems(&t), 2 * w1);
    /* GT_ATTN_IMPL=mma (the mma.sync attention, nn/ops/cuda/attention_mma.cu): D, rounded up to 64 floats, and
     * the bf16 copies of q, k, v, dout (4 x B NH L HSP bf16 = 2 B NH L HSP floats); wmma or unset: D only */
    unsetenv("GT_ATTN_IMPL");
    TEST_CHECK(!gt_model_attention_mma());
    const size_t w_wmma = gt_model_device_work_elems(&t), bhl = (size_t)t.max_batch * t.n_heads * t.window;
    TEST_EQ_INT(w_wmma, bhl);
    setenv("GT_ATTN_IMPL", "mma", 1);
    TEST_CHECK(gt_model_attention_mma());
    const int hs = t.d_model / t.n_heads, hsp = hs <= 16 ? 16 : hs <= 32 ? 32 : hs <= 64 ? 64 : 128;
    TEST_EQ_INT(gt_model_device_work_elems(&t), (bhl + 63) / 64 * 64 + 2 * bhl * hsp);
    setenv("GT_ATTN_IMPL", "wmma", 1);
    TEST_EQ_INT(gt_model_device_work_elems(&t), w_wmma);
    unsetenv("GT_ATTN_IMPL");
    fprintf(stderr, "model sizes: %d configurations planned == allocated; device bytes of the tiny s2p_cnn %zu\n",
            checked, want);
    TEST_DONE();
}
