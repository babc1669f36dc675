// tests/gpu/spill_planted.cu: a kernel that must use a stack frame (a local
// array indexed at run time), for tests/gpu/check_spills.cmake to catch.
__global__ void k_planted_stack(float *out, const int *idx, int n) {
    float local[64];
    for (int i = 0; i < 64; i++) local[i] = out[i] * (float)i;
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) out[t] = local[idx[t] & 63];
}
