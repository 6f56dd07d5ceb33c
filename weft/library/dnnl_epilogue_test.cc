#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/graph/graph.h"
#include "weft/library/dnnl_epilogue.h"
#include "weft/library/dnnl_kernel.h"
#include "weft/support/host_memory.h"

namespace weft::library {
namespace {

// A constant's packed copy lies in Weft's host memory: a block of 2 MiB or more on a huge page
// boundary (oneDNN's own allocation is not), shared by the calls that read the constant in
// that layout, and alive after the constant is gone (a compile frees the graph's constants;
// its calls keep reading their copies).
TEST(ReorderedConstant, PackedCopyIsWeftsHostMemoryAndOutlivesTheConstant) {
  const int64_t n = 1024; // 4 MiB of f32
  std::vector<float> values(static_cast<size_t>(n * n));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i % 9973);
  Value w;
  w.name = "w";
  w.constant = std::make_shared<const Tensor>(Tensor::from_vector(DType::kF32, {n, n}, values));
  memory::desc given = plain({n, n});
  memory::desc transposed({n, n}, memory::data_type::f32, memory::dims{1, n});

  std::shared_ptr<const memory> packed = reordered_constant(&w, given, transposed);
  ASSERT_NE(packed, nullptr);
  EXPECT_EQ(reordered_constant(&w, given, transposed).get(), packed.get());
  auto address = reinterpret_cast<uintptr_t>(packed->get_data_handle());
  const char* huge = std::getenv("WEFT_HUGE_PAGES");
  if (huge == nullptr || std::string(huge) != "0") {
    EXPECT_EQ(address % kHugePageBytes, 0u);
  }

  w.constant.reset();
  const auto* p = static_cast<const float*>(packed->get_data_handle());
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{517}, n - 1}) {
    for (int64_t j : {int64_t{0}, int64_t{3}, int64_t{700}, n - 1}) {
      EXPECT_EQ(p[j * n + i], values[static_cast<size_t>(i * n + j)]) << i << ", " << j;
    }
  }
}

} // namespace
} // namespace weft::library
