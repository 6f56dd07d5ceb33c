#include <gtest/gtest.h>

#include "weft/fusion/views.h"

namespace weft::fusion {
namespace {

using kernel::AffineExpr;

TEST(CommonRefinement, SplitsBothShapes) {
  EXPECT_EQ(common_refinement({32, 8, 25088}, {32, 64, 56, 56}), (Shape{32, 8, 8, 56, 56}));
  EXPECT_EQ(common_refinement({4, 6}, {4, 2, 3}), (Shape{4, 2, 3}));
  EXPECT_EQ(common_refinement({2, 128, 64}, {256, 64}), (Shape{2, 128, 64}));
  EXPECT_EQ(common_refinement({1, 64, 1, 1}, {64}), (Shape{64})); // unit dims drop out
}

TEST(CommonRefinement, NoneWhenBoundariesCross) {
  EXPECT_EQ(common_refinement({6, 4}, {4, 6}), std::nullopt);
  EXPECT_EQ(common_refinement({6, 4}, {25}), std::nullopt);   // element counts differ
  EXPECT_EQ(common_refinement({0, 4}, {4, 0}), std::nullopt); // no elements
  EXPECT_EQ(common_refinement({Dim::symbol("N"), 4}, {Dim::symbol("N"), 4}), std::nullopt);
}

TEST(SplitIterators, RowMajorWithinEachDim) {
  // [32, 64, 3136] over [32, 64, 56, 56]: the last iterator is 56 * i2 + i3.
  std::vector<AffineExpr> sub = split_iterators({32, 64, 3136}, {32, 64, 56, 56});
  ASSERT_EQ(sub.size(), 3u);
  EXPECT_EQ(sub[0], AffineExpr::iterator(0));
  EXPECT_EQ(sub[1], AffineExpr::iterator(1));
  EXPECT_EQ(sub[2], (AffineExpr{0, {{2, 56}, {3, 1}}}));
  // A unit dim is the constant 0.
  sub = split_iterators({1, 64, 1}, {64});
  EXPECT_EQ(sub[0], AffineExpr::constant_of(0));
  EXPECT_EQ(sub[1], AffineExpr::iterator(0));
  EXPECT_EQ(sub[2], AffineExpr::constant_of(0));
}

// y[n, c, h, w] = x[n, c, h, w] * s[0, c, 0, 0] over [2, 4, 3, 3].
kernel::BoundKernel scale_kernel() {
  kernel::BoundKernel k;
  k.kernel.name = "scale";
  k.kernel.buffers = {{"x", DType::kF32, {2, 4, 3, 3}, kernel::BufferRole::kInput},
                      {"s", DType::kF32, {1, 4, 1, 1}, kernel::BufferRole::kInput},
                      {"y", DType::kF32, {2, 4, 3, 3}, kernel::BufferRole::kOutput}};
  k.values = {nullptr, nullptr, nullptr};
  kernel::Statement st;
  st.name = "scale";
  st.domain = {2, 4, 3, 3};
  std::vector<AffineExpr> id = {AffineExpr::iterator(0), AffineExpr::iterator(1),
                                AffineExpr::iterator(2), AffineExpr::iterator(3)};
  st.write = kernel::Access(2, id);
  st.reads = {kernel::Access(0, id),
              kernel::Access(1, {AffineExpr::constant_of(0), AffineExpr::iterator(1),
                                 AffineExpr::constant_of(0), AffineExpr::constant_of(0)})};
  st.expr = {{kernel::ExprOp::kLoad, DType::kF32, {}, 0},
             {kernel::ExprOp::kLoad, DType::kF32, {}, 1},
             {kernel::ExprOp::kMul, DType::kF32, {0, 1}}};
  k.kernel.statements = {st};
  return k;
}

TEST(Reviewed, MergesDimsAPerChannelOperandKeepsWhole) {
  // [8, 9]: n and c merge, the per-channel read becomes s[0, i0 % 4]: not affine.
  EXPECT_EQ(reviewed(scale_kernel(), {8, 9}), std::nullopt);
  // [2, 4, 9]: h and w merge, the per-channel read stays s[0, i1, 0, 0].
  std::optional<kernel::BoundKernel> r = reviewed(scale_kernel(), {2, 4, 9});
  ASSERT_TRUE(r);
  const kernel::Statement& s = r->kernel.statements[0];
  EXPECT_EQ(s.domain, (std::vector<Dim>{2, 4, 9}));
  EXPECT_EQ(s.reads[1].index[1], AffineExpr::iterator(1));
  EXPECT_EQ(r->kernel.buffers[static_cast<size_t>(s.reads[0].buffer)].shape, (Shape{2, 4, 9}));
  EXPECT_TRUE(kernel::verify_kernel(r->kernel).ok());
}

TEST(Reviewed, SplitsThenMerges) {
  // [2, 2, 2, 9]: c splits into 2 x 2 (c = 2 * i1 + i2), h and w merge.
  std::optional<kernel::BoundKernel> r = reviewed(scale_kernel(), {2, 2, 2, 9});
  ASSERT_TRUE(r);
  const kernel::Statement& s = r->kernel.statements[0];
  EXPECT_EQ(s.domain, (std::vector<Dim>{2, 2, 2, 9}));
  EXPECT_EQ(s.reads[1].index[1], (AffineExpr{0, {{1, 2}, {2, 1}}}));
  EXPECT_TRUE(kernel::verify_kernel(r->kernel).ok());
  EXPECT_EQ(reviewed(scale_kernel(), {3, 24}), std::nullopt); // boundaries cross
}

// y[n, t, c] = x[n, t, c] * s[c] + b[0, 0, c] over [N, T, 4].
kernel::BoundKernel symbolic_scale_kernel() {
  Shape shape = {Dim::symbol("N"), Dim::symbol("T"), 4};
  kernel::BoundKernel k;
  k.kernel.name = "scale";
  k.kernel.buffers = {{"x", DType::kF32, shape, kernel::BufferRole::kInput},
                      {"s", DType::kF32, {4}, kernel::BufferRole::kInput},
                      {"b", DType::kF32, {1, 1, 4}, kernel::BufferRole::kInput},
                      {"y", DType::kF32, shape, kernel::BufferRole::kOutput}};
  k.values = {nullptr, nullptr, nullptr, nullptr};
  kernel::Statement st;
  st.name = "scale";
  st.domain = shape;
  std::vector<AffineExpr> id = {AffineExpr::iterator(0), AffineExpr::iterator(1),
                                AffineExpr::iterator(2)};
  st.write = kernel::Access(3, id);
  st.reads = {kernel::Access(0, id), kernel::Access(1, {AffineExpr::iterator(2)}),
              kernel::Access(2, {AffineExpr::constant_of(0), AffineExpr::constant_of(0),
                                 AffineExpr::iterator(2)})};
  st.expr = {{kernel::ExprOp::kLoad, DType::kF32, {}, 0},
             {kernel::ExprOp::kLoad, DType::kF32, {}, 1},
             {kernel::ExprOp::kMul, DType::kF32, {0, 1}},
             {kernel::ExprOp::kLoad, DType::kF32, {}, 2},
             {kernel::ExprOp::kAdd, DType::kF32, {2, 3}}};
  k.kernel.statements = {st};
  return k;
}

TEST(Reviewed, MergesSymbolicDims) {
  Dim nt = dim_mul(Dim::symbol("N"), Dim::symbol("T"));
  std::optional<kernel::BoundKernel> r = reviewed(symbolic_scale_kernel(), {nt, 4});
  ASSERT_TRUE(r);
  const kernel::Statement& s = r->kernel.statements[0];
  EXPECT_EQ(s.domain, (Shape{nt, 4}));
  EXPECT_EQ(r->kernel.buffers[static_cast<size_t>(s.reads[0].buffer)].shape, (Shape{nt, 4}));
  EXPECT_EQ(s.reads[1].index, (std::vector<AffineExpr>{AffineExpr::iterator(1)}));
  EXPECT_EQ(s.reads[2].index[2], AffineExpr::iterator(1));
  EXPECT_TRUE(kernel::verify_kernel(r->kernel).ok());
  // T and the 4 channels merged: the per-channel read would need a remainder.
  EXPECT_EQ(reviewed(symbolic_scale_kernel(), {Dim::symbol("N"), dim_mul(4, Dim::symbol("T"))}),
            std::nullopt);
  // Splits are not symbolic merges.
  EXPECT_EQ(reviewed(symbolic_scale_kernel(), {nt, 2, 2}), std::nullopt);
}

} // namespace
} // namespace weft::fusion
