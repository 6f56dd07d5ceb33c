#include <gtest/gtest.h>

#include "tests/testing/kernels.h"
#include "weft/codegen/emit_c.h"
#include "weft/codegen/emit_c_testing.h"
#include "weft/kernel/kernel_text.h"
#include "weft/poly/schedule_kernel.h"

namespace weft::codegen {
namespace {

// ROW: rows over the threads; each row in 32 lanes (a pairwise tree combines them) over
// cascade blocks of 4096, joining a float64 total.
TEST(EmitC, RowSumGolden) {
  EXPECT_EQ(function_of(testing::row_sum_kernel(Dim::symbol("N"), 1024)),
            R"(// kernel row_sum
extern "C" void weft_row_sum(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b0 = static_cast<const float*>(buffers[0]);  // x
  float* __restrict__ b1 = static_cast<float*>(buffers[1]);  // y
  const int64_t s0 = extents[0];  // N
  (void)extents;
  #pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; (c0 < s0); c0 += 1) {
    {  // init
      const float t0 = 0.0f;
      b1[c0] = t0;
    }
    {  // ROW: 32 lanes
      const int64_t weft_lo = 0, weft_hi = 1024;
      double weft_acc = b1[c0];
      for (int64_t weft_b = weft_lo; weft_b < weft_hi; weft_b += 4096) {  // cascade: blocks of 4096
        const int64_t weft_e = weft_imin(weft_b + 4096, weft_hi);
        float weft_lane[32];
        for (int64_t weft_l = 0; weft_l < 32; weft_l += 1) weft_lane[weft_l] = 0.0f;
        int64_t weft_i = weft_b;
        for (; weft_i + 32 <= weft_e; weft_i += 32) {  // 2 chains
          #pragma omp simd
          for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // update
              const float t0 = b0[c0 * 1024 + c1];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // update
              const float t0 = b0[c0 * 1024 + c1];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
        }
        for (; weft_i + 16 <= weft_e; weft_i += 16) {
          #pragma omp simd
          for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
            const int64_t c1 = weft_i + weft_l;
            {  // update
              const float t0 = b0[c0 * 1024 + c1];
              weft_lane[weft_l] = weft_lane[weft_l] + t0;
            }
          }
        }
        for (int64_t weft_l = 0; weft_i + weft_l < weft_e; weft_l += 1) {  // the tail
          const int64_t c1 = weft_i + weft_l;
          {  // update
            const float t0 = b0[c0 * 1024 + c1];
            weft_lane[weft_l] = weft_lane[weft_l] + t0;
          }
        }
        // pairwise tree over the lanes
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
      b1[c0] = weft_acc;
    }
  }
}
)");
}

// COLUMN: at run time, R split across threads (a partial row each, combined in thread order)
// or K split in chunks of 2048 columns; K is the vector loop, blocks of 128 rows cascade.
TEST(EmitC, ColumnSumGolden) {
  EXPECT_EQ(function_of(testing::column_sum_kernel(Dim::symbol("R"), Dim::symbol("K"))),
            R"(// kernel column_sum
extern "C" void weft_column_sum(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b0 = static_cast<const float*>(buffers[0]);  // x
  float* __restrict__ b1 = static_cast<float*>(buffers[1]);  // y
  const int64_t s0 = extents[0];  // K
  const int64_t s1 = extents[1];  // R
  (void)extents;
  #pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; (c0 < s0); c0 += 1) {
    {  // init
      const float t0 = 0.0f;
      b1[c0] = t0;
    }
  }
  {  // COLUMN: R split across threads with a partial row each, or K when wide
    const int64_t weft_rlo = 0, weft_rhi = weft_imax(s1, 0);
    const int64_t weft_klo = 0, weft_khi = weft_imax(s0, 0);
    const int64_t weft_r = weft_rhi - weft_rlo, weft_k = weft_khi - weft_klo;
    const int64_t weft_nt = weft_r * weft_k < 32768 ? 1 : weft_imin(omp_get_max_threads(), 256);
    // Threads read whole rows, each into its partial row (padded to 64 bytes, so that no
    // cache line is shared), unless K gives every thread a chunk of 2048 columns.
    const int64_t weft_kp = (weft_k + 15) / 16 * 16;
    double* weft_parts = nullptr;
    if (weft_nt > 1 && weft_k < 2048 * weft_nt)
      weft_parts = static_cast<double*>(weft_scratch(sizeof(double) * weft_nt * weft_kp));
    if (weft_parts == nullptr) {  // K split
      #pragma omp parallel for schedule(static) if (weft_nt > 1)
      for (int64_t weft_kb = weft_klo; weft_kb < weft_khi; weft_kb += 2048) {
        const int64_t weft_ke = weft_imin(weft_kb + 2048, weft_khi);
        {
          double weft_sum[2048];
          for (int64_t c1 = weft_kb; c1 < weft_ke; c1 += 1) weft_sum[c1 - weft_kb] = 0.0f;
          for (int64_t weft_rb = weft_rlo; weft_rb < weft_rhi; weft_rb += 128) {  // cascade: blocks of 128
            const int64_t weft_re = weft_imin(weft_rb + 128, weft_rhi);
            float weft_col[2048];
            for (int64_t c1 = weft_kb; c1 < weft_ke; c1 += 1) weft_col[c1 - weft_kb] = 0.0f;
            for (int64_t c0 = weft_rb; c0 < weft_re; c0 += 1) {
              #pragma omp simd
              for (int64_t c1 = weft_kb; c1 < weft_ke; c1 += 1) {
                {  // update
                  const float t0 = b0[c0 * s0 + c1];
                  weft_col[c1 - weft_kb] = weft_col[c1 - weft_kb] + t0;
                }
              }
            }
            for (int64_t c1 = weft_kb; c1 < weft_ke; c1 += 1) weft_sum[c1 - weft_kb] = weft_sum[c1 - weft_kb] + weft_col[c1 - weft_kb];
          }
          for (int64_t c1 = weft_kb; c1 < weft_ke; c1 += 1) b1[c1] = b1[c1] + weft_sum[c1 - weft_kb];
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
        for (int64_t weft_kb = weft_klo; weft_kb < weft_khi; weft_kb += 2048) {  // chunks of 2048 columns
          const int64_t weft_ke = weft_imin(weft_kb + 2048, weft_khi);
          {
            double weft_sum[2048];
            for (int64_t c1 = weft_kb; c1 < weft_ke; c1 += 1) weft_sum[c1 - weft_kb] = 0.0f;
            for (int64_t weft_rb = weft_from; weft_rb < weft_to; weft_rb += 128) {  // cascade: blocks of 128
              const int64_t weft_re = weft_imin(weft_rb + 128, weft_to);
              float weft_col[2048];
              for (int64_t c1 = weft_kb; c1 < weft_ke; c1 += 1) weft_col[c1 - weft_kb] = 0.0f;
              for (int64_t c0 = weft_rb; c0 < weft_re; c0 += 1) {
                #pragma omp simd
                for (int64_t c1 = weft_kb; c1 < weft_ke; c1 += 1) {
                  {  // update
                    const float t0 = b0[c0 * s0 + c1];
                    weft_col[c1 - weft_kb] = weft_col[c1 - weft_kb] + t0;
                  }
                }
              }
              for (int64_t c1 = weft_kb; c1 < weft_ke; c1 += 1) weft_sum[c1 - weft_kb] = weft_sum[c1 - weft_kb] + weft_col[c1 - weft_kb];
            }
            for (int64_t c1 = weft_kb; c1 < weft_ke; c1 += 1) weft_part[c1 - weft_klo] = weft_part[c1 - weft_klo] + weft_sum[c1 - weft_kb];
          }
        }
      }
      for (int64_t weft_c = 0; weft_c < weft_nt; weft_c += 1) {
        for (int64_t c1 = weft_klo; c1 < weft_khi; c1 += 1)
          b1[c1] = b1[c1] + weft_parts[weft_c * weft_kp + c1 - weft_klo];
      }
    }
  }
}
)");
}

// ALL: chunks over the threads, each reduced in lanes; partials combined in thread order.
TEST(EmitC, AllMaxGolden) {
  EXPECT_EQ(function_of(testing::all_max_kernel(Dim::symbol("N"))),
            R"(// kernel all_max
extern "C" void weft_all_max(void* const* buffers, const int64_t* extents) {
  const float* __restrict__ b0 = static_cast<const float*>(buffers[0]);  // x
  float* __restrict__ b1 = static_cast<float*>(buffers[1]);  // y
  const int64_t s0 = extents[0];  // N
  (void)extents;
  {  // init
    const float t0 = static_cast<float>(-INFINITY);
    b1[0] = t0;
  }
  {  // ALL: split across threads, partials combined in chunk order
    const int64_t weft_lo = 0, weft_hi = weft_imax(s0, 0);
    const int64_t weft_nt = weft_imax(1, weft_imin(weft_imin(omp_get_max_threads(), 256), (weft_hi - weft_lo) / 16384));
    const int64_t weft_chunk = ((weft_hi - weft_lo + weft_nt - 1) / weft_nt + 31) / 32 * 32;
    float weft_part[256];
    #pragma omp parallel if (weft_nt > 1)
    for (int64_t weft_c = omp_get_thread_num(); weft_c < weft_nt; weft_c += omp_get_num_threads()) {
      const int64_t weft_from = weft_imin(weft_lo + weft_c * weft_chunk, weft_hi);
      const int64_t weft_to = weft_imin(weft_from + weft_chunk, weft_hi);
      float weft_acc = static_cast<float>(-INFINITY);
      for (int64_t weft_b = weft_from; weft_b < weft_to; weft_b += 4096) {  // cascade: blocks of 4096
        const int64_t weft_e = weft_imin(weft_b + 4096, weft_to);
        float weft_lane[32];
        for (int64_t weft_l = 0; weft_l < 32; weft_l += 1) weft_lane[weft_l] = static_cast<float>(-INFINITY);
        int64_t weft_i = weft_b;
        for (; weft_i + 32 <= weft_e; weft_i += 32) {  // 2 chains
          #pragma omp simd
          for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
            const int64_t c0 = weft_i + weft_l;
            {  // update
              const float t0 = b0[c0];
              weft_lane[weft_l] = weft_max(weft_lane[weft_l], t0);
            }
          }
          #pragma omp simd
          for (int64_t weft_l = 16; weft_l < 32; weft_l += 1) {
            const int64_t c0 = weft_i + weft_l;
            {  // update
              const float t0 = b0[c0];
              weft_lane[weft_l] = weft_max(weft_lane[weft_l], t0);
            }
          }
        }
        for (; weft_i + 16 <= weft_e; weft_i += 16) {
          #pragma omp simd
          for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) {
            const int64_t c0 = weft_i + weft_l;
            {  // update
              const float t0 = b0[c0];
              weft_lane[weft_l] = weft_max(weft_lane[weft_l], t0);
            }
          }
        }
        for (int64_t weft_l = 0; weft_i + weft_l < weft_e; weft_l += 1) {  // the tail
          const int64_t c0 = weft_i + weft_l;
          {  // update
            const float t0 = b0[c0];
            weft_lane[weft_l] = weft_max(weft_lane[weft_l], t0);
          }
        }
        // pairwise tree over the lanes
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 16; weft_l += 1) weft_lane[weft_l] = weft_max(weft_lane[weft_l], weft_lane[weft_l + 16]);
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 8; weft_l += 1) weft_lane[weft_l] = weft_max(weft_lane[weft_l], weft_lane[weft_l + 8]);
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 4; weft_l += 1) weft_lane[weft_l] = weft_max(weft_lane[weft_l], weft_lane[weft_l + 4]);
        #pragma omp simd
        for (int64_t weft_l = 0; weft_l < 2; weft_l += 1) weft_lane[weft_l] = weft_max(weft_lane[weft_l], weft_lane[weft_l + 2]);
        for (int64_t weft_l = 0; weft_l < 1; weft_l += 1) weft_lane[weft_l] = weft_max(weft_lane[weft_l], weft_lane[weft_l + 1]);
        weft_acc = weft_max(weft_acc, weft_lane[0]);
      }
      weft_part[weft_c] = weft_acc;
    }
    float weft_acc = b1[0];
    for (int64_t weft_c = 0; weft_c < weft_nt; weft_c += 1)
      weft_acc = weft_max(weft_acc, weft_part[weft_c]);
    b1[0] = weft_acc;
  }
}
)");
}

// A parallel loop around a reduction with symbolic extents: with fewer rows than threads and
// a long reduction, each row's reduction is split across the threads instead.
TEST(EmitC, FewRowsSplitEachRowAcrossThreads) {
  std::string row = function_of(testing::reduce_kernel(
      "row_max", {Dim::symbol("K"), Dim::symbol("R")}, {false, true}, kernel::Combine::kMax));
  EXPECT_NE(row.find("if (s0 < omp_get_max_threads() && s1 >= 32768) {  // few rows"),
            std::string::npos)
      << row;
  EXPECT_NE(row.find("// ALL: split across threads"), std::string::npos) << row;
  // Otherwise each row takes, per run, the variant a static compile would for its length.
  size_t lanes = row.find("if (s1 >= 128) {  // long rows: lanes");
  ASSERT_NE(lanes, std::string::npos) << row;
  EXPECT_NE(row.find("} else {  // short rows: one accumulator", lanes), std::string::npos) << row;
  std::string middle = function_of(
      testing::reduce_kernel("middle_sum", {Dim::symbol("A"), Dim::symbol("B"), Dim::symbol("C")},
                             {false, true, false}, kernel::Combine::kSum));
  EXPECT_NE(middle.find("if (s0 < omp_get_max_threads() && s1 * s2 >= 32768) {  // few rows"),
            std::string::npos)
      << middle;
  // Static extents that never leave threads idle keep one version.
  std::string many = function_of(testing::row_sum_kernel(Dim::symbol("N"), 1024));
  EXPECT_EQ(many.find("few rows"), std::string::npos) << many;
}

// A padded window: guards give the tap loop bounds like "c1 <= min(2, 56 - c0)", but it runs
// a statement dim of extent 3, too short for lanes: it keeps one scalar accumulator.
TEST(EmitC, GuardedShortWindowKeepsOneAccumulator) {
  using kernel::AffineExpr;
  kernel::Kernel k =
      testing::reduce_kernel("window", {56, 3}, {false, true}, kernel::Combine::kSum);
  kernel::Statement& update = k.statements[1];
  update.reads[0].index = {{-1, {{0, 1}, {1, 1}}}, AffineExpr::constant_of(0)}; // x[i + t - 1, 0]
  k.buffers[0].shape = {56, 1};
  update.guards = {{-1, {{0, 1}, {1, 1}}}, {56, {{0, -1}, {1, -1}}}}; // 0 <= i + t - 1 < 56
  std::string window = function_of(k);
  EXPECT_NE(window.find("weft_imin(2, "), std::string::npos) << window;
  EXPECT_NE(window.find("accumulate in a register"), std::string::npos) << window;
  EXPECT_EQ(window.find("weft_lane"), std::string::npos) << window;
}

// A few taps around a run of 44 channels (a pooling's window) inside a parallel loop: their
// targets stay in registers across the taps, a block of 32 lanes, then one of 8 (the widths
// that run, of 64, 32, 16 and 8); the 4 lanes left stay in place.
TEST(EmitC, TapTargetsStayInRegistersAcrossTheTaps) {
  std::string taps = function_of(testing::reduce_kernel(
      "taps", {Dim(56), Dim(3), Dim(44)}, {false, true, false}, kernel::Combine::kMax));
  EXPECT_NE(taps.find("the taps' targets in registers"), std::string::npos) << taps;
  EXPECT_NE(taps.find("for (; weft_p + 32 <= 44; weft_p += 32) {"), std::string::npos) << taps;
  EXPECT_NE(taps.find("for (; weft_p + 8 <= 44; weft_p += 8) {"), std::string::npos) << taps;
  EXPECT_EQ(taps.find("float weft_acc[64]"), std::string::npos) << taps;
  EXPECT_EQ(taps.find("float weft_acc[16]"), std::string::npos) << taps;
  EXPECT_NE(taps.find("weft_acc[weft_l] = weft_max(weft_acc[weft_l], t0);"), std::string::npos)
      << taps;
  EXPECT_NE(taps.find("= weft_p; c2 < 44; c2 += 1) {"), std::string::npos) << taps; // the rest
  // Without guards the taps' bounds are constants already: no interior branch.
  EXPECT_EQ(taps.find("every tap inside"), std::string::npos) << taps;
}

// A padded window over 48 channels: guards bound the tap loop by "max(0, 1 - c0)" and
// "min(2, 56 - c0)". Where those are 0 and 2 (all pixels but the border's) the taps run as a
// loop of constant bounds, which the compiler unrolls; the border keeps the guarded loop.
TEST(EmitC, InteriorPixelsRunTheTapsWithConstantBounds) {
  using kernel::AffineExpr;
  kernel::Kernel k = testing::reduce_kernel("window", {Dim(56), Dim(3), Dim(48)},
                                            {false, true, false}, kernel::Combine::kSum);
  kernel::Statement& update = k.statements[1];
  // x[i + t - 1, c]
  update.reads[0].index = {{-1, {{0, 1}, {1, 1}}}, {0, {{2, 1}}}};
  k.buffers[0].shape = {56, 48};
  update.guards = {{-1, {{0, 1}, {1, 1}}}, {56, {{0, -1}, {1, -1}}}}; // 0 <= i + t - 1 < 56
  std::string window = function_of(k);
  size_t inside = window.find("== 0 && weft_imin(2, ");
  ASSERT_NE(inside, std::string::npos) << window;
  EXPECT_NE(window.find(") == 2) {  // every tap inside", inside), std::string::npos) << window;
  size_t fixed = window.find("for (int64_t c1 = 0; c1 < 3; c1 += 1) {", inside);
  size_t border = window.find("} else {", inside);
  ASSERT_NE(fixed, std::string::npos) << window;
  ASSERT_NE(border, std::string::npos) << window;
  EXPECT_LT(fixed, border) << window;
  EXPECT_NE(window.find("c1 <= weft_imin(2, ", border), std::string::npos) << window;
  EXPECT_EQ(window.find("= weft_p; c2 < 48"), std::string::npos) << window; // 32 + 16 lanes
}

TEST(EmitC, BroadcastIndexAndAllReduction) {
  std::string bias = function_of(testing::bias_add_kernel(Dim::symbol("B"), 16));
  EXPECT_NE(bias.find("const float t1 = b1[c1];"), std::string::npos) << bias;
  EXPECT_NE(bias.find("b2[c0 * 16 + c1] = t2;"), std::string::npos) << bias;
  // Shorter than the 32 lanes: max accumulates in a scalar, in order.
  std::string max = function_of(testing::all_max_kernel(7));
  EXPECT_NE(max.find("static_cast<float>(-INFINITY)"), std::string::npos) << max;
  EXPECT_NE(max.find("acc = weft_max(acc, t0);"), std::string::npos) << max;
  EXPECT_EQ(max.find("omp simd"), std::string::npos) << max;
  // 64: 16 lanes, each a SIMD chain of 4 steps, folded into acc at the end.
  std::string lanes = function_of(testing::all_max_kernel(64));
  EXPECT_NE(lanes.find("weft_lanes[c0 - weft_p] = weft_max(weft_lanes[c0 - weft_p], t0);"),
            std::string::npos)
      << lanes;
  EXPECT_NE(lanes.find("acc = weft_max(acc, weft_lanes[weft_l]);"), std::string::npos) << lanes;
}

TEST(EmitC, IndirectLoadWrapsAndClampsItsIndex) {
  std::string gather = function_of(testing::gather_rows_kernel(5, 8, 3));
  // The row's index does not move with the inner loop: it is loaded once, before it.
  EXPECT_NE(gather.find("const int64_t weft_h0 = b1[c0];"), std::string::npos) << gather;
  EXPECT_NE(gather.find("const int64_t t0 = weft_h0;"), std::string::npos) << gather;
  EXPECT_NE(gather.find("const float t1 = b0[weft_wrap_index(t0, 5) * 8 + c1];"), std::string::npos)
      << gather;
}

// A scatter's target moves with the data: it combines in memory, not in a register.
TEST(EmitC, IndirectWriteCombinesInPlace) {
  std::string scatter = function_of(testing::scatter_add_rows_kernel(5, 8, 3));
  EXPECT_NE(scatter.find("b2[weft_wrap_index(t0, 5) * 8 + c1] = b2[weft_wrap_index(t0, 5) * 8 + "
                         "c1] + t1;"),
            std::string::npos)
      << scatter;
  EXPECT_EQ(scatter.find("acc"), std::string::npos) << scatter;
}

// y[i, j] = x[i, j] / sqrt(v[i] + 1): the row's sqrt(v[i] + 1) does not move with j, so it is
// computed once per row, before the vector loop, with the load of v[i].
TEST(EmitC, InvariantOpsAreHoistedWithTheirLoads) {
  using kernel::AffineExpr;
  using kernel::ExprOp;
  kernel::Kernel k;
  k.name = "normalize";
  k.buffers = {{"x", DType::kF32, {8, 64}, kernel::BufferRole::kInput},
               {"v", DType::kF32, {8}, kernel::BufferRole::kInput},
               {"y", DType::kF32, {8, 64}, kernel::BufferRole::kOutput}};
  kernel::Statement st;
  st.name = "normalize";
  st.domain = {8, 64};
  std::vector<AffineExpr> ij = {AffineExpr::iterator(0), AffineExpr::iterator(1)};
  st.write = kernel::Access(2, ij);
  st.reads = {kernel::Access(0, ij), kernel::Access(1, {AffineExpr::iterator(0)})};
  st.expr = {{ExprOp::kLoad, DType::kF32, {}, 0},
             {ExprOp::kLoad, DType::kF32, {}, 1},
             {ExprOp::kConstant, DType::kF32, {}, -1, 1.0},
             {ExprOp::kAdd, DType::kF32, {1, 2}},
             {ExprOp::kSqrt, DType::kF32, {3}},
             {ExprOp::kDiv, DType::kF32, {0, 4}}};
  k.statements = {st};
  ASSERT_TRUE(kernel::verify_kernel(k).ok());
  std::string src = function_of(k);
  size_t loop = src.find("#pragma omp simd");
  size_t hoisted = src.find("const float weft_h4 = sqrt(weft_h3);");
  ASSERT_NE(hoisted, std::string::npos) << src;
  EXPECT_LT(hoisted, loop) << src;
  EXPECT_NE(src.find("const float weft_h3 = (weft_h1 + 1.0f);"), std::string::npos) << src;
  EXPECT_NE(src.find("const float t5 = (t0 / t4);"), std::string::npos) << src; // x moves
}

// A Relu (a Max of the constant 0) before an Exp prints as a bit blend, which GCC keeps out
// of its if-conversion (the loop vectorizes; 16x slower when it did not), and an Exp before
// another as weft_exp_blended; before a Neg alone, and after the Exp, a Relu stays a compare
// and select.
TEST(EmitC, SelectsBeforeExpAreBitBlends) {
  using kernel::AffineExpr;
  using kernel::ExprOp;
  kernel::Kernel k;
  k.name = "relu_exp";
  k.buffers = {{"x", DType::kF32, {64}, kernel::BufferRole::kInput},
               {"y", DType::kF32, {64}, kernel::BufferRole::kOutput}};
  kernel::Statement st;
  st.name = "relu_exp";
  st.domain = {64};
  st.write = kernel::Access(1, {AffineExpr::iterator(0)});
  st.reads = {kernel::Access(0, {AffineExpr::iterator(0)})};
  st.expr = {{ExprOp::kLoad, DType::kF32, {}, 0},
             {ExprOp::kConstant, DType::kF32, {}, -1, 0.0},
             {ExprOp::kMax, DType::kF32, {0, 1}},
             {ExprOp::kExp, DType::kF32, {2}},
             {ExprOp::kMax, DType::kF32, {3, 1}}};
  k.statements = {st};
  ASSERT_TRUE(kernel::verify_kernel(k).ok());
  std::string src = function_of(k);
  EXPECT_NE(src.find("const float t2 = weft_blend(t1 >= t0, t1, t0);"), std::string::npos) << src;
  EXPECT_NE(src.find("const float t4 = (t1 >= t3 ? t1 : t3);"), std::string::npos) << src;
  // An Exp whose value another Exp takes: its own final select a blend too.
  k.statements[0].expr[4] = {ExprOp::kExp, DType::kF32, {3}};
  std::string twice = function_of(k);
  EXPECT_NE(twice.find("const float t3 = weft_exp_blended(t2);"), std::string::npos) << twice;
  EXPECT_NE(twice.find("const float t4 = weft_exp(t3);"), std::string::npos) << twice;
  k.statements[0].expr[4] = {ExprOp::kMax, DType::kF32, {3, 1}};
  k.statements[0].expr[3].op = ExprOp::kNeg;
  std::string plain = function_of(k);
  EXPECT_EQ(plain.find("weft_blend"), std::string::npos) << plain;
}

// x * Sigmoid(x) (SiLU), the Sigmoid read by the product alone, divides x by 1 + exp(-x); a
// Sigmoid that another node reads too stays a Sigmoid.
TEST(EmitC, ProductOfASigmoidIsADivision) {
  using kernel::AffineExpr;
  using kernel::ExprOp;
  kernel::Kernel k;
  k.name = "silu";
  k.buffers = {{"x", DType::kF32, {64}, kernel::BufferRole::kInput},
               {"y", DType::kF32, {64}, kernel::BufferRole::kOutput}};
  kernel::Statement st;
  st.name = "silu";
  st.domain = {64};
  st.write = kernel::Access(1, {AffineExpr::iterator(0)});
  st.reads = {kernel::Access(0, {AffineExpr::iterator(0)})};
  st.expr = {{ExprOp::kLoad, DType::kF32, {}, 0},
             {ExprOp::kSigmoid, DType::kF32, {0}},
             {ExprOp::kMul, DType::kF32, {0, 1}}};
  k.statements = {st};
  ASSERT_TRUE(kernel::verify_kernel(k).ok());
  std::string src = function_of(k);
  EXPECT_NE(src.find("const float t2 = (t0 / (1 + weft_exp(-t0)));"), std::string::npos) << src;
  k.statements[0].expr.push_back({ExprOp::kAdd, DType::kF32, {2, 1}}); // a second reader
  std::string shared = function_of(k);
  EXPECT_NE(shared.find("const float t2 = (t0 * t1);"), std::string::npos) << shared;
}

TEST(EmitC, KernelSymbolsAreSorted) {
  kernel::Kernel k = testing::bias_add_kernel(Dim::symbol("rows"), Dim::symbol("cols"));
  EXPECT_EQ(kernel_symbols(k), (std::vector<std::string>{"cols", "rows"}));
}

// Two parallel loops around a row run as one (collapse): 9 rows of [9, 1024] rows would
// leave one of 2 threads idle a ninth of the time, and 8 rows 8 of 16 threads idle. A
// parallel loop around an innermost loop keeps its SIMD loop instead.
TEST(EmitC, NestedParallelLoopsAroundRowsCollapse) {
  kernel::Kernel batched = testing::reduce_kernel("batched_rows", {Dim(9), Dim(1024), Dim(512)},
                                                  {false, false, true}, kernel::Combine::kSum);
  std::string code = function_of(batched);
  EXPECT_NE(code.find("#pragma omp parallel for collapse(2) schedule(static)\n"
                      "  for (int64_t c0 = 0; (c0 <= 8); c0 += 1) {\n"
                      "    for (int64_t c1 = 0; (c1 <= 1023); c1 += 1) {"),
            std::string::npos)
      << code;
  kernel::Kernel middle = testing::reduce_kernel("middle", {Dim(64), Dim(1024), Dim(64)},
                                                 {false, true, false}, kernel::Combine::kSum);
  code = function_of(middle);
  EXPECT_EQ(code.find("collapse"), std::string::npos) << code;
}

// y[i, j, c] = x[c, i, j]: an image's NCHW -> NHWC Transpose. With 3 channels, the pixel loop
// runs in SIMD lanes around the channels, unrolled (and the two outer loops do not collapse,
// since the inner one is the SIMD loop); with 16, the channel loop is the SIMD loop.
TEST(EmitC, TinyInnermostLoopIsUnrolledInASimdLoop) {
  using kernel::AffineExpr;
  auto transpose = [](int64_t channels) {
    kernel::Kernel k;
    k.name = "to_channels_last";
    k.buffers = {{"x", DType::kF32, {channels, 224, 224}, kernel::BufferRole::kInput},
                 {"y", DType::kF32, {224, 224, channels}, kernel::BufferRole::kOutput}};
    kernel::Statement st;
    st.name = "transpose";
    st.domain = {224, 224, channels};
    st.write = kernel::Access(
        1, {AffineExpr::iterator(0), AffineExpr::iterator(1), AffineExpr::iterator(2)});
    st.reads = {kernel::Access(
        0, {AffineExpr::iterator(2), AffineExpr::iterator(0), AffineExpr::iterator(1)})};
    st.expr = {{kernel::ExprOp::kLoad, DType::kF32, {}, 0}};
    k.statements = {st};
    EXPECT_TRUE(kernel::verify_kernel(k).ok());
    return function_of(k);
  };
  std::string rgb = transpose(3);
  EXPECT_NE(rgb.find("  #pragma omp parallel for schedule(static)\n"
                     "  for (int64_t c0 = 0; (c0 <= 223); c0 += 1) {\n"
                     "    #pragma omp simd  // around tiny loops, unrolled\n"
                     "    for (int64_t c1 = 0; (c1 <= 223); c1 += 1) {\n"
                     "      #pragma GCC unroll 3\n"
                     "      for (int64_t c2 = 0; (c2 <= 2); c2 += 1) {\n"),
            std::string::npos)
      << rgb;
  std::string wide = transpose(16);
  EXPECT_EQ(wide.find("unroll"), std::string::npos) << wide;
  EXPECT_NE(wide.find("collapse(2)"), std::string::npos) << wide;
}

// A channel shuffle's pixel after stitching: c[p, k] = x[p, k] beside s[p, k, g] = x[p, 64 * g
// + k] (groups of 2), sharing the pixel's channel loop. The channels run in SIMD lanes around
// the copy and the unrolled group loop, rather than a SIMD loop of 2 lanes per channel.
TEST(EmitC, TinyLoopsBesideStatementsAreUnrolledInASimdLoop) {
  using kernel::AffineExpr;
  kernel::Kernel k;
  k.name = "shuffle";
  k.buffers = {{"x", DType::kF32, {16, 128}, kernel::BufferRole::kInput},
               {"c", DType::kF32, {16, 64}, kernel::BufferRole::kOutput},
               {"s", DType::kF32, {16, 64, 2}, kernel::BufferRole::kOutput}};
  AffineExpr p = AffineExpr::iterator(0), ch = AffineExpr::iterator(1);
  kernel::Statement copy;
  copy.name = "copy";
  copy.domain = {16, 64};
  copy.write = kernel::Access(1, {p, ch});
  copy.reads = {kernel::Access(0, {p, ch})};
  copy.expr = {{kernel::ExprOp::kLoad, DType::kF32, {}, 0}};
  kernel::Statement shuffle = copy;
  shuffle.name = "shuffle";
  shuffle.domain = {16, 64, 2};
  shuffle.write = kernel::Access(2, {p, ch, AffineExpr::iterator(2)});
  shuffle.reads = {kernel::Access(0, {p, {0, {{1, 1}, {2, 64}}}})};
  k.statements = {copy, shuffle};
  ASSERT_TRUE(kernel::verify_kernel(k).ok());
  std::string code = function_of(k);
  EXPECT_NE(code.find("    #pragma omp simd  // around tiny loops, unrolled\n"
                      "    for (int64_t c1 = 0; (c1 <= 63); c1 += 1) {\n"
                      "      {  // copy\n"),
            std::string::npos)
      << code;
  EXPECT_NE(code.find("      #pragma GCC unroll 2\n"
                      "      for (int64_t c2 = 0; (c2 <= 1); c2 += 1) {\n"
                      "        {  // shuffle\n"),
            std::string::npos)
      << code;
}

// y[i, j] = x[j, i] over [rows, columns]: a 2-D Transpose runs in tiles of 16 x 16, computed
// along i (x's rows contiguous) and stored along j, when both extents reach a tile and the
// lines of x that a row of y reads do not stay in the L1 (256 of them 4 KB apart all fall in
// one set); a copy in the same layout, a nest narrower than a tile, and 80 lines 12 KB apart
// (spread over all sets) keep their plain loops.
TEST(EmitC, TransposeRunsInTiles) {
  using kernel::AffineExpr;
  auto copy = [](int64_t rows, int64_t columns, bool transposed) {
    kernel::Kernel k = testing::copy_kernel(rows, columns, transposed);
    EXPECT_TRUE(kernel::verify_kernel(k).ok());
    return function_of(k);
  };
  std::string tiled = copy(1000, 256, true);
  EXPECT_EQ(tiled.find("weft_tile"), std::string::npos) << tiled; // 4,000 bytes apart: 32 sets
  tiled = copy(1024, 256, true);
  EXPECT_NE(tiled.find("collapse(2) schedule(static)  // tiles of 16 x 16: computed along c0, "
                       "stored along c1\n"
                       "  for (int64_t weft_o = 0; weft_o < 1024; weft_o += 16) {\n"
                       "    for (int64_t weft_i = 0; weft_i < 256; weft_i += 16) {\n"),
            std::string::npos)
      << tiled;
  EXPECT_NE(tiled.find("weft_tile[c1 - weft_i][c0 - weft_o] = t0;"), std::string::npos) << tiled;
  // A full tile is stored through registers; the edges' (none here) element by element.
  EXPECT_NE(tiled.find("weft_store_transposed16(&b1[c0 * 256 + c1], 256, &weft_tile[0][0]);"),
            std::string::npos)
      << tiled;
  EXPECT_EQ(copy(1000, 256, false).find("weft_tile"), std::string::npos);
  EXPECT_EQ(copy(1024, 8, true).find("weft_tile"), std::string::npos);
  EXPECT_EQ(copy(3000, 80, true).find("weft_tile"), std::string::npos);
  // Under a batch loop, y[b, i, j] = x[b, j, i]: the batch loop and the tiles' rows collapse.
  kernel::Kernel batched;
  batched.name = "batched_transpose";
  batched.buffers = {{"x", DType::kF32, {4, 256, 1024}, kernel::BufferRole::kInput},
                     {"y", DType::kF32, {4, 1024, 256}, kernel::BufferRole::kOutput}};
  kernel::Statement st;
  st.name = "transpose";
  st.domain = {4, 1024, 256};
  AffineExpr b = AffineExpr::iterator(0), i = AffineExpr::iterator(1), j = AffineExpr::iterator(2);
  st.write = kernel::Access(1, {b, i, j});
  st.reads = {kernel::Access(0, {b, j, i})};
  st.expr = {{kernel::ExprOp::kLoad, DType::kF32, {}, 0}};
  batched.statements = {st};
  ASSERT_TRUE(kernel::verify_kernel(batched).ok());
  std::string code = function_of(batched);
  EXPECT_NE(code.find("collapse(2) schedule(static)  // tiles of 16 x 16: computed along c1, "
                      "stored along c2\n"
                      "  for (int64_t c0 = 0; c0 < 4; c0 += 1) {\n"
                      "    for (int64_t weft_o = 0; weft_o < 1024; weft_o += 16) {\n"),
            std::string::npos)
      << code;
  // NHWC -> NCHW, y[b, c, h, w] = x[b, h, w, c]: h and w run as one loop of 12,544 pixels.
  kernel::Kernel nchw;
  nchw.name = "nhwc_to_nchw";
  nchw.buffers = {{"x", DType::kF32, {2, 112, 112, 96}, kernel::BufferRole::kInput},
                  {"y", DType::kF32, {2, 96, 112, 112}, kernel::BufferRole::kOutput}};
  AffineExpr c = AffineExpr::iterator(1), h = AffineExpr::iterator(2), w = AffineExpr::iterator(3);
  st.domain = {2, 96, 112, 112};
  st.write = kernel::Access(1, {b, c, h, w});
  st.reads = {kernel::Access(0, {b, h, w, c})};
  nchw.statements = {st};
  ASSERT_TRUE(kernel::verify_kernel(nchw).ok());
  code = function_of(nchw);
  EXPECT_NE(code.find("collapse(2) schedule(static)  // tiles of 16 x 16: computed along c1, "
                      "stored along c3\n"
                      "  for (int64_t c0 = 0; c0 < 2; c0 += 1) {\n"
                      "    for (int64_t weft_o = 0; weft_o < 96; weft_o += 16) {\n"
                      "      for (int64_t weft_i = 0; weft_i < 12544; weft_i += 16) {\n"),
            std::string::npos)
      << code;
}

// y = Cast(x, f16) + h over [8, 40], h and y f16: blocks of 16 read x rounded and h
// converted 16 at a time and store y so, by the hardware's conversions; the last 8 of each
// row take the plain per-element ones. Off in the schedule, none of that.
TEST(EmitC, HalfValuesConvertSixteenAtATime) {
  kernel::Kernel k = testing::half_add_kernel(8, 40);
  ASSERT_TRUE(kernel::verify_kernel(k).ok());
  std::string src = function_of(k);
  size_t blocks = src.find("for (; weft_p + 16 <= 40; weft_p += 16)");
  size_t tail = src.find("// the tail");
  ASSERT_NE(blocks, std::string::npos) << src;
  ASSERT_NE(tail, std::string::npos) << src;
  for (const char* conversion :
       {"weft_round_f16x16(&b0[c0 * 40 + weft_p], weft_v1);",
        "weft_h2f16(&b1[c0 * 40 + weft_p], weft_v2);", "const float t1 = weft_v1[c1 - weft_p];",
        "const float t2 = weft_v2[c1 - weft_p];", "weft_w[c1 - weft_p] = t3;",
        "weft_f2h16(weft_w, &b2[c0 * 40 + weft_p]);"}) {
    size_t at = src.find(conversion);
    EXPECT_TRUE(at > blocks && at < tail) << conversion << "\n" << src;
  }
  EXPECT_NE(src.find("= weft_f2h(t3);", tail), std::string::npos) << src;

  Result<poly::ScheduledKernel> s = poly::schedule_kernel(k);
  ASSERT_TRUE(s.ok());
  CpuSchedule off;
  off.half_blocks = false;
  Result<std::string> plain = emit_kernel(k, s->loops, Dialect::kCpu, off);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->find("weft_p"), std::string::npos) << *plain;
  EXPECT_NE(plain->find("weft_round_f16(t0)"), std::string::npos) << *plain;
}

// A row sum of f16 values: its lanes' SIMD loops of 16 read them converted 16 at a time, one
// block ahead of each loop; loops of 8 lanes (a schedule of 8) keep the per-element
// conversion, since 16 converted values would reach past the row.
TEST(EmitC, ReductionLanesConvertHalfValuesInLoopsOfSixteen) {
  kernel::Kernel k = testing::row_sum_kernel(Dim(4), Dim(1000));
  k.buffers[0].dtype = DType::kF16;
  k.statements[1].expr = {{kernel::ExprOp::kLoad, DType::kF16, {}, 0},
                          {kernel::ExprOp::kCast, DType::kF32, {0}}};
  ASSERT_TRUE(kernel::verify_kernel(k).ok());
  Result<poly::ScheduledKernel> s = poly::schedule_kernel(k);
  ASSERT_TRUE(s.ok());
  for (int64_t lanes : {64, 8}) {
    CpuSchedule schedule;
    schedule.lanes = lanes;
    Result<std::string> src = emit_kernel(k, s->loops, Dialect::kCpu, schedule);
    ASSERT_TRUE(src.ok());
    std::string code = src->substr(src->find("// kernel"));
    bool staged = code.find("weft_h2f16(&b0[") != std::string::npos;
    EXPECT_EQ(staged, lanes == 64) << code;
    if (lanes == 64) {
      EXPECT_NE(code.find("weft_h2f16(&b0[c0 * 1000 + (weft_i + 16)], weft_v0);"),
                std::string::npos)
          << code;
    }
    EXPECT_NE(code.find("weft_h2f(b0["), std::string::npos) << code; // the tail, at least
  }
}

TEST(CpuSchedule, RoundTripsAndRejectsBadValues) {
  CpuSchedule s{16, 1024, 256, 4096, 1 << 20};
  std::optional<CpuSchedule> back = CpuSchedule::parse(s.to_string());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->to_string(), s.to_string());
  EXPECT_FALSE(CpuSchedule::parse("lanes=24").has_value()); // not a power of 2
  EXPECT_FALSE(CpuSchedule::parse("lanes=256").has_value());
  EXPECT_FALSE(CpuSchedule::parse("warp=4").has_value());
  EXPECT_FALSE(CpuSchedule::parse("lanes=").has_value());
  EXPECT_FALSE(CpuSchedule::parse("min_per_thread=-1").has_value());
  EXPECT_TRUE(CpuSchedule::parse("").has_value()); // all defaults
  s.half_blocks = false;
  back = CpuSchedule::parse(s.to_string());
  ASSERT_TRUE(back.has_value());
  EXPECT_FALSE(back->half_blocks);
  EXPECT_FALSE(CpuSchedule::parse("half_blocks=2").has_value());
}

// The schedule reaches the code: lanes of a ROW reduction, and small kernels on one thread.
TEST(CpuSchedule, SetsLanesAndSerialSmallKernels) {
  kernel::Kernel k = testing::row_sum_kernel(Dim(64), Dim(1024));
  Result<poly::ScheduledKernel> s = poly::schedule_kernel(k);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto emit = [&](const CpuSchedule& schedule) {
    Result<EmittedFunction> src = emit_function(k, s->loops, Dialect::kCpu, schedule);
    EXPECT_TRUE(src.ok()) << src.status().to_string();
    return src->source;
  };
  std::string base = emit(CpuSchedule{});
  EXPECT_NE(base.find("ROW: 64 lanes"), std::string::npos) << base;
  EXPECT_NE(base.find("#pragma omp parallel for"), std::string::npos) << base;
  // 64 lanes are 4 chains of 16, each its own SIMD loop; the first goes on alone.
  EXPECT_NE(base.find("// 4 chains"), std::string::npos) << base;
  EXPECT_NE(base.find("for (int64_t weft_l = 48; weft_l < 64; weft_l += 1) {"), std::string::npos);
  EXPECT_NE(base.find("for (; weft_i + 16 <= weft_e; weft_i += 16) {"), std::string::npos);
  CpuSchedule narrow;
  narrow.lanes = 16;
  std::string one_chain = emit(narrow);
  EXPECT_NE(one_chain.find("float weft_lane[16];"), std::string::npos);
  EXPECT_EQ(one_chain.find("chains"), std::string::npos) << one_chain;
  CpuSchedule serial;
  serial.min_parallel_work = 64 * 1024 + 1; // the kernel does 64 x 1024
  EXPECT_EQ(emit(serial).find("omp parallel"), std::string::npos);
  serial.min_parallel_work = 64 * 1024;
  EXPECT_NE(emit(serial).find("omp parallel"), std::string::npos);
  // A COLUMN's 64 inits are a nest of less work than the default's 4096: they run on this
  // thread, in SIMD lanes, before the columns' parallel region; with 0, in a region of their own.
  kernel::Kernel columns = testing::column_sum_kernel(Dim(4096), Dim(64));
  Result<poly::ScheduledKernel> c = poly::schedule_kernel(columns);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto emit_columns = [&](const CpuSchedule& schedule) {
    Result<EmittedFunction> src = emit_function(columns, c->loops, Dialect::kCpu, schedule);
    EXPECT_TRUE(src.ok()) << src.status().to_string();
    return src->source;
  };
  std::string inits = "for (int64_t c0 = 0; (c0 <= 63); c0 += 1) {\n    {  // init";
  std::string code = emit_columns(CpuSchedule{});
  EXPECT_NE(code.find("  #pragma omp simd\n  " + inits), std::string::npos) << code;
  EXPECT_NE(code.find("#pragma omp parallel  // the whole pool"), std::string::npos) << code;
  serial.min_parallel_work = 0;
  code = emit_columns(serial);
  EXPECT_NE(code.find("  #pragma omp parallel for schedule(static)\n  " + inits), std::string::npos)
      << code;
  // Rows shorter than 8 x 16 lanes keep one accumulator, whatever the lanes.
  kernel::Kernel short_rows = testing::row_sum_kernel(Dim(64), Dim(100));
  Result<poly::ScheduledKernel> t = poly::schedule_kernel(short_rows);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  CpuSchedule wide;
  wide.lanes = 128;
  Result<EmittedFunction> src = emit_function(short_rows, t->loops, Dialect::kCpu, wide);
  ASSERT_TRUE(src.ok()) << src.status().to_string();
  EXPECT_EQ(src->source.find("lanes"), std::string::npos) << src->source;
  kernel::Kernel rows_of_200 = testing::row_sum_kernel(Dim(64), Dim(200));
  t = poly::schedule_kernel(rows_of_200);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  src = emit_function(rows_of_200, t->loops, Dialect::kCpu, wide);
  ASSERT_TRUE(src.ok()) << src.status().to_string();
  EXPECT_NE(src->source.find("ROW: 128 lanes"), std::string::npos) << src->source;
}

} // namespace
} // namespace weft::codegen
