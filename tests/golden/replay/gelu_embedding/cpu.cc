
// kernel k0_Gather
extern "C" void weft_k0_Gather(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b0 = static_cast<const float*>(buffers[0]);  // b0
  const int64_t* __restrict__ b1 = static_cast<const int64_t*>(buffers[1]);  // b1
  float* __restrict__ b2 = static_cast<float*>(buffers[2]);  // b2
  (void)extents;
  #pragma omp parallel for collapse(2) schedule(static)
  for (int64_t c0 = 0; (c0 <= 3); c0 += 1) {
    for (int64_t c1 = 0; (c1 <= 15); c1 += 1) {
      if ((0 <= 63)) {  // loads (and ops on them) that do not move with c2 are hoisted
        const int64_t weft_h0 = b1[c0 * 16 + c1];
        #pragma omp simd
        for (int64_t c2 = 0; (c2 <= 63); c2 += 1) {
          {  // gather
            const int64_t t0 = weft_h0;
            const float t1 = b0[weft_wrap_index(t0, 100) * 64 + c2];
            b2[c0 * 16 * 64 + c1 * 64 + c2] = t1;
          }
        }
      }
    }
  }
}

// kernel k1_MatMul
extern "C" void weft_k1_MatMul(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b0 = static_cast<const float*>(buffers[0]);  // b0
  const float* __restrict__ b1 = static_cast<const float*>(buffers[1]);  // b1
  float* __restrict__ b2 = static_cast<float*>(buffers[2]);  // b3
  (void)extents;
  #pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; (c0 <= 8191); c0 += 1) {
    {  // init
      const float t0 = 0.0f;
      b2[c0] = t0;
    }
  }
  #pragma omp parallel for collapse(2) schedule(static)
  for (int64_t c0 = 0; (c0 <= 3); c0 += 1) {
    for (int64_t c1 = 0; (c1 <= 15); c1 += 1) {
      {  // COLUMN
        const int64_t weft_rlo = 0, weft_rhi = weft_imax(64, 0);
        const int64_t weft_klo = 0, weft_khi = weft_imax(128, 0);
        {
          const int64_t weft_kb = weft_klo, weft_ke = weft_khi;
          {
            int64_t weft_kr = weft_kb;
            for (; weft_kr + 128 <= weft_ke; weft_kr += 128) {  // 128 columns in 8 register chains
              float weft_reg[128];
              for (int64_t weft_l = 0; weft_l < 128; weft_l += 1) weft_reg[weft_l] = 0.0f;
              for (int64_t c2 = weft_rlo; c2 < weft_rhi; c2 += 1) {
                #pragma omp simd
                for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 16 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 128 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 16 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 128 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 32; weft_l < 48; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 16 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 128 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 16 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 128 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 64; weft_l < 80; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 16 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 128 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 80; weft_l < 96; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 16 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 128 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 96; weft_l < 112; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 16 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 128 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 112; weft_l < 128; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 16 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 128 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
              }
              for (int64_t weft_l = 0; weft_l < 128; weft_l += 1) {
                const int64_t c3 = weft_kr + weft_l;
                b2[(2048 * c0 + 128 * c1 + c3)] = b2[(2048 * c0 + 128 * c1 + c3)] + weft_reg[weft_l];
              }
            }
            float weft_col[2048];
            for (int64_t c3 = weft_kr; c3 < weft_ke; c3 += 1) weft_col[c3 - weft_kr] = 0.0f;
            for (int64_t c2 = weft_rlo; c2 < weft_rhi; c2 += 1) {
              #pragma omp simd
              for (int64_t c3 = weft_kr; c3 < weft_ke; c3 += 1) {
                {  // multiply_add
                  const float t0 = b0[c0 * 16 * 64 + c1 * 64 + c2];
                  const float t1 = b1[c2 * 128 + c3];
                  const float t2 = (t0 * t1);
                  weft_col[c3 - weft_kr] = weft_col[c3 - weft_kr] + t2;
                }
              }
            }
            for (int64_t c3 = weft_kr; c3 < weft_ke; c3 += 1) b2[(2048 * c0 + 128 * c1 + c3)] = b2[(2048 * c0 + 128 * c1 + c3)] + weft_col[c3 - weft_kr];
          }
        }
      }
    }
  }
}

// kernel k6_Mul
extern "C" void weft_k6_Mul(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b0 = static_cast<const float*>(buffers[0]);  // b1
  float* __restrict__ b1 = static_cast<float*>(buffers[1]);  // b2
  const float* __restrict__ b2 = static_cast<const float*>(buffers[2]);  // b0_1
  const float* __restrict__ b3 = static_cast<const float*>(buffers[3]);  // b1_1
  const float* __restrict__ b4 = static_cast<const float*>(buffers[4]);  // b1_2
  (void)extents;
  #pragma omp parallel for collapse(2) schedule(static)
  for (int64_t c0 = 0; (c0 <= 3); c0 += 1) {
    for (int64_t c1 = 0; (c1 <= 15); c1 += 1) {
      if ((0 <= 127)) {  // loads (and ops on them) that do not move with c2 are hoisted
        const float weft_h2 = b3[0];
        const float weft_h5 = b4[0];
        const float weft_h8 = b0[0];
        #pragma omp simd
        for (int64_t c2 = 0; (c2 <= 127); c2 += 1) {
          {  // Mul
            const float t0 = b2[c0 * 16 * 128 + c1 * 128 + c2];
            const float t1 = b2[c0 * 16 * 128 + c1 * 128 + c2];
            const float t2 = weft_h2;
            const float t3 = (t1 * t2);
            const float t4 = weft_erf(t3);
            const float t5 = weft_h5;
            const float t6 = (t4 + t5);
            const float t7 = (t0 * t6);
            const float t8 = weft_h8;
            const float t9 = (t7 * t8);
            b1[c0 * 16 * 128 + c1 * 128 + c2] = t9;
          }
        }
      }
    }
  }
}
