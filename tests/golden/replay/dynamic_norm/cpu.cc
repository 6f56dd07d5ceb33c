
// kernel k0_LayerNormalization
extern "C" void weft_k0_LayerNormalization(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b0 = static_cast<const float*>(buffers[0]);  // b0
  const float* __restrict__ b1 = static_cast<const float*>(buffers[1]);  // b1
  const float* __restrict__ b2 = static_cast<const float*>(buffers[2]);  // b2
  float* b3 = static_cast<float*>(buffers[3]);  // b3
  const float* b6 = static_cast<const float*>(buffers[6]);  // b0_1
  float* __restrict__ b7 = static_cast<float*>(buffers[7]);  // b2_1
  const int64_t s0 = extents[0];  // N
  const int64_t s1 = extents[1];  // N*T
  const int64_t s2 = extents[2];  // T
  (void)extents;
  #pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; (c0 < s1); c0 += 1) {
    alignas(64) float b4[1];  // t4: one iteration's, contracted
    alignas(64) float b5[1];  // t5: one iteration's, contracted
    {  // init
      const float t0 = 0.0f;
      b4[0] = t0;
    }
    {  // accumulate in a register
      float acc = b4[0];
      #pragma omp simd reduction(+ : acc)
      for (int64_t c1 = 0; (c1 <= 63); c1 += 1) {  // reduction
        {  // update
          const float t0 = b0[c0 * 64 + c1];
          acc = acc + t0;
        }
      }
      b4[0] = acc;
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
    {  // accumulate in a register
      float acc = b5[0];
      #pragma omp simd reduction(+ : acc)
      for (int64_t c1 = 0; (c1 <= 63); c1 += 1) {  // reduction
        {  // sum_squares
          const float t0 = b0[c0 * 64 + c1];
          const float t1 = b4[0];
          const float t2 = (t0 - t1);
          const float t3 = (t2 * t2);
          acc = acc + t3;
        }
      }
      b5[0] = acc;
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
    {
      int64_t weft_p = 0;
      for (; weft_p + 16 <= 64; weft_p += 16) {  // blocks of 16, each prefetching the next row's
        __builtin_prefetch(&b0[(c0 + 8) * 64 + weft_p], 0, 3); __builtin_prefetch(&b3[(c0 + 8) * 64 + weft_p], 1, 3);
        #pragma omp simd
        for (int64_t c1 = weft_p; c1 < weft_p + 16; c1 += 1) {
          {  // normalize
            const float t0 = b0[c0 * 64 + c1];
            const float t1 = b4[0];
            const float t2 = (t0 - t1);
            const float t3 = b5[0];
            const float t4 = (t2 * t3);
            const float t5 = b1[c1];
            const float t6 = (t4 * t5);
            const float t7 = b2[c1];
            const float t8 = (t6 + t7);
            b3[c0 * 64 + c1] = t8;
          }
        }
      }
    }
  }
  if (s0 < omp_get_max_threads() && s2 * 64 >= 32768) {  // few rows: split each row's reduction across threads
    for (int64_t c0 = 0; (c0 < s0); c0 += 1) {
      #pragma omp simd
      for (int64_t c1 = 0; (c1 <= 63); c1 += 1) {
        {  // init
          const float t0 = 0.0f;
          b7[c0 * 64 + c1] = t0;
        }
      }
      {  // COLUMN: R split across threads with a partial row each, or K when wide
        const int64_t weft_rlo = 0, weft_rhi = weft_imax(s2, 0);
        const int64_t weft_klo = 0, weft_khi = weft_imax(64, 0);
        const int64_t weft_r = weft_rhi - weft_rlo, weft_k = weft_khi - weft_klo;
        const int64_t weft_nt = weft_r * weft_k < 32768 ? 1 : weft_imin(omp_get_max_threads(), 256);
        // Threads read whole rows, each into its partial row (padded to 64 bytes, so that no
        // cache line is shared), unless K gives every thread a chunk of 2048 columns.
        const int64_t weft_kp = (weft_k + 15) / 16 * 16;
        double* weft_parts = nullptr;
        if (weft_nt > 1 && weft_k < 2048 * weft_nt)
          weft_parts = static_cast<double*>(weft_scratch(sizeof(double) * weft_nt * weft_kp));
        if (weft_parts == nullptr) {  // one thread
          {
            const int64_t weft_kb = weft_klo, weft_ke = weft_khi;
            {
              double weft_sum[2048];
              for (int64_t c2 = weft_kb; c2 < weft_ke; c2 += 1) weft_sum[c2 - weft_kb] = 0.0f;
              for (int64_t weft_rb = weft_rlo; weft_rb < weft_rhi; weft_rb += 128) {  // cascade: blocks of 128
                const int64_t weft_re = weft_imin(weft_rb + 128, weft_rhi);
                int64_t weft_kr = weft_kb;
                for (; weft_kr + 64 <= weft_ke; weft_kr += 64) {  // 64 columns in 4 register chains
                  float weft_reg[64];
                  for (int64_t weft_l = 0; weft_l < 64; weft_l += 1) weft_reg[weft_l] = 0.0f;
                  for (int64_t c1 = weft_rb; c1 < weft_re; c1 += 1) {
                    #pragma omp simd
                    for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
                      const int64_t c2 = weft_kr + weft_l;
                      {  // update
                        const float t0 = b6[c0 * s2 * 64 + c1 * 64 + c2];
                        weft_reg[weft_l] = weft_reg[weft_l] + t0;
                      }
                    }
                    #pragma omp simd
                    for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
                      const int64_t c2 = weft_kr + weft_l;
                      {  // update
                        const float t0 = b6[c0 * s2 * 64 + c1 * 64 + c2];
                        weft_reg[weft_l] = weft_reg[weft_l] + t0;
                      }
                    }
                    #pragma omp simd
                    for (int64_t weft_l = 32; weft_l < 48; weft_l += 1) {
                      const int64_t c2 = weft_kr + weft_l;
                      {  // update
                        const float t0 = b6[c0 * s2 * 64 + c1 * 64 + c2];
                        weft_reg[weft_l] = weft_reg[weft_l] + t0;
                      }
                    }
                    #pragma omp simd
                    for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {
                      const int64_t c2 = weft_kr + weft_l;
                      {  // update
                        const float t0 = b6[c0 * s2 * 64 + c1 * 64 + c2];
                        weft_reg[weft_l] = weft_reg[weft_l] + t0;
                      }
                    }
                  }
                  for (int64_t weft_l = 0; weft_l < 64; weft_l += 1) {
                    const int64_t c2 = weft_kr + weft_l;
                    weft_sum[c2 - weft_kb] = weft_sum[c2 - weft_kb] + weft_reg[weft_l];
                  }
                }
                float weft_col[2048];
                for (int64_t c2 = weft_kr; c2 < weft_ke; c2 += 1) weft_col[c2 - weft_kr] = 0.0f;
                for (int64_t c1 = weft_rb; c1 < weft_re; c1 += 1) {
                  #pragma omp simd
                  for (int64_t c2 = weft_kr; c2 < weft_ke; c2 += 1) {
                    {  // update
                      const float t0 = b6[c0 * s2 * 64 + c1 * 64 + c2];
                      weft_col[c2 - weft_kr] = weft_col[c2 - weft_kr] + t0;
                    }
                  }
                }
                for (int64_t c2 = weft_kr; c2 < weft_ke; c2 += 1) weft_sum[c2 - weft_kb] = weft_sum[c2 - weft_kb] + weft_col[c2 - weft_kr];
              }
              for (int64_t c2 = weft_kb; c2 < weft_ke; c2 += 1) b7[c0 * 64 + c2] = b7[c0 * 64 + c2] + weft_sum[c2 - weft_kb];
            }
          }
        } else {  // R split
          #pragma omp parallel  // the whole pool (split() says why), a partial row per chunk
          for (int64_t weft_c = omp_get_thread_num(); weft_c < weft_nt; weft_c += omp_get_num_threads()) {
            double* weft_part = weft_parts + weft_c * weft_kp;
            for (int64_t weft_j = 0; weft_j < weft_k; weft_j += 1) weft_part[weft_j] = 0.0f;
            const int64_t weft_chunk = (weft_r + weft_nt - 1) / weft_nt;
            const int64_t weft_from = weft_imin(weft_rlo + weft_c * weft_chunk, weft_rhi);
            const int64_t weft_to = weft_imin(weft_from + weft_chunk, weft_rhi);
            {
              const int64_t weft_kb = weft_klo, weft_ke = weft_khi;
              {
                double weft_sum[2048];
                for (int64_t c2 = weft_kb; c2 < weft_ke; c2 += 1) weft_sum[c2 - weft_kb] = 0.0f;
                for (int64_t weft_rb = weft_from; weft_rb < weft_to; weft_rb += 128) {  // cascade: blocks of 128
                  const int64_t weft_re = weft_imin(weft_rb + 128, weft_to);
                  int64_t weft_kr = weft_kb;
                  for (; weft_kr + 64 <= weft_ke; weft_kr += 64) {  // 64 columns in 4 register chains
                    float weft_reg[64];
                    for (int64_t weft_l = 0; weft_l < 64; weft_l += 1) weft_reg[weft_l] = 0.0f;
                    for (int64_t c1 = weft_rb; c1 < weft_re; c1 += 1) {
                      #pragma omp simd
                      for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
                        const int64_t c2 = weft_kr + weft_l;
                        {  // update
                          const float t0 = b6[c0 * s2 * 64 + c1 * 64 + c2];
                          weft_reg[weft_l] = weft_reg[weft_l] + t0;
                        }
                      }
                      #pragma omp simd
                      for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
                        const int64_t c2 = weft_kr + weft_l;
                        {  // update
                          const float t0 = b6[c0 * s2 * 64 + c1 * 64 + c2];
                          weft_reg[weft_l] = weft_reg[weft_l] + t0;
                        }
                      }
                      #pragma omp simd
                      for (int64_t weft_l = 32; weft_l < 48; weft_l += 1) {
                        const int64_t c2 = weft_kr + weft_l;
                        {  // update
                          const float t0 = b6[c0 * s2 * 64 + c1 * 64 + c2];
                          weft_reg[weft_l] = weft_reg[weft_l] + t0;
                        }
                      }
                      #pragma omp simd
                      for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {
                        const int64_t c2 = weft_kr + weft_l;
                        {  // update
                          const float t0 = b6[c0 * s2 * 64 + c1 * 64 + c2];
                          weft_reg[weft_l] = weft_reg[weft_l] + t0;
                        }
                      }
                    }
                    for (int64_t weft_l = 0; weft_l < 64; weft_l += 1) {
                      const int64_t c2 = weft_kr + weft_l;
                      weft_sum[c2 - weft_kb] = weft_sum[c2 - weft_kb] + weft_reg[weft_l];
                    }
                  }
                  float weft_col[2048];
                  for (int64_t c2 = weft_kr; c2 < weft_ke; c2 += 1) weft_col[c2 - weft_kr] = 0.0f;
                  for (int64_t c1 = weft_rb; c1 < weft_re; c1 += 1) {
                    #pragma omp simd
                    for (int64_t c2 = weft_kr; c2 < weft_ke; c2 += 1) {
                      {  // update
                        const float t0 = b6[c0 * s2 * 64 + c1 * 64 + c2];
                        weft_col[c2 - weft_kr] = weft_col[c2 - weft_kr] + t0;
                      }
                    }
                  }
                  for (int64_t c2 = weft_kr; c2 < weft_ke; c2 += 1) weft_sum[c2 - weft_kb] = weft_sum[c2 - weft_kb] + weft_col[c2 - weft_kr];
                }
                for (int64_t c2 = weft_kb; c2 < weft_ke; c2 += 1) weft_part[c2 - weft_klo] = weft_part[c2 - weft_klo] + weft_sum[c2 - weft_kb];
              }
            }
          }
          for (int64_t weft_c = 0; weft_c < weft_nt; weft_c += 1) {
            for (int64_t c2 = weft_klo; c2 < weft_khi; c2 += 1)
              b7[c0 * 64 + c2] = b7[c0 * 64 + c2] + weft_parts[weft_c * weft_kp + c2 - weft_klo];
          }
        }
      }
    }
  } else {
    #pragma omp parallel for schedule(static)
    for (int64_t c0 = 0; (c0 < s0); c0 += 1) {
      {
        int64_t weft_p = 0;
        for (; weft_p + 16 <= 64; weft_p += 16) {  // blocks of 16, each prefetching the next row's
          __builtin_prefetch(&b7[(c0 + 8) * 64 + weft_p], 1, 3);
          #pragma omp simd
          for (int64_t c1 = weft_p; c1 < weft_p + 16; c1 += 1) {
            {  // init
              const float t0 = 0.0f;
              b7[c0 * 64 + c1] = t0;
            }
          }
        }
      }
      {  // COLUMN
        const int64_t weft_rlo = 0, weft_rhi = weft_imax(s2, 0);
        const int64_t weft_klo = 0, weft_khi = weft_imax(64, 0);
        {
          const int64_t weft_kb = weft_klo, weft_ke = weft_khi;
          {
            double weft_sum[2048];
            for (int64_t c2 = weft_kb; c2 < weft_ke; c2 += 1) weft_sum[c2 - weft_kb] = 0.0f;
            for (int64_t weft_rb = weft_rlo; weft_rb < weft_rhi; weft_rb += 128) {  // cascade: blocks of 128
              const int64_t weft_re = weft_imin(weft_rb + 128, weft_rhi);
              int64_t weft_kr = weft_kb;
              for (; weft_kr + 64 <= weft_ke; weft_kr += 64) {  // 64 columns in 4 register chains
                float weft_reg[64];
                for (int64_t weft_l = 0; weft_l < 64; weft_l += 1) weft_reg[weft_l] = 0.0f;
                for (int64_t c1 = weft_rb; c1 < weft_re; c1 += 1) {
                  #pragma omp simd
                  for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
                    const int64_t c2 = weft_kr + weft_l;
                    {  // update
                      const float t0 = b6[c0 * s2 * 64 + c1 * 64 + c2];
                      weft_reg[weft_l] = weft_reg[weft_l] + t0;
                    }
                  }
                  #pragma omp simd
                  for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
                    const int64_t c2 = weft_kr + weft_l;
                    {  // update
                      const float t0 = b6[c0 * s2 * 64 + c1 * 64 + c2];
                      weft_reg[weft_l] = weft_reg[weft_l] + t0;
                    }
                  }
                  #pragma omp simd
                  for (int64_t weft_l = 32; weft_l < 48; weft_l += 1) {
                    const int64_t c2 = weft_kr + weft_l;
                    {  // update
                      const float t0 = b6[c0 * s2 * 64 + c1 * 64 + c2];
                      weft_reg[weft_l] = weft_reg[weft_l] + t0;
                    }
                  }
                  #pragma omp simd
                  for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {
                    const int64_t c2 = weft_kr + weft_l;
                    {  // update
                      const float t0 = b6[c0 * s2 * 64 + c1 * 64 + c2];
                      weft_reg[weft_l] = weft_reg[weft_l] + t0;
                    }
                  }
                }
                for (int64_t weft_l = 0; weft_l < 64; weft_l += 1) {
                  const int64_t c2 = weft_kr + weft_l;
                  weft_sum[c2 - weft_kb] = weft_sum[c2 - weft_kb] + weft_reg[weft_l];
                }
              }
              float weft_col[2048];
              for (int64_t c2 = weft_kr; c2 < weft_ke; c2 += 1) weft_col[c2 - weft_kr] = 0.0f;
              for (int64_t c1 = weft_rb; c1 < weft_re; c1 += 1) {
                #pragma omp simd
                for (int64_t c2 = weft_kr; c2 < weft_ke; c2 += 1) {
                  {  // update
                    const float t0 = b6[c0 * s2 * 64 + c1 * 64 + c2];
                    weft_col[c2 - weft_kr] = weft_col[c2 - weft_kr] + t0;
                  }
                }
              }
              for (int64_t c2 = weft_kr; c2 < weft_ke; c2 += 1) weft_sum[c2 - weft_kb] = weft_sum[c2 - weft_kb] + weft_col[c2 - weft_kr];
            }
            for (int64_t c2 = weft_kb; c2 < weft_ke; c2 += 1) b7[c0 * 64 + c2] = b7[c0 * 64 + c2] + weft_sum[c2 - weft_kb];
          }
        }
      }
    }
  }
}
