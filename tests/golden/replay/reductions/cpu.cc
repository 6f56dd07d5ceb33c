
// kernel k0_ReduceSum
extern "C" void weft_k0_ReduceSum(void* const* buffers, const int64_t* extents) {
  float* __restrict__ b0 = static_cast<float*>(buffers[0]);  // b0
  const float* __restrict__ b1 = static_cast<const float*>(buffers[1]);  // b1
  const float* __restrict__ b2 = static_cast<const float*>(buffers[2]);  // b0_1
  float* __restrict__ b3 = static_cast<float*>(buffers[3]);  // t1
  float* __restrict__ b4 = static_cast<float*>(buffers[4]);  // b2
  float* __restrict__ b5 = static_cast<float*>(buffers[5]);  // b0_2
  float* __restrict__ b6 = static_cast<float*>(buffers[6]);  // b0_3
  const float* __restrict__ b7 = static_cast<const float*>(buffers[7]);  // b1_1
  float* __restrict__ b8 = static_cast<float*>(buffers[8]);  // t2_2
  const float* __restrict__ b9 = static_cast<const float*>(buffers[9]);  // b0_4
  float* __restrict__ b12 = static_cast<float*>(buffers[12]);  // b3
  (void)extents;
  #pragma omp simd
  for (int64_t c0 = 0; (c0 <= 2047); c0 += 1) {
    {  // init
      const float t0 = 0.0f;
      b0[c0] = t0;
    }
  }
  {  // COLUMN: R split across threads with a partial row each, or K when wide
    const int64_t weft_rlo = 0, weft_rhi = weft_imax(128, 0);
    const int64_t weft_klo = 0, weft_khi = weft_imax(2048, 0);
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
          int64_t weft_kr = weft_kb;
          for (; weft_kr + 256 <= weft_ke; weft_kr += 256) {  // 256 columns in 16 register chains
            float weft_reg[256];
            for (int64_t weft_l = 0; weft_l < 256; weft_l += 1) weft_reg[weft_l] = 0.0f;
            for (int64_t c0 = weft_rlo; c0 < weft_rhi; c0 += 1) {
              #pragma omp simd
              for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_reg[weft_l] = weft_reg[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_reg[weft_l] = weft_reg[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 32; weft_l < 48; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_reg[weft_l] = weft_reg[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_reg[weft_l] = weft_reg[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 64; weft_l < 80; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_reg[weft_l] = weft_reg[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 80; weft_l < 96; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_reg[weft_l] = weft_reg[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 96; weft_l < 112; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_reg[weft_l] = weft_reg[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 112; weft_l < 128; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_reg[weft_l] = weft_reg[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 128; weft_l < 144; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_reg[weft_l] = weft_reg[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 144; weft_l < 160; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_reg[weft_l] = weft_reg[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 160; weft_l < 176; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_reg[weft_l] = weft_reg[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 176; weft_l < 192; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_reg[weft_l] = weft_reg[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 192; weft_l < 208; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_reg[weft_l] = weft_reg[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 208; weft_l < 224; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_reg[weft_l] = weft_reg[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 224; weft_l < 240; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_reg[weft_l] = weft_reg[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 240; weft_l < 256; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_reg[weft_l] = weft_reg[weft_l] + t0;
                }
              }
            }
            for (int64_t weft_l = 0; weft_l < 256; weft_l += 1) {
              const int64_t c1 = weft_kr + weft_l;
              b0[c1] = b0[c1] + weft_reg[weft_l];
            }
          }
          float weft_col[2048];
          for (int64_t c1 = weft_kr; c1 < weft_ke; c1 += 1) weft_col[c1 - weft_kr] = 0.0f;
          for (int64_t c0 = weft_rlo; c0 < weft_rhi; c0 += 1) {
            #pragma omp simd
            for (int64_t c1 = weft_kr; c1 < weft_ke; c1 += 1) {
              {  // update
                const float t0 = b1[c0 * 2048 + c1];
                weft_col[c1 - weft_kr] = weft_col[c1 - weft_kr] + t0;
              }
            }
          }
          for (int64_t c1 = weft_kr; c1 < weft_ke; c1 += 1) b0[c1] = b0[c1] + weft_col[c1 - weft_kr];
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
            int64_t weft_kr = weft_kb;
            for (; weft_kr + 256 <= weft_ke; weft_kr += 256) {  // 256 columns in 16 register chains
              float weft_reg[256];
              for (int64_t weft_l = 0; weft_l < 256; weft_l += 1) weft_reg[weft_l] = 0.0f;
              for (int64_t c0 = weft_from; c0 < weft_to; c0 += 1) {
                #pragma omp simd
                for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
                  const int64_t c1 = weft_kr + weft_l;
                  {  // update
                    const float t0 = b1[c0 * 2048 + c1];
                    weft_reg[weft_l] = weft_reg[weft_l] + t0;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
                  const int64_t c1 = weft_kr + weft_l;
                  {  // update
                    const float t0 = b1[c0 * 2048 + c1];
                    weft_reg[weft_l] = weft_reg[weft_l] + t0;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 32; weft_l < 48; weft_l += 1) {
                  const int64_t c1 = weft_kr + weft_l;
                  {  // update
                    const float t0 = b1[c0 * 2048 + c1];
                    weft_reg[weft_l] = weft_reg[weft_l] + t0;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {
                  const int64_t c1 = weft_kr + weft_l;
                  {  // update
                    const float t0 = b1[c0 * 2048 + c1];
                    weft_reg[weft_l] = weft_reg[weft_l] + t0;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 64; weft_l < 80; weft_l += 1) {
                  const int64_t c1 = weft_kr + weft_l;
                  {  // update
                    const float t0 = b1[c0 * 2048 + c1];
                    weft_reg[weft_l] = weft_reg[weft_l] + t0;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 80; weft_l < 96; weft_l += 1) {
                  const int64_t c1 = weft_kr + weft_l;
                  {  // update
                    const float t0 = b1[c0 * 2048 + c1];
                    weft_reg[weft_l] = weft_reg[weft_l] + t0;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 96; weft_l < 112; weft_l += 1) {
                  const int64_t c1 = weft_kr + weft_l;
                  {  // update
                    const float t0 = b1[c0 * 2048 + c1];
                    weft_reg[weft_l] = weft_reg[weft_l] + t0;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 112; weft_l < 128; weft_l += 1) {
                  const int64_t c1 = weft_kr + weft_l;
                  {  // update
                    const float t0 = b1[c0 * 2048 + c1];
                    weft_reg[weft_l] = weft_reg[weft_l] + t0;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 128; weft_l < 144; weft_l += 1) {
                  const int64_t c1 = weft_kr + weft_l;
                  {  // update
                    const float t0 = b1[c0 * 2048 + c1];
                    weft_reg[weft_l] = weft_reg[weft_l] + t0;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 144; weft_l < 160; weft_l += 1) {
                  const int64_t c1 = weft_kr + weft_l;
                  {  // update
                    const float t0 = b1[c0 * 2048 + c1];
                    weft_reg[weft_l] = weft_reg[weft_l] + t0;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 160; weft_l < 176; weft_l += 1) {
                  const int64_t c1 = weft_kr + weft_l;
                  {  // update
                    const float t0 = b1[c0 * 2048 + c1];
                    weft_reg[weft_l] = weft_reg[weft_l] + t0;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 176; weft_l < 192; weft_l += 1) {
                  const int64_t c1 = weft_kr + weft_l;
                  {  // update
                    const float t0 = b1[c0 * 2048 + c1];
                    weft_reg[weft_l] = weft_reg[weft_l] + t0;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 192; weft_l < 208; weft_l += 1) {
                  const int64_t c1 = weft_kr + weft_l;
                  {  // update
                    const float t0 = b1[c0 * 2048 + c1];
                    weft_reg[weft_l] = weft_reg[weft_l] + t0;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 208; weft_l < 224; weft_l += 1) {
                  const int64_t c1 = weft_kr + weft_l;
                  {  // update
                    const float t0 = b1[c0 * 2048 + c1];
                    weft_reg[weft_l] = weft_reg[weft_l] + t0;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 224; weft_l < 240; weft_l += 1) {
                  const int64_t c1 = weft_kr + weft_l;
                  {  // update
                    const float t0 = b1[c0 * 2048 + c1];
                    weft_reg[weft_l] = weft_reg[weft_l] + t0;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 240; weft_l < 256; weft_l += 1) {
                  const int64_t c1 = weft_kr + weft_l;
                  {  // update
                    const float t0 = b1[c0 * 2048 + c1];
                    weft_reg[weft_l] = weft_reg[weft_l] + t0;
                  }
                }
              }
              for (int64_t weft_l = 0; weft_l < 256; weft_l += 1) {
                const int64_t c1 = weft_kr + weft_l;
                weft_part[c1 - weft_klo] = weft_part[c1 - weft_klo] + weft_reg[weft_l];
              }
            }
            float weft_col[2048];
            for (int64_t c1 = weft_kr; c1 < weft_ke; c1 += 1) weft_col[c1 - weft_kr] = 0.0f;
            for (int64_t c0 = weft_from; c0 < weft_to; c0 += 1) {
              #pragma omp simd
              for (int64_t c1 = weft_kr; c1 < weft_ke; c1 += 1) {
                {  // update
                  const float t0 = b1[c0 * 2048 + c1];
                  weft_col[c1 - weft_kr] = weft_col[c1 - weft_kr] + t0;
                }
              }
            }
            for (int64_t c1 = weft_kr; c1 < weft_ke; c1 += 1) weft_part[c1 - weft_klo] = weft_part[c1 - weft_klo] + weft_col[c1 - weft_kr];
          }
        }
      }
      for (int64_t weft_c = 0; weft_c < weft_nt; weft_c += 1) {
        for (int64_t c1 = weft_klo; c1 < weft_khi; c1 += 1)
          b0[c1] = b0[c1] + weft_parts[weft_c * weft_kp + c1 - weft_klo];
      }
    }
  }
  #pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; (c0 <= 127); c0 += 1) {
    {
      int64_t weft_p = 0;
      for (; weft_p + 16 <= 64; weft_p += 16) {  // blocks of 16, each prefetching the next row's
        __builtin_prefetch(&b3[(64 * (c0 + 8) + weft_p)], 1, 3);
        #pragma omp simd
        for (int64_t c1 = weft_p; c1 < weft_p + 16; c1 += 1) {
          {  // init
            const float t0 = 0.0f;
            b3[(64 * c0 + c1)] = t0;
          }
        }
      }
    }
    for (int64_t c1 = 0; (c1 <= 63); c1 += 1) {
      {  // accumulate in a register
        float acc = b3[(64 * c0 + c1)];
        #pragma omp simd reduction(+ : acc)
        for (int64_t c2 = 0; (c2 <= 31); c2 += 1) {  // reduction
          {  // update
            const float t0 = b2[c0 * 64 * 32 + c1 * 32 + c2];
            acc = acc + t0;
          }
        }
        b3[(64 * c0 + c1)] = acc;
      }
    }
    {
      int64_t weft_p = 0;
      for (; weft_p + 16 <= 64; weft_p += 16) {  // blocks of 16, each prefetching the next row's
        __builtin_prefetch(&b4[(c0 + 8) * 64 + weft_p], 1, 3);
        #pragma omp simd
        for (int64_t c1 = weft_p; c1 < weft_p + 16; c1 += 1) {
          {  // finish
            const float t0 = b3[(64 * c0 + c1)];
            b4[c0 * 64 + c1] = t0;
          }
        }
      }
    }
    {
      int64_t weft_p = 0;
      for (; weft_p + 16 <= 32; weft_p += 16) {  // blocks of 16, each prefetching the next row's
        __builtin_prefetch(&b5[(32 * (c0 + 16) + weft_p)], 1, 3);
        #pragma omp simd
        for (int64_t c1 = weft_p; c1 < weft_p + 16; c1 += 1) {
          {  // init
            const float t0 = static_cast<float>(-INFINITY);
            b5[(32 * c0 + c1)] = t0;
          }
        }
      }
    }
    {  // COLUMN
      const int64_t weft_rlo = 0, weft_rhi = weft_imax(64, 0);
      const int64_t weft_klo = 0, weft_khi = weft_imax(32, 0);
      {
        const int64_t weft_kb = weft_klo, weft_ke = weft_khi;
        {
          int64_t weft_kr = weft_kb;
          for (; weft_kr + 32 <= weft_ke; weft_kr += 32) {  // 32 columns in 2 register chains
            float weft_reg[32];
            for (int64_t weft_l = 0; weft_l < 32; weft_l += 1) weft_reg[weft_l] = static_cast<float>(-INFINITY);
            for (int64_t c1 = weft_rlo; c1 < weft_rhi; c1 += 1) {
              #pragma omp simd
              for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
                const int64_t c2 = weft_kr + weft_l;
                {  // update
                  const float t0 = b2[c0 * 64 * 32 + c1 * 32 + c2];
                  weft_reg[weft_l] = weft_max(weft_reg[weft_l], t0);
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
                const int64_t c2 = weft_kr + weft_l;
                {  // update
                  const float t0 = b2[c0 * 64 * 32 + c1 * 32 + c2];
                  weft_reg[weft_l] = weft_max(weft_reg[weft_l], t0);
                }
              }
            }
            for (int64_t weft_l = 0; weft_l < 32; weft_l += 1) {
              const int64_t c2 = weft_kr + weft_l;
              b5[(32 * c0 + c2)] = weft_max(b5[(32 * c0 + c2)], weft_reg[weft_l]);
            }
          }
          float weft_col[2048];
          for (int64_t c2 = weft_kr; c2 < weft_ke; c2 += 1) weft_col[c2 - weft_kr] = static_cast<float>(-INFINITY);
          for (int64_t c1 = weft_rlo; c1 < weft_rhi; c1 += 1) {
            #pragma omp simd
            for (int64_t c2 = weft_kr; c2 < weft_ke; c2 += 1) {
              {  // update
                const float t0 = b2[c0 * 64 * 32 + c1 * 32 + c2];
                weft_col[c2 - weft_kr] = weft_max(weft_col[c2 - weft_kr], t0);
              }
            }
          }
          for (int64_t c2 = weft_kr; c2 < weft_ke; c2 += 1) b5[(32 * c0 + c2)] = weft_max(b5[(32 * c0 + c2)], weft_col[c2 - weft_kr]);
        }
      }
    }
  }
  {  // init
    const float t0 = 0.0f;
    b8[0] = t0;
  }
  {  // ALL: split across threads, partials combined in chunk order
    const int64_t weft_lo = 0, weft_hi = weft_imax(262144, 0);
    const int64_t weft_nt = weft_imax(1, weft_imin(weft_imin(omp_get_max_threads(), 256), (weft_hi - weft_lo) / 16384));
    const int64_t weft_chunk = ((weft_hi - weft_lo + weft_nt - 1) / weft_nt + 63) / 64 * 64;
    double weft_part[256];
    #pragma omp parallel if (weft_nt > 1)
    for (int64_t weft_c = omp_get_thread_num(); weft_c < weft_nt; weft_c += omp_get_num_threads()) {
      const int64_t weft_from = weft_imin(weft_lo + weft_c * weft_chunk, weft_hi);
      const int64_t weft_to = weft_imin(weft_from + weft_chunk, weft_hi);
      double weft_acc = 0.0f;
      for (int64_t weft_b = weft_from; weft_b < weft_to; weft_b += 8192) {  // cascade: blocks of 8192
        const int64_t weft_e = weft_imin(weft_b + 8192, weft_to);
        float weft_lane[64];
        for (int64_t weft_l = 0; weft_l < 64; weft_l += 1) weft_lane[weft_l] = 0.0f;
        int64_t weft_i = weft_b;
        for (; weft_i + 64 <= weft_e; weft_i += 64) {  // 4 chains
          #pragma omp simd
          for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
            const int64_t c0 = weft_i + weft_l;
            {  // update
              const float t0 = b7[c0];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
            const int64_t c0 = weft_i + weft_l;
            {  // update
              const float t0 = b7[c0];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 32; weft_l < 48; weft_l += 1) {
            const int64_t c0 = weft_i + weft_l;
            {  // update
              const float t0 = b7[c0];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {
            const int64_t c0 = weft_i + weft_l;
            {  // update
              const float t0 = b7[c0];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
        }
        for (; weft_i + 16 <= weft_e; weft_i += 16) {
          #pragma omp simd
          for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
            const int64_t c0 = weft_i + weft_l;
            {  // update
              const float t0 = b7[c0];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
        }
        for (int64_t weft_l = 0; weft_i + weft_l < weft_e; weft_l += 1) {  // the tail
          const int64_t c0 = weft_i + weft_l;
          {  // update
            const float t0 = b7[c0];
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
      weft_part[weft_c] = weft_acc;
    }
    double weft_acc = b8[0];
    for (int64_t weft_c = 0; weft_c < weft_nt; weft_c += 1)
      weft_acc = weft_acc + weft_part[weft_c];
    b8[0] = weft_acc;
  }
  {  // finish
    const float t0 = b8[0];
    const float t1 = 262144.0f;
    const float t2 = (t0 / t1);
    b6[0] = t2;
  }
  #pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; (c0 <= 8191); c0 += 1) {
    alignas(64) float b10[1];  // t1_1: one iteration's, contracted
    alignas(64) float b11[1];  // t2_3: one iteration's, contracted
    {  // init
      const float t0 = static_cast<float>(-INFINITY);
      b10[0] = t0;
    }
    {  // accumulate in a register
      float acc = b10[0];
      float weft_lanes[16];
      for (int weft_l = 0; weft_l < 16; ++weft_l) weft_lanes[weft_l] = acc;
      int64_t weft_p = 0;
      for (; weft_p + 16 <= 32; weft_p += 16) {  // 16 lanes
        #pragma omp simd
        for (int64_t c1 = weft_p; c1 < weft_p + 16; c1 += 1) {
          {  // update
            const float t0 = b9[c0 * 32 + c1];
            weft_lanes[c1 - weft_p] = weft_shift_max(weft_lanes[c1 - weft_p], t0);
          }
        }
      }
      for (int64_t c1 = weft_p; c1 < 32; c1 += 1) {  // the tail
        {  // update
          const float t0 = b9[c0 * 32 + c1];
          acc = weft_shift_max(acc, t0);
        }
      }
      for (int weft_l = 0; weft_l < 16; ++weft_l) acc = weft_shift_max(acc, weft_lanes[weft_l]);
      b10[0] = acc;
    }
    {  // init_sum
      const float t0 = 0.0f;
      b11[0] = t0;
    }
    {  // accumulate in a register
      float acc = b11[0];
      #pragma omp simd reduction(+ : acc)
      for (int64_t c1 = 0; (c1 <= 31); c1 += 1) {  // reduction
        {  // sum_exp
          const float t0 = b9[c0 * 32 + c1];
          const float t1 = b10[0];
          const bool t2 = isinf(t1);
          const float t3 = 0.0f;
          const float t4 = weft_blend(t2, t3, t1);
          const float t5 = (t0 - t4);
          const float t6 = weft_exp(t5);
          acc = acc + t6;
        }
      }
      b11[0] = acc;
    }
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
}
