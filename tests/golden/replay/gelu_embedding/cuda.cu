
// kernel k0_Gather: 1 part(s)
// launch weft_k0_Gather_p0 block=256 grid=device
// b0 b0, b1 b1, b2 b2
extern "C" __global__ void __launch_bounds__(256) weft_k0_Gather_p0(const float* __restrict__ b0, const int64_t* __restrict__ b1, float* __restrict__ b2) {
  const int64_t weft_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x;
  for (int64_t weft_p = weft_first; weft_p < 4 * 16 * 64; weft_p += weft_groups) {
    uint32_t weft_q = weft_p;
    const int64_t c2 = 0 + weft_q % 64u;
    weft_q /= 64u;
    const int64_t c1 = 0 + weft_q % 16u;
    weft_q /= 16u;
    const int64_t c0 = 0 + weft_q;
    {  // gather
      const int64_t t0 = b1[c0 * 16 + c1];
      const float t1 = b0[weft_wrap_index(t0, 100) * 64 + c2];
      b2[weft_p] = t1;
    }
  }
}

// kernel k1_MatMul: 2 part(s)
// launch weft_k1_MatMul_p0 block=256 grid=device
// b0 b0, b1 b1, b2 b3
extern "C" __global__ void __launch_bounds__(256) weft_k1_MatMul_p0(const float* __restrict__ b0, const float* __restrict__ b1, float* __restrict__ b2) {
  const int64_t weft_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x;
  for (int64_t weft_p = weft_first; weft_p < 8192; weft_p += weft_groups) {
    const int64_t c0 = 0 + weft_p;
    {  // init
      const float t0 = 0.0f;
      b2[weft_p] = t0;
    }
  }
}
// launch weft_k1_MatMul_p1 block=256 grid=device
// b0 b0, b1 b1, b2 b3
extern "C" __global__ void __launch_bounds__(256) weft_k1_MatMul_p1(const float* __restrict__ b0, const float* __restrict__ b1, float* b2) {
  const int64_t weft_lane = threadIdx.x % 4;
  const unsigned int weft_mask = ((1u << 4) - 1u) << (threadIdx.x % 32 / 4 * 4);
  const int64_t weft_first = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 4;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x / 4;
  for (int64_t weft_p = weft_first; weft_p < 4 * 16 * 128; weft_p += weft_groups) {
    uint32_t weft_q = weft_p;
    const int64_t c2 = 0 + weft_q % 128u;
    weft_q /= 128u;
    const int64_t c1 = 0 + weft_q % 16u;
    weft_q /= 16u;
    const int64_t c0 = 0 + weft_q;
    // a group of 4 threads per point
    float weft_r0[16];  // b0[c0 * 16 * 64 + c1 * 64 + c3], by weft_k
    {  // load b0[c0 * 16 * 64 + c1 * 64 + c3] by quads
      const int64_t c3 = 0 + weft_lane * 4;
      if (weft_aligned16(&b0[c0 * 16 * 64 + c1 * 64 + c3])) {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; weft_k += 4) {
          const int64_t c3 = 0 + weft_k * 4 + weft_lane * 4;
          const float4 weft_y = weft_load4(&b0[c0 * 16 * 64 + c1 * 64 + c3]); weft_r0[weft_k] = weft_y.x; weft_r0[weft_k + 1] = weft_y.y; weft_r0[weft_k + 2] = weft_y.z; weft_r0[weft_k + 3] = weft_y.w;
        }
      } else {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; ++weft_k) {
          const int64_t c3 = 0 + weft_k / 4 * 16 + weft_lane * 4 + weft_k % 4;
          weft_r0[weft_k] = b0[c0 * 16 * 64 + c1 * 64 + c3];
        }
      }
    }
    {  // the group's lanes accumulate their registers; shuffles combine them
      float acc = 0.0f;
      #pragma unroll
      for (int weft_k = 0; weft_k < 16; ++weft_k) {
        const int64_t c3 = 0 + weft_k / 4 * 16 + weft_lane * 4 + weft_k % 4;
        {  // multiply_add
          const float t0 = weft_r0[weft_k];
          const float t1 = b1[c3 * 128 + c2];
          const float t2 = (t0 * t1);
          acc = acc + t2;
        }
      }
      acc = weft_group_reduce<4>(acc, weft_op_add{}, weft_mask);
      if (weft_lane == 0) { b2[(2048 * c0 + 128 * c1 + c2)] = b2[(2048 * c0 + 128 * c1 + c2)] + acc; }
    }
    __syncwarp(weft_mask);
  }
}

// kernel k6_Mul: 1 part(s)
// launch weft_k6_Mul_p0 block=256 grid=device
// b0 b1, b1 b2, b2 b0_1, b3 b1_1, b4 b1_2
extern "C" __global__ void __launch_bounds__(256) weft_k6_Mul_p0(const float* __restrict__ b0, float* __restrict__ b1, const float* __restrict__ b2, const float* __restrict__ b3, const float* __restrict__ b4) {
  const int64_t weft_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x;
  for (int64_t weft_p = weft_first; weft_p < 4 * 16 * 128; weft_p += weft_groups) {
    uint32_t weft_q = weft_p;
    const int64_t c2 = 0 + weft_q % 128u;
    weft_q /= 128u;
    const int64_t c1 = 0 + weft_q % 16u;
    weft_q /= 16u;
    const int64_t c0 = 0 + weft_q;
    {  // Mul
      const float t0 = b2[weft_p];
      const float t1 = b2[weft_p];
      const float t2 = b3[0];
      const float t3 = (t1 * t2);
      const float t4 = weft_erf(t3);
      const float t5 = b4[0];
      const float t6 = (t4 + t5);
      const float t7 = (t0 * t6);
      const float t8 = b0[0];
      const float t9 = (t7 * t8);
      b1[weft_p] = t9;
    }
  }
}
