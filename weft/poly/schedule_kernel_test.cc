#include <algorithm>

#include <gtest/gtest.h>

#include "tests/testing/kernels.h"
#include "weft/kernel/kernel_text.h"
#include "weft/poly/schedule_kernel.h"

namespace weft::poly {
namespace {

std::string loops(const kernel::Kernel& k) {
  Result<ScheduledKernel> r = schedule_kernel(k);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? print_loop_ast(r->loops) : "";
}

// "name": buffer "to"[i] = buffer "from"[i] over [0, extent).
kernel::Statement copy(const char* name, int from, int to, int64_t extent) {
  kernel::Statement s;
  s.name = name;
  s.domain = {extent};
  s.write = {to, {kernel::AffineExpr::iterator(0)}};
  s.reads = {{from, {kernel::AffineExpr::iterator(0)}}};
  s.expr = {{kernel::ExprOp::kLoad, DType::kF32, {}, 0, 0}};
  return s;
}

// The init and the update share the row loop: every dependence stays within one row.
TEST(ScheduleKernel, RowReductionWithSymbolicRows) {
  EXPECT_EQ(loops(testing::row_sum_kernel(Dim::symbol("N"), 64)),
            "for (c0 = 0; (c0 < N); c0 += 1)  // parallel\n"
            "  S0(c0);\n"
            "  for (c1 = 0; (c1 <= 63); c1 += 1)  // reduction\n"
            "    S1(c0, c1);\n");
}

TEST(ScheduleKernel, ColumnReductionStreamsOverRWithKParallel) {
  EXPECT_EQ(loops(testing::column_sum_kernel(2048, 256)),
            "for (c0 = 0; (c0 <= 255); c0 += 1)  // parallel\n"
            "  S0(c0);\n"
            "for (c0 = 0; (c0 <= 2047); c0 += 1)  // reduction\n"
            "  for (c1 = 0; (c1 <= 255); c1 += 1)  // parallel\n"
            "    S1(c0, c1);\n");
}

TEST(ScheduleKernel, AllReductionIntoAScalar) {
  EXPECT_EQ(loops(testing::all_max_kernel(Dim::symbol("N"))),
            "S0();\n"
            "for (c0 = 0; (c0 < N); c0 += 1)  // reduction\n"
            "  S1(c0);\n");
}

TEST(ScheduleKernel, ElementwiseIsParallelEverywhere) {
  EXPECT_EQ(loops(testing::bias_add_kernel(Dim::symbol("B"), 16)),
            "for (c0 = 0; (c0 < B); c0 += 1)  // parallel\n"
            "  for (c1 = 0; (c1 <= 15); c1 += 1)  // parallel\n"
            "    S0(c0, c1);\n");
}

// y[i] = y[i - 1] + x[i]: a dependence carried by the loop, which is not a reduction: the
// loop must not be marked parallel.
TEST(ScheduleKernel, CarriedDependenceIsNeverParallel) {
  using namespace kernel;
  Kernel k;
  k.name = "scan";
  k.buffers = {{"x", DType::kF32, {16}, BufferRole::kInput},
               {"y", DType::kF32, {16}, BufferRole::kOutput}};
  Statement s;
  s.name = "scan";
  s.domain = {15};
  s.write = {1, {{1, {{0, 1}}}}}; // y[i0 + 1]
  s.reads = {{1, {AffineExpr::iterator(0)}}, {0, {{1, {{0, 1}}}}}};
  s.expr = {{ExprOp::kLoad, DType::kF32, {}, 0, 0},
            {ExprOp::kLoad, DType::kF32, {}, 1, 0},
            {ExprOp::kAdd, DType::kF32, {0, 1}, -1, 0}};
  k.statements = {s};
  Result<ScheduledKernel> r = schedule_kernel(k);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(print_loop_ast(r->loops), "for (c0 = 0; (c0 <= 14); c0 += 1)\n  S0(c0);\n");
  EXPECT_NE(r->dependences.find("S0[i0] -> S0[i0' = 1 + i0]"), std::string::npos) << r->dependences;
}

// Two statements over rows of one extent share the row loop only when every dependence
// stays within a row: y[i] = x[i], then z[i] = y[i] fuses; z[i] = y[15 - i] (a reversal,
// reading a row another iteration writes) keeps two loops.
TEST(ScheduleKernel, StatementsShareTheOuterLoopOnlyWithinRowDependences) {
  using namespace kernel;
  auto kernel_reading = [](AffineExpr index) {
    Kernel k;
    k.name = "two";
    k.buffers = {{"x", DType::kF32, {16}, BufferRole::kInput},
                 {"y", DType::kF32, {16}, BufferRole::kTemp},
                 {"z", DType::kF32, {16}, BufferRole::kOutput}};
    Statement copy;
    copy.name = "copy";
    copy.domain = {16};
    copy.write = {1, {AffineExpr::iterator(0)}};
    copy.reads = {{0, {AffineExpr::iterator(0)}}};
    copy.expr = {{ExprOp::kLoad, DType::kF32, {}, 0, 0}};
    Statement use = copy;
    use.name = "use";
    use.write = {2, {AffineExpr::iterator(0)}};
    use.reads = {{1, {index}}};
    k.statements = {copy, use};
    return k;
  };
  EXPECT_EQ(loops(kernel_reading(AffineExpr::iterator(0))),
            "for (c0 = 0; (c0 <= 15); c0 += 1)  // parallel\n"
            "  S0(c0);\n"
            "  S1(c0);\n");
  EXPECT_EQ(loops(kernel_reading({15, {{0, -1}}})),
            "for (c0 = 0; (c0 <= 15); c0 += 1)  // parallel\n"
            "  S0(c0);\n"
            "for (c0 = 0; (c0 <= 15); c0 += 1)  // parallel\n"
            "  S1(c0);\n");
}

// Two buffers that view one value (stitching through a Reshape) are one array: the use
// reads back elements written at later iterations, so it keeps its own loop nest. Read as
// buffers of their own, the use would share the loop and read unwritten elements. With a
// symbolic extent, the statements are ordered as wholes and each loop stays parallel.
kernel::Kernel transpose_then_view(Dim rows) {
  using namespace kernel;
  Kernel k;
  k.name = "views";
  k.buffers = {{"x", DType::kF32, {4, rows}, BufferRole::kInput},
               {"y", DType::kF32, {rows, 4}, BufferRole::kOutput, 1},
               {"y_1", DType::kF32, {Dim::symbol("M")}, BufferRole::kInput, 1},
               {"z", DType::kF32, {rows, 4}, BufferRole::kOutput}};
  if (rows.is_static()) k.buffers[2].shape = {rows.value() * 4};
  Statement copy;
  copy.name = "copy";
  copy.domain = {rows, 4};
  copy.write = {1, {AffineExpr::iterator(0), AffineExpr::iterator(1)}};
  copy.reads = {{0, {AffineExpr::iterator(1), AffineExpr::iterator(0)}}};
  copy.expr = {{ExprOp::kLoad, DType::kF32, {}, 0, 0}};
  Statement use = copy;
  use.name = "use";
  use.write = {3, {AffineExpr::iterator(0), AffineExpr::iterator(1)}};
  use.reads = {{2, {{3, {{0, -4}, {1, 1}}}}}}; // y_1[3 - 4 * i0 + i1]: row -i0 of y
  k.statements = {copy, use};
  return k;
}

TEST(ScheduleKernel, AliasedBuffersAreOneArray) {
  const std::string separate = "for (c0 = 0; (c0 <= 3); c0 += 1)  // parallel\n"
                               "  for (c1 = 0; (c1 <= 3); c1 += 1)  // parallel\n"
                               "    S0(c0, c1);\n"
                               "for (c0 = 0; (c0 <= 3); c0 += 1)  // parallel\n"
                               "  for (c1 = 0; (c1 <= 3); c1 += 1)  // parallel\n"
                               "    S1(c0, c1);\n";
  kernel::Kernel k = transpose_then_view(4);
  k.statements[1].reads[0].index = {{12, {{0, -4}, {1, 1}}}}; // row 3 - i0 of y
  EXPECT_EQ(loops(k), separate);
  k.buffers[1].view_group = k.buffers[2].view_group = -1;
  EXPECT_EQ(loops(k), "for (c0 = 0; (c0 <= 3); c0 += 1)  // parallel\n"
                      "  for (c1 = 0; (c1 <= 3); c1 += 1)  // parallel\n"
                      "    S0(c0, c1);\n"
                      "    S1(c0, c1);\n");
}

// A channel shuffle after stitching: a concatenation "c" (viewed as [2, 4] by the transpose),
// transposed into "t" (viewed as [8] by the split). Each view group is an array of its own:
// read as one array, the transpose's writes (t[2 * i1 + i0]) would land on positions its
// reads (c[4 * i0 + i1]) take at other iterations, and its loops would not be parallel.
TEST(ScheduleKernel, ViewGroupsAreSeparateArrays) {
  using namespace kernel;
  Kernel k;
  k.name = "shuffle";
  k.buffers = {{"x", DType::kF32, {8}, BufferRole::kInput},
               {"c", DType::kF32, {8}, BufferRole::kOutput, 1},
               {"c_1", DType::kF32, {2, 4}, BufferRole::kInput, 1},
               {"t", DType::kF32, {4, 2}, BufferRole::kOutput, 3},
               {"t_1", DType::kF32, {8}, BufferRole::kInput, 3},
               {"y", DType::kF32, {4}, BufferRole::kOutput}};
  auto copy = [](std::string name, Access write, Access read, Shape domain) {
    Statement s;
    s.name = std::move(name);
    s.domain = std::move(domain);
    s.write = std::move(write);
    s.reads = {std::move(read)};
    s.expr = {{ExprOp::kLoad, DType::kF32, {}, 0, 0}};
    return s;
  };
  AffineExpr i0 = AffineExpr::iterator(0), i1 = AffineExpr::iterator(1);
  k.statements = {copy("concat", {1, {i0}}, {0, {i0}}, {8}),
                  copy("transpose", {3, {i1, i0}}, {2, {i0, i1}}, {2, 4}),
                  copy("split", {5, {i0}}, {4, {{4, {{0, 1}}}}}, {4})};
  ASSERT_TRUE(verify_kernel(k).ok());
  const std::string separate = "for (c0 = 0; (c0 <= 7); c0 += 1)  // parallel\n"
                               "  S0(c0);\n"
                               "for (c0 = 0; (c0 <= 1); c0 += 1)  // parallel\n"
                               "  for (c1 = 0; (c1 <= 3); c1 += 1)  // parallel\n"
                               "    S1(c0, c1);\n"
                               "for (c0 = 0; (c0 <= 3); c0 += 1)  // parallel\n"
                               "  S2(c0);\n";
  EXPECT_EQ(loops(k), separate);
  for (Buffer& b : k.buffers)
    b.view_group = b.aliased() ? 1 : -1; // one group: the transpose's loops carry dependences
  EXPECT_EQ(loops(k).find("(c1 <= 3); c1 += 1)  // parallel"), std::string::npos) << loops(k);
}

TEST(ScheduleKernel, AliasedBuffersOfSymbolicShapeAreOrderedAsWholes) {
  kernel::Kernel k = transpose_then_view(Dim::symbol("R"));
  Result<ScheduledKernel> r = schedule_kernel(k);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_NE(r->dependences.find("S0[i0, i1] -> S1[j0, j1]"), std::string::npos) << r->dependences;
  std::string ast = print_loop_ast(r->loops);
  EXPECT_EQ(std::count(ast.begin(), ast.end(), '\n'), 6) << ast; // two nests of two loops
  EXPECT_EQ(ast.find("S0(c0, c1);\n    S1"), std::string::npos) << ast;
}

// When not all statements can share a loop, runs of consecutive ones still do: the copy and
// its use share their row loop, and the statement over another extent keeps its own nest.
TEST(ScheduleKernel, RunsOfStatementsShareLoopsWhenTheWholeKernelCannot) {
  using namespace kernel;
  Kernel k;
  k.name = "runs";
  k.buffers = {{"x", DType::kF32, {16}, BufferRole::kInput},
               {"y", DType::kF32, {16}, BufferRole::kTemp},
               {"z", DType::kF32, {16}, BufferRole::kOutput},
               {"w", DType::kF32, {8}, BufferRole::kOutput}};
  k.statements = {copy("copy", 0, 1, 16), copy("use", 1, 2, 16), copy("head", 2, 3, 8)};
  EXPECT_EQ(loops(k), "for (c0 = 0; (c0 <= 15); c0 += 1)  // parallel\n"
                      "  S0(c0);\n"
                      "  S1(c0);\n"
                      "for (c0 = 0; (c0 <= 7); c0 += 1)  // parallel\n"
                      "  S2(c0);\n");
}

// With min_shared_points (CUDA: a thread a point of the shared loops), statements that
// reduce nothing share loops only with that many points: below it, each keeps its nest.
TEST(ScheduleKernel, FewSharedPointsKeepNestsApart) {
  using namespace kernel;
  Kernel k;
  k.name = "few";
  k.buffers = {{"x", DType::kF32, {16}, BufferRole::kInput},
               {"y", DType::kF32, {16}, BufferRole::kTemp},
               {"z", DType::kF32, {16}, BufferRole::kOutput}};
  k.statements = {copy("copy", 0, 1, 16), copy("use", 1, 2, 16)};
  auto with = [&](int64_t points) {
    Result<ScheduledKernel> r = schedule_kernel(k, {.min_shared_points = points});
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? print_loop_ast(r->loops) : "";
  };
  const std::string shared = "for (c0 = 0; (c0 <= 15); c0 += 1)  // parallel\n"
                             "  S0(c0);\n"
                             "  S1(c0);\n";
  EXPECT_EQ(with(16), shared);
  EXPECT_EQ(with(17), "for (c0 = 0; (c0 <= 15); c0 += 1)  // parallel\n"
                      "  S0(c0);\n"
                      "for (c0 = 0; (c0 <= 15); c0 += 1)  // parallel\n"
                      "  S1(c0);\n");
  // Loops of symbolic extent, which may be 1 in a run, count as few.
  Kernel symbolic = k;
  for (kernel::Buffer& b : symbolic.buffers)
    b.shape = {Dim::symbol("N")};
  for (Statement& s : symbolic.statements)
    s.domain = {Dim::symbol("N")};
  Result<ScheduledKernel> apart_n = schedule_kernel(symbolic, {.min_shared_points = 2});
  ASSERT_TRUE(apart_n.ok());
  EXPECT_EQ(print_loop_ast(apart_n->loops), "for (c0 = 0; (c0 < N); c0 += 1)  // parallel\n"
                                            "  S0(c0);\n"
                                            "for (c0 = 0; (c0 < N); c0 += 1)  // parallel\n"
                                            "  S1(c0);\n");
  EXPECT_EQ(loops(symbolic), "for (c0 = 0; (c0 < N); c0 += 1)  // parallel\n"
                             "  S0(c0);\n"
                             "  S1(c0);\n");
  // A row sum's init and update share their rows however few.
  Result<ScheduledKernel> sum =
      schedule_kernel(testing::row_sum_kernel(4, 64), {.min_shared_points = 1 << 20});
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(print_loop_ast(sum->loops), "for (c0 = 0; (c0 <= 3); c0 += 1)  // parallel\n"
                                        "  S0(c0);\n"
                                        "  for (c1 = 0; (c1 <= 63); c1 += 1)  // reduction\n"
                                        "    S1(c0, c1);\n");
  // ...but not loops of a single point: isl drops them, and the statements' nests became
  // one block, a part that CUDA runs on one thread, instead of loops of their own. Here a
  // batch of 1 through MixNet's Concat, BatchNorm and SiLU, and global pooling.
  Result<Kernel> unit = kernel::parse_kernel(R"(kernel unit
  temp b0: f32[1,6,2,2]
  in b1: f32[1,3,2,2]
  in b2: f32[1,3,2,2]
  out b3: f32[1,6,2,2] (aliased: b3)
  in b4: f32[1,6,4] (aliased: b3)
  temp t1: f32[6]
  out b5: f32[1,6]
  concat[i0 < 1, i1 < 3, i2 < 2, i3 < 2]: b0[i0, i1, i2, i3] = b1[i0, i1, i2, i3]
  concat[i0 < 1, i1 < 3, i2 < 2, i3 < 2]: b0[i0, i1 + 3, i2, i3] = b2[i0, i1, i2, i3]
  Mul[i0 < 1, i1 < 6, i2 < 2, i3 < 2]: b3[i0, i1, i2, i3] = (b0[i0, i1, i2, i3] * 2)
  init[i0 < 1, i1 < 6]: t1[i1] = 0
  update[i0 < 1, i1 < 6, i2 < 4]: t1[i1] += b4[i0, i1, i2]
  finish[i0 < 1, i1 < 6]: b5[i0, i1] = t1[i1]
)");
  ASSERT_TRUE(unit.ok()) << unit.status().to_string();
  // Whether some top-level item of the nest is a block rather than a loop.
  auto has_block = [](const ScheduledKernel& r) {
    return std::any_of(r.loops.children.begin(), r.loops.children.end(),
                       [](const AstNode& n) { return n.kind == AstNode::Kind::kBlock; });
  };
  Result<ScheduledKernel> apart = schedule_kernel(*unit, {.min_shared_points = 2});
  Result<ScheduledKernel> together = schedule_kernel(*unit);
  ASSERT_TRUE(apart.ok() && together.ok());
  EXPECT_FALSE(has_block(*apart)) << print_loop_ast(apart->loops);
  EXPECT_TRUE(has_block(*together)) << print_loop_ast(together->loops);
}

// An indirect read touches the whole gathered dim (here of symbolic extent R, which becomes
// a parameter); it writes nothing, so every loop stays parallel.
TEST(ScheduleKernel, IndirectLoadIsOverApproximatedByItsDim) {
  EXPECT_EQ(loops(testing::gather_rows_kernel(Dim::symbol("R"), 8, 3)),
            "for (c0 = 0; (c0 <= 2); c0 += 1)  // parallel\n"
            "  for (c1 = 0; (c1 <= 7); c1 += 1)  // parallel\n"
            "    S0(c0, c1);\n");
}

// y[idx[i]] read back after writing y: the indirect read may see any write of y, so the
// statements keep their order and the read depends on every write.
TEST(ScheduleKernel, IndirectReadDependsOnEveryWriteOfItsDim) {
  using namespace kernel;
  Kernel k = testing::gather_rows_kernel(4, 8, 3);
  k.buffers.push_back({"z", DType::kF32, {3, 8}, BufferRole::kOutput});
  k.buffers[0].role = BufferRole::kTemp;
  Statement fill;
  fill.name = "fill";
  fill.domain = {4, 8};
  fill.write = {0, {AffineExpr::iterator(0), AffineExpr::iterator(1)}};
  fill.expr = {{ExprOp::kConstant, DType::kF32, {}, -1, 1.0}};
  k.statements.insert(k.statements.begin(), fill);
  Result<ScheduledKernel> r = schedule_kernel(k);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_NE(r->dependences.find("S0[i0, i1] -> S1["), std::string::npos) << r->dependences;
  // Every row of the temporary flows into each gathered row: i0 is free in the dependence.
  EXPECT_EQ(r->dependences.find("S1[i0' = i0"), std::string::npos) << r->dependences;
}

// A walk's second step gathers at the position the first wrote: on the CPU each keeps its
// own inner loop, whose gathers are all independent; otherwise they share both loops.
TEST(ScheduleKernel, ChainedGathersKeepTheirInnerLoopsApart) {
  Result<kernel::Kernel> k = kernel::parse_kernel(R"(kernel walk
  in x: i64[64]
  temp p: i64[4,8]
  out q: i64[4,8]
  first[i0 < 4, i1 < 8]: p[i0, i1] = x[i1]
  second[i0 < 4, i1 < 8]: q[i0, i1] = x[wrap(p[i0, i1])]
)");
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  Result<ScheduledKernel> apart = schedule_kernel(*k, {.chained_gathers_apart = true});
  Result<ScheduledKernel> together = schedule_kernel(*k);
  ASSERT_TRUE(apart.ok() && together.ok());
  EXPECT_EQ(print_loop_ast(apart->loops), "for (c0 = 0; (c0 <= 3); c0 += 1)  // parallel\n"
                                          "  for (c1 = 0; (c1 <= 7); c1 += 1)  // parallel\n"
                                          "    S0(c0, c1);\n"
                                          "  for (c1 = 0; (c1 <= 7); c1 += 1)  // parallel\n"
                                          "    S1(c0, c1);\n");
  EXPECT_EQ(print_loop_ast(together->loops), "for (c0 = 0; (c0 <= 3); c0 += 1)  // parallel\n"
                                             "  for (c1 = 0; (c1 <= 7); c1 += 1)  // parallel\n"
                                             "    S0(c0, c1);\n"
                                             "    S1(c0, c1);\n");
}

// Two rows of updates may land on one row of y: the update loop carries that (serial), the
// column loop does not (parallel).
TEST(ScheduleKernel, IndirectWriteSerializesTheRowsThatMayCollide) {
  EXPECT_EQ(loops(testing::scatter_add_rows_kernel(5, 8, 3)),
            "for (c0 = 0; (c0 <= 4); c0 += 1)  // parallel\n"
            "  for (c1 = 0; (c1 <= 7); c1 += 1)  // parallel\n"
            "    S0(c0, c1);\n"
            "for (c0 = 0; (c0 <= 2); c0 += 1)\n"
            "  for (c1 = 0; (c1 <= 7); c1 += 1)  // parallel\n"
            "    S1(c0, c1);\n");
}

// A band of one iteration gets no loop; its mark must not pass to the loop below, which
// here carries the collisions of the scatter (and ConvTranspose's y[i + k] alike).
TEST(ScheduleKernel, MarkOfALooplessBandStaysThere) {
  kernel::Kernel k = testing::scatter_add_rows_kernel(5, 8, 3);
  kernel::Statement& s = k.statements[1];
  s.domain.insert(s.domain.begin(), 1); // a leading parallel dim of extent 1
  for (kernel::Access* a : {&s.write, &s.reads[0], &s.reads[1]}) {
    for (kernel::AffineExpr& e : a->index) {
      for (auto& term : e.terms)
        term.first += 1;
    }
  }
  EXPECT_EQ(loops(k), "for (c0 = 0; (c0 <= 4); c0 += 1)  // parallel\n"
                      "  for (c1 = 0; (c1 <= 7); c1 += 1)  // parallel\n"
                      "    S0(c0, c1);\n"
                      "for (c1 = 0; (c1 <= 2); c1 += 1)\n"
                      "  for (c2 = 0; (c2 <= 7); c2 += 1)  // parallel\n"
                      "    S1(0, c1, c2);\n");
}

// A leading dim of extent 1, which the row statistics' writes leave out, is no reduction:
// softmax over [1, H, S] still finishes a row before the next.
TEST(ScheduleKernel, UnitDimOutsideTheWriteIsShared) {
  Result<kernel::Kernel> k = kernel::parse_kernel(R"(kernel softmax
  in x: f32[1,2,8]
  out y: f32[1,2,8]
  temp m: f32[2]
  temp s: f32[2]
  init[i0 < 1, i1 < 2]: m[i1] = -inf
  update[i0 < 1, i1 < 2, i2 < 8]: m[i1] max= x[i0, i1, i2]
  init_sum[i0 < 1, i1 < 2]: s[i1] = 0
  exp[i0 < 1, i1 < 2, i2 < 8]: y[i0, i1, i2] = exp((x[i0, i1, i2] - m[i1]))
  sum_exp[i0 < 1, i1 < 2, i2 < 8]: s[i1] += y[i0, i1, i2]
  normalize[i0 < 1, i1 < 2, i2 < 8]: y[i0, i1, i2] = (y[i0, i1, i2] / s[i1])
)");
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_EQ(loops(*k), "for (c1 = 0; (c1 <= 1); c1 += 1)  // parallel\n"
                       "  S0(0, c1);\n"
                       "  for (c2 = 0; (c2 <= 7); c2 += 1)  // reduction\n"
                       "    S1(0, c1, c2);\n"
                       "  S2(0, c1);\n"
                       "  for (c2 = 0; (c2 <= 7); c2 += 1)  // parallel\n"
                       "    S3(0, c1, c2);\n"
                       "  for (c2 = 0; (c2 <= 7); c2 += 1)  // reduction\n"
                       "    S4(0, c1, c2);\n"
                       "  for (c2 = 0; (c2 <= 7); c2 += 1)  // parallel\n"
                       "    S5(0, c1, c2);\n");
}

std::string text_loops(std::string_view text, bool outputs_innermost = true) {
  Result<kernel::Kernel> k = kernel::parse_kernel(text);
  EXPECT_TRUE(k.ok()) << k.status().to_string();
  if (!k.ok()) return "";
  Result<ScheduledKernel> r = schedule_kernel(*k, {.outputs_innermost = outputs_innermost});
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? print_loop_ast(r->loops) : "";
}

// A depthwise convolution's 9 taps run around its output row, which the vector loop then
// runs over; the init keeps the domain's order, and the two share the loops above the taps.
TEST(ScheduleKernel, FewTermsPerOutputRunTheOutputLoopInnermost) {
  EXPECT_EQ(
      text_loops(R"(
    kernel dw
      in x: f32[4,20,20]
      in w: f32[4,3,3]
      out y: f32[4,20,20]
      init[i0 < 4, i1 < 20, i2 < 20]: y[i0, i1, i2] = 0
      multiply_add[i0 < 4, i1 < 20, i2 < 20, i3 < 3, i4 < 3, i1 + i3 + -1 >= 0, -1*i1 + -1*i3 + 20 >= 0, i2 + i4 + -1 >= 0, -1*i2 + -1*i4 + 20 >= 0]: y[i0, i1, i2] += (x[i0, i1 + i3 + -1, i2 + i4 + -1] * w[i0, i3, i4])
  )"),
      "for (c0 = 0; (c0 <= 3); c0 += 1)  // parallel\n"
      "  for (c1 = 0; (c1 <= 19); c1 += 1)  // parallel\n"
      "    for (c2 = 0; (c2 <= 19); c2 += 1)  // parallel\n"
      "      S0(c0, c1, c2);\n"
      "    for (c2 = max(0, (-c1 + 1)); (c2 <= min(2, (-c1 + 20))); c2 += 1)  // reduction\n"
      "      for (c3 = 0; (c3 <= 2); c3 += 1)  // reduction\n"
      "        for (c4 = max(0, (-c3 + 1)); (c4 <= min(19, (-c3 + 20))); c4 += 1)  // parallel\n"
      "          S1(c0, c1, c4, c2, c3);\n");
}

// With stride 2 the taps read every other input of a row.
TEST(ScheduleKernel, StridedTapsRunTheOutputLoopInnermostToo) {
  EXPECT_EQ(text_loops(R"(
    kernel dw2
      in x: f32[2,40]
      in w: f32[2,3]
      out y: f32[2,19]
      init[i0 < 2, i1 < 19]: y[i0, i1] = 0
      multiply_add[i0 < 2, i1 < 19, i2 < 3]: y[i0, i1] += (x[i0, 2*i1 + i2] * w[i0, i2])
  )"),
            "for (c0 = 0; (c0 <= 1); c0 += 1)  // parallel\n"
            "  for (c1 = 0; (c1 <= 18); c1 += 1)  // parallel\n"
            "    S0(c0, c1);\n"
            "  for (c1 = 0; (c1 <= 2); c1 += 1)  // reduction\n"
            "    for (c2 = 0; (c2 <= 18); c2 += 1)  // parallel\n"
            "      S1(c0, c2, c1);\n");
}

// A product of few terms per output runs as rows of B scaled by A's entries (i, k, j).
TEST(ScheduleKernel, SmallProductsRunRowsOfB) {
  EXPECT_EQ(text_loops(R"(
    kernel mm
      in a: f32[8,4]
      in b: f32[4,32]
      out y: f32[8,32]
      init[i0 < 8, i1 < 32]: y[i0, i1] = 0
      multiply_add[i0 < 8, i1 < 32, i2 < 4]: y[i0, i1] += (a[i0, i2] * b[i2, i1])
  )"),
            "for (c0 = 0; (c0 <= 7); c0 += 1)  // parallel\n"
            "  for (c1 = 0; (c1 <= 31); c1 += 1)  // parallel\n"
            "    S0(c0, c1);\n"
            "  for (c1 = 0; (c1 <= 3); c1 += 1)  // reduction\n"
            "    for (c2 = 0; (c2 <= 31); c2 += 1)  // parallel\n"
            "      S1(c0, c2, c1);\n");
}

// Not reordered: a row sum (the output moves along the input's rows, not its last dim),
// rows of more terms than kFewTerms, too few outputs for a vector, and a reduction that reads
// its own output at the next position (a dependence across outputs).
TEST(ScheduleKernel, OutputsStayOuterWhereReorderingDoesNotPay) {
  std::string row = R"(
    kernel row
      in x: f32[64,16]
      out y: f32[64]
      init[i0 < 64]: y[i0] = 0
      sum[i0 < 64, i1 < 16]: y[i0] += x[i0, i1]
  )";
  EXPECT_EQ(text_loops(row), text_loops(row, false));
  std::string long_rows = R"(
    kernel long_rows
      in a: f32[8,128]
      in b: f32[128,32]
      out y: f32[8,32]
      init[i0 < 8, i1 < 32]: y[i0, i1] = 0
      multiply_add[i0 < 8, i1 < 32, i2 < 128]: y[i0, i1] += (a[i0, i2] * b[i2, i1])
  )";
  EXPECT_EQ(text_loops(long_rows), text_loops(long_rows, false));
  std::string narrow = R"(
    kernel narrow
      in a: f32[8,4]
      in b: f32[4,8]
      out y: f32[8,8]
      init[i0 < 8, i1 < 8]: y[i0, i1] = 0
      multiply_add[i0 < 8, i1 < 8, i2 < 4]: y[i0, i1] += (a[i0, i2] * b[i2, i1])
  )";
  EXPECT_EQ(text_loops(narrow), text_loops(narrow, false));
  std::string chained = R"(
    kernel chained
      in x: f32[4,32]
      out y: f32[33]
      init[i0 < 33]: y[i0] = 0
      sum[i0 < 32, i1 < 4]: y[i0] += (x[i1, i0] * y[i0 + 1])
  )";
  EXPECT_EQ(text_loops(chained), text_loops(chained, false));
}

TEST(ScheduleKernel, ScheduleTreeCarriesMarks) {
  Result<ScheduledKernel> r = schedule_kernel(testing::row_sum_kernel(Dim::symbol("N"), 64));
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->schedule_tree.find("mark: \"reduction c1\""), std::string::npos) << r->schedule_tree;
  EXPECT_NE(r->schedule_tree.find("mark: \"parallel c0\""), std::string::npos) << r->schedule_tree;
}

TEST(ScheduleKernel, RejectsInvalidKernels) {
  kernel::Kernel k = testing::row_sum_kernel(4, 4);
  k.statements[1].reads[0].buffer = 7;
  EXPECT_FALSE(schedule_kernel(k).ok());
}

} // namespace
} // namespace weft::poly
