
// kernel k1_Softmax: 1 part(s)
// launch weft_k1_Softmax_p0 block=256 grid=device
// b0 b1, b1 t2, b2 t3, b3 b0_1, b4 b1_1, b5 b1_2, b6 b2, b7 b3, b8 t4, b9 t5
extern "C" __global__ void __launch_bounds__(256) weft_k1_Softmax_p0(float* b0, float* b1, float* b2, const float* __restrict__ b3, const float* __restrict__ b4, const float* __restrict__ b5, const float* __restrict__ b6, float* __restrict__ b7, float* b8, float* b9) {
  const int64_t weft_lane = threadIdx.x % 16;
  const unsigned int weft_mask = ((1u << 16) - 1u) << (threadIdx.x % 32 / 16 * 16);
  const int64_t weft_first = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 16;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x / 16;
  for (int64_t weft_p = weft_first; weft_p < 64; weft_p += weft_groups) {
    const int64_t c0 = 0 + weft_p;
    // a group of 16 threads per point
    float b1[1];  // t2: the point's, in a register of each lane
    float b2[1];  // t3: the point's, in a register of each lane
    float b8[1];  // t4: the point's, in a register of each lane
    float b9[1];  // t5: the point's, in a register of each lane
    float weft_r0[16];  // b0[c0 * 256 + c1], by weft_k
    float weft_r3[16];  // b3[c0 * 256 + c1], by weft_k
    {  // load b3[c0 * 256 + c1] by quads
      const int64_t c1 = 0 + weft_lane * 4;
      if (weft_aligned16(&b3[c0 * 256 + c1])) {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; weft_k += 4) {
          const int64_t c1 = 0 + weft_k * 16 + weft_lane * 4;
          const float4 weft_y = weft_load4(&b3[c0 * 256 + c1]); weft_r3[weft_k] = weft_y.x; weft_r3[weft_k + 1] = weft_y.y; weft_r3[weft_k + 2] = weft_y.z; weft_r3[weft_k + 3] = weft_y.w;
        }
      } else {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; ++weft_k) {
          const int64_t c1 = 0 + weft_k / 4 * 64 + weft_lane * 4 + weft_k % 4;
          weft_r3[weft_k] = b3[c0 * 256 + c1];
        }
      }
    }
    {  // init
      const float t0 = static_cast<float>(-INFINITY);
      b1[0] = t0;
    }
    {  // the group's lanes accumulate their registers; shuffles combine them
      float acc = static_cast<float>(-INFINITY);
      #pragma unroll
      for (int weft_k = 0; weft_k < 16; ++weft_k) {
        const int64_t c1 = 0 + weft_k / 4 * 64 + weft_lane * 4 + weft_k % 4;
        {  // update
          const float t0 = weft_r3[weft_k];
          const float t1 = b4[0];
          const float t2 = (t0 * t1);
          acc = weft_shift_max(acc, t2);
        }
      }
      acc = weft_group_reduce<16>(acc, weft_op_max{}, weft_mask);
      b1[0] = weft_max(b1[0], acc);
    }
    {  // init_sum
      const float t0 = 0.0f;
      b2[0] = t0;
    }
    #pragma unroll
    for (int weft_k = 0; weft_k < 16; ++weft_k) {
      const int64_t c1 = 0 + weft_k / 4 * 64 + weft_lane * 4 + weft_k % 4;
      {  // exp
        const float t0 = weft_r3[weft_k];
        const float t1 = b4[0];
        const float t2 = (t0 * t1);
        const float t3 = b1[0];
        const float t4 = (t2 - t3);
        const float t5 = weft_shifted_exp(t4);
        weft_r0[weft_k] = t5;
      }
    }
    {  // the group's lanes accumulate their registers; shuffles combine them
      float acc = 0.0f;
      #pragma unroll
      for (int weft_k = 0; weft_k < 16; ++weft_k) {
        const int64_t c1 = 0 + weft_k / 4 * 64 + weft_lane * 4 + weft_k % 4;
        {  // sum_exp
          const float t0 = weft_r0[weft_k];
          acc = acc + t0;
        }
      }
      acc = weft_group_reduce<16>(acc, weft_op_add{}, weft_mask);
      b2[0] = b2[0] + acc;
    }
    {  // reciprocal
      const float t0 = 1.0f;
      const float t1 = b2[0];
      const float t2 = (t0 / t1);
      b2[0] = t2;
    }
    #pragma unroll
    for (int weft_k = 0; weft_k < 16; ++weft_k) {
      const int64_t c1 = 0 + weft_k / 4 * 64 + weft_lane * 4 + weft_k % 4;
      {  // normalize
        const float t0 = weft_r0[weft_k];
        const float t1 = b2[0];
        const float t2 = (t0 * t1);
        weft_r0[weft_k] = t2;
      }
    }
    {  // init
      const float t0 = 0.0f;
      b8[0] = t0;
    }
    {  // the group's lanes accumulate their registers; shuffles combine them
      float acc = 0.0f;
      #pragma unroll
      for (int weft_k = 0; weft_k < 16; ++weft_k) {
        const int64_t c1 = 0 + weft_k / 4 * 64 + weft_lane * 4 + weft_k % 4;
        {  // update
          const float t0 = weft_r0[weft_k];
          acc = acc + t0;
        }
      }
      acc = weft_group_reduce<16>(acc, weft_op_add{}, weft_mask);
      b8[0] = b8[0] + acc;
    }
    {  // mean
      const float t0 = b8[0];
      const float t1 = 256.0f;
      const float t2 = (t0 / t1);
      b8[0] = t2;
    }
    {  // init_var
      const float t0 = 0.0f;
      b9[0] = t0;
    }
    {  // the group's lanes accumulate their registers; shuffles combine them
      float acc = 0.0f;
      #pragma unroll
      for (int weft_k = 0; weft_k < 16; ++weft_k) {
        const int64_t c1 = 0 + weft_k / 4 * 64 + weft_lane * 4 + weft_k % 4;
        {  // sum_squares
          const float t0 = weft_r0[weft_k];
          const float t1 = b8[0];
          const float t2 = (t0 - t1);
          const float t3 = (t2 * t2);
          acc = acc + t3;
        }
      }
      acc = weft_group_reduce<16>(acc, weft_op_add{}, weft_mask);
      b9[0] = b9[0] + acc;
    }
    {  // inv_std
      const float t0 = b9[0];
      const float t1 = 256.0f;
      const float t2 = (t0 / t1);
      const float t3 = 1e-05f;
      const float t4 = (t2 + t3);
      const float t5 = (1 / sqrt(t4));
      b9[0] = t5;
    }
    float weft_q5[4];  // b5[c1], a quad at a time
    float weft_q6[4];  // b6[c1], a quad at a time
    #pragma unroll
    for (int weft_k = 0; weft_k < 16; ++weft_k) {
      const int64_t c1 = 0 + weft_k / 4 * 64 + weft_lane * 4 + weft_k % 4;
      if (weft_k % 4 == 0) {  // b5[c1]'s quad
        if (weft_aligned16(&b5[c1])) {
          const float4 weft_y = weft_load4(&b5[c1]); weft_q5[0] = weft_y.x; weft_q5[1] = weft_y.y; weft_q5[2] = weft_y.z; weft_q5[3] = weft_y.w;
        } else {
          #pragma unroll
          for (int weft_j = 0; weft_j < 4; ++weft_j) weft_q5[weft_j] = b5[c1 + weft_j];
        }
      }
      if (weft_k % 4 == 0) {  // b6[c1]'s quad
        if (weft_aligned16(&b6[c1])) {
          const float4 weft_y = weft_load4(&b6[c1]); weft_q6[0] = weft_y.x; weft_q6[1] = weft_y.y; weft_q6[2] = weft_y.z; weft_q6[3] = weft_y.w;
        } else {
          #pragma unroll
          for (int weft_j = 0; weft_j < 4; ++weft_j) weft_q6[weft_j] = b6[c1 + weft_j];
        }
      }
      {  // normalize
        const float t0 = weft_r0[weft_k];
        const float t1 = b8[0];
        const float t2 = (t0 - t1);
        const float t3 = b9[0];
        const float t4 = (t2 * t3);
        const float t5 = weft_q5[weft_k % 4];
        const float t6 = (t4 * t5);
        const float t7 = weft_q6[weft_k % 4];
        const float t8 = (t6 + t7);
        b7[c0 * 256 + c1] = t8;
      }
    }
    __syncwarp(weft_mask);
    {  // store b0[c0 * 256 + c1] by quads
      const int64_t c1 = 0 + weft_lane * 4;
      if (weft_aligned16(&b0[c0 * 256 + c1])) {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; weft_k += 4) {
          const int64_t c1 = 0 + weft_k * 16 + weft_lane * 4;
          weft_store4(&b0[c0 * 256 + c1], weft_r0[weft_k], weft_r0[weft_k + 1], weft_r0[weft_k + 2], weft_r0[weft_k + 3]);
        }
      } else {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; ++weft_k) {
          const int64_t c1 = 0 + weft_k / 4 * 64 + weft_lane * 4 + weft_k % 4;
          b0[c0 * 256 + c1] = weft_r0[weft_k];
        }
      }
    }
  }
}
