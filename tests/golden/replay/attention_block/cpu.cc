
// kernel k0_MatMul
extern "C" void weft_k0_MatMul(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b0 = static_cast<const float*>(buffers[0]);  // b0
  const float* __restrict__ b1 = static_cast<const float*>(buffers[1]);  // b1
  float* __restrict__ b2 = static_cast<float*>(buffers[2]);  // b3
  (void)extents;
  #pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; (c0 <= 49151); c0 += 1) {
    {  // init
      const float t0 = 0.0f;
      b2[c0] = t0;
    }
  }
  #pragma omp parallel for collapse(2) schedule(static)
  for (int64_t c0 = 0; (c0 <= 1); c0 += 1) {
    for (int64_t c1 = 0; (c1 <= 127); c1 += 1) {
      {  // COLUMN
        const int64_t weft_rlo = 0, weft_rhi = weft_imax(64, 0);
        const int64_t weft_klo = 0, weft_khi = weft_imax(192, 0);
        {
          const int64_t weft_kb = weft_klo, weft_ke = weft_khi;
          {
            int64_t weft_kr = weft_kb;
            for (; weft_kr + 192 <= weft_ke; weft_kr += 192) {  // 192 columns in 12 register chains
              float weft_reg[192];
              for (int64_t weft_l = 0; weft_l < 192; weft_l += 1) weft_reg[weft_l] = 0.0f;
              for (int64_t c2 = weft_rlo; c2 < weft_rhi; c2 += 1) {
                #pragma omp simd
                for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 128 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 192 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 128 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 192 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 32; weft_l < 48; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 128 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 192 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 128 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 192 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 64; weft_l < 80; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 128 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 192 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 80; weft_l < 96; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 128 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 192 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 96; weft_l < 112; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 128 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 192 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 112; weft_l < 128; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 128 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 192 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 128; weft_l < 144; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 128 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 192 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 144; weft_l < 160; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 128 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 192 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 160; weft_l < 176; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 128 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 192 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 176; weft_l < 192; weft_l += 1) {
                  const int64_t c3 = weft_kr + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 128 * 64 + c1 * 64 + c2];
                    const float t1 = b1[c2 * 192 + c3];
                    const float t2 = (t0 * t1);
                    weft_reg[weft_l] = weft_reg[weft_l] + t2;
                  }
                }
              }
              for (int64_t weft_l = 0; weft_l < 192; weft_l += 1) {
                const int64_t c3 = weft_kr + weft_l;
                b2[(24576 * c0 + 192 * c1 + c3)] = b2[(24576 * c0 + 192 * c1 + c3)] + weft_reg[weft_l];
              }
            }
            float weft_col[2048];
            for (int64_t c3 = weft_kr; c3 < weft_ke; c3 += 1) weft_col[c3 - weft_kr] = 0.0f;
            for (int64_t c2 = weft_rlo; c2 < weft_rhi; c2 += 1) {
              #pragma omp simd
              for (int64_t c3 = weft_kr; c3 < weft_ke; c3 += 1) {
                {  // multiply_add
                  const float t0 = b0[c0 * 128 * 64 + c1 * 64 + c2];
                  const float t1 = b1[c2 * 192 + c3];
                  const float t2 = (t0 * t1);
                  weft_col[c3 - weft_kr] = weft_col[c3 - weft_kr] + t2;
                }
              }
            }
            for (int64_t c3 = weft_kr; c3 < weft_ke; c3 += 1) b2[(24576 * c0 + 192 * c1 + c3)] = b2[(24576 * c0 + 192 * c1 + c3)] + weft_col[c3 - weft_kr];
          }
        }
      }
    }
  }
}

// kernel k1_Split
extern "C" void weft_k1_Split(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b0 = static_cast<const float*>(buffers[0]);  // b0
  float* b1 = static_cast<float*>(buffers[1]);  // b1
  float* b2 = static_cast<float*>(buffers[2]);  // b2
  float* b3 = static_cast<float*>(buffers[3]);  // b3
  const float* b4 = static_cast<const float*>(buffers[4]);  // b0_1
  float* __restrict__ b5 = static_cast<float*>(buffers[5]);  // b1_1
  const float* b6 = static_cast<const float*>(buffers[6]);  // b0_2
  float* __restrict__ b7 = static_cast<float*>(buffers[7]);  // b1_2
  const float* b8 = static_cast<const float*>(buffers[8]);  // b0_3
  float* __restrict__ b9 = static_cast<float*>(buffers[9]);  // b1_3
  (void)extents;
  #pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; (c0 <= 1); c0 += 1) {
    for (int64_t c1 = 0; (c1 <= 127); c1 += 1) {
      {
        int64_t weft_p = 0;
        for (; weft_p + 16 <= 64; weft_p += 16) {  // blocks of 16, each prefetching the next row's
          __builtin_prefetch(&b1[(c0 + 1) * 128 * 64 + c1 * 64 + weft_p], 1, 3);
          #pragma omp simd
          for (int64_t c2 = weft_p; c2 < weft_p + 16; c2 += 1) {
            {  // split
              const float t0 = b0[c0 * 128 * 192 + c1 * 192 + c2];
              b1[c0 * 128 * 64 + c1 * 64 + c2] = t0;
            }
          }
        }
      }
    }
    for (int64_t c1 = 0; (c1 <= 127); c1 += 1) {
      {
        int64_t weft_p = 0;
        for (; weft_p + 16 <= 64; weft_p += 16) {  // blocks of 16, each prefetching the next row's
          __builtin_prefetch(&b0[(c0 + 1) * 128 * 192 + c1 * 192 + (weft_p + 64)], 0, 3); __builtin_prefetch(&b2[(c0 + 1) * 128 * 64 + c1 * 64 + weft_p], 1, 3);
          #pragma omp simd
          for (int64_t c2 = weft_p; c2 < weft_p + 16; c2 += 1) {
            {  // split
              const float t0 = b0[c0 * 128 * 192 + c1 * 192 + (c2 + 64)];
              b2[c0 * 128 * 64 + c1 * 64 + c2] = t0;
            }
          }
        }
      }
    }
    for (int64_t c1 = 0; (c1 <= 127); c1 += 1) {
      {
        int64_t weft_p = 0;
        for (; weft_p + 16 <= 64; weft_p += 16) {  // blocks of 16, each prefetching the next row's
          __builtin_prefetch(&b0[(c0 + 1) * 128 * 192 + c1 * 192 + (weft_p + 128)], 0, 3); __builtin_prefetch(&b3[(c0 + 1) * 128 * 64 + c1 * 64 + weft_p], 1, 3);
          #pragma omp simd
          for (int64_t c2 = weft_p; c2 < weft_p + 16; c2 += 1) {
            {  // split
              const float t0 = b0[c0 * 128 * 192 + c1 * 192 + (c2 + 128)];
              b3[c0 * 128 * 64 + c1 * 64 + c2] = t0;
            }
          }
        }
      }
    }
    for (int64_t c1 = 0; (c1 <= 3); c1 += 1) {
      for (int64_t c2 = 0; (c2 <= 127); c2 += 1) {
        {
          int64_t weft_p = 0;
          for (; weft_p + 16 <= 16; weft_p += 16) {  // blocks of 16, each prefetching the next row's
            __builtin_prefetch(&b5[(c0 + 1) * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + weft_p], 1, 3);
            #pragma omp simd
            for (int64_t c3 = weft_p; c3 < weft_p + 16; c3 += 1) {
              {  // transpose
                const float t0 = b4[c0 * 128 * 4 * 16 + c2 * 4 * 16 + c1 * 16 + c3];
                b5[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + c3] = t0;
              }
            }
          }
        }
      }
    }
    for (int64_t c1 = 0; (c1 <= 3); c1 += 1) {
      for (int64_t c2 = 0; (c2 <= 15); c2 += 1) {
        {
          int64_t weft_p = 0;
          for (; weft_p + 16 <= 128; weft_p += 16) {  // blocks of 16, each prefetching the next row's
            __builtin_prefetch(&b7[(c0 + 1) * 4 * 16 * 128 + c1 * 16 * 128 + c2 * 128 + weft_p], 1, 3);
            #pragma omp simd
            for (int64_t c3 = weft_p; c3 < weft_p + 16; c3 += 1) {
              {  // transpose
                const float t0 = b6[c0 * 128 * 4 * 16 + c3 * 4 * 16 + c1 * 16 + c2];
                b7[c0 * 4 * 16 * 128 + c1 * 16 * 128 + c2 * 128 + c3] = t0;
              }
            }
          }
        }
      }
    }
    for (int64_t c1 = 0; (c1 <= 3); c1 += 1) {
      for (int64_t c2 = 0; (c2 <= 127); c2 += 1) {
        {
          int64_t weft_p = 0;
          for (; weft_p + 16 <= 16; weft_p += 16) {  // blocks of 16, each prefetching the next row's
            __builtin_prefetch(&b9[(c0 + 1) * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + weft_p], 1, 3);
            #pragma omp simd
            for (int64_t c3 = weft_p; c3 < weft_p + 16; c3 += 1) {
              {  // transpose
                const float t0 = b8[c0 * 128 * 4 * 16 + c2 * 4 * 16 + c1 * 16 + c3];
                b9[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + c3] = t0;
              }
            }
          }
        }
      }
    }
  }
}

// kernel k8_MatMul
extern "C" void weft_k8_MatMul(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b0 = static_cast<const float*>(buffers[0]);  // b0
  const float* __restrict__ b1 = static_cast<const float*>(buffers[1]);  // b1
  float* __restrict__ b2 = static_cast<float*>(buffers[2]);  // b3
  (void)extents;
  #pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; (c0 <= 131071); c0 += 1) {
    {  // init
      const float t0 = 0.0f;
      b2[c0] = t0;
    }
  }
  #pragma omp parallel for collapse(2) schedule(static)
  for (int64_t c0 = 0; (c0 <= 1); c0 += 1) {
    for (int64_t c1 = 0; (c1 <= 3); c1 += 1) {
      for (int64_t c2 = 0; (c2 <= 127); c2 += 1) {
        {  // COLUMN
          const int64_t weft_rlo = 0, weft_rhi = weft_imax(16, 0);
          const int64_t weft_klo = 0, weft_khi = weft_imax(128, 0);
          {
            const int64_t weft_kb = weft_klo, weft_ke = weft_khi;
            {
              int64_t weft_kr = weft_kb;
              for (; weft_kr + 128 <= weft_ke; weft_kr += 128) {  // 128 columns in 8 register chains
                float weft_reg[128];
                for (int64_t weft_l = 0; weft_l < 128; weft_l += 1) weft_reg[weft_l] = 0.0f;
                for (int64_t c3 = weft_rlo; c3 < weft_rhi; c3 += 1) {
                  #pragma omp simd
                  for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
                    const int64_t c4 = weft_kr + weft_l;
                    {  // multiply_add
                      const float t0 = b0[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + c3];
                      const float t1 = b1[c0 * 4 * 16 * 128 + c1 * 16 * 128 + c3 * 128 + c4];
                      const float t2 = (t0 * t1);
                      weft_reg[weft_l] = weft_reg[weft_l] + t2;
                    }
                  }
                  #pragma omp simd
                  for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
                    const int64_t c4 = weft_kr + weft_l;
                    {  // multiply_add
                      const float t0 = b0[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + c3];
                      const float t1 = b1[c0 * 4 * 16 * 128 + c1 * 16 * 128 + c3 * 128 + c4];
                      const float t2 = (t0 * t1);
                      weft_reg[weft_l] = weft_reg[weft_l] + t2;
                    }
                  }
                  #pragma omp simd
                  for (int64_t weft_l = 32; weft_l < 48; weft_l += 1) {
                    const int64_t c4 = weft_kr + weft_l;
                    {  // multiply_add
                      const float t0 = b0[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + c3];
                      const float t1 = b1[c0 * 4 * 16 * 128 + c1 * 16 * 128 + c3 * 128 + c4];
                      const float t2 = (t0 * t1);
                      weft_reg[weft_l] = weft_reg[weft_l] + t2;
                    }
                  }
                  #pragma omp simd
                  for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {
                    const int64_t c4 = weft_kr + weft_l;
                    {  // multiply_add
                      const float t0 = b0[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + c3];
                      const float t1 = b1[c0 * 4 * 16 * 128 + c1 * 16 * 128 + c3 * 128 + c4];
                      const float t2 = (t0 * t1);
                      weft_reg[weft_l] = weft_reg[weft_l] + t2;
                    }
                  }
                  #pragma omp simd
                  for (int64_t weft_l = 64; weft_l < 80; weft_l += 1) {
                    const int64_t c4 = weft_kr + weft_l;
                    {  // multiply_add
                      const float t0 = b0[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + c3];
                      const float t1 = b1[c0 * 4 * 16 * 128 + c1 * 16 * 128 + c3 * 128 + c4];
                      const float t2 = (t0 * t1);
                      weft_reg[weft_l] = weft_reg[weft_l] + t2;
                    }
                  }
                  #pragma omp simd
                  for (int64_t weft_l = 80; weft_l < 96; weft_l += 1) {
                    const int64_t c4 = weft_kr + weft_l;
                    {  // multiply_add
                      const float t0 = b0[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + c3];
                      const float t1 = b1[c0 * 4 * 16 * 128 + c1 * 16 * 128 + c3 * 128 + c4];
                      const float t2 = (t0 * t1);
                      weft_reg[weft_l] = weft_reg[weft_l] + t2;
                    }
                  }
                  #pragma omp simd
                  for (int64_t weft_l = 96; weft_l < 112; weft_l += 1) {
                    const int64_t c4 = weft_kr + weft_l;
                    {  // multiply_add
                      const float t0 = b0[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + c3];
                      const float t1 = b1[c0 * 4 * 16 * 128 + c1 * 16 * 128 + c3 * 128 + c4];
                      const float t2 = (t0 * t1);
                      weft_reg[weft_l] = weft_reg[weft_l] + t2;
                    }
                  }
                  #pragma omp simd
                  for (int64_t weft_l = 112; weft_l < 128; weft_l += 1) {
                    const int64_t c4 = weft_kr + weft_l;
                    {  // multiply_add
                      const float t0 = b0[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + c3];
                      const float t1 = b1[c0 * 4 * 16 * 128 + c1 * 16 * 128 + c3 * 128 + c4];
                      const float t2 = (t0 * t1);
                      weft_reg[weft_l] = weft_reg[weft_l] + t2;
                    }
                  }
                }
                for (int64_t weft_l = 0; weft_l < 128; weft_l += 1) {
                  const int64_t c4 = weft_kr + weft_l;
                  b2[(65536 * c0 + 16384 * c1 + 128 * c2 + c4)] = b2[(65536 * c0 + 16384 * c1 + 128 * c2 + c4)] + weft_reg[weft_l];
                }
              }
              float weft_col[2048];
              for (int64_t c4 = weft_kr; c4 < weft_ke; c4 += 1) weft_col[c4 - weft_kr] = 0.0f;
              for (int64_t c3 = weft_rlo; c3 < weft_rhi; c3 += 1) {
                #pragma omp simd
                for (int64_t c4 = weft_kr; c4 < weft_ke; c4 += 1) {
                  {  // multiply_add
                    const float t0 = b0[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c2 * 16 + c3];
                    const float t1 = b1[c0 * 4 * 16 * 128 + c1 * 16 * 128 + c3 * 128 + c4];
                    const float t2 = (t0 * t1);
                    weft_col[c4 - weft_kr] = weft_col[c4 - weft_kr] + t2;
                  }
                }
              }
              for (int64_t c4 = weft_kr; c4 < weft_ke; c4 += 1) b2[(65536 * c0 + 16384 * c1 + 128 * c2 + c4)] = b2[(65536 * c0 + 16384 * c1 + 128 * c2 + c4)] + weft_col[c4 - weft_kr];
            }
          }
        }
      }
    }
  }
}

// kernel k10_Softmax
extern "C" void weft_k10_Softmax(void* const* buffers, const int64_t* extents) {
  float* __restrict__ b0 = static_cast<float*>(buffers[0]);  // b1
  float* __restrict__ b1 = static_cast<float*>(buffers[1]);  // t2
  float* __restrict__ b2 = static_cast<float*>(buffers[2]);  // t3
  const float* __restrict__ b3 = static_cast<const float*>(buffers[3]);  // b0_1
  const float* __restrict__ b4 = static_cast<const float*>(buffers[4]);  // b1_1
  (void)extents;
  #pragma omp parallel for collapse(2) schedule(static)
  for (int64_t c0 = 0; (c0 <= 1); c0 += 1) {
    for (int64_t c1 = 0; (c1 <= 3); c1 += 1) {
      for (int64_t c2 = 0; (c2 <= 127); c2 += 1) {
        {  // init
          const float t0 = static_cast<float>(-INFINITY);
          b1[(512 * c0 + 128 * c1 + c2)] = t0;
        }
        {  // ROW: 64 lanes
          const int64_t weft_lo = 0, weft_hi = 128;
          float weft_acc = b1[(512 * c0 + 128 * c1 + c2)];
          for (int64_t weft_b = weft_lo; weft_b < weft_hi; weft_b += 8192) {  // cascade: blocks of 8192
            const int64_t weft_e = weft_imin(weft_b + 8192, weft_hi);
            float weft_lane[64];
            for (int64_t weft_l = 0; weft_l < 64; weft_l += 1) weft_lane[weft_l] = static_cast<float>(-INFINITY);
            int64_t weft_i = weft_b;
            for (; weft_i + 64 <= weft_e; weft_i += 64) {  // 4 chains
              #pragma omp simd
              for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
                const int64_t c3 = weft_i + weft_l;
                {  // update
                  const float t0 = b3[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3];
                  const float t1 = b4[0];
                  const float t2 = (t0 * t1);
                  weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], t2);
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
                const int64_t c3 = weft_i + weft_l;
                {  // update
                  const float t0 = b3[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3];
                  const float t1 = b4[0];
                  const float t2 = (t0 * t1);
                  weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], t2);
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 32; weft_l < 48; weft_l += 1) {
                const int64_t c3 = weft_i + weft_l;
                {  // update
                  const float t0 = b3[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3];
                  const float t1 = b4[0];
                  const float t2 = (t0 * t1);
                  weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], t2);
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {
                const int64_t c3 = weft_i + weft_l;
                {  // update
                  const float t0 = b3[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3];
                  const float t1 = b4[0];
                  const float t2 = (t0 * t1);
                  weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], t2);
                }
              }
            }
            for (; weft_i + 16 <= weft_e; weft_i += 16) {
              #pragma omp simd
              for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
                const int64_t c3 = weft_i + weft_l;
                {  // update
                  const float t0 = b3[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3];
                  const float t1 = b4[0];
                  const float t2 = (t0 * t1);
                  weft_lane[weft_l] = weft_shift_max(weft_lane[weft_l], t2);
                }
              }
            }
            for (int64_t weft_l = 0; weft_i + weft_l < weft_e; weft_l += 1) {  // the tail
              const int64_t c3 = weft_i + weft_l;
              {  // update
                const float t0 = b3[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3];
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
          b1[(512 * c0 + 128 * c1 + c2)] = weft_acc;
        }
        {  // init_sum
          const float t0 = 0.0f;
          b2[(512 * c0 + 128 * c1 + c2)] = t0;
        }
        if ((0 <= 127)) {  // loads (and ops on them) that do not move with c3 are hoisted
          const float weft_h1 = b4[0];
          const float weft_h3 = b1[(512 * c0 + 128 * c1 + c2)];
          {
            int64_t weft_p = 0;
            for (; weft_p + 16 <= 128; weft_p += 16) {  // blocks of 16, each prefetching the next row's
              __builtin_prefetch(&b3[c0 * 4 * 128 * 128 + c1 * 128 * 128 + (c2 + 4) * 128 + weft_p], 0, 3); __builtin_prefetch(&b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + (c2 + 4) * 128 + weft_p], 1, 3);
              #pragma omp simd
              for (int64_t c3 = weft_p; c3 < weft_p + 16; c3 += 1) {
                {  // exp
                  const float t0 = b3[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3];
                  const float t1 = weft_h1;
                  const float t2 = (t0 * t1);
                  const float t3 = weft_h3;
                  const float t4 = (t2 - t3);
                  const float t5 = weft_shifted_exp(t4);
                  b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3] = t5;
                }
              }
            }
          }
        }
        {  // ROW: 64 lanes
          const int64_t weft_lo = 0, weft_hi = 128;
          double weft_acc = b2[(512 * c0 + 128 * c1 + c2)];
          for (int64_t weft_b = weft_lo; weft_b < weft_hi; weft_b += 8192) {  // cascade: blocks of 8192
            const int64_t weft_e = weft_imin(weft_b + 8192, weft_hi);
            float weft_lane[64];
            for (int64_t weft_l = 0; weft_l < 64; weft_l += 1) weft_lane[weft_l] = 0.0f;
            int64_t weft_i = weft_b;
            for (; weft_i + 64 <= weft_e; weft_i += 64) {  // 4 chains
              #pragma omp simd
              for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
                const int64_t c3 = weft_i + weft_l;
                {  // sum_exp
                  const float t0 = b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3];
                  weft_lane[weft_l] = weft_lane[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
                const int64_t c3 = weft_i + weft_l;
                {  // sum_exp
                  const float t0 = b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3];
                  weft_lane[weft_l] = weft_lane[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 32; weft_l < 48; weft_l += 1) {
                const int64_t c3 = weft_i + weft_l;
                {  // sum_exp
                  const float t0 = b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3];
                  weft_lane[weft_l] = weft_lane[weft_l] + t0;
                }
              }
              #pragma omp simd
              for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {
                const int64_t c3 = weft_i + weft_l;
                {  // sum_exp
                  const float t0 = b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3];
                  weft_lane[weft_l] = weft_lane[weft_l] + t0;
                }
              }
            }
            for (; weft_i + 16 <= weft_e; weft_i += 16) {
              #pragma omp simd
              for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
                const int64_t c3 = weft_i + weft_l;
                {  // sum_exp
                  const float t0 = b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3];
                  weft_lane[weft_l] = weft_lane[weft_l] + t0;
                }
              }
            }
            for (int64_t weft_l = 0; weft_i + weft_l < weft_e; weft_l += 1) {  // the tail
              const int64_t c3 = weft_i + weft_l;
              {  // sum_exp
                const float t0 = b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3];
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
          b2[(512 * c0 + 128 * c1 + c2)] = weft_acc;
        }
        {  // reciprocal
          const float t0 = 1.0f;
          const float t1 = b2[(512 * c0 + 128 * c1 + c2)];
          const float t2 = (t0 / t1);
          b2[(512 * c0 + 128 * c1 + c2)] = t2;
        }
        if ((0 <= 127)) {  // loads (and ops on them) that do not move with c3 are hoisted
          const float weft_h1 = b2[(512 * c0 + 128 * c1 + c2)];
          #pragma omp simd
          for (int64_t c3 = 0; (c3 <= 127); c3 += 1) {
            {  // normalize
              const float t0 = b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3];
              const float t1 = weft_h1;
              const float t2 = (t0 * t1);
              b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c3] = t2;
            }
          }
        }
      }
    }
  }
}

// kernel k11_MatMul
extern "C" void weft_k11_MatMul(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b0 = static_cast<const float*>(buffers[0]);  // b0
  const float* __restrict__ b1 = static_cast<const float*>(buffers[1]);  // b1
  float* __restrict__ b2 = static_cast<float*>(buffers[2]);  // b3
  (void)extents;
  #pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; (c0 <= 16383); c0 += 1) {
    {  // init
      const float t0 = 0.0f;
      b2[c0] = t0;
    }
  }
  #pragma omp parallel for collapse(2) schedule(static)
  for (int64_t c0 = 0; (c0 <= 1); c0 += 1) {
    for (int64_t c1 = 0; (c1 <= 3); c1 += 1) {
      for (int64_t c2 = 0; (c2 <= 127); c2 += 1) {
        for (int64_t c3 = 0; (c3 <= 15); c3 += 1) {
          {  // ROW: 64 lanes
            const int64_t weft_lo = 0, weft_hi = 128;
            double weft_acc = b2[(8192 * c0 + 2048 * c1 + 16 * c2 + c3)];
            for (int64_t weft_b = weft_lo; weft_b < weft_hi; weft_b += 8192) {  // cascade: blocks of 8192
              const int64_t weft_e = weft_imin(weft_b + 8192, weft_hi);
              float weft_lane[64];
              for (int64_t weft_l = 0; weft_l < 64; weft_l += 1) weft_lane[weft_l] = 0.0f;
              int64_t weft_i = weft_b;
              for (; weft_i + 64 <= weft_e; weft_i += 64) {  // 4 chains
                #pragma omp simd
                for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
                  const int64_t c4 = weft_i + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c4];
                    const float t1 = b1[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c4 * 16 + c3];
                    const float t2 = (t0 * t1);
                    weft_lane[weft_l] = weft_lane[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
                  const int64_t c4 = weft_i + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c4];
                    const float t1 = b1[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c4 * 16 + c3];
                    const float t2 = (t0 * t1);
                    weft_lane[weft_l] = weft_lane[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 32; weft_l < 48; weft_l += 1) {
                  const int64_t c4 = weft_i + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c4];
                    const float t1 = b1[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c4 * 16 + c3];
                    const float t2 = (t0 * t1);
                    weft_lane[weft_l] = weft_lane[weft_l] + t2;
                  }
                }
                #pragma omp simd
                for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {
                  const int64_t c4 = weft_i + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c4];
                    const float t1 = b1[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c4 * 16 + c3];
                    const float t2 = (t0 * t1);
                    weft_lane[weft_l] = weft_lane[weft_l] + t2;
                  }
                }
              }
              for (; weft_i + 16 <= weft_e; weft_i += 16) {
                #pragma omp simd
                for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
                  const int64_t c4 = weft_i + weft_l;
                  {  // multiply_add
                    const float t0 = b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c4];
                    const float t1 = b1[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c4 * 16 + c3];
                    const float t2 = (t0 * t1);
                    weft_lane[weft_l] = weft_lane[weft_l] + t2;
                  }
                }
              }
              for (int64_t weft_l = 0; weft_i + weft_l < weft_e; weft_l += 1) {  // the tail
                const int64_t c4 = weft_i + weft_l;
                {  // multiply_add
                  const float t0 = b0[c0 * 4 * 128 * 128 + c1 * 128 * 128 + c2 * 128 + c4];
                  const float t1 = b1[c0 * 4 * 128 * 16 + c1 * 128 * 16 + c4 * 16 + c3];
                  const float t2 = (t0 * t1);
                  weft_lane[weft_l] = weft_lane[weft_l] + t2;
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
            b2[(8192 * c0 + 2048 * c1 + 16 * c2 + c3)] = weft_acc;
          }
        }
      }
    }
  }
}

// kernel k12_Transpose
extern "C" void weft_k12_Transpose(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b0 = static_cast<const float*>(buffers[0]);  // b0
  float* b1 = static_cast<float*>(buffers[1]);  // b1
  const float* __restrict__ b2 = static_cast<const float*>(buffers[2]);  // b1_1
  const float* __restrict__ b3 = static_cast<const float*>(buffers[3]);  // b2
  float* b4 = static_cast<float*>(buffers[4]);  // b3
  const float* b7 = static_cast<const float*>(buffers[7]);  // b0_1
  const float* __restrict__ b8 = static_cast<const float*>(buffers[8]);  // b1_1_1
  const float* b9 = static_cast<const float*>(buffers[9]);  // b0_2
  float* __restrict__ b10 = static_cast<float*>(buffers[10]);  // t1
  float* __restrict__ b11 = static_cast<float*>(buffers[11]);  // b2_1
  (void)extents;
  #pragma omp parallel for collapse(2) schedule(static)
  for (int64_t c0 = 0; (c0 <= 1); c0 += 1) {
    for (int64_t c1 = 0; (c1 <= 127); c1 += 1) {
      for (int64_t c2 = 0; (c2 <= 3); c2 += 1) {
        #pragma omp simd
        for (int64_t c3 = 0; (c3 <= 15); c3 += 1) {
          {  // transpose
            const float t0 = b0[c0 * 4 * 128 * 16 + c2 * 128 * 16 + c1 * 16 + c3];
            b1[c0 * 128 * 4 * 16 + c1 * 4 * 16 + c2 * 16 + c3] = t0;
          }
        }
      }
    }
  }
  #pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; (c0 <= 255); c0 += 1) {
    alignas(64) float b5[1];  // t4: one iteration's, contracted
    alignas(64) float b6[1];  // t5: one iteration's, contracted
    {  // init
      const float t0 = 0.0f;
      b5[0] = t0;
    }
    {  // accumulate in a register
      float acc = b5[0];
      #pragma omp simd reduction(+ : acc)
      for (int64_t c1 = 0; (c1 <= 63); c1 += 1) {  // reduction
        {  // update
          const float t0 = b7[c0 * 64 + c1];
          const float t1 = b8[c0 * 64 + c1];
          const float t2 = (t0 + t1);
          acc = acc + t2;
        }
      }
      b5[0] = acc;
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
    {  // accumulate in a register
      float acc = b6[0];
      #pragma omp simd reduction(+ : acc)
      for (int64_t c1 = 0; (c1 <= 63); c1 += 1) {  // reduction
        {  // sum_squares
          const float t0 = b7[c0 * 64 + c1];
          const float t1 = b8[c0 * 64 + c1];
          const float t2 = (t0 + t1);
          const float t3 = b5[0];
          const float t4 = (t2 - t3);
          const float t5 = (t4 * t4);
          acc = acc + t5;
        }
      }
      b6[0] = acc;
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
    {
      int64_t weft_p = 0;
      for (; weft_p + 16 <= 64; weft_p += 16) {  // blocks of 16, each prefetching the next row's
        __builtin_prefetch(&b7[(c0 + 8) * 64 + weft_p], 0, 3); __builtin_prefetch(&b8[(c0 + 8) * 64 + weft_p], 0, 3); __builtin_prefetch(&b4[(c0 + 8) * 64 + weft_p], 1, 3);
        #pragma omp simd
        for (int64_t c1 = weft_p; c1 < weft_p + 16; c1 += 1) {
          {  // normalize
            const float t0 = b7[c0 * 64 + c1];
            const float t1 = b8[c0 * 64 + c1];
            const float t2 = (t0 + t1);
            const float t3 = b5[0];
            const float t4 = (t2 - t3);
            const float t5 = b6[0];
            const float t6 = (t4 * t5);
            const float t7 = b2[c1];
            const float t8 = (t6 * t7);
            const float t9 = b3[c1];
            const float t10 = (t8 + t9);
            b4[c0 * 64 + c1] = t10;
          }
        }
      }
    }
  }
  #pragma omp parallel for collapse(2) schedule(static)
  for (int64_t c0 = 0; (c0 <= 1); c0 += 1) {
    for (int64_t c1 = 0; (c1 <= 127); c1 += 1) {
      {  // init
        const float t0 = 0.0f;
        b10[(128 * c0 + c1)] = t0;
      }
      {  // accumulate in a register
        float acc = b10[(128 * c0 + c1)];
        #pragma omp simd reduction(+ : acc)
        for (int64_t c2 = 0; (c2 <= 63); c2 += 1) {  // reduction
          {  // update
            const float t0 = b9[c0 * 128 * 64 + c1 * 64 + c2];
            acc = acc + t0;
          }
        }
        b10[(128 * c0 + c1)] = acc;
      }
      {  // finish
        const float t0 = b10[(128 * c0 + c1)];
        b11[c0 * 128 + c1] = t0;
      }
    }
  }
}
