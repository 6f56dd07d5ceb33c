// Weft's C++ API: compile an ONNX model once, run it many times.
//
//   weft::Model model = weft::Model::compile("model.onnx");
//   std::vector<float> x(1 * 128, 1.0f);
//   auto outputs = model.run({weft::HostTensor::view(weft::ElementType::kF32, {1, 128},
//   x.data())}); const float* y = outputs[0].data_as<float>();
//
// This is the only public header; it includes nothing from Weft's internals. Link with
// the `weft_api` library. Errors are thrown as weft::Error, whose what() is the same one-line
// message the CLI prints (file, node, op type and opset where there is one).
//
// Shapes. The model is imported and checked by compile(). Its kernels are generated for
// concrete input shapes: at compile() when every input dim is static, otherwise at the first
// run() with new shapes (and again for each new set of shapes, each cached). With
// CompileOptions::dynamic_shapes, the first run() compiles once for every extent of the
// inputs' symbolic dims instead, where the model allows it (docs/dynamic-shapes.md).
//
// Threads. One Model may be run from many threads at once: runs share the compiled kernels
// and nothing else (each run has its own working memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace weft {

// What kind of error an Error reports, for callers that act on kinds rather than read the
// message (the Python module maps them to ONNX Runtime's exception classes).
enum class ErrorCode : uint8_t {
  kFail,            // anything not below
  kNoSuchFile,      // the model or a tensor file is missing
  kInvalidModel,    // not a parseable ONNX model
  kNotImplemented,  // an op, domain, opset or IR version Weft does not support
  kInvalidArgument, // a run's inputs or outputs do not fit the model
};

class Error : public std::runtime_error {
public:
  explicit Error(const std::string& what, ErrorCode code = ErrorCode::kFail)
      : std::runtime_error(what), code_(code) {}
  ErrorCode code() const { return code_; }

private:
  ErrorCode code_;
};

enum class ElementType : uint8_t {
  kF32,
  kF64,
  kF16,
  kBF16,
  kI8,
  kI16,
  kI32,
  kI64,
  kU8,
  kU16,
  kU32,
  kU64,
  kBool,
  // ONNX's narrow types, one element a byte (int4, uint4, int2, uint2 and float4 unpacked,
  // in the low bits): the layout of numpy's ml_dtypes types.
  kF8E4M3FN,
  kF8E4M3FNUZ,
  kF8E5M2,
  kF8E5M2FNUZ,
  kF8E8M0,
  kF4E2M1,
  kI4,
  kU4,
  kI2,
  kU2,
};

// "f32", "bf16", "bool", ... (as the CLI and `weft inspect` print them).
std::string_view to_string(ElementType type);
size_t element_size(ElementType type);

// A dense, row-major tensor in host memory: either a view of memory the caller owns (which
// must outlive its use) or memory Weft owns. Copies share the memory.
class HostTensor {
public:
  HostTensor() = default;
  static HostTensor view(ElementType type, std::vector<int64_t> shape, void* data);
  static HostTensor view(ElementType type, std::vector<int64_t> shape, const void* data);
  static HostTensor allocate(ElementType type, std::vector<int64_t> shape); // zero-filled
  // Uninitialized (like numpy.empty): for memory that is written whole next, such as outputs.
  static HostTensor empty(ElementType type, std::vector<int64_t> shape);

  ElementType type() const { return type_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t num_elements() const;
  size_t num_bytes() const { return static_cast<size_t>(num_elements()) * element_size(type_); }
  void* data() const { return data_; }
  template <typename T> T* data_as() const { return static_cast<T*>(data_); }
  // Does Weft own the memory (allocate(), empty(), or an output of run())?
  bool owns_memory() const { return owner_ != nullptr; }

private:
  ElementType type_ = ElementType::kF32;
  std::vector<int64_t> shape_;
  void* data_ = nullptr;
  std::shared_ptr<void> owner_;
};

// A dense, row-major tensor in the memory of the CUDA device that "cuda" models run on: a
// view of a device pointer the caller owns (a CUdeviceptr, torch.Tensor.data_ptr(), CuPy's
// .data.ptr), or an output of Model::run on device tensors, which Weft owns and frees with
// its last copy. Under the CUDA emulator (WEFT_CUDA_EMULATOR=1), device memory is host memory.
class DeviceTensor {
public:
  DeviceTensor() = default;
  static DeviceTensor view(ElementType type, std::vector<int64_t> shape, void* device_data);
  // Memory and copies of the process's CUDA device 0, which "cuda" models run on (host memory
  // under the emulator). Each waits for its copy; each throws weft::Error where there is no
  // device (as compile(..., "cuda") does) or where types or shapes differ.
  //   empty: device memory of Weft's, uninitialized (like numpy.empty);
  //   from_host: a copy of "host" in device memory of Weft's;
  //   to_host: a copy of this tensor in host memory of Weft's;
  //   copy_from: writes "source", of this tensor's type and shape, over this tensor's memory.
  static DeviceTensor empty(ElementType type, std::vector<int64_t> shape);
  static DeviceTensor from_host(const HostTensor& host);
  HostTensor to_host() const;
  void copy_from(const DeviceTensor& source) const;

  ElementType type() const { return type_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t num_elements() const;
  size_t num_bytes() const { return static_cast<size_t>(num_elements()) * element_size(type_); }
  void* data() const { return data_; }
  bool owns_memory() const { return owner_ != nullptr; }

private:
  friend class Model;
  ElementType type_ = ElementType::kF32;
  std::vector<int64_t> shape_;
  void* data_ = nullptr;
  std::shared_ptr<void> owner_;
};

// An input or output of a model. A symbolic dim is -1, with its name in dim_names.
struct TensorSpec {
  std::string name;
  ElementType type = ElementType::kF32;
  std::vector<int64_t> shape;
  std::vector<std::string> dim_names; // one per dim; empty for static dims
  // An output the model declares as a sequence of maps, one per row (ai.onnx.ml's ZipMap):
  // run() gives its values as the tensor [N, C], and these are the keys of its C columns,
  // integer labels in decimal where map_int_keys. Empty for a tensor.
  std::vector<std::string> map_keys;
  bool map_int_keys = false;
  // An int64 output the model declares as strings (class labels, as a classifier trained on
  // strings gives them): run() gives each label's index into these. An int64 input the model
  // declares as strings (categories): run() takes each string's index into these, -1 for a
  // string not among them. Empty otherwise.
  std::vector<std::string> labels;
};

// What the model file says about itself (ModelProto's fields beside the graph), as ONNX
// Runtime's InferenceSession.get_modelmeta() gives it: custom holds metadata_props (an
// exporter's class names, strides, ...).
struct ModelMetadata {
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  std::string description; // the model's doc_string
  std::string graph_name;
  std::string graph_description; // the graph's doc_string
  int64_t version = 0;           // model_version; INT64_MAX where it has none (as ORT)
  std::map<std::string, std::string> custom;
};

struct CompileOptions {
  std::string device = "cpu"; // "cpu" or "cuda" (NVIDIA GPUs through the driver and NVRTC)
  int threads = 0;            // OpenMP threads per run (1-1024); 0: $WEFT_NUM_THREADS, else
                              // default_threads()
  std::string dump_dir;       // as `weft inspect --dump-dir` (default: $WEFT_DUMP_DIR)
  bool fusion = true;         // false: one kernel per node (for comparisons)
  // Input dims that are symbolic in the model (TensorSpec::dim_names) stay symbolic: one
  // compile serves every extent of them. Where the model needs static dims (data-dependent
  // shapes, "cuda", MatMul or Conv over symbolic dims, ...), it compiles per set of input
  // shapes, as without it. Off by default for now.
  bool dynamic_shapes = false;
  // CUDA: let cuBLAS and cuDNN round f32 operands to TF32 on tensor cores (about 1e-3
  // relative error, as torch.backends.cuda.matmul.allow_tf32). Off: fp32, as on the CPU.
  bool allow_tf32 = false;
  // CPU: f32 convolutions and matrix products multiply their operands rounded to bf16 (sums in f32;
  // about 4e-3 relative error per operand, as PyTorch's oneDNN bf16 math mode), where the CPU
  // multiplies bf16 natively (AVX512-BF16, AMX: 2-3x faster); no effect elsewhere. Off: fp32.
  bool allow_bf16 = false;
};

// The threads a CPU run takes where neither CompileOptions::threads nor WEFT_NUM_THREADS gives
// a count: OMP_NUM_THREADS as it was when Weft loaded (with "openmp"), else the CPUs of the
// process, capped by its cgroups' CPU quota. Not what other libraries set since (PyTorch's
// torch.set_num_threads shares GCC's OpenMP runtime with Weft).
int default_threads(bool openmp = true);

// Time spent in one kernel during Model::run_profiled.
struct KernelTime {
  std::string kernel;   // generated function, e.g. "k3_ReduceSum"
  std::string node;     // the ONNX node it came from
  std::string op_type;  // that node's op
  std::string strategy; // e.g. "elementwise", "reduce ROW sum"
  std::string shapes;   // e.g. "f32[64,128] -> f32[64]"
  size_t bytes = 0;     // bytes read and written (each buffer once)
  int64_t start_ns = 0; // steady clock
  int64_t end_ns = 0;
};

class Model {
public:
  // An .onnx file (external data resolves next to it).
  static Model compile(const std::string& path, const CompileOptions& options = {});
  // A serialized ModelProto; "name" stands for it in messages. "bytes" are read before it
  // returns, and not held: the caller may free them then.
  static Model compile_bytes(std::string_view bytes, const CompileOptions& options = {},
                             const std::string& name = "<model bytes>");

  const std::vector<TensorSpec>& inputs() const;
  const std::vector<TensorSpec>& outputs() const;
  const ModelMetadata& metadata() const;

  // Runs on "inputs" (in the order of inputs()); the outputs are Weft-owned.
  std::vector<HostTensor> run(const std::vector<HostTensor>& inputs) const;
  // Writes into caller-owned "outputs" (in the order of outputs(), each of the exact type and
  // shape the inputs give; output_shapes() tells them).
  void run(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs) const;
  // The output shapes for inputs of these shapes (compiling for them if needed).
  std::vector<std::vector<int64_t>> output_shapes(const std::vector<HostTensor>& inputs) const;
  // Device-resident runs of a "cuda" model: inputs and outputs in device memory, nothing
  // copied through the host. They return once the outputs are written. Inputs whose values
  // determine shapes, and models whose output shapes depend on values, take host tensors.
  std::vector<DeviceTensor> run_on_device(const std::vector<DeviceTensor>& inputs) const;
  void run_on_device(const std::vector<DeviceTensor>& inputs,
                     const std::vector<DeviceTensor>& outputs) const;

  // How many compiled forms the model holds: one per set of input shapes run recently (at
  // most WEFT_SHAPE_CACHE of them, default 8; the least recently used is dropped), or one
  // for all of them with dynamic_shapes, besides which shapes run often (WEFT_SPECIALIZE_AFTER
  // times, default 3) get a specialized compile made in the background.
  size_t compiled_variants() const;

  // run(), recording each kernel's time into "profile".
  std::vector<HostTensor> run_profiled(const std::vector<HostTensor>& inputs,
                                       std::vector<KernelTime>* profile) const;

  struct Impl; // the compiled forms, one per set of input shapes

private:
  explicit Model(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  void warm_up() const;
  std::shared_ptr<Impl> impl_;
};

} // namespace weft
