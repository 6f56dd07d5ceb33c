
// kernel k1_Softmax
extern "C" void weft_k1_Softmax(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b3 = static_cast<const float*>(buffers[3]);  // b0_1
  const float* __restrict__ b4 = static_cast<const float*>(buffers[4]);  // b1_1
  const float* __restrict__ b5 = static_cast<const float*>(buffers[5]);  // b1_2
  const float* __restrict__ b6 = static_cast<const float*>(buffers[6]);  // b2
  float* __restrict__ b7 = static_cast<float*>(buffers[7]);  // b3
  (void)extents;
  #pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; (c0 <= 63); c0 += 1) {
    alignas(64) float b0[256];  // b1: one iteration's, contracted
    alignas(64) float b1[1];  // t2: one iteration's, contracted
    alignas(64) float b2[1];  // t3: one iteration's, contracted
    alignas(64) float b8[1];  // t4: one iteration's, contracted
    alignas(64) float b9[1];  // t5: one iteration's, contracted
    {  // init
      const float t0 = static_cast<float>(-INFINITY);
      b1[0] = t0;
    }
    {  // ROW: 64 lanes
      const int64_t weft_lo = 0, weft_hi = 256;
      float weft_acc = b1[0];
      for (int64_t weft_b = weft_lo; weft_b < weft_hi; weft_b += 8192) {  // cascade: blocks of 8192
        const int64_t weft_e = weft_imin(weft_b + 8192, weft_hi);
        float weft_lane[64];
        for (int64_t weft_l = 0; weft_l < 64; weft_l += 1) weft_lane[weft_l] = static_cast<float>(-INFINITY);
        int64_t weft_i = weft_b;
        for (; weft_i + 64 <= weft_e; weft_i += 64) {  // 4 chains
          #pragma omp simd
          for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // update
              const float t0 = b3[c0 * 256 + c1];
              const float t1 = b4[0];
              const float t2 = (t0 * t1);
              weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], t2);
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // update
              const float t0 = b3[c0 * 256 + c1];
              const float t1 = b4[0];
              const float t2 = (t0 * t1);
              weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], t2);
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 32; weft_l < 48; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // update
              const float t0 = b3[c0 * 256 + c1];
              const float t1 = b4[0];
              const float t2 = (t0 * t1);
              weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], t2);
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // update
              const float t0 = b3[c0 * 256 + c1];
              const float t1 = b4[0];
              const float t2 = (t0 * t1);
              weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], t2);
            }
          }
        }
        for (; weft_i + 16 <= weft_e; weft_i += 16) {
          #pragma omp simd
          for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // update
              const float t0 = b3[c0 * 256 + c1];
              const float t1 = b4[0];
              const float t2 = (t0 * t1);
              weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], t2);
            }
          }
        }
        for (int64_t weft_l = 0; weft_i + weft_l < weft_e; weft_l += 1) {  // the tail
          const int64_t c1 = weft_i + weft_l;
          {  // update
            const float t0 = b3[c0 * 256 + c1];
            const float t1 = b4[0];
            const float t2 = (t0 * t1);
            weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], t2);
          }
        }
        // pairwise tree over the lanes
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 32; weft_l += 1) weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], weft_lane[weft_l + 32]);
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], weft_lane[weft_l + 16]);
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 8; weft_l += 1) weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], weft_lane[weft_l + 8]);
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 4; weft_l += 1) weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], weft_lane[weft_l + 4]);
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 2; weft_l += 1) weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], weft_lane[weft_l + 2]);
        for (int64_t weft_l = 0; weft_l < 1; weft_l += 1) weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], weft_lane[weft_l + 1]);
        weft_acc = weft_shift_max(weft_acc, weft_lane[0]);
      }
      b1[0] = weft_acc;
    }
    {  // init_sum
      const float t0 = 0.0f;
      b2[0] = t0;
    }
    if ((0 <= 255)) {  // loads (and ops on them) that do not move with c1 are hoisted
      const float weft_h1 = b4[0];
      const float weft_h3 = b1[0];
      {
        int64_t weft_p = 0;
        for (; weft_p + 16 <= 256; weft_p += 16) {  // blocks of 16, each prefetching the next row's
          __builtin_prefetch(&b3[(c0 + 2) * 256 + weft_p], 0, 3);
          #pragma omp simd
          for (int64_t c1 = weft_p; c1 < weft_p + 16; c1 += 1) {
            {  // exp
              const float t0 = b3[c0 * 256 + c1];
              const float t1 = weft_h1;
              const float t2 = (t0 * t1);
              const float t3 = weft_h3;
              const float t4 = (t2 - t3);
              const float t5 = weft_shifted_exp(t4);
              b0[c1] = t5;
            }
          }
        }
      }
    }
    {  // ROW: 64 lanes
      const int64_t weft_lo = 0, weft_hi = 256;
      double weft_acc = b2[0];
      for (int64_t weft_b = weft_lo; weft_b < weft_hi; weft_b += 8192) {  // cascade: blocks of 8192
        const int64_t weft_e = weft_imin(weft_b + 8192, weft_hi);
        float weft_lane[64];
        for (int64_t weft_l = 0; weft_l < 64; weft_l += 1) weft_lane[weft_l] = 0.0f;
        int64_t weft_i = weft_b;
        for (; weft_i + 64 <= weft_e; weft_i += 64) {  // 4 chains
          #pragma omp simd
          for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // sum_exp
              const float t0 = b0[c1];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // sum_exp
              const float t0 = b0[c1];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 32; weft_l < 48; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // sum_exp
              const float t0 = b0[c1];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // sum_exp
              const float t0 = b0[c1];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
        }
        for (; weft_i + 16 <= weft_e; weft_i += 16) {
          #pragma omp simd
          for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // sum_exp
              const float t0 = b0[c1];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
        }
        for (int64_t weft_l = 0; weft_i + weft_l < weft_e; weft_l += 1) {  // the tail
          const int64_t c1 = weft_i + weft_l;
          {  // sum_exp
            const float t0 = b0[c1];
            weft_lane[weft_l] = weft_lane[weft_l] + t0;
          }
        }
        // pairwise tree over the lanes
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 32; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 32];
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 16];
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 8; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 8];
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 4; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 4];
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 2; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 2];
        for (int64_t weft_l = 0; weft_l < 1; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 1];
        weft_acc = weft_acc + weft_lane[0];
      }
      b2[0] = weft_acc;
    }
    {  // reciprocal
      const float t0 = 1.0f;
      const float t1 = b2[0];
      const float t2 = (t0 / t1);
      b2[0] = t2;
    }
    if ((0 <= 255)) {  // loads (and ops on them) that do not move with c1 are hoisted
      const float weft_h1 = b2[0];
      #pragma omp simd
      for (int64_t c1 = 0; (c1 <= 255); c1 += 1) {
        {  // normalize
          const float t0 = b0[c1];
          const float t1 = weft_h1;
          const float t2 = (t0 * t1);
          b0[c1] = t2;
        }
      }
    }
    {  // init
      const float t0 = 0.0f;
      b8[0] = t0;
    }
    {  // ROW: 64 lanes
      const int64_t weft_lo = 0, weft_hi = 256;
      double weft_acc = b8[0];
      for (int64_t weft_b = weft_lo; weft_b < weft_hi; weft_b += 8192) {  // cascade: blocks of 8192
        const int64_t weft_e = weft_imin(weft_b + 8192, weft_hi);
        float weft_lane[64];
        for (int64_t weft_l = 0; weft_l < 64; weft_l += 1) weft_lane[weft_l] = 0.0f;
        int64_t weft_i = weft_b;
        for (; weft_i + 64 <= weft_e; weft_i += 64) {  // 4 chains
          #pragma omp simd
          for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // update
              const float t0 = b0[c1];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // update
              const float t0 = b0[c1];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 32; weft_l < 48; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // update
              const float t0 = b0[c1];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // update
              const float t0 = b0[c1];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
        }
        for (; weft_i + 16 <= weft_e; weft_i += 16) {
          #pragma omp simd
          for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // update
              const float t0 = b0[c1];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
        }
        for (int64_t weft_l = 0; weft_i + weft_l < weft_e; weft_l += 1) {  // the tail
          const int64_t c1 = weft_i + weft_l;
          {  // update
            const float t0 = b0[c1];
            weft_lane[weft_l] = weft_lane[weft_l] + t0;
          }
        }
        // pairwise tree over the lanes
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 32; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 32];
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 16];
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 8; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 8];
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 4; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 4];
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 2; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 2];
        for (int64_t weft_l = 0; weft_l < 1; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 1];
        weft_acc = weft_acc + weft_lane[0];
      }
      b8[0] = weft_acc;
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
    {  // ROW: 64 lanes
      const int64_t weft_lo = 0, weft_hi = 256;
      double weft_acc = b9[0];
      for (int64_t weft_b = weft_lo; weft_b < weft_hi; weft_b += 8192) {  // cascade: blocks of 8192
        const int64_t weft_e = weft_imin(weft_b + 8192, weft_hi);
        float weft_lane[64];
        for (int64_t weft_l = 0; weft_l < 64; weft_l += 1) weft_lane[weft_l] = 0.0f;
        int64_t weft_i = weft_b;
        for (; weft_i + 64 <= weft_e; weft_i += 64) {  // 4 chains
          #pragma omp simd
          for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // sum_squares
              const float t0 = b0[c1];
              const float t1 = b8[0];
              const float t2 = (t0 - t1);
              const float t3 = (t2 * t2);
              weft_lane[weft_l] = weft_lane[weft_l] + t3;
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // sum_squares
              const float t0 = b0[c1];
              const float t1 = b8[0];
              const float t2 = (t0 - t1);
              const float t3 = (t2 * t2);
              weft_lane[weft_l] = weft_lane[weft_l] + t3;
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 32; weft_l < 48; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // sum_squares
              const float t0 = b0[c1];
              const float t1 = b8[0];
              const float t2 = (t0 - t1);
              const float t3 = (t2 * t2);
              weft_lane[weft_l] = weft_lane[weft_l] + t3;
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // sum_squares
              const float t0 = b0[c1];
              const float t1 = b8[0];
              const float t2 = (t0 - t1);
              const float t3 = (t2 * t2);
              weft_lane[weft_l] = weft_lane[weft_l] + t3;
            }
          }
        }
        for (; weft_i + 16 <= weft_e; weft_i += 16) {
          #pragma omp simd
          for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // sum_squares
              const float t0 = b0[c1];
              const float t1 = b8[0];
              const float t2 = (t0 - t1);
              const float t3 = (t2 * t2);
              weft_lane[weft_l] = weft_lane[weft_l] + t3;
            }
          }
        }
        for (int64_t weft_l = 0; weft_i + weft_l < weft_e; weft_l += 1) {  // the tail
          const int64_t c1 = weft_i + weft_l;
          {  // sum_squares
            const float t0 = b0[c1];
            const float t1 = b8[0];
            const float t2 = (t0 - t1);
            const float t3 = (t2 * t2);
            weft_lane[weft_l] = weft_lane[weft_l] + t3;
          }
        }
        // pairwise tree over the lanes
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 32; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 32];
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 16];
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 8; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 8];
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 4; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 4];
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 2; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 2];
        for (int64_t weft_l = 0; weft_l < 1; weft_l += 1) weft_lane[weft_l] = weft_lane[weft_l] + weft_lane[weft_l + 1];
        weft_acc = weft_acc + weft_lane[0];
      }
      b9[0] = weft_acc;
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
    if ((0 <= 255)) {  // loads (and ops on them) that do not move with c1 are hoisted
      const float weft_h1 = b8[0];
      const float weft_h3 = b9[0];
      {
        int64_t weft_p = 0;
        for (; weft_p + 16 <= 256; weft_p += 16) {  // blocks of 16, each prefetching the next row's
          __builtin_prefetch(&b7[(c0 + 2) * 256 + weft_p], 1, 3);
          #pragma omp simd
          for (int64_t c1 = weft_p; c1 < weft_p + 16; c1 += 1) {
            {  // normalize
              const float t0 = b0[c1];
              const float t1 = weft_h1;
              const float t2 = (t0 - t1);
              const float t3 = weft_h3;
              const float t4 = (t2 * t3);
              const float t5 = b5[c1];
              const float t6 = (t4 * t5);
              const float t7 = b6[c1];
              const float t8 = (t6 + t7);
              b7[c0 * 256 + c1] = t8;
            }
          }
        }
      }
    }
  }
}
