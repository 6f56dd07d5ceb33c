// The public C++ API, used as a user would: compile from bytes, metadata, runs with Weft-
// and caller-owned tensors, new shapes, errors, concurrent runs and profiles.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>

#include "tests/testing/onnx_text.h"
#include "weft/weft.h"

namespace weft {
namespace {

// A cold kernel cache per test process: concurrent first compiles of one source (threads of
// OneModelManyConcurrentRuns) must not trip over each other's build files.
class ColdCache : public ::testing::Environment {
public:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("weft_api_test_cache_" + std::to_string(::getpid()));
    setenv("WEFT_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

private:
  std::filesystem::path dir_;
};

const auto* const kColdCache = ::testing::AddGlobalTestEnvironment(new ColdCache);

// Softmax over the last axis of x[N,8], then a row sum: two kernels at least.
const char* kSoftmax = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[N,8] x) => (float[N,8] y, float[N] s) {
    y = Softmax<axis = -1>(x)
    s = ReduceSum<keepdims = 0>(y, axes)
  }
)";

std::string softmax_model() {
  // ReduceSum-13 takes its axes as an input; a constant keeps the shapes static.
  std::string text = kSoftmax;
  text.replace(text.find("y = Softmax"), 0, "axes = Constant<value = int64[1] {1}>()\n    ");
  return testing::model_bytes(text);
}

std::vector<float> iota(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>(i % 13) - 1.0f;
  return v;
}

// float64 softmax of each row of 8.
std::vector<double> softmax_reference(const std::vector<float>& x) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / 8; ++r) {
    double m = -INFINITY, sum = 0;
    for (size_t c = 0; c < 8; ++c)
      m = std::max(m, static_cast<double>(x[r * 8 + c]));
    for (size_t c = 0; c < 8; ++c)
      sum += std::exp(x[r * 8 + c] - m);
    for (size_t c = 0; c < 8; ++c)
      y[r * 8 + c] = std::exp(x[r * 8 + c] - m) / sum;
  }
  return y;
}

void expect_softmax(const std::vector<float>& x, const float* y) {
  std::vector<double> want = softmax_reference(x);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(y[i], want[i], 1e-6) << "element " << i;
}

TEST(Api, MetadataNamesTypesAndSymbolicDims) {
  Model m = Model::compile_bytes(softmax_model());
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(m.inputs()[0].name, "x");
  EXPECT_EQ(m.inputs()[0].type, ElementType::kF32);
  EXPECT_EQ(m.inputs()[0].shape, (std::vector<int64_t>{-1, 8}));
  EXPECT_EQ(m.inputs()[0].dim_names, (std::vector<std::string>{"N", ""}));
  ASSERT_EQ(m.outputs().size(), 2u);
  EXPECT_EQ(m.outputs()[1].name, "s");
  EXPECT_EQ(m.outputs()[1].shape, (std::vector<int64_t>{-1}));
  EXPECT_EQ(to_string(ElementType::kBF16), "bf16");
}

TEST(Api, RunsWithNewShapesAndWeftOwnedOutputs) {
  Model m = Model::compile_bytes(softmax_model());
  for (int64_t n : {3, 17, 3}) {
    std::vector<float> x = iota(static_cast<size_t>(n) * 8, 0.37f);
    std::vector<HostTensor> out = m.run({HostTensor::view(ElementType::kF32, {n, 8}, x.data())});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_TRUE(out[0].owns_memory());
    EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{n, 8}));
    expect_softmax(x, out[0].data_as<float>());
    for (int64_t r = 0; r < n; ++r)
      EXPECT_NEAR(out[1].data_as<float>()[r], 1.0, 1e-5);
  }
}

// compile_bytes reads the caller's bytes while it runs and holds no copy of them (a model's
// weights): runs at new shapes, each a compile of its own, work after the caller has
// overwritten them; with a dump directory too, whose compiles run the passes again from a
// copy that compile_bytes keeps then (from the overwritten bytes, they would not parse).
TEST(Api, CallerBytesAreReadOnlyWhileCompiling) {
  for (bool dump : {false, true}) {
    std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                ("weft_api_dump_test_" + std::to_string(::getpid()));
    CompileOptions options;
    if (dump) options.dump_dir = dir.string();
    std::string bytes = softmax_model();
    Model m = Model::compile_bytes(bytes, options);
    std::fill(bytes.begin(), bytes.end(), '\xff');
    for (int64_t n : {5, 11}) {
      std::vector<float> x = iota(static_cast<size_t>(n) * 8, 0.29f);
      std::vector<HostTensor> out = m.run({HostTensor::view(ElementType::kF32, {n, 8}, x.data())});
      ASSERT_EQ(out.size(), 2u);
      expect_softmax(x, out[0].data_as<float>());
    }
    std::filesystem::remove_all(dir);
  }
}

// Outputs of 2 MiB and more come from freed blocks of earlier runs (host_memory.h), which
// still hold those runs' values: each run must write them whole.
TEST(Api, LargeOutputsAreRewrittenOnEveryRun) {
  Model m = Model::compile_bytes(softmax_model());
  const int64_t n = int64_t{1} << 17; // y is 4 MiB
  for (float scale : {0.37f, -0.21f, 0.37f}) {
    std::vector<float> x = iota(static_cast<size_t>(n) * 8, scale);
    std::vector<HostTensor> out = m.run({HostTensor::view(ElementType::kF32, {n, 8}, x.data())});
    ASSERT_EQ(out.size(), 2u);
    expect_softmax(x, out[0].data_as<float>());
  }
}

TEST(Api, EmptyTensorsAreWeftOwnedAndAligned) {
  for (int64_t n : {int64_t{5}, int64_t{1} << 20}) {
    HostTensor t = HostTensor::empty(ElementType::kF32, {n, 3});
    EXPECT_TRUE(t.owns_memory());
    EXPECT_EQ(t.num_bytes(), static_cast<size_t>(n) * 12);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
    t.data_as<float>()[n * 3 - 1] = 1.0f;
  }
  EXPECT_THROW(HostTensor::empty(ElementType::kF32, {-1, 3}), Error);
}

TEST(Api, WritesIntoCallerOwnedOutputs) {
  Model m = Model::compile_bytes(softmax_model());
  std::vector<float> x = iota(4 * 8, 0.5f), y(4 * 8, -7.0f), s(4, -7.0f);
  std::vector<HostTensor> in = {HostTensor::view(ElementType::kF32, {4, 8}, x.data())};
  EXPECT_EQ(m.output_shapes(in), (std::vector<std::vector<int64_t>>{{4, 8}, {4}}));
  m.run(in, {HostTensor::view(ElementType::kF32, {4, 8}, y.data()),
             HostTensor::view(ElementType::kF32, {4}, s.data())});
  expect_softmax(x, y.data());
  for (float v : s)
    EXPECT_NEAR(v, 1.0, 1e-5);
}

// The message of the weft::Error that "f" throws, or "" when it throws none.
template <typename F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Api, ErrorsAreClearExceptions) {
  EXPECT_EQ(error_of([] { Model::compile("/nonexistent/model.onnx"); }).rfind("error: ", 0), 0u);
  EXPECT_NE(
      error_of([] { Model::compile("/nonexistent/model.onnx"); }).find("/nonexistent/model.onnx"),
      std::string::npos);
  EXPECT_NE(
      error_of([] { Model::compile_bytes("not a model", {}, "junk.onnx"); }).find("junk.onnx"),
      std::string::npos);
  CompileOptions cuda;
  cuda.device = "cuda";
  EXPECT_NE(error_of([&] { Model::compile_bytes(softmax_model(), cuda); }).find("cuda"),
            std::string::npos);

  Model m = Model::compile_bytes(softmax_model());
  std::vector<int32_t> wrong(16);
  std::string dtype = error_of([&] {
    m.run({HostTensor::view(ElementType::kI32, {2, 8}, wrong.data())});
  });
  EXPECT_NE(dtype.find("'x'"), std::string::npos) << dtype;
  std::vector<float> x(16), small(3);
  std::string count = error_of([&] { m.run({}); });
  EXPECT_NE(count.find("1 inputs, 0 were given"), std::string::npos) << count;
  std::string out_shape = error_of([&] {
    m.run({HostTensor::view(ElementType::kF32, {2, 8}, x.data())},
          {HostTensor::view(ElementType::kF32, {3}, small.data()),
           HostTensor::view(ElementType::kF32, {2}, small.data())});
  });
  EXPECT_NE(out_shape.find("output 'y' must be f32[2,8]"), std::string::npos) << out_shape;
}

// The kind of the weft::Error that "f" throws (kFail when it throws none).
template <typename F> ErrorCode code_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kFail;
}

TEST(Api, ErrorsSayTheirKind) {
  EXPECT_EQ(code_of([] { Model::compile("/nonexistent/model.onnx"); }), ErrorCode::kNoSuchFile);
  EXPECT_EQ(code_of([] { Model::compile_bytes("not a model", {}, "junk.onnx"); }),
            ErrorCode::kInvalidModel);
  Model m = Model::compile_bytes(softmax_model());
  std::vector<int32_t> wrong(16);
  EXPECT_EQ(code_of([&] {
              m.run({HostTensor::view(ElementType::kI32, {2, 8}, wrong.data())});
            }),
            ErrorCode::kInvalidArgument);
  std::vector<float> x(16);
  EXPECT_EQ(code_of([&] {
              m.run({HostTensor::view(ElementType::kF32, {2, 7}, x.data())});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { m.run({}); }), ErrorCode::kInvalidArgument);
  CompileOptions bad;
  bad.device = "tpu";
  EXPECT_EQ(code_of([&] { Model::compile_bytes(softmax_model(), bad); }), ErrorCode::kFail);
}

TEST(Api, OneModelManyConcurrentRuns) {
  Model m = Model::compile_bytes(softmax_model());
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      int64_t n = 2 + t % 3; // three shapes: compiles race with runs
      std::vector<float> x = iota(static_cast<size_t>(n) * 8, 0.1f * static_cast<float>(t + 1));
      std::vector<double> want = softmax_reference(x);
      for (int i = 0; i < 50; ++i) {
        auto out = m.run({HostTensor::view(ElementType::kF32, {n, 8}, x.data())});
        for (size_t k = 0; k < want.size(); ++k)
          failures[static_cast<size_t>(t)] += std::abs(out[0].data_as<float>()[k] - want[k]) > 1e-6;
      }
    });
  }
  for (std::thread& t : threads)
    t.join();
  for (int f : failures)
    EXPECT_EQ(f, 0);
}

TEST(Api, ProfileHasOneEntryPerKernel) {
  CompileOptions unfused; // one kernel per node, so that the row sum is a kernel of its own
  unfused.fusion = false;
  Model m = Model::compile_bytes(softmax_model(), unfused);
  std::vector<float> x = iota(64 * 8, 0.25f);
  std::vector<KernelTime> profile;
  m.run_profiled({HostTensor::view(ElementType::kF32, {64, 8}, x.data())}, &profile);
  ASSERT_GE(profile.size(), 2u);
  bool saw_row_sum = false;
  for (const KernelTime& k : profile) {
    EXPECT_FALSE(k.kernel.empty());
    EXPECT_FALSE(k.op_type.empty());
    EXPECT_GE(k.end_ns, k.start_ns);
    EXPECT_GT(k.bytes, 0u);
    saw_row_sum |= k.op_type == "ReduceSum" && k.strategy == "reduce ROW sum" &&
                   k.shapes == "f32[64,8] -> f32[64]";
  }
  EXPECT_TRUE(saw_row_sum);
}

// Device-resident runs on the CUDA emulator, where device memory is host memory: inputs are
// read where they are, outputs are Weft-owned device memory or the caller's.
TEST(Api, DeviceResidentRunsTakeAndReturnDevicePointers) {
  setenv("WEFT_CUDA_EMULATOR", "1", 1);
  CompileOptions cuda;
  cuda.device = "cuda";
  Model m = Model::compile_bytes(softmax_model(), cuda);
  const int64_t n = 37;
  std::vector<float> x = iota(static_cast<size_t>(n) * 8, 0.37f);
  std::vector<DeviceTensor> out =
      m.run_on_device({DeviceTensor::view(ElementType::kF32, {n, 8}, x.data())});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].owns_memory());
  EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{n}));
  expect_softmax(x, static_cast<const float*>(out[0].data()));

  std::vector<float> y(x.size()), s(static_cast<size_t>(n));
  m.run_on_device({DeviceTensor::view(ElementType::kF32, {n, 8}, x.data())},
                  {DeviceTensor::view(ElementType::kF32, {n, 8}, y.data()),
                   DeviceTensor::view(ElementType::kF32, {n}, s.data())});
  expect_softmax(x, y.data());
  for (float v : s)
    EXPECT_NEAR(v, 1.0, 1e-5);

  // One compile over the symbolic N: the outputs Weft allocates take this run's shapes.
  cuda.dynamic_shapes = true;
  Model dynamic = Model::compile_bytes(softmax_model(), cuda);
  for (int64_t rows : {n, int64_t{5}}) {
    std::vector<DeviceTensor> got =
        dynamic.run_on_device({DeviceTensor::view(ElementType::kF32, {rows, 8}, x.data())});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].shape(), (std::vector<int64_t>{rows, 8}));
    EXPECT_EQ(got[1].shape(), (std::vector<int64_t>{rows}));
  }

  Model cpu = Model::compile_bytes(softmax_model());
  std::string error;
  try {
    cpu.run_on_device({DeviceTensor::view(ElementType::kF32, {n, 8}, x.data())});
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("device tensors need a model compiled for \"cuda\""), std::string::npos)
      << error;
}

TEST(Api, DeviceTensorsCopyToAndFromTheHost) {
  setenv("WEFT_CUDA_EMULATOR", "1", 1);
  std::vector<float> x = iota(12, 0.5f);
  DeviceTensor d = DeviceTensor::from_host(HostTensor::view(ElementType::kF32, {3, 4}, x.data()));
  EXPECT_TRUE(d.owns_memory());
  EXPECT_NE(d.data(), static_cast<void*>(x.data()));
  HostTensor back = d.to_host();
  ASSERT_EQ(back.shape(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(std::vector<float>(back.data_as<float>(), back.data_as<float>() + 12), x);

  DeviceTensor e = DeviceTensor::empty(ElementType::kF32, {3, 4});
  e.copy_from(d);
  HostTensor copied = e.to_host();
  EXPECT_EQ(std::vector<float>(copied.data_as<float>(), copied.data_as<float>() + 12), x);

  std::string error;
  ErrorCode code = ErrorCode::kFail;
  try {
    e.copy_from(DeviceTensor::empty(ElementType::kF32, {4, 3}));
  } catch (const Error& err) {
    error = err.what();
    code = err.code();
  }
  EXPECT_NE(error.find("f32[4,3], where f32[3,4] was expected"), std::string::npos) << error;
  EXPECT_EQ(code, ErrorCode::kInvalidArgument);
}

// f32 GEMMs are fp32 unless TF32 is allowed; the emulator rounds operands as tensor cores do.
TEST(Api, Tf32OnlyWhenAllowed) {
  setenv("WEFT_CUDA_EMULATOR", "1", 1);
  std::string bytes = testing::model_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4,64] a, float[64,4] b) => (float[4,4] c) {
      c = MatMul(a, b)
    }
  )");
  std::vector<float> a(4 * 64), b(64 * 4);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = 1.0f + static_cast<float>(i % 7) * 0x1p-13f; // below TF32's 10 mantissa bits
    b[i] = 1.0f - static_cast<float>(i % 5) * 0x1p-14f;
  }
  double worst[2] = {0, 0};
  for (bool tf32 : {false, true}) {
    CompileOptions options;
    options.device = "cuda";
    options.allow_tf32 = tf32;
    Model m = Model::compile_bytes(bytes, options);
    std::vector<HostTensor> c = m.run({HostTensor::view(ElementType::kF32, {4, 64}, a.data()),
                                       HostTensor::view(ElementType::kF32, {64, 4}, b.data())});
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        double want = 0;
        for (int k = 0; k < 64; ++k)
          want += static_cast<double>(a[i * 64 + k]) * b[k * 4 + j];
        double got = c[0].data_as<float>()[i * 4 + j];
        worst[tf32] = std::max(worst[tf32], std::abs(got - want) / want);
      }
    }
  }
  EXPECT_LT(worst[0], 1e-6); // fp32
  EXPECT_GT(worst[1], 1e-5); // operands rounded to TF32
  EXPECT_LT(worst[1], 2e-3);
}

// x[N,T,64] * scale + shift, softmax over the last axis, then layer normalization. The
// constants are multiples of 1/64, exact in text and in float.
constexpr int64_t kWidth = 64;

double scale_at(int64_t c) { return 0.5 + static_cast<double>(c) / 32; }
double gamma_at(int64_t c) { return 1 - static_cast<double>(c) / 64; }
double beta_at(int64_t c) { return static_cast<double>(c) / 32 - 1; }

std::string constant_row(const std::string& name, double (*f)(int64_t)) {
  std::string text = name + " = Constant<value = float[64] {";
  for (int64_t c = 0; c < kWidth; ++c)
    text += (c ? ", " : "") + std::to_string(f(c));
  return text + "}>()\n";
}

std::string normalize_model() {
  return testing::model_bytes(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N,T,64] x) => (float[N,T,64] y) {
      )" + constant_row("scale", scale_at) +
                              constant_row("gamma", gamma_at) + constant_row("beta", beta_at) +
                              R"(
      shift = Constant<value = float {0.25}>()
      a = Mul(x, scale)
      b = Add(a, shift)
      p = Softmax<axis = -1>(b)
      y = LayerNormalization<axis = -1, epsilon = 0.00001>(p, gamma, beta)
    }
  )");
}

// The model in float64.
std::vector<double> normalize_reference(const std::vector<float>& x) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / kWidth; ++r) {
    double* row = &y[r * kWidth];
    double max = -INFINITY, sum = 0, mean = 0, var = 0;
    for (int64_t c = 0; c < kWidth; ++c) {
      row[c] = x[r * kWidth + static_cast<size_t>(c)] * scale_at(c) + 0.25;
      max = std::max(max, row[c]);
    }
    for (int64_t c = 0; c < kWidth; ++c) {
      row[c] = std::exp(row[c] - max);
      sum += row[c];
    }
    for (int64_t c = 0; c < kWidth; ++c) {
      row[c] /= sum;
      mean += row[c] / kWidth;
    }
    for (int64_t c = 0; c < kWidth; ++c)
      var += (row[c] - mean) * (row[c] - mean) / kWidth;
    for (int64_t c = 0; c < kWidth; ++c)
      row[c] = (row[c] - mean) / std::sqrt(var + 1e-5) * gamma_at(c) + beta_at(c);
  }
  return y;
}

// One compile serves every (N, T); with fusion and without.
TEST(Api, DynamicShapesCompileOnceForManyShapes) {
  std::string bytes = normalize_model();
  for (bool fusion : {true, false}) {
    CompileOptions options;
    options.dynamic_shapes = true;
    options.fusion = fusion;
    Model m = Model::compile_bytes(bytes, options);
    for (int64_t i = 0; i < 50; ++i) {
      int64_t n = 1 + i % 5, t = 1 + i * 11 % 50; // 50 distinct pairs, (1, 1) first
      std::vector<float> x = iota(static_cast<size_t>(n * t * kWidth), 0.37f);
      std::vector<HostTensor> out =
          m.run({HostTensor::view(ElementType::kF32, {n, t, kWidth}, x.data())});
      ASSERT_EQ(out[0].shape(), (std::vector<int64_t>{n, t, kWidth}));
      std::vector<double> want = normalize_reference(x);
      for (size_t k = 0; k < want.size(); ++k)
        ASSERT_NEAR(out[0].data_as<float>()[k], want[k], 1e-5)
            << "N=" << n << " T=" << t << " element " << k << " fusion " << fusion;
    }
    EXPECT_EQ(m.compiled_variants(), 1u) << "fusion " << fusion;
  }
}

// A MatMul over a symbolic dim needs static shapes: each shape compiles, as without
// dynamic_shapes.
// MatMul over a symbolic row count is a oneDNN call built per extent: one compile.
TEST(Api, DynamicShapesMatMulCompilesOnce) {
  CompileOptions options;
  options.dynamic_shapes = true;
  Model m = Model::compile_bytes(testing::model_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,8] x) => (float[N,2] y) {
      w = Constant<value = float[8,2] {1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1, 0, 1}>()
      y = MatMul(x, w)
    }
  )"),
                                 options);
  for (int64_t n : {2, 5}) {
    std::vector<float> x = iota(static_cast<size_t>(n) * 8, 0.5f);
    std::vector<HostTensor> out = m.run({HostTensor::view(ElementType::kF32, {n, 8}, x.data())});
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t j = 0; j < 2; ++j) {
        double want = 0;
        for (int64_t k = 0; k < 8; ++k)
          want += x[static_cast<size_t>(r * 8 + k)] * ((k < 4) == (j == 0) ? 1.0 : 0.0);
        EXPECT_NEAR(out[0].data_as<float>()[r * 2 + j], want, 1e-5);
      }
    }
  }
  EXPECT_EQ(m.compiled_variants(), 1u);
}

// An input whose value gives a shape (a Reshape target) cannot stay symbolic: the model
// compiles per shape instead, with right results.
TEST(Api, DynamicShapesFallBackPerShape) {
  CompileOptions options;
  options.dynamic_shapes = true;
  Model m = Model::compile_bytes(testing::model_bytes(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,8] x, int64[2] s) => (float[A,B] y) {
      y = Reshape(x, s)
    }
  )"),
                                 options);
  for (int64_t n : {2, 5}) {
    std::vector<float> x = iota(static_cast<size_t>(n) * 8, 0.5f);
    std::vector<int64_t> s = {8, n};
    std::vector<HostTensor> out = m.run({HostTensor::view(ElementType::kF32, {n, 8}, x.data()),
                                         HostTensor::view(ElementType::kI64, {2}, s.data())});
    EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{8, n}));
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(out[0].data_as<float>()[i], x[i]);
  }
  EXPECT_EQ(m.compiled_variants(), 2u);
}

// A caller that runs models from its own OpenMP threads: each run's parallel regions are
// nested, teams of one thread where omp_get_max_threads() says more. The LSTM's recurrent
// call splits its steps into shares of the hidden units for that many threads; the one thread
// takes them all (only the first share had been computed: every other unit wrong).
TEST(Api, RecurrentCallInsideTheCallersParallelRegion) {
  const int64_t steps = 5, batch = 16, in = 8, hidden = 64;
  Model m = Model::compile_bytes(testing::model_bytes(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (float[5,16,8] x, float[1,256,8] w, float[1,256,64] r) => (float[5,1,16,64] y) {
      y = LSTM <hidden_size = 64> (x, w, r)
    })"));
  std::vector<float> x = iota(steps * batch * in, 0.3f), w = iota(4 * hidden * in, 0.05f),
                     r = iota(4 * hidden * hidden, 0.01f);
  auto run = [&] {
    return m.run({HostTensor::view(ElementType::kF32, {steps, batch, in}, x.data()),
                  HostTensor::view(ElementType::kF32, {1, 4 * hidden, in}, w.data()),
                  HostTensor::view(ElementType::kF32, {1, 4 * hidden, hidden}, r.data())});
  };
  std::vector<HostTensor> alone = run();
  const float* want = alone[0].data_as<float>();
  const size_t n = static_cast<size_t>(steps * batch * hidden);
  std::vector<int> failures(2, 0);
#pragma omp parallel num_threads(2)
  {
    std::vector<HostTensor> nested = run();
    const float* got = nested[0].data_as<float>();
    for (size_t k = 0; k < n; ++k)
      failures[static_cast<size_t>(omp_get_thread_num())] +=
          std::abs(got[k] - want[k]) > 1e-5f * (1 + std::abs(want[k]));
  }
  EXPECT_EQ(failures, std::vector<int>(2, 0));
}

} // namespace
} // namespace weft
