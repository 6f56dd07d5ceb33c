
// kernel k1_MatMul: 2 part(s)
// launch weft_k1_MatMul_p0 block=256 grid=device
// b0 b1, b1 b3, b2 b1_1, b3 b0_1
extern "C" __global__ void __launch_bounds__(256) weft_k1_MatMul_p0(const float* __restrict__ b0, float* __restrict__ b1, const int64_t* __restrict__ b2, const float* __restrict__ b3) {
  const int64_t weft_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x;
  for (int64_t weft_p = weft_first; weft_p < 8192; weft_p += weft_groups) {
    const int64_t c0 = 0 + weft_p;
    {  // init
      const float t0 = 0.0f;
      b1[weft_p] = t0;
    }
  }
}
// launch weft_k1_MatMul_p1 block=256 grid=device
// b0 b1, b1 b3, b2 b1_1, b3 b0_1
extern "C" __global__ void __launch_bounds__(256) weft_k1_MatMul_p1(const float* __restrict__ b0, float* b1, const int64_t* __restrict__ b2, const float* __restrict__ b3) {
  const int64_t weft_lane = threadIdx.x % 8;
  const unsigned int weft_mask = ((1u << 8) - 1u) << (threadIdx.x % 32 / 8 * 8);
  const int64_t weft_first = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 8;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x / 8;
  for (int64_t weft_p = weft_first; weft_p < 4 * 16 * 128; weft_p += weft_groups) {
    uint32_t weft_q = weft_p;
    const int64_t c2 = 0 + weft_q % 128u;
    weft_q /= 128u;
    const int64_t c1 = 0 + weft_q % 16u;
    weft_q /= 16u;
    const int64_t c0 = 0 + weft_q;
    // a group of 8 threads per point
    {  // the group's lanes accumulate; shuffles combine them
      float acc = 0.0f;
      {  // 4 accumulators a thread: loads in flight
        float weft_a[4];
        #pragma unroll
        for (int weft_j = 0; weft_j < 4; ++weft_j) weft_a[weft_j] = 0.0f;
        int64_t weft_b = 0;  // where the scalar loop starts
        for (; weft_b + weft_lane + 3 * (8) < 64; weft_b += 4 * (8)) {
          #pragma unroll
          for (int weft_j = 0; weft_j < 4; ++weft_j) {
            const int64_t c3 = weft_b + weft_lane + weft_j * (8);
            {  // multiply_add
              const int64_t t0 = b2[c0 * 16 + c1];
              const float t1 = b3[weft_wrap_index(t0, 100) * 64 + c3];
              const float t2 = b0[c3 * 128 + c2];
              const float t3 = (t1 * t2);
              weft_a[weft_j] = weft_a[weft_j] + t3;
            }
          }
        }
        for (int64_t c3 = weft_b + weft_lane; c3 < 64; c3 += 8) {
          {  // multiply_add
            const int64_t t0 = b2[c0 * 16 + c1];
            const float t1 = b3[weft_wrap_index(t0, 100) * 64 + c3];
            const float t2 = b0[c3 * 128 + c2];
            const float t3 = (t1 * t2);
            weft_a[0] = weft_a[0] + t3;
          }
        }
        #pragma unroll
        for (int weft_j = 0; weft_j < 4; ++weft_j) acc = acc + weft_a[weft_j];
      }
      acc = weft_group_reduce<8>(acc, weft_op_add{}, weft_mask);
      if (weft_lane == 0) { b1[(2048 * c0 + 128 * c1 + c2)] = b1[(2048 * c0 + 128 * c1 + c2)] + acc; }
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
