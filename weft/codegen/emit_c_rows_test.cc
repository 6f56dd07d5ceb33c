// EmitC: row loops that fuse several passes over a row (softmax, LayerNorm): the later
// passes prefetch a later row, contract the row's temporaries, and take wider SIMD loops
// where they read bytes.
#include <gtest/gtest.h>

#include "weft/codegen/emit_c_testing.h"
#include "weft/kernel/kernel.h"

namespace weft::codegen {
namespace {

// A row loop with two passes over x: s[i] = sum over j of x[i, j] (s a temporary), then
// y[i, j] = x[i, j] - s[i].
kernel::Kernel centre_kernel() {
  using kernel::AffineExpr;
  using kernel::ExprOp;
  kernel::Kernel k;
  k.name = "centre";
  k.buffers = {{"x", DType::kF32, {8, 64}, kernel::BufferRole::kInput},
               {"s", DType::kF32, {8}, kernel::BufferRole::kTemp},
               {"y", DType::kF32, {8, 64}, kernel::BufferRole::kOutput}};
  std::vector<AffineExpr> ij = {AffineExpr::iterator(0), AffineExpr::iterator(1)};
  kernel::Statement sum;
  sum.name = "sum";
  sum.domain = {8, 64};
  sum.combine = kernel::Combine::kSum;
  sum.write = kernel::Access(1, {AffineExpr::iterator(0)});
  sum.reads = {kernel::Access(0, ij)};
  sum.expr = {{ExprOp::kLoad, DType::kF32, {}, 0}};
  kernel::Statement centre;
  centre.name = "centre";
  centre.domain = {8, 64};
  centre.write = kernel::Access(2, ij);
  centre.reads = {kernel::Access(0, ij), kernel::Access(1, {AffineExpr::iterator(0)})};
  centre.expr = {{ExprOp::kLoad, DType::kF32, {}, 0},
                 {ExprOp::kLoad, DType::kF32, {}, 1},
                 {ExprOp::kSub, DType::kF32, {0, 1}}};
  k.statements = {sum, centre};
  return k;
}

// A row loop with two passes over x (a sum, then y[i, j] = x[i, j] - s[i]): the second finds
// the row in cache and prefetches a later row's x, a cache line per block of 16: the first
// at least 2 KB ahead (rows of 64 floats: 8 rows; of 40: 13). It is also the first to store
// into y, which it prefetches for writing. A kernel with one pass over x prefetches nothing.
TEST(EmitC, SecondPassOverARowPrefetchesALaterRow) {
  kernel::Kernel k = centre_kernel();
  ASSERT_TRUE(kernel::verify_kernel(k).ok());
  std::string src = function_of(k);
  const std::string x_and_y = "__builtin_prefetch(&b0[(c0 + 8) * 64 + weft_p], 0, 3); "
                              "__builtin_prefetch(&b2[(c0 + 8) * 64 + weft_p], 1, 3);";
  size_t prefetch = src.find(x_and_y);
  ASSERT_NE(prefetch, std::string::npos) << src;
  EXPECT_EQ(src.find("__builtin_prefetch", prefetch + x_and_y.size()), std::string::npos) << src;
  EXPECT_LT(src.find("// sum"), prefetch) << src;
  EXPECT_NE(src.find("weft_p += 16"), std::string::npos) << src;
  EXPECT_EQ(src.find("// the tail"), std::string::npos) << src; // 64 is a multiple of 16
  // Rows of 40: two blocks of 16, then a tail of 8 from where the blocks stopped.
  kernel::Kernel narrow = k;
  for (kernel::Buffer* b : {&narrow.buffers[0], &narrow.buffers[2]})
    b->shape = {8, 40};
  for (kernel::Statement& st : narrow.statements)
    st.domain = {8, 40};
  ASSERT_TRUE(kernel::verify_kernel(narrow).ok());
  std::string tail = function_of(narrow);
  EXPECT_NE(tail.find("__builtin_prefetch(&b0[(c0 + 13) * 40 + weft_p], 0, 3);"), std::string::npos)
      << tail;
  EXPECT_NE(tail.find("for (int64_t c1 = weft_p; c1 < 40; c1 += 1) {  // the tail"),
            std::string::npos)
      << tail;
  k.statements = {k.statements[1]};
  k.buffers[1].role = kernel::BufferRole::kInput;
  EXPECT_EQ(function_of(k).find("__builtin_prefetch"), std::string::npos);
}

// The row loop of centre_kernel with rows of 1024 and a bool mask m read by both passes
// (s[i] = sum of m ? x : 0, y = m ? x - s : x): GCC sizes its vectors by the narrowest element,
// so the sum's SIMD loop takes all 32 lanes at once and the second pass goes in blocks of 64,
// each prefetching a later row's lines of x (4) and m (1); without the mask, chains and
// blocks of 16.
TEST(EmitC, ByteReadsTakeSimdLoopsOf64Elements) {
  using kernel::AffineExpr;
  using kernel::ExprOp;
  kernel::Kernel k = centre_kernel();
  for (kernel::Buffer* b : {&k.buffers[0], &k.buffers[2]})
    b->shape = {8, 1024};
  std::vector<AffineExpr> ij = {AffineExpr::iterator(0), AffineExpr::iterator(1)};
  k.buffers.push_back({"m", DType::kBool, {8, 1024}, kernel::BufferRole::kInput});
  for (kernel::Statement& st : k.statements) {
    st.domain = {8, 1024};
    st.reads.push_back(kernel::Access(3, ij));
    int mask = static_cast<int>(st.reads.size()) - 1, value = static_cast<int>(st.expr.size()) - 1;
    st.expr.push_back({ExprOp::kLoad, DType::kBool, {}, mask});
    st.expr.push_back({ExprOp::kConstant, DType::kF32, {}, -1, 0.0});
    st.expr.push_back({ExprOp::kSelect,
                       DType::kF32,
                       {value + 1, value, st.combine == kernel::Combine::kSum ? value + 2 : 0}});
  }
  ASSERT_TRUE(kernel::verify_kernel(k).ok());
  std::string src = function_of(k);
  EXPECT_NE(src.find("for (; weft_p + 64 <= 1024; weft_p += 64) {  // blocks of 64"),
            std::string::npos)
      << src;
  // x's 4 lines of the next row (4 KB, at least 2 KB ahead), m's one line two rows on.
  EXPECT_NE(src.find("__builtin_prefetch(&b0[(c0 + 1) * 1024 + (weft_p + 48)], 0, 3); "
                     "__builtin_prefetch(&b3[(c0 + 2) * 1024 + weft_p], 0, 3); "),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("for (int64_t weft_l = 0; weft_l < 32; weft_l += 1) {"), std::string::npos)
      << src;
  EXPECT_EQ(src.find("chains"), std::string::npos) << src;
  kernel::Kernel plain = centre_kernel();
  for (kernel::Buffer* b : {&plain.buffers[0], &plain.buffers[2]})
    b->shape = {8, 1024};
  for (kernel::Statement& st : plain.statements)
    st.domain = {8, 1024};
  std::string floats = function_of(plain);
  EXPECT_NE(floats.find("weft_p += 16) {  // blocks of 16"), std::string::npos) << floats;
  EXPECT_NE(floats.find("// 2 chains"), std::string::npos) << floats;
}

// Array contraction: a temporary that each iteration of the row loop writes and reads alone
// (the row's sum) becomes a local array of that iteration, s[c0] a float of its own; one that
// a later nest reads (a column's sum, read across all rows after the sum's nest) stays a
// buffer.
TEST(EmitC, ATemporaryOfOneIterationIsALocalArray) {
  kernel::Kernel k = centre_kernel();
  ASSERT_TRUE(kernel::verify_kernel(k).ok());
  std::string rows = function_of(k);
  size_t loop = rows.find("for (int64_t c0 = 0;");
  size_t local = rows.find("alignas(64) float b1[1];  // s: one iteration's, contracted");
  ASSERT_NE(local, std::string::npos) << rows;
  EXPECT_LT(loop, local) << rows;
  EXPECT_EQ(rows.find("buffers[1]"), std::string::npos) << rows;
  EXPECT_NE(rows.find("b1[0]"), std::string::npos) << rows;
  EXPECT_EQ(rows.find("b1[c0]"), std::string::npos) << rows;
  // Columns: s[j] = sum over i of x[i, j], then y[i, j] = x[i, j] - s[j].
  std::vector<kernel::AffineExpr> j = {kernel::AffineExpr::iterator(1)};
  k.statements[0].write = kernel::Access(1, j);
  k.statements[1].reads[1] = kernel::Access(1, j);
  k.buffers[1].shape = {64};
  ASSERT_TRUE(kernel::verify_kernel(k).ok());
  std::string columns = function_of(k);
  EXPECT_EQ(columns.find("contracted"), std::string::npos) << columns;
  EXPECT_NE(columns.find("float* __restrict__ b1 = static_cast<float*>(buffers[1]);"),
            std::string::npos)
      << columns;
}

} // namespace
} // namespace weft::codegen
