#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "weft/onnx/npy.h"
#include "weft/onnx/tensor_file.h"

namespace weft {
namespace {

namespace fs = std::filesystem;

Tensor sample(DType t) { return Tensor::from_vector<double>(t, {2, 3}, {0, 1, 2, 3, 4, 5}); }

fs::path temp_file(const std::string& name) {
  return fs::temp_directory_path() /
         ("weft_tensor_file_" + std::to_string(::getpid()) + "_" + name);
}

TEST(TensorFile, PbRoundTripsEveryDtype) {
  for (DType t : kAllDTypes) {
    fs::path p = temp_file(std::string(dtype_name(t)) + ".pb");
    ASSERT_TRUE(write_tensor_file(p.string(), sample(t), "x").ok());
    Result<Tensor> back = read_tensor_file(p.string());
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_TRUE(back->equals(sample(t))) << dtype_name(t);
    fs::remove(p);
  }
}

TEST(TensorFile, NpyRoundTripsEveryDtype) {
  for (DType t : kAllDTypes) {
    fs::path p = temp_file(std::string(dtype_name(t)) + ".npy");
    ASSERT_TRUE(write_tensor_file(p.string(), sample(t), "x").ok());
    Result<Tensor> back = read_tensor_file(p.string());
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    // NumPy has no bfloat16 and no narrow types: the bits come back as u16 or u8.
    if (t == DType::kBF16 || dtype_packed_bits(t) < 8 || dtype_is_float8_or_4(t)) {
      EXPECT_EQ(back->dtype(), t == DType::kBF16 ? DType::kU16 : DType::kU8);
      EXPECT_EQ(std::memcmp(back->data(), sample(t).data(), back->num_bytes()), 0);
    } else {
      EXPECT_TRUE(back->equals(sample(t))) << dtype_name(t);
    }
    fs::remove(p);
  }
}

TEST(Npy, HeaderIsWhatNumpyWrites) {
  std::string bytes = npy_encode(Tensor(DType::kF32, {2, 3}));
  EXPECT_EQ(bytes.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), 10u);
  EXPECT_EQ((bytes.size() - 2 * 3 * 4) % 64, 0u); // data is 64-byte aligned
  EXPECT_NE(npy_encode(Tensor(DType::kI64, {5})).find("'shape': (5,)"), std::string::npos);
  EXPECT_NE(npy_encode(Tensor(DType::kBool, {})).find("'descr': '|b1'"), std::string::npos);
}

// A big-endian int32 array in format 2.0, as np.save writes with a '>i4' dtype.
TEST(Npy, ReadsBigEndianAndVersion2) {
  std::string header = "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }\n";
  std::string bytes = std::string("\x93NUMPY\x02\x00", 8);
  uint32_t len = static_cast<uint32_t>(header.size());
  bytes.append(reinterpret_cast<const char*>(&len), 4);
  bytes += header;
  bytes += std::string("\x00\x00\x01\x02\xff\xff\xff\xfe", 8);
  Result<Tensor> t = npy_decode(bytes);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->to_string(), "i32[2]{258, -2}");
}

TEST(Npy, RejectsBadFilesClearly) {
  EXPECT_FALSE(npy_decode("").ok());
  EXPECT_FALSE(npy_decode("not numpy at all").ok());
  std::string good = npy_encode(Tensor(DType::kF32, {4}));
  EXPECT_NE(npy_decode(good.substr(0, good.size() - 1)).status().message().find("data bytes"),
            std::string::npos);
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_NE(npy_decode(fortran).status().message().find("Fortran"), std::string::npos);
  std::string complex = good;
  complex.replace(complex.find("<f4"), 3, "<c8");
  EXPECT_FALSE(npy_decode(complex).ok());
}

// A few bytes that claim 2^31 elements must fail on the size check, not allocate 8 GiB.
TEST(TensorFile, HugeClaimedDimsFailBeforeAllocating) {
  onnx::TensorProto proto;
  proto.set_data_type(onnx::TensorProto::FLOAT);
  proto.add_dims(int64_t{1} << 31);
  proto.set_raw_data(std::string(4, '\0'));
  fs::path p = temp_file("huge.pb");
  std::ofstream(p, std::ios::binary) << proto.SerializeAsString();
  Result<Tensor> t = read_tensor_file(p.string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("has 4 bytes of data"), std::string::npos)
      << t.status().message();
  proto.clear_raw_data();
  proto.add_float_data(1.0f);
  std::ofstream(p, std::ios::binary | std::ios::trunc) << proto.SerializeAsString();
  EXPECT_FALSE(read_tensor_file(p.string()).ok());
  fs::remove(p);

  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2147483648,), }\n";
  std::string npy = std::string("\x93NUMPY\x01\x00", 8);
  npy += static_cast<char>(header.size());
  npy += '\0';
  npy += header + std::string(4, '\0');
  Result<Tensor> big = npy_decode(npy);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("holds 4 data bytes"), std::string::npos)
      << big.status().message();
}

TEST(TensorFile, UnknownExtensionAndMissingFile) {
  EXPECT_NE(read_tensor_file("x.txt").status().message().find("expected .npy or .pb"),
            std::string::npos);
  EXPECT_NE(read_tensor_file("/nonexistent/x.npy").status().message().find("no such file"),
            std::string::npos);
}

// Real TensorProto files from the ONNX backend test data, in the dtypes that need care.
TEST(TensorFile, ReadsOnnxTestData) {
  const fs::path node = "/usr/share/libonnx-testdata/data/node";
  if (!fs::exists(node)) GTEST_SKIP() << "libonnx-testdata is not installed";
  struct Case {
    const char* test;
    const char* file;
    DType dtype;
  };
  for (const Case& c : {Case{"test_cast_FLOAT_to_FLOAT16", "output_0.pb", DType::kF16},
                        // ONNX 1.12 stores this bf16 output as its u16 bit patterns.
                        Case{"test_cast_FLOAT_to_BFLOAT16", "output_0.pb", DType::kU16},
                        Case{"test_cast_FLOAT_to_DOUBLE", "output_0.pb", DType::kF64},
                        Case{"test_and2d", "output_0.pb", DType::kBool},
                        Case{"test_argmax_default_axis_example", "output_0.pb", DType::kI64}}) {
    fs::path p = node / c.test / "test_data_set_0" / c.file;
    Result<Tensor> t = read_tensor_file(p.string());
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    EXPECT_EQ(t->dtype(), c.dtype) << c.test;
  }
  // f16 data agrees with the f32 input it was cast from, to f16 precision.
  fs::path dir = node / "test_cast_FLOAT_to_FLOAT16" / "test_data_set_0";
  Tensor in = read_tensor_file((dir / "input_0.pb").string()).value();
  Tensor out = read_tensor_file((dir / "output_0.pb").string()).value();
  ASSERT_EQ(in.num_elements(), out.num_elements());
  for (int64_t i = 0; i < in.num_elements(); ++i) {
    double x = in.get_double(i);
    if (std::isfinite(x) && std::fabs(x) < 65504) {
      EXPECT_NEAR(out.get_double(i), x, std::fabs(x) * 1e-3 + 1e-7) << i;
    }
  }
}

} // namespace
} // namespace weft
