// The CUDA dialect's strategies (cuda_strategy.h, emit_cuda.cc) and options, as the
// generated source shows them; tests/cuda_emulator_test.py runs such code.
#include <cstdlib>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/testing/kernels.h"
#include "weft/codegen/emit_c.h"
#include "weft/kernel/kernel_text.h"
#include "weft/poly/schedule_kernel.h"

namespace weft::codegen {
namespace {

// The CUDA source of the kernel "text" spells (kernel_text.h), or an empty string.
std::string cuda_source_of(std::string_view text) {
  Result<kernel::Kernel> k = kernel::parse_kernel(text);
  EXPECT_TRUE(k.ok()) << k.status().message();
  if (!k.ok()) return "";
  Result<poly::ScheduledKernel> s = poly::schedule_kernel(*k);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return "";
  Result<EmittedFunction> emitted = emit_function(*k, s->loops, Dialect::kCuda);
  EXPECT_TRUE(emitted.ok()) << emitted.status().to_string();
  return emitted.ok() ? emitted->source : "";
}

size_t occurrences(const std::string& src, const std::string& text) {
  size_t n = 0;
  for (size_t at = src.find(text); at != std::string::npos; at = src.find(text, at + 1))
    ++n;
  return n;
}

// The CUDA dialect keeps its one accumulator per reduction: the strategies are the CPU's.
// CUDA (cuda_strategy.h): rows of 64 take a group of 8 lanes that combine by shuffles, on a
// persistent grid over the N rows; an ALL reduction is bound to the whole grid, its blocks
// combining with atomics unless the build is deterministic.
TEST(EmitCuda, Strategies) {
  kernel::Kernel k = testing::row_sum_kernel(Dim::symbol("N"), 64);
  Result<poly::ScheduledKernel> s = poly::schedule_kernel(k);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  // (Without vector loads, a row read once is not held in registers: 8 elements a lane.)
  CudaOptions scalar;
  scalar.vector = 1;
  Result<EmittedFunction> emitted = emit_function(k, s->loops, Dialect::kCuda, {}, scalar);
  ASSERT_TRUE(emitted.ok()) << emitted.status().to_string();
  const std::string* row = &emitted->source;
  EXPECT_NE(row->find("block=256 grid=device"), std::string::npos) << *row;
  // The launch comes back as data too, as the runtime takes it.
  ASSERT_EQ(emitted->launches.size(), 1u);
  EXPECT_EQ(emitted->launches[0].function, "weft_" + k.name + "_p0");
  EXPECT_EQ(emitted->launches[0].block, 256);
  EXPECT_FALSE(emitted->launches[0].one_block);
  EXPECT_NE(row->find("const int64_t weft_lane = threadIdx.x % 8;"), std::string::npos) << *row;
  EXPECT_NE(row->find("acc = weft_group_reduce<8>(acc, weft_op_add{}, weft_mask);"),
            std::string::npos)
      << *row;

  kernel::Kernel all = testing::all_max_kernel(100000);
  Result<poly::ScheduledKernel> a = poly::schedule_kernel(all);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  Result<EmittedFunction> atomic = emit_function(all, a->loops, Dialect::kCuda);
  Result<EmittedFunction> ordered = emit_function(all, a->loops, Dialect::kCuda, {}, {true});
  ASSERT_TRUE(atomic.ok() && ordered.ok());
  EXPECT_NE(atomic->source.find("weft_atomic_max(reinterpret_cast<float*>(&weft_acc_"),
            std::string::npos)
      << atomic->source;
  EXPECT_EQ(ordered->source.find("weft_atomic_"), std::string::npos) << ordered->source;
  EXPECT_NE(ordered->source.find("weft_part_"), std::string::npos) << ordered->source;

  // The grid-strided loop over a contiguous f32 read takes float4 loads where the read is
  // 16-byte aligned (a check when it runs), into 4 accumulators, then a scalar remainder
  // loop; without vector loads, CudaOptions::unroll accumulators (loads in flight); with
  // neither, one chain of combines.
  EXPECT_NE(atomic->source.find("float weft_a[4];"), std::string::npos) << atomic->source;
  EXPECT_NE(atomic->source.find("if (weft_aligned16(&b"), std::string::npos) << atomic->source;
  EXPECT_NE(atomic->source.find("const float4 weft_y0 = weft_load4(&b"), std::string::npos)
      << atomic->source;
  EXPECT_NE(atomic->source.find("acc = weft_max(acc, weft_a[weft_j]);"), std::string::npos)
      << atomic->source;
  // ALL asks for a full SM of threads in its launch bounds (8 blocks of 256); other parts ask
  // for nothing beyond their block unless CudaOptions::resident_threads says so.
  EXPECT_NE(atomic->source.find("__launch_bounds__(256, 8)"), std::string::npos) << atomic->source;
  EXPECT_NE(row->find("__launch_bounds__(256) "), std::string::npos) << *row;
  CudaOptions one;
  one.unroll = 1;
  one.vector = 1;
  Result<EmittedFunction> chain = emit_function(all, a->loops, Dialect::kCuda, {}, one);
  ASSERT_TRUE(chain.ok());
  EXPECT_EQ(chain->source.find("weft_a["), std::string::npos) << chain->source;
  one.unroll = 4;
  Result<EmittedFunction> four = emit_function(all, a->loops, Dialect::kCuda, {}, one);
  ASSERT_TRUE(four.ok());
  EXPECT_NE(four->source.find("float weft_a[4];"), std::string::npos) << four->source;
  EXPECT_EQ(four->source.find("weft_load4"), std::string::npos) << four->source;

  // CudaOptions::lane_elements sets G: 16 elements a lane gives rows of 64 four lanes.
  CudaOptions wide = scalar;
  wide.lane_elements = 16;
  Result<EmittedFunction> fewer = emit_function(k, s->loops, Dialect::kCuda, {}, wide);
  ASSERT_TRUE(fewer.ok());
  EXPECT_NE(fewer->source.find("const int64_t weft_lane = threadIdx.x % 4;"), std::string::npos)
      << fewer->source;
  EXPECT_NE(CudaOptions().key(), wide.key());
  CudaOptions full = scalar;
  full.resident_threads = 2048;
  Result<EmittedFunction> bounded = emit_function(k, s->loops, Dialect::kCuda, {}, full);
  ASSERT_TRUE(bounded.ok());
  EXPECT_NE(bounded->source.find("__launch_bounds__(256, 8)"), std::string::npos)
      << bounded->source;
}

// A part that reads a view of a buffer it writes (a Loop's scan output stacked from its
// iterations' values) has no __restrict__ buffer: with its other output restrict, NVCC loaded
// the view through the read-only cache after the thread's own store, and the stacked output
// kept the old value on an H200 (onnx test_loop11).
TEST(EmitCuda, APartReadingAViewOfWhatItWritesHasNoRestrictBuffer) {
  Result<kernel::Kernel> k =
      kernel::parse_kernel("kernel stack\n"
                           "  in x: f32[1]\n"
                           "  out y: f32[1]\n"
                           "  out z: f32[1]\n"
                           "  out s: f32[2,1]\n"
                           "  in v: f32[1,1]\n"
                           "  in w: f32[1,1]\n"
                           "  add[i0 < 1]: y[i0] = (x[i0] + x[i0])\n"
                           "  add[i0 < 1]: z[i0] = (y[i0] + x[i0])\n"
                           "  concat[i0 < 1, i1 < 1]: s[i0, i1] = v[i0, i1]\n"
                           "  concat[i0 < 1, i1 < 1]: s[i0 + 1, i1] = w[i0, i1]\n");
  ASSERT_TRUE(k.ok()) << k.status().message();
  auto source = [](const kernel::Kernel& kernel) {
    Result<poly::ScheduledKernel> s = poly::schedule_kernel(kernel);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (!s.ok()) return std::string();
    Result<EmittedFunction> emitted = emit_function(kernel, s->loops, Dialect::kCuda);
    EXPECT_TRUE(emitted.ok()) << emitted.status().to_string();
    return emitted.ok() ? emitted->source : std::string();
  };
  EXPECT_NE(source(*k).find("__restrict__"), std::string::npos); // no views: restrict
  k->buffers[1].view_group = k->buffers[4].view_group = 1;       // v is a view of y
  k->buffers[2].view_group = k->buffers[5].view_group = 2;       // w of z
  std::string src = source(*k);
  // Part 0 runs both adds and the first concat; part 1, the second concat, reads no view of
  // what it writes.
  auto signature = [&](const std::string& function) {
    size_t at = src.find(function + "(");
    return at == std::string::npos ? std::string() : src.substr(at, src.find('\n', at) - at);
  };
  ASSERT_NE(signature("weft_stack_p0"), "") << src;
  EXPECT_EQ(signature("weft_stack_p0").find("__restrict__"), std::string::npos) << src;
  EXPECT_NE(signature("weft_stack_p1").find("__restrict__"), std::string::npos) << src;
}

// The knobs (docs/knobs.md): values in range are taken, others leave the default.
TEST(EmitCuda, OptionsFromTheEnvironment) {
  const char* names[] = {"WEFT_CUDA_UNROLL", "WEFT_CUDA_VECTOR", "WEFT_CUDA_HELD_ELEMENTS",
                         "WEFT_CUDA_MAX_GROUP", "WEFT_CUDA_RESIDENT_THREADS"};
  setenv("WEFT_CUDA_UNROLL", "8", 1);
  setenv("WEFT_CUDA_VECTOR", "1", 1);
  setenv("WEFT_CUDA_HELD_ELEMENTS", "12", 1); // not a power of two
  setenv("WEFT_CUDA_MAX_GROUP", "16", 1);     // under 32
  setenv("WEFT_CUDA_RESIDENT_THREADS", "1536x", 1);
  CudaOptions o = CudaOptions::from_environment(true);
  for (const char* name : names)
    unsetenv(name);
  EXPECT_TRUE(o.deterministic);
  EXPECT_EQ(o.unroll, 8);
  EXPECT_EQ(o.vector, 1);
  EXPECT_EQ(o.held_elements, kCudaHeldElements);
  EXPECT_EQ(o.max_group, kCudaMaxGroup);
  EXPECT_EQ(o.resident_threads, kCudaResidentThreads);
  EXPECT_EQ(CudaOptions::from_environment(false).key(), CudaOptions().key());
  // Over a tuning record's options, the environment's knobs win; the others stay the record's.
  CudaOptions record;
  record.max_group = 256;
  record.unroll = 2;
  setenv("WEFT_CUDA_UNROLL", "16", 1);
  CudaOptions over = CudaOptions::from_environment(false, record);
  unsetenv("WEFT_CUDA_UNROLL");
  EXPECT_EQ(over.unroll, 16);
  EXPECT_EQ(over.max_group, 256);
}

// COLUMN ([R, K] summed over R): by quads by default (CudaOptions::column_vector 4: float4
// loads of 4 columns a lane where whole and aligned, 32 row slices), still combining the
// split blocks with atomics; a column a lane with column_vector 1. Rows of a multiple of 4
// floats keep the first row's alignment: checked once, then CudaOptions::unroll quads at a
// time; other rows are checked one by one.
TEST(EmitCuda, ColumnByQuads) {
  kernel::Kernel k =
      testing::reduce_kernel("column_sum", {4096, 40}, {true, false}, kernel::Combine::kSum);
  Result<poly::ScheduledKernel> s = poly::schedule_kernel(k);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  CudaOptions lanes;
  lanes.column_vector = 1;
  Result<EmittedFunction> plain = emit_function(k, s->loops, Dialect::kCuda, {}, lanes);
  CudaOptions quads;
  Result<EmittedFunction> by_quads = emit_function(k, s->loops, Dialect::kCuda, {}, quads);
  ASSERT_TRUE(plain.ok() && by_quads.ok());
  EXPECT_NE(plain->source.find("COLUMN: 32 columns per block"), std::string::npos) << plain->source;
  EXPECT_EQ(plain->source.find("weft_load4"), std::string::npos) << plain->source;
  const std::string& q = by_quads->source;
  EXPECT_NE(q.find("COLUMN by quads"), std::string::npos) << q;
  EXPECT_NE(q.find("__shared__ float weft_tile[32][33];"), std::string::npos) << q;
  EXPECT_NE(q.find("bool weft_quad = weft_k0 + 3 < weft_k_hi;"), std::string::npos) << q;
  EXPECT_NE(q.find("weft_y0[weft_u] = weft_load4(&b"), std::string::npos) << q;
  EXPECT_NE(q.find("weft_atomic_add("), std::string::npos) << q;
  EXPECT_NE(lanes.key(), quads.key());
  kernel::Kernel odd =
      testing::reduce_kernel("column_sum", {4096, 42}, {true, false}, kernel::Combine::kSum);
  Result<poly::ScheduledKernel> o = poly::schedule_kernel(odd);
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  Result<EmittedFunction> rows = emit_function(odd, o->loops, Dialect::kCuda, {}, quads);
  ASSERT_TRUE(rows.ok()) << rows.status().to_string();
  const std::string& r = rows->source;
  EXPECT_NE(r.find("if (weft_k0 + 3 < weft_k_hi && weft_aligned16(&b"), std::string::npos) << r;
  EXPECT_NE(r.find("const float4 weft_y0 = weft_load4(&b"), std::string::npos) << r;
  EXPECT_EQ(r.find("weft_quad"), std::string::npos) << r;
}

// A COLUMN nest after the loop of its inits is one launch: a sum's column runs its init just
// before its total applies; split across blocks, the partials meet in an accumulator of the
// module (zero bits to start), and a tile's last block applies them. A max (whose identity is
// not zero bits) keeps its init launch when it splits, not when deterministic.
TEST(EmitCuda, ColumnRunsItsInits) {
  auto source = [](std::string_view combine, bool deterministic) {
    std::string text = fmt::format("kernel col\n"
                                   "  in x: f32[4096,40]\n"
                                   "  out y: f32[40]\n"
                                   "  init[i0 < 40]: y[i0] = 0\n"
                                   "  r[i0 < 4096, i1 < 40]: y[i1] {}= x[i0, i1]\n",
                                   combine);
    Result<kernel::Kernel> k = kernel::parse_kernel(text);
    EXPECT_TRUE(k.ok()) << k.status().message();
    Result<poly::ScheduledKernel> s = poly::schedule_kernel(*k);
    EXPECT_TRUE(s.ok());
    CudaOptions o;
    o.deterministic = deterministic;
    Result<EmittedFunction> f = emit_function(*k, s->loops, Dialect::kCuda, {}, o);
    EXPECT_TRUE(f.ok());
    return f.ok() ? f->source : "";
  };
  std::string sum = source("+", false);
  EXPECT_NE(sum.find("1 part(s)"), std::string::npos) << sum;
  EXPECT_NE(sum.find("__device__ float weft_acc_weft_col_p1[40];"), std::string::npos) << sum;
  EXPECT_NE(sum.find("weft_atomic_add(&weft_acc_weft_col_p1[c1 - weft_k_lo], total);"),
            std::string::npos)
      << sum;
  EXPECT_EQ(occurrences(sum, "// init"), 2u) << sum; // one thread's column, or the last block's
  EXPECT_NE(source("max", false).find("2 part(s)"), std::string::npos);
  std::string ordered = source("max", true);
  EXPECT_NE(ordered.find("1 part(s)"), std::string::npos) << ordered;
  EXPECT_EQ(ordered.find("weft_acc_"), std::string::npos) << ordered;
}

// Tuning records keep CUDA options as text: every knob reads back; a word that is not a knob
// with a value it takes makes the whole text unreadable.
TEST(EmitCuda, OptionsReadBackFromText) {
  CudaOptions o;
  o.unroll = 8;
  o.vector = 1;
  o.lane_elements = 32;
  o.held_elements = 4;
  o.max_group = 128;
  o.resident_threads = 1536;
  o.column_vector = 1;
  o.row_scalars = 0;
  o.deterministic = true; // not a knob of records
  std::optional<CudaOptions> back = CudaOptions::parse(o.to_string());
  ASSERT_TRUE(back.has_value());
  o.deterministic = false;
  EXPECT_EQ(*back, o);
  EXPECT_EQ(back->to_string(), "unroll=8 vector=1 lane_elements=32 held_elements=4 max_group=128 "
                               "resident_threads=1536 column_vector=1 row_scalars=0");
  EXPECT_EQ(CudaOptions::parse("max_group=256")->max_group, 256); // the others: defaults
  EXPECT_EQ(CudaOptions::parse("max_group=256")->unroll, kCudaUnroll);
  EXPECT_TRUE(CudaOptions::parse("").has_value());
  for (const char* bad :
       {"unroll=3", "vector=2", "column_vector=3", "max_group=16", "resident_threads=4096",
        "row_scalars=2", "lanes=8", "unroll", "unroll=", "unroll=4x", "max_groupx=256"})
    EXPECT_FALSE(CudaOptions::parse(bad).has_value()) << bad;
}

// GroupNorm's shape: a row statistic over [32, 8, 25088], then an epilogue over the same
// rows seen as [32, 8, 8, 56, 56]. The group's lanes take the epilogue's 25088 points of a
// row, flattened; giving them only its outer loop of 8 left 1016 of 1024 lanes idle and the
// rest writing 3136 elements each, one after another (0.4 ms on an H200, 3% of its bandwidth).
TEST(EmitCuda, GroupTakesAWholeEpilogueNest) {
  std::string src =
      cuda_source_of("kernel gn\n"
                     "  in x: f32[32,8,25088]\n"
                     "  in x5: f32[32,8,8,56,56]\n"
                     "  temp t: f32[32,8]\n"
                     "  out y: f32[32,8,8,56,56]\n"
                     "  init[i0 < 32, i1 < 8]: t[i0, i1] = 0\n"
                     "  sum[i0 < 32, i1 < 8, i2 < 25088]: t[i0, i1] += x[i0, i1, i2]\n"
                     "  sub[i0 < 32, i1 < 8, i2 < 8, i3 < 56, i4 < 56]: "
                     "y[i0, i1, i2, i3, i4] = (x5[i0, i1, i2, i3, i4] - t[i0, i1])\n");
  EXPECT_NE(src.find("// a group of 1024 threads per point"), std::string::npos) << src;
  EXPECT_NE(src.find("for (int64_t weft_l = weft_lane; weft_l < 8 * 56 * 56; weft_l += 1024)"),
            std::string::npos)
      << src;
  EXPECT_EQ(src.find("+= 1024 * 1) {\n      for"), std::string::npos) << src;
}

// GroupNorm's epilogue, y = x / sqrt(t[row]) / g[channel]: the row's divisor does not move
// over the flattened nest, so its reciprocal is computed once before it and the division
// becomes a product (weft_div_by; the per-channel g moves, and keeps its division); x and y,
// whose last dims are the nest's, are addressed by the flat index instead of iterators
// computed from it. Each element had cost a division and two divisions of the index (an H200
// ran the kernel at 36% of its bandwidth).
TEST(EmitCuda, EpilogueMultipliesByAReciprocalAndTakesTheFlatIndex) {
  std::string src = cuda_source_of(
      "kernel gn\n"
      "  in x: f32[32,8,25088]\n"
      "  in x5: f32[32,8,8,56,56]\n"
      "  in g: f32[8,8]\n"
      "  temp t: f32[32,8]\n"
      "  out y: f32[32,8,8,56,56]\n"
      "  init[i0 < 32, i1 < 8]: t[i0, i1] = 0\n"
      "  sum[i0 < 32, i1 < 8, i2 < 25088]: t[i0, i1] += x[i0, i1, i2]\n"
      "  norm[i0 < 32, i1 < 8, i2 < 8, i3 < 56, i4 < 56]: "
      "y[i0, i1, i2, i3, i4] = ((x5[i0, i1, i2, i3, i4] / sqrt(t[i0, i1])) / g[i1, i2])\n");
  size_t reciprocal = src.find("= weft_reciprocal((sqrt(");
  size_t loop = src.find("for (int64_t weft_l = weft_lane;");
  ASSERT_NE(reciprocal, std::string::npos) << src;
  EXPECT_LT(reciprocal, loop) << src;
  EXPECT_EQ(occurrences(src, "weft_reciprocal("), 1u) << src;
  EXPECT_NE(src.find("weft_div_by(t0, t"), std::string::npos) << src;
  EXPECT_NE(src.find(" / t"), std::string::npos) << src; // by g, which moves
  EXPECT_NE(src.find(" * 8 * 56 * 56 + weft_l];"), std::string::npos) << src;
  EXPECT_EQ(src.find("c3 * 56 + c4"), std::string::npos) << src;
}

// BatchNorm's last part, y = (x - m[c]) / sqrt(v[c]) over [32, 64, 56, 56]: the per-channel
// sqrt and division would run for every element (about 45 PTX instructions each), so the
// [56, 56] planes go to a group of lanes per (n, c) point, before which the reciprocal is
// computed once. A nest with nothing costly per channel (x * g[c]) stays one thread a point.
TEST(EmitCuda, ElementwiseGivesItsPlanesToLanesWhenAChannelValueIsCostly) {
  std::string bn =
      cuda_source_of("kernel bn\n"
                     "  in x: f32[32,64,56,56]\n"
                     "  in m: f32[64]\n"
                     "  in v: f32[64]\n"
                     "  out y: f32[32,64,56,56]\n"
                     "  norm[i0 < 32, i1 < 64, i2 < 56, i3 < 56]: "
                     "y[i0, i1, i2, i3] = ((x[i0, i1, i2, i3] - m[i1]) / sqrt(v[i1]))\n");
  EXPECT_NE(bn.find("weft_p < 32 * 64;"), std::string::npos) << bn;
  EXPECT_NE(bn.find("// a group of 256 threads per point"), std::string::npos) << bn;
  size_t reciprocal = bn.find("= weft_reciprocal((sqrt(");
  ASSERT_NE(reciprocal, std::string::npos) << bn;
  EXPECT_LT(reciprocal, bn.find("for (int64_t weft_l = weft_lane; weft_l < 56 * 56;")) << bn;
  EXPECT_NE(bn.find(" * 56 * 56 + weft_l];"), std::string::npos) << bn;
  std::string scale = cuda_source_of("kernel scale\n"
                                     "  in x: f32[32,64,56,56]\n"
                                     "  in g: f32[64]\n"
                                     "  out y: f32[32,64,56,56]\n"
                                     "  mul[i0 < 32, i1 < 64, i2 < 56, i3 < 56]: y[i0, i1, i2, i3] "
                                     "= (x[i0, i1, i2, i3] * g[i1])\n");
  EXPECT_NE(scale.find("weft_p < 32 * 64 * 56 * 56;"), std::string::npos) << scale;
  EXPECT_EQ(scale.find("weft_lane"), std::string::npos) << scale;
}

// A row's passes over [64, 1024] (the shape of LayerNorm): 64 lanes, 16 elements each
// (CudaOptions::held_elements; 8 a lane when the row is not held), held in registers. x is
// read from memory once, before the passes, as float4 where aligned (else element by
// element); y's values stay in registers and are stored once, after them. A lane takes 4
// neighbouring elements at a time. Without vector loads, a lane takes every 64th element,
// x's first pass loads it and y's last stores it, and a buffer of one pass (g) is not held.
TEST(EmitCuda, RowInRegisters) {
  std::string_view rows =
      "kernel rows\n"
      "  in x: f32[64,1024]\n"
      "  in g: f32[1024]\n"
      "  temp t: f32[64]\n"
      "  temp u: f32[64]\n"
      "  out y: f32[64,1024]\n"
      "  init[i0 < 64]: t[i0] = 0\n"
      "  sum[i0 < 64, i1 < 1024]: t[i0] += x[i0, i1]\n"
      "  init2[i0 < 64]: u[i0] = 0\n"
      "  sq[i0 < 64, i1 < 1024]: u[i0] += ((x[i0, i1] - t[i0]) * (x[i0, i1] - t[i0]))\n"
      "  center[i0 < 64, i1 < 1024]: y[i0, i1] = ((x[i0, i1] - t[i0]) * g[i1])\n"
      "  scale[i0 < 64, i1 < 1024]: y[i0, i1] = (y[i0, i1] * u[i0])\n";
  std::string src = cuda_source_of(rows);
  auto count = [&](const std::string& text) { return occurrences(src, text); };
  EXPECT_NE(src.find("float weft_r0[16];"), std::string::npos) << src;
  EXPECT_NE(src.find("float weft_r4[16];"), std::string::npos) << src;
  EXPECT_EQ(src.find("float weft_r1["), std::string::npos) << src; // g: over the budget of 32
  EXPECT_EQ(count("const int64_t c1 = 0 + weft_k / 4 * 256 + weft_lane * 4 + weft_k % 4;"), 6u)
      << src; // the four passes, and the element-by-element load and store
  EXPECT_EQ(count("const float4 weft_y = weft_load4(&b0[c0 * 1024 + c1]);"), 1u) << src;
  EXPECT_EQ(count("weft_store4(&b4[c0 * 1024 + c1], weft_r4[weft_k]"), 1u) << src;
  EXPECT_EQ(count("weft_r0[weft_k] = b0[c0 * 1024 + c1];"), 1u) << src; // when not aligned
  EXPECT_EQ(count("b4[c0 * 1024 + c1] = weft_r4[weft_k];"), 1u) << src;
  EXPECT_EQ(count("(weft_r0[weft_k] = b0"), 0u) << src; // no load in the passes
  EXPECT_LT(src.find("load b0[c0 * 1024 + c1] by quads"), src.find("// sum")) << src;
  EXPECT_GT(src.find("store b4[c0 * 1024 + c1] by quads"), src.find("// scale")) << src;
  // g, read by the center pass alone, a quad at a time as it runs (aligned or not).
  EXPECT_EQ(count("float weft_q1[4];  // b1[c1], a quad at a time"), 1u) << src;
  EXPECT_EQ(count("const float4 weft_y = weft_load4(&b1[c1]);"), 1u) << src;
  EXPECT_EQ(count("weft_q1[weft_j] = b1[c1 + weft_j];"), 1u) << src;
  EXPECT_EQ(count("= weft_q1[weft_k % 4];"), 1u) << src;
  EXPECT_LT(src.find("float weft_q1[4];"), src.find("// center")) << src;
  EXPECT_GT(src.find("float weft_q1[4];"), src.find("// sq")) << src;
  // center and scale write registers and read registers, g and the statistics: no barrier
  // after either (the reductions' group combines keep theirs).
  EXPECT_EQ(count("__syncthreads();"), 0u) << src;

  Result<kernel::Kernel> k = kernel::parse_kernel(rows);
  ASSERT_TRUE(k.ok());
  Result<poly::ScheduledKernel> s = poly::schedule_kernel(*k);
  ASSERT_TRUE(s.ok());
  CudaOptions scalar;
  scalar.vector = 1;
  Result<EmittedFunction> e = emit_function(*k, s->loops, Dialect::kCuda, {}, scalar);
  ASSERT_TRUE(e.ok());
  src = e->source;
  EXPECT_NE(src.find("float weft_r0[16];"), std::string::npos) << src;
  EXPECT_EQ(src.find("float weft_r1["), std::string::npos) << src; // g: one pass
  EXPECT_EQ(count("#pragma unroll"), 4u) << src;
  EXPECT_EQ(count("const int64_t c1 = 0 + weft_lane + weft_k * 64;"), 4u) << src;
  EXPECT_EQ(count("= b0[c0 * 1024 + c1]"), 1u) << src; // x: one read from memory
  EXPECT_EQ(count("b4[c0 * 1024 + c1] ="), 1u) << src; // y: one store
  EXPECT_EQ(count("= b4[c0 * 1024 + c1]"), 0u) << src; // and no load
  EXPECT_EQ(src.find("weft_load4"), std::string::npos) << src;
}

// A row's scalars (here the two statistics t and u of each row) live in a register of every
// lane: each lane runs their inits and stores the combined totals, with no synchronization
// after; with CudaOptions::row_scalars 0 they are temporaries in memory that lane 0 writes.
TEST(EmitCuda, RowScalarsInRegisters) {
  std::string_view rows =
      "kernel rows\n"
      "  in x: f32[64,1024]\n"
      "  temp t: f32[64]\n"
      "  temp u: f32[64]\n"
      "  out y: f32[64,1024]\n"
      "  out m: f32[64]\n"
      "  init[i0 < 64]: t[i0] = 0\n"
      "  sum[i0 < 64, i1 < 1024]: t[i0] += x[i0, i1]\n"
      "  mean[i0 < 64]: t[i0] = (t[i0] / 1024)\n"
      "  init2[i0 < 64]: u[i0] = 0\n"
      "  sq[i0 < 64, i1 < 1024]: u[i0] += ((x[i0, i1] - t[i0]) * (x[i0, i1] - t[i0]))\n"
      "  keep[i0 < 64]: m[i0] = u[i0]\n"
      "  center[i0 < 64, i1 < 1024]: y[i0, i1] = ((x[i0, i1] - t[i0]) * u[i0])\n";
  Result<kernel::Kernel> k = kernel::parse_kernel(rows);
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  Result<poly::ScheduledKernel> s = poly::schedule_kernel(*k);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto source = [&](int64_t row_scalars) {
    CudaOptions o;
    o.row_scalars = row_scalars;
    Result<EmittedFunction> e = emit_function(*k, s->loops, Dialect::kCuda, {}, o);
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    return e.ok() ? e->source : std::string();
  };
  std::string held = source(1);
  EXPECT_NE(held.find("float b1[1];  // t: the point's"), std::string::npos) << held;
  EXPECT_NE(held.find("float b2[1];  // u: the point's"), std::string::npos) << held;
  EXPECT_NE(held.find("// init\n      const float t0 = 0.0f;\n      b1[0] = t0;"),
            std::string::npos)
      << held;
  EXPECT_NE(held.find("  b1[0] = b1[0] + acc;"), std::string::npos) << held; // every lane
  EXPECT_EQ(held.find("b1[c0]"), std::string::npos) << held;
  // Lane 0 writes the output m alone, and a sync follows; the pass over the row writes and
  // reads only what its lane holds (Emitter::lane_private): none after it.
  EXPECT_EQ(occurrences(held, "if (weft_lane == 0)"), 1u) << held;
  EXPECT_EQ(occurrences(held, "__syncthreads();"), 1u) << held;
  std::string memory = source(0);
  EXPECT_EQ(memory.find("float b1[1];"), std::string::npos) << memory;
  EXPECT_NE(memory.find("if (weft_lane == 0) { b1[c0] = b1[c0] + acc; }"), std::string::npos)
      << memory;
  EXPECT_GT(occurrences(memory, "__syncthreads();"), 4u) << memory;
}

// A padded pooling window: its loops' bounds move with the point, so no lane but the first
// would have work in a group. Each point takes a thread (it took a warp, lane 0 working).
TEST(EmitCuda, WindowOfMovingBoundsTakesAThreadPerPoint) {
  std::string src = cuda_source_of(
      "kernel pool\n"
      "  in x: f32[1,64,112,112]\n"
      "  out y: f32[1,64,56,56]\n"
      "  init[i0 < 1, i1 < 64, i2 < 56, i3 < 56]: y[i0, i1, i2, i3] = -inf\n"
      "  acc[i0 < 1, i1 < 64, i2 < 56, i3 < 56, i4 < 3, i5 < 3, 2*i2 + i4 + -1 >= 0, "
      "-2*i2 + -1*i4 + 112 >= 0, 2*i3 + i5 + -1 >= 0, -2*i3 + -1*i5 + 112 >= 0]: "
      "y[i0, i1, i2, i3] max= x[i0, i1, 2*i2 + i4 + -1, 2*i3 + i5 + -1]\n");
  EXPECT_EQ(src.find("weft_lane"), std::string::npos) << src;
  EXPECT_NE(src.find("weft_first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("weft_imax(0, ((-2 * c2) + 1))"), std::string::npos) << src;
}

// RMSNorm as ONNX graphs spell it: the statistics are [rows, 1] tensors, and a statement over
// the dim of 1 reads them where isl has dropped its loop (index "0 + 0"). They are row
// scalars all the same: no lane-0 statement, no barrier, no round trip through memory.
TEST(EmitCuda, RowScalarsOfExtentOneDims) {
  std::string src =
      cuda_source_of("kernel rms\n"
                     "  in x: f32[64,1024]\n"
                     "  in eps: f32[]\n"
                     "  in w: f32[1024]\n"
                     "  temp t: f32[64]\n"
                     "  temp m: f32[64,1]\n"
                     "  temp r: f32[64,1]\n"
                     "  out y: f32[64,1024]\n"
                     "  init[i0 < 64]: t[i0] = 0\n"
                     "  update[i0 < 64, i1 < 1024]: t[i0] += (x[i0, i1] * x[i0, i1])\n"
                     "  finish[i0 < 64]: m[i0, 0] = (t[i0] / 1024)\n"
                     "  recip[i0 < 64, i1 < 1]: r[i0, i1] = (1 / sqrt((m[i0, i1] + eps[])))\n"
                     "  scale[i0 < 64, i1 < 1024]: y[i0, i1] = ((x[i0, i1] * r[i0, 0]) * w[i1])\n");
  EXPECT_NE(src.find("float b4[1];  // m: the point's"), std::string::npos) << src;
  EXPECT_NE(src.find("float b5[1];  // r: the point's"), std::string::npos) << src;
  EXPECT_EQ(src.find("weft_lane == 0"), std::string::npos) << src;
  EXPECT_EQ(src.find("__syncthreads();"), std::string::npos) << src;
  EXPECT_EQ(src.find("[c0 + 0]"), std::string::npos) << src;
}

} // namespace
} // namespace weft::codegen
