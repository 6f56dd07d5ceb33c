
// kernel k0_MatMul: 2 part(s)
// launch weft_k0_MatMul_p0 block=256 grid=device
// b0 b0, b1 b1, b2 b3
extern "C" __global__ void __launch_bounds__(256) weft_k0_MatMul_p0(const float* __restrict__ b0, const float* __restrict__ b1, float* __restrict__ b2) {
  const int64_t weft_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x;
  for (int64_t weft_p = weft_first; weft_p < 49152; weft_p += weft_groups) {
    const int64_t c0 = 0 + weft_p;
    {  // init
      const float t0 = 0.0f;
      b2[weft_p] = t0;
    }
  }
}
// launch weft_k0_MatMul_p1 block=256 grid=device
// b0 b0, b1 b1, b2 b3
extern "C" __global__ void __launch_bounds__(256) weft_k0_MatMul_p1(const float* __restrict__ b0, const float* __restrict__ b1, float* b2) {
  const int64_t weft_lane = threadIdx.x % 4;
  const unsigned int weft_mask = ((1u << 4) - 1u) << (threadIdx.x % 32 / 4 * 4);
  const int64_t weft_first = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 4;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x / 4;
  for (int64_t weft_p = weft_first; weft_p < 2 * 128 * 192; weft_p += weft_groups) {
    uint32_t weft_q = weft_p;
    const int64_t c2 = 0 + weft_q % 192u;
    weft_q /= 192u;
    const int64_t c1 = 0 + weft_q % 128u;
    weft_q /= 128u;
    const int64_t c0 = 0 + weft_q;
    // a group of 4 threads per point
    float weft_r0[16];  // b0[c0 * 128 * 64 + c1 * 64 + c3], by weft_k
    {  // load b0[c0 * 128 * 64 + c1 * 64 + c3] by quads
      const int64_t c3 = 0 + weft_lane * 4;
      if (weft_aligned16(&b0[c0 * 128 * 64 + c1 * 64 + c3])) {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; weft_k += 4) {
          const int64_t c3 = 0 + weft_k * 4 + weft_lane * 4;
          const float4 weft_y = weft_load4(&b0[c0 * 128 * 64 + c1 * 64 + c3]); weft_r0[weft_k] = weft_y.x; weft_r0[weft_k + 1] = weft_y.y; weft_r0[weft_k + 2] = weft_y.z; weft_r0[weft_k + 3] = weft_y.w;
        }
      } else {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; ++weft_k) {
          const int64_t c3 = 0 + weft_k / 4 * 16 + weft_lane * 4 + weft_k % 4;
          weft_r0[weft_k] = b0[c0 * 128 * 64 + c1 * 64 + c3];
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
          const float t1 = b1[c3 * 192 + c2];
          const float t2 = (t0 * t1);
          acc = acc + t2;
        }
      }
      acc = weft_group_reduce<4>(acc, weft_op_add{}, weft_mask);
      if (weft_lane == 0) { b2[(24576 * c0 + 192 * c1 + c2)] = b2[(24576 * c0 + 192 * c1 + c2)] + acc; }
    }
    __syncwarp(weft_mask);
  }
}

// kernel k1_Split: 4 part(s)
// launch weft_k1_Split_p0 block=256 grid=device
// b0 b0, b1 b1, b2 b2, b3 b3, b4 b0_1, b5 b1_1, b6 b0_2, b7 b1_2, b8 b0_3, b9 b1_3
extern "C" __global__ void __launch_bounds__(256) weft_k1_Split_p0(const float* __restrict__ b0, float* b1, float* b2, float* b3, const float* b4, float* __restrict__ b5, const float* b6, float* __restrict__ b7, const float* b8, float* __restrict__ b9) {
  const int64_t weft_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x;
  for (int64_t weft_p = weft_first; weft_p < 2 * 128 * 64; weft_p += weft_groups) {
    uint32_t weft_q = weft_p;
    const int64_t c2 = 0 + weft_q % 64u;
    weft_q /= 64u;
    const int64_t c1 = 0 + weft_q % 128u;
    weft_q /= 128u;
    const int64_t c0 = 0 + weft_q;
    {  // split
      const float t0 = b0[c0 * 128 * 192 + c1 * 192 + c2];
      b1[weft_p] = t0;
    }
    {  // split
      const float t0 = b0[c0 * 128 * 192 + c1 * 192 + (c2 + 64)];
      b2[weft_p] = t0;
    }
    {  // split
      const float t0 = b0[c0 * 128 * 192 + c1 * 192 + (c2 + 128)];
      b3[weft_p] = t0;
    }
  }
}
// launch weft_k1_Split_p1 block=256 grid=device
// b0 b0, b1 b1, b2 b2, b3 b3, b4 b0_1, b5 b1_1, b6 b0_2, b7 b1_2, b8 b0_3, b9 b1_3
extern "C" __global__ void __launch_bounds__(256) weft_k1_Split_p1(const float* __restrict__ b0, float* b1, float* b2, float* b3, const float* b4, float* __restrict__ b5, const float* b6, float* __restrict__ b7, const float* b8, float* __restrict__ b9) {
  const int64_t weft_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x;
  for (int64_t weft_p = weft_first; weft_p < 2 * 4 * 128 * 16; weft_p += weft_groups) {
    uint32_t weft_q = weft_p;
    const int64_t c3 = 0 + weft_q % 16u;
    weft_q /= 16u;
    const int64_t c2 = 0 + weft_q % 128u;
    weft_q /= 128u;
    const int64_t c1 = 0 + weft_q % 4u;
    weft_q /= 4u;
    const int64_t c0 = 0 + weft_q;
    {  // transpose
      const float t0 = b4[c0 * 128 * 4 * 16 + c2 * 4 * 16 + c1 * 16 + c3];
      b5[weft_p] = t0;
    }
  }
}
// launch weft_k1_Split_p2 block=256 grid=device
// b0 b0, b1 b1, b2 b2, b3 b3, b4 b0_1, b5 b1_1, b6 b0_2, b7 b1_2, b8 b0_3, b9 b1_3
extern "C" __global__ void __launch_bounds__(256) weft_k1_Split_p2(const float* __restrict__ b0, float* b1, float* b2, float* b3, const float* b4, float* __restrict__ b5, const float* b6, float* __restrict__ b7, const float* b8, float* __restrict__ b9) {
  const int64_t weft_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x;
  for (int64_t weft_p = weft_first; weft_p < 2 * 4 * 16 * 128; weft_p += weft_groups) {
    uint32_t weft_q = weft_p;
    const int64_t c3 = 0 + weft_q % 128u;
    weft_q /= 128u;
    const int64_t c2 = 0 + weft_q % 16u;
    weft_q /= 16u;
    const int64_t c1 = 0 + weft_q % 4u;
    weft_q /= 4u;
    const int64_t c0 = 0 + weft_q;
    {  // transpose
      const float t0 = b6[c0 * 128 * 4 * 16 + c3 * 4 * 16 + c1 * 16 + c2];
      b7[weft_p] = t0;
    }
  }
}
// launch weft_k1_Split_p3 block=256 grid=device
// b0 b0, b1 b1, b2 b2, b3 b3, b4 b0_1, b5 b1_1, b6 b0_2, b7 b1_2, b8 b0_3, b9 b1_3
extern "C" __global__ void __launch_bounds__(256) weft_k1_Split_p3(const float* __restrict__ b0, float* b1, float* b2, float* b3, const float* b4, float* __restrict__ b5, const float* b6, float* __restrict__ b7, const float* b8, float* __restrict__ b9) {
  const int64_t weft_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x;
  for (int64_t weft_p = weft_first; weft_p < 2 * 4 * 128 * 16; weft_p += weft_groups) {
    uint32_t weft_q = weft_p;
    const int64_t c3 = 0 + weft_q % 16u;
    weft_q /= 16u;
    const int64_t c2 = 0 + weft_q % 128u;
    weft_q /= 128u;
    const int64_t c1 = 0 + weft_q % 4u;
    weft_q /= 4u;
    const int64_t c0 = 0 + weft_q;
    {  // transpose
      const float t0 = b8[c0 * 128 * 4 * 16 + c2 * 4 * 16 + c1 * 16 + c3];
      b9[weft_p] = t0;
    }
  }
}

// kernel k8_MatMul: 2 part(s)
// launch weft_k8_MatMul_p0 block=256 grid=device
// b0 b0, b1 b1, b2 b3
extern "C" __global__ void __launch_bounds__(256) weft_k8_MatMul_p0(const float* __restrict__ b0, const float* __restrict__ b1, float* __restrict__ b2) {
  const int64_t weft_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x;
  for (int64_t weft_p = weft_first; weft_p < 131072; weft_p += weft_groups) {
    const int64_t c0 = 0 + weft_p;
    {  // init
      const float t0 = 0.0f;
      b2[weft_p] = t0;
    }
  }
}
// launch weft_k8_MatMul_p1 block=256 grid=device
// b0 b0, b1 b1, b2 b3
extern "C" __global__ void __launch_bounds__(256) weft_k8_MatMul_p1(const float* __restrict__ b0, const float* __restrict__ b1, float* b2) {
  const int64_t weft_lane = threadIdx.x % 2;
  const unsigned int weft_mask = ((1u << 2) - 1u) << (threadIdx.x % 32 / 2 * 2);
  const int64_t weft_first = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 2;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x / 2;
  for (int64_t weft_p = weft_first; weft_p < 2 * 4 * 128 * 128; weft_p += weft_groups) {
    uint32_t weft_q = weft_p;
    const int64_t c3 = 0 + weft_q % 128u;
    weft_q /= 128u;
    const int64_t c2 = 0 + weft_q % 128u;
    weft_q /= 128u;
    const int64_t c1 = 0 + weft_q % 4u;
    weft_q /= 4u;
    const int64_t c0 = 0 + weft_q;
    // a group of 2 threads per point
    float weft_r0[8];  // b0[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + c4], by weft_k
    {  // load b0[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + c4] by quads
      const int64_t c4 = 0 + weft_lane * 4;
      if (weft_aligned16(&b0[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + c4])) {
        #pragma unroll
        for (int weft_k = 0; weft_k < 8; weft_k += 4) {
          const int64_t c4 = 0 + weft_k * 2 + weft_lane * 4;
          const float4 weft_y = weft_load4(&b0[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + c4]); weft_r0[weft_k] = weft_y.x; weft_r0[weft_k + 1] = weft_y.y; weft_r0[weft_k + 2] = weft_y.z; weft_r0[weft_k + 3] = weft_y.w;
        }
      } else {
        #pragma unroll
        for (int weft_k = 0; weft_k < 8; ++weft_k) {
          const int64_t c4 = 0 + weft_k / 4 * 8 + weft_lane * 4 + weft_k % 4;
          weft_r0[weft_k] = b0[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + c4];
        }
      }
    }
    {  // the group's lanes accumulate their registers; shuffles combine them
      float acc = 0.0f;
      #pragma unroll
      for (int weft_k = 0; weft_k < 8; ++weft_k) {
        const int64_t c4 = 0 + weft_k / 4 * 8 + weft_lane * 4 + weft_k % 4;
        {  // multiply_add
          const float t0 = weft_r0[weft_k];
          const float t1 = b1[c0 * 4 * 16 * 128 + c1 * 16 * 128 + c4 * 128 + c3];
          const float t2 = (t0 * t1);
          acc = acc + t2;
        }
      }
      acc = weft_group_reduce<2>(acc, weft_op_add{}, weft_mask);
      if (weft_lane == 0) { b2[(65536 * c0 + 16384 * c1 + 128 * c2 + c3)] = b2[(65536 * c0 + 16384 * c1 + 128 * c2 + c3)] + acc; }
    }
    __syncwarp(weft_mask);
  }
}

// kernel k10_Softmax: 1 part(s)
// launch weft_k10_Softmax_p0 block=256 grid=device
// b0 b1, b1 t2, b2 t3, b3 b0_1, b4 b1_1
extern "C" __global__ void __launch_bounds__(256) weft_k10_Softmax_p0(float* b0, float* b1, float* b2, const float* __restrict__ b3, const float* __restrict__ b4) {
  const int64_t weft_lane = threadIdx.x % 8;
  const unsigned int weft_mask = ((1u << 8) - 1u) << (threadIdx.x % 32 / 8 * 8);
  const int64_t weft_first = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 8;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x / 8;
  for (int64_t weft_p = weft_first; weft_p < 2 * 4 * 128; weft_p += weft_groups) {
    uint32_t weft_q = weft_p;
    const int64_t c2 = 0 + weft_q % 128u;
    weft_q /= 128u;
    const int64_t c1 = 0 + weft_q % 4u;
    weft_q /= 4u;
    const int64_t c0 = 0 + weft_q;
    // a group of 8 threads per point
    float weft_r0[16];  // b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3], by weft_k
    float weft_r3[16];  // b3[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3], by weft_k
    {  // load b3[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3] by quads
      const int64_t c3 = 0 + weft_lane * 4;
      if (weft_aligned16(&b3[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3])) {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; weft_k += 4) {
          const int64_t c3 = 0 + weft_k * 8 + weft_lane * 4;
          const float4 weft_y = weft_load4(&b3[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3]); weft_r3[weft_k] = weft_y.x; weft_r3[weft_k + 1] = weft_y.y; weft_r3[weft_k + 2] = weft_y.z; weft_r3[weft_k + 3] = weft_y.w;
        }
      } else {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; ++weft_k) {
          const int64_t c3 = 0 + weft_k / 4 * 32 + weft_lane * 4 + weft_k % 4;
          weft_r3[weft_k] = b3[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3];
        }
      }
    }
    if (weft_lane == 0) {
      {  // init
        const float t0 = static_cast<float>(-INFINITY);
        b1[(512 * c0 + 128 * c1 + c2)] = t0;
      }
    }
    __syncwarp(weft_mask);
    {  // the group's lanes accumulate their registers; shuffles combine them
      float acc = static_cast<float>(-INFINITY);
      #pragma unroll
      for (int weft_k = 0; weft_k < 16; ++weft_k) {
        const int64_t c3 = 0 + weft_k / 4 * 32 + weft_lane * 4 + weft_k % 4;
        {  // update
          const float t0 = weft_r3[weft_k];
          const float t1 = b4[0];
          const float t2 = (t0 * t1);
          acc = weft_shift_max(acc, t2);
        }
      }
      acc = weft_group_reduce<8>(acc, weft_op_max{}, weft_mask);
      if (weft_lane == 0) { b1[(512 * c0 + 128 * c1 + c2)] = weft_max(b1[(512 * c0 + 128 * c1 + c2)], acc); }
    }
    __syncwarp(weft_mask);
    if (weft_lane == 0) {
      {  // init_sum
        const float t0 = 0.0f;
        b2[(512 * c0 + 128 * c1 + c2)] = t0;
      }
    }
    __syncwarp(weft_mask);
    #pragma unroll
    for (int weft_k = 0; weft_k < 16; ++weft_k) {
      const int64_t c3 = 0 + weft_k / 4 * 32 + weft_lane * 4 + weft_k % 4;
      {  // exp
        const float t0 = weft_r3[weft_k];
        const float t1 = b4[0];
        const float t2 = (t0 * t1);
        const float t3 = b1[(512 * c0 + 128 * c1 + c2)];
        const float t4 = (t2 - t3);
        const float t5 = weft_shifted_exp(t4);
        weft_r0[weft_k] = t5;
      }
    }
    __syncwarp(weft_mask);
    {  // the group's lanes accumulate their registers; shuffles combine them
      float acc = 0.0f;
      #pragma unroll
      for (int weft_k = 0; weft_k < 16; ++weft_k) {
        const int64_t c3 = 0 + weft_k / 4 * 32 + weft_lane * 4 + weft_k % 4;
        {  // sum_exp
          const float t0 = weft_r0[weft_k];
          acc = acc + t0;
        }
      }
      acc = weft_group_reduce<8>(acc, weft_op_add{}, weft_mask);
      if (weft_lane == 0) { b2[(512 * c0 + 128 * c1 + c2)] = b2[(512 * c0 + 128 * c1 + c2)] + acc; }
    }
    __syncwarp(weft_mask);
    if (weft_lane == 0) {
      {  // reciprocal
        const float t0 = 1.0f;
        const float t1 = b2[(512 * c0 + 128 * c1 + c2)];
        const float t2 = (t0 / t1);
        b2[(512 * c0 + 128 * c1 + c2)] = t2;
      }
    }
    __syncwarp(weft_mask);
    #pragma unroll
    for (int weft_k = 0; weft_k < 16; ++weft_k) {
      const int64_t c3 = 0 + weft_k / 4 * 32 + weft_lane * 4 + weft_k % 4;
      {  // normalize
        const float t0 = weft_r0[weft_k];
        const float t1 = b2[(512 * c0 + 128 * c1 + c2)];
        const float t2 = (t0 * t1);
        weft_r0[weft_k] = t2;
      }
    }
    __syncwarp(weft_mask);
    {  // store b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3] by quads
      const int64_t c3 = 0 + weft_lane * 4;
      if (weft_aligned16(&b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3])) {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; weft_k += 4) {
          const int64_t c3 = 0 + weft_k * 8 + weft_lane * 4;
          weft_store4(&b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3], weft_r0[weft_k], weft_r0[weft_k + 1], weft_r0[weft_k + 2], weft_r0[weft_k + 3]);
        }
      } else {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; ++weft_k) {
          const int64_t c3 = 0 + weft_k / 4 * 32 + weft_lane * 4 + weft_k % 4;
          b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3] = weft_r0[weft_k];
        }
      }
    }
  }
}

// kernel k11_MatMul: 2 part(s)
// launch weft_k11_MatMul_p0 block=256 grid=device
// b0 b0, b1 b1, b2 b3
extern "C" __global__ void __launch_bounds__(256) weft_k11_MatMul_p0(const float* __restrict__ b0, const float* __restrict__ b1, float* __restrict__ b2) {
  const int64_t weft_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x;
  for (int64_t weft_p = weft_first; weft_p < 16384; weft_p += weft_groups) {
    const int64_t c0 = 0 + weft_p;
    {  // init
      const float t0 = 0.0f;
      b2[weft_p] = t0;
    }
  }
}
// launch weft_k11_MatMul_p1 block=256 grid=device
// b0 b0, b1 b1, b2 b3
extern "C" __global__ void __launch_bounds__(256) weft_k11_MatMul_p1(const float* __restrict__ b0, const float* __restrict__ b1, float* b2) {
  const int64_t weft_lane = threadIdx.x % 8;
  const unsigned int weft_mask = ((1u << 8) - 1u) << (threadIdx.x % 32 / 8 * 8);
  const int64_t weft_first = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 8;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x / 8;
  for (int64_t weft_p = weft_first; weft_p < 2 * 4 * 128 * 16; weft_p += weft_groups) {
    uint32_t weft_q = weft_p;
    const int64_t c3 = 0 + weft_q % 16u;
    weft_q /= 16u;
    const int64_t c2 = 0 + weft_q % 128u;
    weft_q /= 128u;
    const int64_t c1 = 0 + weft_q % 4u;
    weft_q /= 4u;
    const int64_t c0 = 0 + weft_q;
    // a group of 8 threads per point
    float weft_r0[16];  // b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c4], by weft_k
    {  // load b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c4] by quads
      const int64_t c4 = 0 + weft_lane * 4;
      if (weft_aligned16(&b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c4])) {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; weft_k += 4) {
          const int64_t c4 = 0 + weft_k * 8 + weft_lane * 4;
          const float4 weft_y = weft_load4(&b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c4]); weft_r0[weft_k] = weft_y.x; weft_r0[weft_k + 1] = weft_y.y; weft_r0[weft_k + 2] = weft_y.z; weft_r0[weft_k + 3] = weft_y.w;
        }
      } else {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; ++weft_k) {
          const int64_t c4 = 0 + weft_k / 4 * 32 + weft_lane * 4 + weft_k % 4;
          weft_r0[weft_k] = b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c4];
        }
      }
    }
    {  // the group's lanes accumulate their registers; shuffles combine them
      float acc = 0.0f;
      #pragma unroll
      for (int weft_k = 0; weft_k < 16; ++weft_k) {
        const int64_t c4 = 0 + weft_k / 4 * 32 + weft_lane * 4 + weft_k % 4;
        {  // multiply_add
          const float t0 = weft_r0[weft_k];
          const float t1 = b1[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c4 * 16 + c3];
          const float t2 = (t0 * t1);
          acc = acc + t2;
        }
      }
      acc = weft_group_reduce<8>(acc, weft_op_add{}, weft_mask);
      if (weft_lane == 0) { b2[(8192 * c0 + 2048 * c1 + 16 * c2 + c3)] = b2[(8192 * c0 + 2048 * c1 + 16 * c2 + c3)] + acc; }
    }
    __syncwarp(weft_mask);
  }
}

// kernel k12_Transpose: 3 part(s)
// launch weft_k12_Transpose_p0 block=256 grid=device
// b0 b0, b1 b1, b2 b1_1, b3 b2, b4 b3, b5 t4, b6 t5, b7 b0_1, b8 b1_1_1, b9 b0_2, b10 t1, b11 b2_1
extern "C" __global__ void __launch_bounds__(256) weft_k12_Transpose_p0(const float* __restrict__ b0, float* b1, const float* __restrict__ b2, const float* __restrict__ b3, float* b4, float* __restrict__ b5, float* __restrict__ b6, const float* b7, const float* __restrict__ b8, const float* b9, float* __restrict__ b10, float* __restrict__ b11) {
  const int64_t weft_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x;
  for (int64_t weft_p = weft_first; weft_p < 2 * 128 * 4 * 16; weft_p += weft_groups) {
    uint32_t weft_q = weft_p;
    const int64_t c3 = 0 + weft_q % 16u;
    weft_q /= 16u;
    const int64_t c2 = 0 + weft_q % 4u;
    weft_q /= 4u;
    const int64_t c1 = 0 + weft_q % 128u;
    weft_q /= 128u;
    const int64_t c0 = 0 + weft_q;
    {  // transpose
      const float t0 = b0[c0 * 4 * 128 * 16 + c2 * 128 * 16 + c1 * 16 + c3];
      b1[weft_p] = t0;
    }
  }
}
// launch weft_k12_Transpose_p1 block=256 grid=device
// b0 b0, b1 b1, b2 b1_1, b3 b2, b4 b3, b5 t4, b6 t5, b7 b0_1, b8 b1_1_1, b9 b0_2, b10 t1, b11 b2_1
extern "C" __global__ void __launch_bounds__(256) weft_k12_Transpose_p1(const float* __restrict__ b0, float* b1, const float* __restrict__ b2, const float* __restrict__ b3, float* b4, float* b5, float* b6, const float* b7, const float* __restrict__ b8, const float* b9, float* __restrict__ b10, float* __restrict__ b11) {
  const int64_t weft_lane = threadIdx.x % 4;
  const unsigned int weft_mask = ((1u << 4) - 1u) << (threadIdx.x % 32 / 4 * 4);
  const int64_t weft_first = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 4;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x / 4;
  for (int64_t weft_p = weft_first; weft_p < 256; weft_p += weft_groups) {
    const int64_t c0 = 0 + weft_p;
    // a group of 4 threads per point
    float b5[1];  // t4: the point's, in a register of each lane
    float b6[1];  // t5: the point's, in a register of each lane
    float weft_r2[16];  // b2[c1], by weft_k
    float weft_r8[16];  // b8[c0 * 64 + c1], by weft_k
    {  // load b2[c1] by quads
      const int64_t c1 = 0 + weft_lane * 4;
      if (weft_aligned16(&b2[c1])) {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; weft_k += 4) {
          const int64_t c1 = 0 + weft_k * 4 + weft_lane * 4;
          const float4 weft_y = weft_load4(&b2[c1]); weft_r2[weft_k] = weft_y.x; weft_r2[weft_k + 1] = weft_y.y; weft_r2[weft_k + 2] = weft_y.z; weft_r2[weft_k + 3] = weft_y.w;
        }
      } else {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; ++weft_k) {
          const int64_t c1 = 0 + weft_k / 4 * 16 + weft_lane * 4 + weft_k % 4;
          weft_r2[weft_k] = b2[c1];
        }
      }
    }
    {  // load b8[c0 * 64 + c1] by quads
      const int64_t c1 = 0 + weft_lane * 4;
      if (weft_aligned16(&b8[c0 * 64 + c1])) {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; weft_k += 4) {
          const int64_t c1 = 0 + weft_k * 4 + weft_lane * 4;
          const float4 weft_y = weft_load4(&b8[c0 * 64 + c1]); weft_r8[weft_k] = weft_y.x; weft_r8[weft_k + 1] = weft_y.y; weft_r8[weft_k + 2] = weft_y.z; weft_r8[weft_k + 3] = weft_y.w;
        }
      } else {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; ++weft_k) {
          const int64_t c1 = 0 + weft_k / 4 * 16 + weft_lane * 4 + weft_k % 4;
          weft_r8[weft_k] = b8[c0 * 64 + c1];
        }
      }
    }
    {  // init
      const float t0 = 0.0f;
      b5[0] = t0;
    }
    {  // the group's lanes accumulate their registers; shuffles combine them
      float acc = 0.0f;
      #pragma unroll
      for (int weft_k = 0; weft_k < 16; ++weft_k) {
        const int64_t c1 = 0 + weft_k / 4 * 16 + weft_lane * 4 + weft_k % 4;
        {  // update
          const float t0 = b7[c0 * 64 + c1];
          const float t1 = weft_r8[weft_k];
          const float t2 = (t0 + t1);
          acc = acc + t2;
        }
      }
      acc = weft_group_reduce<4>(acc, weft_op_add{}, weft_mask);
      b5[0] = b5[0] + acc;
    }
    {  // mean
      const float t0 = b5[0];
      const float t1 = 64.0f;
      const float t2 = (t0 / t1);
      b5[0] = t2;
    }
    {  // init_var
      const float t0 = 0.0f;
      b6[0] = t0;
    }
    {  // the group's lanes accumulate their registers; shuffles combine them
      float acc = 0.0f;
      #pragma unroll
      for (int weft_k = 0; weft_k < 16; ++weft_k) {
        const int64_t c1 = 0 + weft_k / 4 * 16 + weft_lane * 4 + weft_k % 4;
        {  // sum_squares
          const float t0 = b7[c0 * 64 + c1];
          const float t1 = weft_r8[weft_k];
          const float t2 = (t0 + t1);
          const float t3 = b5[0];
          const float t4 = (t2 - t3);
          const float t5 = (t4 * t4);
          acc = acc + t5;
        }
      }
      acc = weft_group_reduce<4>(acc, weft_op_add{}, weft_mask);
      b6[0] = b6[0] + acc;
    }
    {  // inv_std
      const float t0 = b6[0];
      const float t1 = 64.0f;
      const float t2 = (t0 / t1);
      const float t3 = 1e-05f;
      const float t4 = (t2 + t3);
      const float t5 = (1 / sqrt(t4));
      b6[0] = t5;
    }
    float weft_q3[4];  // b3[c1], a quad at a time
    #pragma unroll
    for (int weft_k = 0; weft_k < 16; ++weft_k) {
      const int64_t c1 = 0 + weft_k / 4 * 16 + weft_lane * 4 + weft_k % 4;
      if (weft_k % 4 == 0) {  // b3[c1]'s quad
        if (weft_aligned16(&b3[c1])) {
          const float4 weft_y = weft_load4(&b3[c1]); weft_q3[0] = weft_y.x; weft_q3[1] = weft_y.y; weft_q3[2] = weft_y.z; weft_q3[3] = weft_y.w;
        } else {
          #pragma unroll
          for (int weft_j = 0; weft_j < 4; ++weft_j) weft_q3[weft_j] = b3[c1 + weft_j];
        }
      }
      {  // normalize
        const float t0 = b7[c0 * 64 + c1];
        const float t1 = weft_r8[weft_k];
        const float t2 = (t0 + t1);
        const float t3 = b5[0];
        const float t4 = (t2 - t3);
        const float t5 = b6[0];
        const float t6 = (t4 * t5);
        const float t7 = weft_r2[weft_k];
        const float t8 = (t6 * t7);
        const float t9 = weft_q3[weft_k % 4];
        const float t10 = (t8 + t9);
        b4[c0 * 64 + c1] = t10;
      }
    }
    __syncwarp(weft_mask);
  }
}
// launch weft_k12_Transpose_p2 block=256 grid=device
// b0 b0, b1 b1, b2 b1_1, b3 b2, b4 b3, b5 t4, b6 t5, b7 b0_1, b8 b1_1_1, b9 b0_2, b10 t1, b11 b2_1
extern "C" __global__ void __launch_bounds__(256) weft_k12_Transpose_p2(const float* __restrict__ b0, float* b1, const float* __restrict__ b2, const float* __restrict__ b3, float* b4, float* __restrict__ b5, float* __restrict__ b6, const float* b7, const float* __restrict__ b8, const float* b9, float* b10, float* __restrict__ b11) {
  const int64_t weft_lane = threadIdx.x % 8;
  const unsigned int weft_mask = ((1u << 8) - 1u) << (threadIdx.x % 32 / 8 * 8);
  const int64_t weft_first = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 8;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x / 8;
  for (int64_t weft_p = weft_first; weft_p < 2 * 128; weft_p += weft_groups) {
    uint32_t weft_q = weft_p;
    const int64_t c1 = 0 + weft_q % 128u;
    weft_q /= 128u;
    const int64_t c0 = 0 + weft_q;
    // a group of 8 threads per point
    if (weft_lane == 0) {
      {  // init
        const float t0 = 0.0f;
        b10[(128 * c0 + c1)] = t0;
      }
    }
    __syncwarp(weft_mask);
    {  // the group's lanes accumulate; shuffles combine them
      float acc = 0.0f;
      {  // 4 accumulators a thread, float4 loads where aligned
        float weft_a[4];
        #pragma unroll
        for (int weft_j = 0; weft_j < 4; ++weft_j) weft_a[weft_j] = 0.0f;
        int64_t weft_b = 0;  // where the scalar loop starts
        if (weft_aligned16(&b9[c0 * 128 * 64 + c1 * 64 + (0)])) {
          const int64_t weft_quads = (64 - weft_b) / 4;
          for (int64_t weft_w = weft_lane; weft_w < weft_quads; weft_w += 8) {
            const int64_t weft_v = weft_b + 4 * weft_w;
            const float4 weft_y0 = weft_load4(&b9[c0 * 128 * 64 + c1 * 64 + weft_v]);
            const float weft_x0[4] = {weft_y0.x, weft_y0.y, weft_y0.z, weft_y0.w};
            #pragma unroll
            for (int weft_j = 0; weft_j < 4; ++weft_j) {
              const int64_t c2 = weft_v + weft_j;
              {  // update
                const float t0 = weft_x0[weft_j];
                weft_a[weft_j] = weft_a[weft_j] + t0;
              }
            }
          }
          weft_b += 4 * weft_quads;
        }
        for (int64_t c2 = weft_b + weft_lane; c2 < 64; c2 += 8) {
          {  // update
            const float t0 = b9[c0 * 128 * 64 + c1 * 64 + c2];
            weft_a[0] = weft_a[0] + t0;
          }
        }
        #pragma unroll
        for (int weft_j = 0; weft_j < 4; ++weft_j) acc = acc + weft_a[weft_j];
      }
      acc = weft_group_reduce<8>(acc, weft_op_add{}, weft_mask);
      if (weft_lane == 0) { b10[(128 * c0 + c1)] = b10[(128 * c0 + c1)] + acc; }
    }
    __syncwarp(weft_mask);
    if (weft_lane == 0) {
      {  // finish
        const float t0 = b10[(128 * c0 + c1)];
        b11[c0 * 128 + c1] = t0;
      }
    }
    __syncwarp(weft_mask);
  }
}
