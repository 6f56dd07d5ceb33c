#include <gtest/gtest.h>

#include "weft/graph/tensor.h"

namespace weft {
namespace {

TEST(Tensor, EveryDtypeStoresAndLoads) {
  for (DType t : kAllDTypes) {
    Tensor x(t, {2, 3});
    EXPECT_EQ(x.num_elements(), 6);
    EXPECT_EQ(x.num_bytes(), static_cast<size_t>(6 * dtype_size(t)));
    x.set_double(4, 1.0);
    EXPECT_EQ(x.get_double(4), 1.0) << dtype_name(t);
    if (t != DType::kF8E8M0) { // which has no zero: its byte 0 is 2^-127
      EXPECT_EQ(x.get_double(0), 0.0) << dtype_name(t);
    }
  }
}

// Storage starts on a cache line, large blocks included (malloc's start 16 bytes past a
// page), so that kernels' 64-byte vectors do not straddle two lines.
TEST(Tensor, StorageIsCacheLineAligned) {
  for (int64_t n : {1, 3, 1000, 1 << 20, 4 << 20}) {
    Tensor t = Tensor::uninitialized(DType::kF32, {n});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u) << n;
    Tensor z(DType::kU8, {n});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(z.data()) % 64, 0u) << n;
  }
}

TEST(Tensor, Int64KeepsLargeValuesExact) {
  Tensor x(DType::kI64, {1});
  x.set_int64(0, (int64_t{1} << 62) + 1);
  EXPECT_EQ(x.get_int64(0), (int64_t{1} << 62) + 1);
}

TEST(Tensor, FloatToIntSaturates) {
  Tensor x(DType::kI8, {2});
  x.set_double(0, 1000.0);
  x.set_double(1, -1000.0);
  EXPECT_EQ(x.get_int64(0), 127);
  EXPECT_EQ(x.get_int64(1), -128);
}

TEST(Tensor, PrintsSmallTensorsWithElements) {
  EXPECT_EQ(Tensor::vector_i64({1, -1}).to_string(), "i64[2]{1, -1}");
  EXPECT_EQ(Tensor(DType::kF32, {100}).to_string(), "f32[100]");
  EXPECT_EQ(Tensor::from_vector<float>(DType::kF32, {}, {0.1f}).to_string(), "f32[]{0.1}");
}

TEST(Tensor, DerivedFormsAreMadeOncePerFormAndNotCopied) {
  Tensor t = Tensor::vector_i64({1, 2, 3});
  int made = 0;
  auto sum = [&] {
    ++made;
    return std::make_shared<int64_t>(t.get_int64(0) + t.get_int64(1) + t.get_int64(2));
  };
  std::shared_ptr<const int64_t> a = t.derived_as<int64_t>("sum", sum);
  std::shared_ptr<const int64_t> b = t.derived_as<int64_t>("sum", sum);
  EXPECT_EQ(*a, 6);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(made, 1);
  EXPECT_NE(t.derived_as<int64_t>("another", sum).get(), a.get());
  EXPECT_EQ(made, 2);
  // A copy may be written: it makes its own.
  Tensor copy = t;
  copy.set_int64(0, 10);
  EXPECT_EQ(*copy.derived_as<int64_t>("sum",
                                      [&] {
                                        ++made;
                                        return std::make_shared<int64_t>(copy.get_int64(0));
                                      }),
            10);
  EXPECT_EQ(made, 3);
  // A failed make is not kept.
  EXPECT_EQ(t.derived_as<int64_t>("none", [] { return std::shared_ptr<int64_t>(); }), nullptr);
  EXPECT_EQ(*t.derived_as<int64_t>("none", sum), 6);
}

TEST(Tensor, RefusesNegativeOrHugeDims) {
  int64_t n = 0;
  EXPECT_FALSE(dims_are_allocatable(DType::kF32, {-1}, &n));
  EXPECT_FALSE(dims_are_allocatable(DType::kF32, {int64_t{1} << 40, int64_t{1} << 40}, &n));
  EXPECT_TRUE(dims_are_allocatable(DType::kF32, {0, 5}, &n));
  EXPECT_EQ(n, 0);
}

} // namespace
} // namespace weft
