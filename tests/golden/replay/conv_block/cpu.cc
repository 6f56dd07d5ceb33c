
// kernel k0_Conv
extern "C" void weft_k0_Conv(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b0 = static_cast<const float*>(buffers[0]);  // b0
  const float* __restrict__ b1 = static_cast<const float*>(buffers[1]);  // b1
  const float* __restrict__ b2 = static_cast<const float*>(buffers[2]);  // b2
  float* __restrict__ b3 = static_cast<float*>(buffers[3]);  // b3
  (void)extents;
  #pragma omp parallel for collapse(2) schedule(static)
  for (int64_t c2 = 0; (c2 <= 15); c2 += 1) {
    for (int64_t c3 = 0; (c3 <= 15); c3 += 1) {
      for (int64_t c4 = 0; (c4 <= 15); c4 += 1) {
        {  // init
          const float t0 = b2[(16 * 0 + c2)];
          b3[0 * 16 * 16 * 16 + (16 * 0 + c2) * 16 * 16 + c3 * 16 + c4] = t0;
        }
        for (int64_t c5 = 0; (c5 <= 7); c5 += 1) {  // reduction
          for (int64_t c6 = weft_imax(0, ((-c3) + 1)); (c6 <= weft_imin(2, ((-c3) + 16))); c6 += 1) {  // reduction
            {  // accumulate in a register
              float acc = b3[0 * 16 * 16 * 16 + (16 * 0 + c2) * 16 * 16 + c3 * 16 + c4];
              #pragma omp simd reduction(+ : acc)
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
  }
}

// kernel k3_MaxPool
extern "C" void weft_k3_MaxPool(void* const* buffers, const int64_t* extents) {
  float* __restrict__ b0 = static_cast<float*>(buffers[0]);  // b1
  const float* __restrict__ b1 = static_cast<const float*>(buffers[1]);  // b0_1
  const float* __restrict__ b2 = static_cast<const float*>(buffers[2]);  // b4
  const float* __restrict__ b3 = static_cast<const float*>(buffers[3]);  // b3
  const float* __restrict__ b4 = static_cast<const float*>(buffers[4]);  // b1_1
  const float* __restrict__ b5 = static_cast<const float*>(buffers[5]);  // b2
  (void)extents;
  #pragma omp parallel for collapse(2) schedule(static)
  for (int64_t c1 = 0; (c1 <= 15); c1 += 1) {
    for (int64_t c2 = 0; (c2 <= 7); c2 += 1) {
      for (int64_t c3 = 0; (c3 <= 7); c3 += 1) {
        {  // init
          const float t0 = static_cast<float>(-INFINITY);
          b0[0 * 16 * 8 * 8 + c1 * 8 * 8 + c2 * 8 + c3] = t0;
        }
        for (int64_t c4 = 0; (c4 <= 1); c4 += 1) {  // reduction
          {  // accumulate in a register
            float acc = b0[0 * 16 * 8 * 8 + c1 * 8 * 8 + c2 * 8 + c3];
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
            b0[0 * 16 * 8 * 8 + c1 * 8 * 8 + c2 * 8 + c3] = acc;
          }
        }
      }
    }
  }
}

// kernel k4_GlobalAveragePool
extern "C" void weft_k4_GlobalAveragePool(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b0 = static_cast<const float*>(buffers[0]);  // b0
  float* __restrict__ b2 = static_cast<float*>(buffers[2]);  // b2
  (void)extents;
  for (int64_t c1 = 0; (c1 <= 15); c1 += 1) {
    alignas(64) float b1[1];  // t1: one iteration's, contracted
    {  // init
      const float t0 = 0.0f;
      b1[0] = t0;
    }
    {  // accumulate in a register
      float acc = b1[0];
      #pragma omp simd reduction(+ : acc)
      for (int64_t c2 = 0; (c2 <= 63); c2 += 1) {  // reduction
        {  // update
          const float t0 = b0[0 * 16 * 64 + c1 * 64 + c2];
          acc = acc + t0;
        }
      }
      b1[0] = acc;
    }
    {  // finish
      const float t0 = b1[0];
      const float t1 = 64.0f;
      const float t2 = (t0 / t1);
      b2[0 * 16 + c1] = t2;
    }
  }
}
