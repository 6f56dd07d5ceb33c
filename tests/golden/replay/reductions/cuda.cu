
// kernel k0_ReduceSum: 5 part(s)
__device__ float weft_acc_weft_k0_ReduceSum_p1[2048];  // each column's total (zero bits)
__device__ unsigned int weft_count_weft_k0_ReduceSum_p1[64];  // each tile's blocks done
// launch weft_k0_ReduceSum_p1 block=256 grid=device
// b0 b0, b1 b1, b2 b0_1, b3 t1, b4 b2, b5 b0_2, b6 b0_3, b7 b1_1, b8 t2_2, b9 b0_4, b10 t1_1, b11 t2_3, b12 b3
extern "C" __global__ void __launch_bounds__(256) weft_k0_ReduceSum_p1(float* b0, const float* __restrict__ b1, const float* __restrict__ b2, float* __restrict__ b3, float* __restrict__ b4, float* __restrict__ b5, float* __restrict__ b6, const float* __restrict__ b7, float* __restrict__ b8, const float* __restrict__ b9, float* __restrict__ b10, float* __restrict__ b11, float* __restrict__ b12) {
  {  // COLUMN by quads: 32 columns a block, 4 a lane (float4 loads where whole and aligned), 32 row slices combined through a padded shared tile
    __shared__ float weft_tile[32][33];
    const int weft_q = threadIdx.x % 8, weft_ty = threadIdx.x / 8;
    const int64_t weft_k_lo = 0, weft_k_hi = 2048, weft_r_lo = 0, weft_r_hi = 128;
    const int64_t weft_tiles = (weft_k_hi - weft_k_lo + 31) / 32;
    // R is split across blocks when the column tiles leave some idle
    const int64_t weft_splits = weft_imax(1, weft_imin((int64_t)gridDim.x / weft_imax(weft_tiles, 1), (weft_r_hi - weft_r_lo) / 64));
    const int64_t weft_chunk = (weft_r_hi - weft_r_lo + weft_splits - 1) / weft_splits;
    for (int64_t weft_u = blockIdx.x; weft_u < weft_tiles * weft_splits; weft_u += gridDim.x) {
      const int64_t weft_from = weft_r_lo + weft_u / weft_tiles * weft_chunk;
      const int64_t weft_to = weft_imin(weft_r_hi, weft_from + weft_chunk);
      const int64_t weft_k0 = weft_k_lo + weft_u % weft_tiles * 32 + 4 * weft_q;
      float weft_a[4];
      #pragma unroll
      for (int weft_j = 0; weft_j < 4; ++weft_j) weft_a[weft_j] = 0.0f;
      bool weft_quad = weft_k0 + 3 < weft_k_hi;
      {
        const int64_t c0 = weft_from + weft_ty;
        weft_quad = weft_quad && weft_aligned16(&b1[c0 * 2048 + weft_k0]);
      }
      if (weft_quad) {
        for (int64_t weft_i = weft_from + weft_ty; weft_i < weft_to; weft_i += 4 * (32)) {
          float4 weft_y0[4] = {};
          #pragma unroll
          for (int weft_u = 0; weft_u < 4; ++weft_u) {
            const int64_t weft_w = weft_i + weft_u * (32);
            if (weft_w < weft_to) {
              const int64_t c0 = weft_w;
              weft_y0[weft_u] = weft_load4(&b1[c0 * 2048 + weft_k0]);
            }
          }
          #pragma unroll
          for (int weft_u = 0; weft_u < 4; ++weft_u) {
            const int64_t weft_w = weft_i + weft_u * (32);
            if (weft_w < weft_to) {
              const int64_t c0 = weft_w;
              const float weft_x0[4] = {weft_y0[weft_u].x, weft_y0[weft_u].y, weft_y0[weft_u].z, weft_y0[weft_u].w};
              #pragma unroll
              for (int weft_j = 0; weft_j < 4; ++weft_j) {
                const int64_t c1 = weft_k0 + weft_j;
                {  // update
                  const float t0 = weft_x0[weft_j];
                  weft_a[weft_j] = weft_a[weft_j] + t0;
                }
              }
            }
          }
        }
      } else {
        for (int64_t c0 = weft_from + weft_ty; c0 < weft_to; c0 += 32) {
          #pragma unroll
          for (int weft_j = 0; weft_j < 4; ++weft_j) {
            const int64_t c1 = weft_k0 + weft_j;
            if (c1 < weft_k_hi) {
              {  // update
                const float t0 = b1[c0 * 2048 + c1];
                weft_a[weft_j] = weft_a[weft_j] + t0;
              }
            }
          }
        }
      }
      #pragma unroll
      for (int weft_j = 0; weft_j < 4; ++weft_j) weft_tile[weft_ty][4 * weft_q + weft_j] = weft_a[weft_j];
      __syncthreads();
      const int64_t c1 = weft_k_lo + weft_u % weft_tiles * 32 + threadIdx.x;
      if (threadIdx.x < 32 && c1 < weft_k_hi) {
        float total = weft_tile[0][threadIdx.x];
        for (int j = 1; j < 32; ++j) total = total + weft_tile[j][threadIdx.x];
        if (weft_splits == 1) {
          {
            const int64_t c0 = c1;
            {  // init
              const float t0 = 0.0f;
              b0[c0] = t0;
            }
          }
          b0[c1] = b0[c1] + total;
        } else {
          weft_atomic_add(&weft_acc_weft_k0_ReduceSum_p1[c1 - weft_k_lo], total);
          __threadfence();
        }
      }
      if (weft_splits > 1) {  // the tile's last block runs the init and applies the totals
        __shared__ bool weft_last;
        __syncthreads();
        if (threadIdx.x == 0) weft_last = atomicAdd(&weft_count_weft_k0_ReduceSum_p1[weft_u % weft_tiles], 1u) == weft_splits - 1;
        __syncthreads();
        if (weft_last && threadIdx.x < 32 && c1 < weft_k_hi) {
          __threadfence();
          const float total = *reinterpret_cast<volatile float*>(&weft_acc_weft_k0_ReduceSum_p1[c1 - weft_k_lo]);
          weft_acc_weft_k0_ReduceSum_p1[c1 - weft_k_lo] = float();
          {
            const int64_t c0 = c1;
            {  // init
              const float t0 = 0.0f;
              b0[c0] = t0;
            }
          }
          b0[c1] = b0[c1] + total;
        }
        if (weft_last && threadIdx.x == 0) weft_count_weft_k0_ReduceSum_p1[weft_u % weft_tiles] = 0;
      }
      __syncthreads();
    }
  }
}
// launch weft_k0_ReduceSum_p2 block=256 grid=device
// b0 b0, b1 b1, b2 b0_1, b3 t1, b4 b2, b5 b0_2, b6 b0_3, b7 b1_1, b8 t2_2, b9 b0_4, b10 t1_1, b11 t2_3, b12 b3
extern "C" __global__ void __launch_bounds__(256) weft_k0_ReduceSum_p2(float* __restrict__ b0, const float* __restrict__ b1, const float* __restrict__ b2, float* b3, float* __restrict__ b4, float* b5, float* __restrict__ b6, const float* __restrict__ b7, float* __restrict__ b8, const float* __restrict__ b9, float* __restrict__ b10, float* __restrict__ b11, float* __restrict__ b12) {
  const int64_t weft_lane = threadIdx.x % 32;
  const unsigned int weft_mask = 0xffffffffu;
  const int64_t weft_first = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x / 32;
  for (int64_t weft_p = weft_first; weft_p < 128; weft_p += weft_groups) {
    const int64_t c0 = 0 + weft_p;
    // a group of 32 threads per point
    for (int64_t c1 = 0 + weft_lane * 1; (c1 <= 63); c1 += 32 * 1) {
      {  // init
        const float t0 = 0.0f;
        b3[(64 * c0 + c1)] = t0;
      }
    }
    __syncwarp(weft_mask);
    for (int64_t c1 = 0 + weft_lane * 1; (c1 <= 63); c1 += 32 * 1) {
      {  // accumulate in a register
        float acc = b3[(64 * c0 + c1)];
        for (int64_t c2 = 0; (c2 <= 31); c2 += 1) {  // reduction
          {  // update
            const float t0 = b2[c0 * 64 * 32 + c1 * 32 + c2];
            acc = acc + t0;
          }
        }
        b3[(64 * c0 + c1)] = acc;
      }
    }
    __syncwarp(weft_mask);
    for (int64_t c1 = 0 + weft_lane * 1; (c1 <= 63); c1 += 32 * 1) {
      {  // finish
        const float t0 = b3[(64 * c0 + c1)];
        b4[c0 * 64 + c1] = t0;
      }
    }
    __syncwarp(weft_mask);
    for (int64_t c1 = 0 + weft_lane * 1; (c1 <= 31); c1 += 32 * 1) {
      {  // init
        const float t0 = static_cast<float>(-INFINITY);
        b5[(32 * c0 + c1)] = t0;
      }
    }
    __syncwarp(weft_mask);
    for (int64_t c2 = 0 + weft_lane; c2 < 32; c2 += 32) {  // a lane per column
      float acc = b5[(32 * c0 + c2)];
      for (int64_t c1 = 0 + 0 * 1; c1 < 64; c1 += 1 * 1) {
        {  // update
          const float t0 = b2[c0 * 64 * 32 + c1 * 32 + c2];
          acc = weft_max(acc, t0);
        }
      }
      b5[(32 * c0 + c2)] = acc;
    }
    __syncwarp(weft_mask);
  }
}
__device__ uint32_t weft_acc_weft_k0_ReduceSum_p4 = 0x0u;  // the blocks' combined result
__device__ unsigned int weft_count_weft_k0_ReduceSum_p4;  // blocks done
// launch weft_k0_ReduceSum_p4 block=256 grid=device
// b0 b0, b1 b1, b2 b0_1, b3 t1, b4 b2, b5 b0_2, b6 b0_3, b7 b1_1, b8 t2_2, b9 b0_4, b10 t1_1, b11 t2_3, b12 b3
extern "C" __global__ void __launch_bounds__(256, 8) weft_k0_ReduceSum_p4(float* __restrict__ b0, const float* __restrict__ b1, const float* __restrict__ b2, float* __restrict__ b3, float* __restrict__ b4, float* __restrict__ b5, float* __restrict__ b6, const float* __restrict__ b7, float* b8, const float* __restrict__ b9, float* __restrict__ b10, float* __restrict__ b11, float* __restrict__ b12) {
  {  // ALL: the grid's blocks combine their shares; the last one applies the result
    float acc = 0.0f;
    {  // 4 accumulators a thread, float4 loads where aligned
      float weft_a[4];
      #pragma unroll
      for (int weft_j = 0; weft_j < 4; ++weft_j) weft_a[weft_j] = 0.0f;
      int64_t weft_b = 0;  // where the scalar loop starts
      if (weft_aligned16(&b7[(0)])) {
        const int64_t weft_quads = (262144 - weft_b) / 4;
        for (int64_t weft_w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x); weft_w < weft_quads; weft_w += (int64_t)gridDim.x * blockDim.x) {
          const int64_t weft_v = weft_b + 4 * weft_w;
          const float4 weft_y0 = weft_load4(&b7[weft_v]);
          const float weft_x0[4] = {weft_y0.x, weft_y0.y, weft_y0.z, weft_y0.w};
          #pragma unroll
          for (int weft_j = 0; weft_j < 4; ++weft_j) {
            const int64_t c0 = weft_v + weft_j;
            {  // update
              const float t0 = weft_x0[weft_j];
              weft_a[weft_j] = weft_a[weft_j] + t0;
            }
          }
        }
        weft_b += 4 * weft_quads;
      }
      for (int64_t c0 = weft_b + ((int64_t)blockIdx.x * blockDim.x + threadIdx.x); c0 < 262144; c0 += (int64_t)gridDim.x * blockDim.x) {
        {  // update
          const float t0 = b7[c0];
          weft_a[0] = weft_a[0] + t0;
        }
      }
      #pragma unroll
      for (int weft_j = 0; weft_j < 4; ++weft_j) acc = acc + weft_a[weft_j];
    }
    acc = weft_group_reduce<256>(acc, weft_op_add{}, 0xffffffffu);
    __shared__ bool weft_last;
    if (threadIdx.x == 0) {
      weft_atomic_add(reinterpret_cast<float*>(&weft_acc_weft_k0_ReduceSum_p4), acc);
      __threadfence();
      weft_last = atomicAdd(&weft_count_weft_k0_ReduceSum_p4, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (weft_last && threadIdx.x == 0) {
      __threadfence();
      const float total = *reinterpret_cast<volatile float*>(&weft_acc_weft_k0_ReduceSum_p4);
      weft_acc_weft_k0_ReduceSum_p4 = 0x0u;
      weft_count_weft_k0_ReduceSum_p4 = 0;
      {  // init
        const float t0 = 0.0f;
        b8[0] = t0;
      }
      b8[0] = b8[0] + total;
    }
  }
}
// launch weft_k0_ReduceSum_p5 block=1 grid=1
// b0 b0, b1 b1, b2 b0_1, b3 t1, b4 b2, b5 b0_2, b6 b0_3, b7 b1_1, b8 t2_2, b9 b0_4, b10 t1_1, b11 t2_3, b12 b3
extern "C" __global__ void __launch_bounds__(1) weft_k0_ReduceSum_p5(float* __restrict__ b0, const float* __restrict__ b1, const float* __restrict__ b2, float* __restrict__ b3, float* __restrict__ b4, float* __restrict__ b5, float* __restrict__ b6, const float* __restrict__ b7, float* __restrict__ b8, const float* __restrict__ b9, float* __restrict__ b10, float* __restrict__ b11, float* __restrict__ b12) {
  // one thread
  {  // finish
    const float t0 = b8[0];
    const float t1 = 262144.0f;
    const float t2 = (t0 / t1);
    b6[0] = t2;
  }
}
// launch weft_k0_ReduceSum_p6 block=256 grid=device
// b0 b0, b1 b1, b2 b0_1, b3 t1, b4 b2, b5 b0_2, b6 b0_3, b7 b1_1, b8 t2_2, b9 b0_4, b10 t1_1, b11 t2_3, b12 b3
extern "C" __global__ void __launch_bounds__(256) weft_k0_ReduceSum_p6(float* __restrict__ b0, const float* __restrict__ b1, const float* __restrict__ b2, float* __restrict__ b3, float* __restrict__ b4, float* __restrict__ b5, float* __restrict__ b6, const float* __restrict__ b7, float* __restrict__ b8, const float* __restrict__ b9, float* b10, float* b11, float* __restrict__ b12) {
  const int64_t weft_lane = threadIdx.x % 2;
  const unsigned int weft_mask = ((1u << 2) - 1u) << (threadIdx.x % 32 / 2 * 2);
  const int64_t weft_first = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 2;
  const int64_t weft_groups = (int64_t)gridDim.x * blockDim.x / 2;
  for (int64_t weft_p = weft_first; weft_p < 8192; weft_p += weft_groups) {
    const int64_t c0 = 0 + weft_p;
    // a group of 2 threads per point
    float b10[1];  // t1_1: the point's, in a register of each lane
    float b11[1];  // t2_3: the point's, in a register of each lane
    float weft_r9[16];  // b9[c0 * 32 + c1], by weft_k
    {  // load b9[c0 * 32 + c1] by quads
      const int64_t c1 = 0 + weft_lane * 4;
      if (weft_aligned16(&b9[c0 * 32 + c1])) {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; weft_k += 4) {
          const int64_t c1 = 0 + weft_k * 2 + weft_lane * 4;
          const float4 weft_y = weft_load4(&b9[c0 * 32 + c1]); weft_r9[weft_k] = weft_y.x; weft_r9[weft_k + 1] = weft_y.y; weft_r9[weft_k + 2] = weft_y.z; weft_r9[weft_k + 3] = weft_y.w;
        }
      } else {
        #pragma unroll
        for (int weft_k = 0; weft_k < 16; ++weft_k) {
          const int64_t c1 = 0 + weft_k / 4 * 8 + weft_lane * 4 + weft_k % 4;
          weft_r9[weft_k] = b9[c0 * 32 + c1];
        }
      }
    }
    {  // init
      const float t0 = static_cast<float>(-INFINITY);
      b10[0] = t0;
    }
    {  // the group's lanes accumulate their registers; shuffles combine them
      float acc = static_cast<float>(-INFINITY);
      #pragma unroll
      for (int weft_k = 0; weft_k < 16; ++weft_k) {
        const int64_t c1 = 0 + weft_k / 4 * 8 + weft_lane * 4 + weft_k % 4;
        {  // update
          const float t0 = weft_r9[weft_k];
          acc = weft_shift_max(acc, t0);
        }
      }
      acc = weft_group_reduce<2>(acc, weft_op_max{}, weft_mask);
      b10[0] = weft_max(b10[0], acc);
    }
    {  // init_sum
      const float t0 = 0.0f;
      b11[0] = t0;
    }
    {  // the group's lanes accumulate their registers; shuffles combine them
      float acc = 0.0f;
      #pragma unroll
      for (int weft_k = 0; weft_k < 16; ++weft_k) {
        const int64_t c1 = 0 + weft_k / 4 * 8 + weft_lane * 4 + weft_k % 4;
        {  // sum_exp
          const float t0 = weft_r9[weft_k];
          const float t1 = b10[0];
          const bool t2 = isinf(t1);
          const float t3 = 0.0f;
          const float t4 = (t2 ? t3 : t1);
          const float t5 = (t0 - t4);
          const float t6 = weft_exp(t5);
          acc = acc + t6;
        }
      }
      acc = weft_group_reduce<2>(acc, weft_op_add{}, weft_mask);
      b11[0] = b11[0] + acc;
    }
    if (weft_lane == 0) {
      {  // finish
        const float t0 = b11[0];
        const float t1 = weft_log(t0);
        const float t2 = b10[0];
        const bool t3 = isinf(t2);
        const float t4 = 0.0f;
        const float t5 = (t3 ? t4 : t2);
        const float t6 = (t1 + t5);
        b12[c0] = t6;
      }
    }
    __syncwarp(weft_mask);
  }
}
