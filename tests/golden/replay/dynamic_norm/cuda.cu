
// kernel k0_LayerNormalization: 2 part(s)
// launch weft_k0_LayerNormalization_p0 block=256 grid=device
// b0 b0, b1 b1, b2 b2, b3 b3, b4 t4, b5 t5, b6 b0_1, b7 b2_1, s0 N, s1 N*T, s2 T
extern "C" __global__ void __launch_bounds__(256) weft_k0_LayerNormalization_p0(const float* __restrict__ b0, const float* __restrict__ b1, const float* __restrict__ b2, float* b3, float* b4, float* b5, const float* b6, float* __restrict__ b7, const int64_t s0, const int64_t s1, const int64_t s2) {
  const int64_t weft_lane = threadIdx.x % 4;
  const unsigned int weft_mask = ((1u << 4) - 1u) << (threadIdx.x % 32 / 4 * 4);
  const int64_t weft_first = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 4;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x / 4;
  const int64_t weft_e0 = weft_imax(s1 - 0, 0);
  for (int64_t weft_p = weft_first; weft_p < weft_e0; weft_p += weft_groups) {
    const int64_t c0 = 0 + weft_p;
    // a group of 4 threads per point
    float b4[1];  // t4: the point's, in a register of each lane
    float b5[1];  // t5: the point's, in a register of each lane
    float weft_r0[16];  // b0[c0 * 64 + c1], by weft_k
    float weft_r1[16];  // b1[c1], by weft_k
    {  // load b0[c0 * 64 + c1] by quads
      const int64_t c1 = 0 + weft_lane * 4;
      if (weft_aligned16(&b0[c0 * 64 + c1])) {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; weft_k += 4) {
          const int64_t c1 = 0 + weft_k * 4 + weft_lane * 4;
          const float4 weft_y = weft_load4(&b0[c0 * 64 + c1]); weft_r0[weft_k] = weft_y.x; weft_r0[weft_k + 1] = weft_y.y; weft_r0[weft_k + 2] = weft_y.z; weft_r0[weft_k + 3] = weft_y.w;
        }
      } else {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; ++weft_k) {
          const int64_t c1 = 0 + weft_k / 4 * 16 + weft_lane * 4 + weft_k % 4;
          weft_r0[weft_k] = b0[c0 * 64 + c1];
        }
      }
    }
    {  // load b1[c1] by quads
      const int64_t c1 = 0 + weft_lane * 4;
      if (weft_aligned16(&b1[c1])) {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; weft_k += 4) {
          const int64_t c1 = 0 + weft_k * 4 + weft_lane * 4;
          const float4 weft_y = weft_load4(&b1[c1]); weft_r1[weft_k] = weft_y.x; weft_r1[weft_k + 1] = weft_y.y; weft_r1[weft_k + 2] = weft_y.z; weft_r1[weft_k + 3] = weft_y.w;
        }
      } else {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; ++weft_k) {
          const int64_t c1 = 0 + weft_k / 4 * 16 + weft_lane * 4 + weft_k % 4;
          weft_r1[weft_k] = b1[c1];
        }
      }
    }
    {  // init
      const float t0 = 0.0f;
      b4[0] = t0;
    }
    {  // the group's lanes accumulate their registers; shuffles combine them
      float acc = 0.0f;
      #pragma unroll
      for (int weft_k = 0; weft_k < 16; ++weft_k) {
        const int64_t c1 = 0 + weft_k / 4 * 16 + weft_lane * 4 + weft_k % 4;
        {  // update
          const float t0 = weft_r0[weft_k];
          acc = acc + t0;
        }
      }
      acc = weft_group_reduce<4>(acc, weft_op_add{}, weft_mask);
      b4[0] = b4[0] + acc;
    }
    {  // mean
      const float t0 = b4[0];
      const float t1 = 64.0f;
      const float t2 = (t0 / t1);
      b4[0] = t2;
    }
    {  // init_var
      const float t0 = 0.0f;
      b5[0] = t0;
    }
    {  // the group's lanes accumulate their registers; shuffles combine them
      float acc = 0.0f;
      #pragma unroll
      for (int weft_k = 0; weft_k < 16; ++weft_k) {
        const int64_t c1 = 0 + weft_k / 4 * 16 + weft_lane * 4 + weft_k % 4;
        {  // sum_squares
          const float t0 = weft_r0[weft_k];
          const float t1 = b4[0];
          const float t2 = (t0 - t1);
          const float t3 = (t2 * t2);
          acc = acc + t3;
        }
      }
      acc = weft_group_reduce<4>(acc, weft_op_add{}, weft_mask);
      b5[0] = b5[0] + acc;
    }
    {  // inv_std
      const float t0 = b5[0];
      const float t1 = 64.0f;
      const float t2 = (t0 / t1);
      const float t3 = 1e-05f;
      const float t4 = (t2 + t3);
      const float t5 = (1 / sqrt(t4));
      b5[0] = t5;
    }
    float weft_q2[4];  // b2[c1], a quad at a time
    #pragma unroll
    for (int weft_k = 0; weft_k < 16; ++weft_k) {
      const int64_t c1 = 0 + weft_k / 4 * 16 + weft_lane * 4 + weft_k % 4;
      if (weft_k % 4 == 0) {  // b2[c1]'s quad
        if (weft_aligned16(&b2[c1])) {
          const float4 weft_y = weft_load4(&b2[c1]); weft_q2[0] = weft_y.x; weft_q2[1] = weft_y.y; weft_q2[2] = weft_y.z; weft_q2[3] = weft_y.w;
        } else {
          #pragma unroll
          for (int weft_j = 0; weft_j < 4; ++weft_j) weft_q2[weft_j] = b2[c1 + weft_j];
        }
      }
      {  // normalize
        const float t0 = weft_r0[weft_k];
        const float t1 = b4[0];
        const float t2 = (t0 - t1);
        const float t3 = b5[0];
        const float t4 = (t2 * t3);
        const float t5 = weft_r1[weft_k];
        const float t6 = (t4 * t5);
        const float t7 = weft_q2[weft_k % 4];
        const float t8 = (t6 + t7);
        b3[c0 * 64 + c1] = t8;
      }
    }
    __syncwarp(weft_mask);
  }
}
// launch weft_k0_LayerNormalization_p1 block=64 grid=device
// b0 b0, b1 b1, b2 b2, b3 b3, b4 t4, b5 t5, b6 b0_1, b7 b2_1, s0 N, s1 N*T, s2 T
extern "C" __global__ void __launch_bounds__(64) weft_k0_LayerNormalization_p1(const float* __restrict__ b0, const float* __restrict__ b1, const float* __restrict__ b2, float* b3, float* __restrict__ b4, float* __restrict__ b5, const float* b6, float* b7, const int64_t s0, const int64_t s1, const int64_t s2) {
  const int64_t weft_lane = threadIdx.x;
  const unsigned int weft_mask = 0xffffffffu;
  const int64_t weft_first = blockIdx.x, weft_groups = gridDim.x;
  const int64_t weft_e0 = weft_imax(s0 - 0, 0);
  for (int64_t weft_p = weft_first; weft_p < weft_e0; weft_p += weft_groups) {
    const int64_t c0 = 0 + weft_p;
    // a group of 64 threads per point
    for (int64_t c1 = 0 + weft_lane * 1; (c1 <= 63); c1 += 64 * 1) {
      {  // init
        const float t0 = 0.0f;
        b7[c0 * 64 + c1] = t0;
      }
    }
    __syncthreads();
    for (int64_t c2 = 0 + weft_lane; c2 < 64; c2 += 64) {  // a lane per column
      float acc = b7[c0 * 64 + c2];
      for (int64_t c1 = 0 + 0 * 1; c1 < s2; c1 += 1 * 1) {
        {  // update
          const float t0 = b6[c0 * s2 * 64 + c1 * 64 + c2];
          acc = acc + t0;
        }
      }
      b7[c0 * 64 + c2] = acc;
    }
    __syncthreads();
  }
}
