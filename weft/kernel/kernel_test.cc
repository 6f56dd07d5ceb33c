#include <gtest/gtest.h>

#include "tests/testing/kernels.h"
#include "weft/kernel/kernel.h"
#include "weft/kernel/strategy.h"

namespace weft::kernel {
namespace {

// y[i] = sum_j x[i, j] * 2, over a symbolic number of rows.
Kernel row_sum() {
  Kernel k;
  k.name = "row_sum";
  k.buffers = {{"x", DType::kF32, Shape{Dim::symbol("N"), 64}, BufferRole::kInput},
               {"y", DType::kF32, Shape{Dim::symbol("N")}, BufferRole::kOutput}};
  Statement init;
  init.name = "S0";
  init.domain = {Dim::symbol("N")};
  init.write = {1, {AffineExpr::iterator(0)}};
  init.expr = {{ExprOp::kConstant, DType::kF32, {}, -1, 0.0}};
  Statement update;
  update.name = "S1";
  update.domain = {Dim::symbol("N"), 64};
  update.write = {1, {AffineExpr::iterator(0)}};
  update.combine = Combine::kSum;
  update.reads = {{0, {AffineExpr::iterator(0), AffineExpr::iterator(1)}}};
  update.expr = {{ExprOp::kLoad, DType::kF32, {}, 0, 0},
                 {ExprOp::kConstant, DType::kF32, {}, -1, 2.0},
                 {ExprOp::kMul, DType::kF32, {0, 1}, -1, 0}};
  k.statements = {init, update};
  return k;
}

TEST(Kernel, PrintsStably) {
  EXPECT_EQ(print_kernel(row_sum()), "kernel row_sum\n"
                                     "  in x: f32[N,64]\n"
                                     "  out y: f32[N]\n"
                                     "  S0[i0 < N]: y[i0] = 0\n"
                                     "  S1[i0 < N, i1 < 64]: y[i0] += (x[i0, i1] * 2)\n");
  ASSERT_TRUE(verify_kernel(row_sum()).ok());
}

TEST(Kernel, ReducedIterators) {
  Kernel k = row_sum();
  EXPECT_FALSE(k.statements[1].is_reduced(0));
  EXPECT_TRUE(k.statements[1].is_reduced(1));
}

TEST(Kernel, AffinePrinting) {
  EXPECT_EQ(print_affine({3, {{0, 2}, {1, 1}}}), "2*i0 + i1 + 3");
  EXPECT_EQ(print_affine(AffineExpr::constant_of(0)), "0");
}

TEST(Kernel, VerifierCatchesBrokenKernels) {
  Kernel wrong_rank = row_sum();
  wrong_rank.statements[1].reads[0].index.pop_back();
  EXPECT_FALSE(verify_kernel(wrong_rank).ok());

  Kernel writes_input = row_sum();
  writes_input.statements[0].write = {0, {AffineExpr::iterator(0), AffineExpr::constant_of(0)}};
  EXPECT_NE(verify_kernel(writes_input).message().find("writes input buffer x"), std::string::npos);

  Kernel forward_ref = row_sum();
  forward_ref.statements[1].expr[2].operands = {0, 2};
  EXPECT_FALSE(verify_kernel(forward_ref).ok());

  Kernel bad_iter = row_sum();
  bad_iter.statements[0].write.index[0] = AffineExpr::iterator(3);
  EXPECT_FALSE(verify_kernel(bad_iter).ok());

  Kernel wrong_dtype = row_sum();
  wrong_dtype.statements[0].expr[0].dtype = DType::kF64;
  EXPECT_NE(verify_kernel(wrong_dtype).message().find("stores f64 into f32"), std::string::npos);

  // A view group starts at a buffer of its own: one past the buffers, or at a buffer of
  // another group, names none.
  Kernel views = row_sum();
  views.buffers[0].view_group = 7;
  EXPECT_NE(verify_kernel(views).message().find("view group 7"), std::string::npos);
  EXPECT_NE(print_kernel(views).find("(aliased: #7)"), std::string::npos);
  views.buffers[0].view_group = 1; // buffer 1 is in no group
  EXPECT_FALSE(verify_kernel(views).ok());
  views.buffers[1].view_group = 1;
  EXPECT_TRUE(verify_kernel(views).ok()) << verify_kernel(views).message();
}

TEST(Kernel, IndirectLoadPrintsItsIndexNode) {
  Kernel k = testing::gather_rows_kernel(Dim::symbol("R"), 8, 3);
  ASSERT_TRUE(verify_kernel(k).ok()) << verify_kernel(k).message();
  EXPECT_EQ(print_kernel(k), "kernel gather_rows\n"
                             "  in x: f32[R,8]\n"
                             "  in idx: i64[3]\n"
                             "  out y: f32[3,8]\n"
                             "  gather[i0 < 3, i1 < 8]: y[i0, i1] = x[wrap(idx[i0]), i1]\n");
}

TEST(Kernel, VerifierCatchesBrokenIndirectLoads) {
  Kernel later_node = testing::gather_rows_kernel(4, 8, 3);
  later_node.statements[0].reads[1].indirect[0].node = 1;
  EXPECT_NE(verify_kernel(later_node).message().find("not an earlier integer node"),
            std::string::npos);

  Kernel float_index = testing::gather_rows_kernel(4, 8, 3);
  float_index.statements[0].expr[0].dtype = DType::kF32;
  EXPECT_FALSE(verify_kernel(float_index).ok());

  Kernel affine_too = testing::gather_rows_kernel(4, 8, 3);
  affine_too.statements[0].reads[1].index[0] = AffineExpr::iterator(0);
  EXPECT_NE(verify_kernel(affine_too).message().find("bad indirect index"), std::string::npos);

  // A scatter (an indirect write) may take its index from any integer node, not a float one.
  Kernel scatter = testing::scatter_add_rows_kernel(4, 8, 3);
  ASSERT_TRUE(verify_kernel(scatter).ok()) << verify_kernel(scatter).message();
  EXPECT_NE(
      print_kernel(scatter).find("scatter[i0 < 3, i1 < 8]: y[wrap(idx[i0]), i1] += x[i0, i1]"),
      std::string::npos)
      << print_kernel(scatter);
  EXPECT_FALSE(scatter.statements[1].is_reduced(0)); // the target moves with the data
  scatter.statements[1].expr[0].dtype = DType::kF32;
  EXPECT_NE(verify_kernel(scatter).message().find("not an earlier integer node"),
            std::string::npos);
}

TEST(Kernel, DescribesStrategies) {
  EXPECT_EQ(describe_strategy(testing::row_sum_kernel(Dim::symbol("N"), 64)), "reduce ROW sum");
  EXPECT_EQ(describe_strategy(testing::all_max_kernel(Dim::symbol("N"))),
            "reduce ALL max (split across threads)");
  EXPECT_EQ(describe_strategy(testing::column_sum_kernel(9, 5)),
            "reduce COLUMN sum (R or K split across threads)");
  EXPECT_EQ(describe_strategy(testing::bias_add_kernel(3, 4)), "elementwise");
}

} // namespace
} // namespace weft::kernel
