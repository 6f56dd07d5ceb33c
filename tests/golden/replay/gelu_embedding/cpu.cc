
// kernel k1_MatMul
extern "C" void weft_k1_MatMul(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b0 = static_cast<const float*>(buffers[0]);  // b1
  float* __restrict__ b1 = static_cast<float*>(buffers[1]);  // b3
  const int64_t* __restrict__ b2 = static_cast<const int64_t*>(buffers[2]);  // b1_1
  const float* __restrict__ b3 = static_cast<const float*>(buffers[3]);  // b0_1
  (void)extents;
  #pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; (c0 <= 8191); c0 += 1) {
    {  // init
      const float t0 = 0.0f;
      b1[c0] = t0;
    }
  }
  #pragma omp parallel for collapse(2) schedule(static)
  for (int64_t c0 = 0; (c0 <= 3); c0 += 1) {
    for (int64_t c1 = 0; (c1 <= 15); c1 += 1) {
      for (int64_t c2 = 0; (c2 <= 127); c2 += 1) {
        {  // accumulate in a register
          float acc = b1[(2048 * c0 + 128 * c1 + c2)];
          #pragma omp simd reduction(+ : acc)
          for (int64_t c3 = 0; (c3 <= 63); c3 += 1) {  // reduction
            {  // multiply_add
              const int64_t t0 = b2[c0 * 16 + c1];
              const float t1 = b3[weft_wrap_index(t0, 100) * 64 + c3];
              const float t2 = b0[c3 * 128 + c2];
              const float t3 = (t1 * t2);
              acc = acc + t3;
            }
          }
          b1[(2048 * c0 + 128 * c1 + c2)] = acc;
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
