#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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

// This process's resident kB of the mapping that holds "p" (/proc/self/smaps), -1 if none.
int64_t resident_kb(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2 && line.find(' ') < 30) {
      inside = begin <= at && at < end;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      return std::stoll(line.substr(4));
    }
  }
  return -1;
}

// A file of "n" floats 0, 1, 2, ..., in the test's temporary directory.
std::string float_file(const std::string& name, int64_t n) {
  std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(i);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(n * 4));
  return path;
}

// External data is used where it lies in the file: copies share it, a write copies it first,
// and once a kernel's form of it is made its pages are let go (they come back when read).
TEST(Tensor, MappedBytesAreSharedAndLetGoOnceAFormIsMade) {
  constexpr int64_t kFloats = 1 << 20; // 4 MiB
  std::string path = float_file("weft_mapped_tensor_test.bin", kFloats + 1024);
  Result<std::shared_ptr<const MappedFile>> file = MappedFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  Result<std::shared_ptr<const MappedFile>> again = MappedFile::open(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(file->get(), again->get()); // one mapping for the unchanged file
  const Tensor t = Tensor::mapped(DType::kF32, {kFloats}, *file, 4096);
  EXPECT_TRUE(t.is_mapped());
  EXPECT_EQ(t.data(), (*file)->data() + 4096);
  EXPECT_EQ(t.num_bytes(), size_t{kFloats} * 4);
  EXPECT_EQ(t.get_double(5), 1029.0);
  Tensor copy = t;
  EXPECT_EQ(std::as_const(copy).data(), t.data());
  copy.set_double(5, -1.0); // its own bytes now; the file's are as they were
  EXPECT_FALSE(copy.is_mapped());
  EXPECT_EQ(copy.get_double(5), -1.0);
  EXPECT_EQ(t.get_double(5), 1029.0);
  EXPECT_TRUE(copy.equals(copy) && !copy.equals(t));

  double sum = 0;
  for (int64_t i = 0; i < kFloats; i += 1024) // every page read: resident
    sum += t.get_double(i);
  EXPECT_GE(resident_kb(t.data()), 4000);
  auto form = t.derived_as<double>("sum", [&] { return std::make_shared<double>(sum); });
  EXPECT_LT(resident_kb(t.data()), 100);
  EXPECT_EQ(t.get_double(kFloats - 1), double(kFloats - 1 + 1024)); // read again from the file
  std::filesystem::remove(path);
}

// A u4 tensor over its packed bytes unpacks them when its elements are first asked for.
TEST(Tensor, OverPackedUnpacksWhenRead) {
  Tensor packed(DType::kU8, {3});
  for (int i = 0; i < 3; ++i)
    packed.set_int64(i, 0x21 + 0x22 * i); // nibbles 1, 2, 3, 4, 5, 6 (low first)
  const Tensor q = Tensor::over_packed(DType::kU4, {5}, packed);
  EXPECT_EQ(std::to_integer<int>(q.packed()[1]), 0x43);
  EXPECT_EQ(q.num_bytes(), 5u);
  EXPECT_EQ(q.to_string(), "u4[5]{1, 2, 3, 4, 5}");
  Tensor copy = q;
  copy.set_int64(0, 9);
  EXPECT_EQ(copy.packed(), nullptr);
  EXPECT_EQ(copy.to_string(), "u4[5]{9, 2, 3, 4, 5}");
  EXPECT_EQ(q.get_int64(0), 1);
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
