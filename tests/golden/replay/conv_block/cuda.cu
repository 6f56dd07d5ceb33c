
// kernel k0_Conv: 1 part(s)
// launch weft_k0_Conv_p0 block=256 grid=device
// b0 b0, b1 b1, b2 b2, b3 b3
extern "C" __global__ void __launch_bounds__(256) weft_k0_Conv_p0(const float* __restrict__ b0, const float* __restrict__ b1, const float* __restrict__ b2, float* b3) {
  const int64_t weft_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x;
  for (int64_t weft_p = weft_first; weft_p < 16 * 16 * 16; weft_p += weft_groups) {
    uint32_t weft_q = weft_p;
    const int64_t c4 = 0 + weft_q % 16u;
    weft_q /= 16u;
    const int64_t c3 = 0 + weft_q % 16u;
    weft_q /= 16u;
    const int64_t c2 = 0 + weft_q;
    {  // init
      const float t0 = b2[(16 * 0 + c2)];
      b3[0 * 16 * 16 * 16 + (16 * 0 + c2) * 16 * 16 + c3 * 16 + c4] = t0;
    }
    for (int64_t c5 = 0; (c5 <= 7); c5 += 1) {  // reduction
      for (int64_t c6 = weft_imax(0, ((-c3) + 1)); (c6 <= weft_imin(2, ((-c3) + 16))); c6 += 1) {  // reduction
        {  // accumulate in a register
          float acc = b3[0 * 16 * 16 * 16 + (16 * 0 + c2) * 16 * 16 + c3 * 16 + c4];
          for (int64_t c7 = weft_imax(0, ((-c4) + 1)); (c7 <= weft_imin(2, ((-c4) + 16))); c7 += 1) {  // reduction
            {  // multiply_add
              const float t0 = b0[0 * 8 * 16 * 16 + (8 * 0 + c5) * 16 * 16 + (c3 + c6 + -1) * 16 + (c4 + c7 + -1)];
              const float t1 = b1[(16 * 0 + c2) * 8 * 3 * 3 + c5 * 3 * 3 + c6 * 3 + c7];
              const float t2 = (t0 * t1);
              acc = acc + t2;
            }
          }
          b3[0 * 16 * 16 * 16 + (16 * 0 + c2) * 16 * 16 + c3 * 16 + c4] = acc;
        }
      }
    }
  }
}

// kernel k3_MaxPool: 1 part(s)
// launch weft_k3_MaxPool_p0 block=256 grid=device
// b0 b1, b1 b0_1, b2 b4, b3 b3, b4 b1_1, b5 b2
extern "C" __global__ void __launch_bounds__(256) weft_k3_MaxPool_p0(float* b0, const float* __restrict__ b1, const float* __restrict__ b2, const float* __restrict__ b3, const float* __restrict__ b4, const float* __restrict__ b5) {
  const int64_t weft_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x;
  for (int64_t weft_p = weft_first; weft_p < 16 * 8 * 8; weft_p += weft_groups) {
    uint32_t weft_q = weft_p;
    const int64_t c3 = 0 + weft_q % 8u;
    weft_q /= 8u;
    const int64_t c2 = 0 + weft_q % 8u;
    weft_q /= 8u;
    const int64_t c1 = 0 + weft_q;
    {  // init
      const float t0 = static_cast<float>(-INFINITY);
      b0[0 * 16 * 8 * 8 + weft_p] = t0;
    }
    for (int64_t c4 = 0; (c4 <= 1); c4 += 1) {  // reduction
      {  // accumulate in a register
        float acc = b0[0 * 16 * 8 * 8 + weft_p];
        for (int64_t c5 = 0; (c5 <= 1); c5 += 1) {  // reduction
          {  // accumulate
            const float t0 = b1[0 * 16 * 16 * 16 + c1 * 16 * 16 + (2 * c2 + c4) * 16 + (2 * c3 + c5)];
            const float t1 = b2[c1];
            const float t2 = 1e-05f;
            const float t3 = (t1 + t2);
            const float t4 = (1 / sqrt(t3));
            const float t5 = b3[c1];
            const float t6 = (t0 - t5);
            const float t7 = b4[c1];
            const float t8 = (t4 * t7);
            const float t9 = (t6 * t8);
            const float t10 = b5[c1];
            const float t11 = (t9 + t10);
            const float t12 = 0.0f;
            const float t13 = (t12 >= t11 ? t12 : t11);
            acc = weft_max(acc, t13);
          }
        }
        b0[0 * 16 * 8 * 8 + weft_p] = acc;
      }
    }
  }
}

// kernel k4_GlobalAveragePool: 1 part(s)
// launch weft_k4_GlobalAveragePool_p0 block=256 grid=device
// b0 b0, b1 t1, b2 b2
extern "C" __global__ void __launch_bounds__(256) weft_k4_GlobalAveragePool_p0(const float* __restrict__ b0, float* b1, float* __restrict__ b2) {
  const int64_t weft_lane = threadIdx.x % 4;
  const unsigned int weft_mask = ((1u << 4) - 1u) << (threadIdx.x % 32 / 4 * 4);
  const int64_t weft_first = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 4;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x / 4;
  for (int64_t weft_p = weft_first; weft_p < 16; weft_p += weft_groups) {
    const int64_t c1 = 0 + weft_p;
    // a group of 4 threads per point
    float b1[1];  // t1: the point's, in a register of each lane
    float weft_r0[16];  // b0[0 * 16 * 64 + c1 * 64 + c2], by weft_k
    {  // load b0[0 * 16 * 64 + c1 * 64 + c2] by quads
      const int64_t c2 = 0 + weft_lane * 4;
      if (weft_aligned16(&b0[0 * 16 * 64 + c1 * 64 + c2])) {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; weft_k += 4) {
          const int64_t c2 = 0 + weft_k * 4 + weft_lane * 4;
          const float4 weft_y = weft_load4(&b0[0 * 16 * 64 + c1 * 64 + c2]); weft_r0[weft_k] = weft_y.x; weft_r0[weft_k + 1] = weft_y.y; weft_r0[weft_k + 2] = weft_y.z; weft_r0[weft_k + 3] = weft_y.w;
        }
      } else {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; ++weft_k) {
          const int64_t c2 = 0 + weft_k / 4 * 16 + weft_lane * 4 + weft_k % 4;
          weft_r0[weft_k] = b0[0 * 16 * 64 + c1 * 64 + c2];
        }
      }
    }
    {  // init
      const float t0 = 0.0f;
      b1[0] = t0;
    }
    {  // the group's lanes accumulate their registers; shuffles combine them
      float acc = 0.0f;
      #pragma unroll
      for (int weft_k = 0; weft_k < 16; ++weft_k) {
        const int64_t c2 = 0 + weft_k / 4 * 16 + weft_lane * 4 + weft_k % 4;
        {  // update
          const float t0 = weft_r0[weft_k];
          acc = acc + t0;
        }
      }
      acc = weft_group_reduce<4>(acc, weft_op_add{}, weft_mask);
      b1[0] = b1[0] + acc;
    }
    if (weft_lane == 0) {
      {  // finish
        const float t0 = b1[0];
        const float t1 = 64.0f;
        const float t2 = (t0 / t1);
        b2[0 * 16 + c1] = t2;
      }
    }
    __syncwarp(weft_mask);
  }
}
