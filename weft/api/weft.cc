// The public C++ API (include/weft/weft.h) over the driver and the CPU runtime.
#include "weft/weft.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "weft/driver/compile_model.h"
#include "weft/driver/pipeline.h"
#include "weft/graph/passes/specialize_shapes.h"
#include "weft/runtime/cpu/host_threads.h"
#include "weft/runtime/cuda/device.h"
#include "weft/support/log.h"

namespace weft {

namespace {

// ElementType and DType list the same types in the same order.
static_assert(static_cast<int>(ElementType::kBool) == static_cast<int>(DType::kBool));
static_assert(static_cast<int>(ElementType::kBF16) == static_cast<int>(DType::kBF16));
static_assert(static_cast<int>(ElementType::kU64) == static_cast<int>(DType::kU64));
static_assert(static_cast<int>(ElementType::kU2) == static_cast<int>(DType::kU2));
static_assert(static_cast<int>(ElementType::kF8E4M3FN) == static_cast<int>(DType::kF8E4M3FN));

DType to_dtype(ElementType t) { return static_cast<DType>(t); }
ElementType to_element_type(DType t) { return static_cast<ElementType>(t); }

// StatusCode and ErrorCode are one list (the public header cannot include status.h).
static_assert(
    static_cast<int>(ErrorCode::kNoSuchFile) == static_cast<int>(StatusCode::kNoSuchFile) &&
    static_cast<int>(ErrorCode::kInvalidModel) == static_cast<int>(StatusCode::kInvalidModel) &&
    static_cast<int>(ErrorCode::kNotImplemented) == static_cast<int>(StatusCode::kNotImplemented) &&
    static_cast<int>(ErrorCode::kInvalidArgument) ==
        static_cast<int>(StatusCode::kInvalidArgument));

void throw_if_error(const Status& s) {
  if (!s.ok()) throw Error(s.to_string(), static_cast<ErrorCode>(s.code()));
}

template <typename T> T value_or_throw(Result<T> r) {
  throw_if_error(r.status());
  return std::move(r.value());
}

TensorSpec spec_of(const Value* v) {
  TensorSpec spec{v->name, to_element_type(v->type.dtype), {}, {}, {}, false, {}};
  if (!v->type.shape) return spec; // unknown rank: no dims
  for (const Dim& d : *v->type.shape) {
    spec.shape.push_back(d.is_static() ? d.value() : -1);
    spec.dim_names.push_back(d.is_static() ? "" : d.symbol_name());
  }
  return spec;
}

// A HostTensor's or DeviceTensor's view.
template <typename T> runtime::TensorView view_of(const T& t) {
  return {to_dtype(t.type()), t.shape(), t.data()};
}

template <typename T> std::vector<runtime::TensorView> views_of(const std::vector<T>& tensors) {
  std::vector<runtime::TensorView> views;
  for (const T& t : tensors)
    views.push_back(view_of(t));
  return views;
}

int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

// CompileOptions::threads, else WEFT_NUM_THREADS (both checked when the model was made).
int threads_from(const CompileOptions& options) {
  if (options.threads > 0) return options.threads;
  Result<int> env = runtime::thread_count_from_environment();
  return env.ok() ? *env : 0;
}

// How many compiles for distinct input shapes a Model keeps: WEFT_SHAPE_CACHE, default 8.
size_t shape_cache_size() {
  const char* env = std::getenv("WEFT_SHAPE_CACHE");
  int n = env && *env ? std::atoi(env) : 8;
  return static_cast<size_t>(std::max(n, 1));
}

// A shape the dynamic compile has run this many times gets a specialized compile in the
// background (docs/dynamic-shapes.md); 0: never.
int specialize_after() {
  const char* env = std::getenv("WEFT_SPECIALIZE_AFTER");
  return env && *env ? std::max(std::atoi(env), 0) : 3;
}

} // namespace

std::string_view to_string(ElementType type) { return dtype_name(to_dtype(type)); }
size_t element_size(ElementType type) { return static_cast<size_t>(dtype_size(to_dtype(type))); }

HostTensor HostTensor::view(ElementType type, std::vector<int64_t> shape, void* data) {
  HostTensor t;
  t.type_ = type;
  t.shape_ = std::move(shape);
  t.data_ = data;
  return t;
}

HostTensor HostTensor::view(ElementType type, std::vector<int64_t> shape, const void* data) {
  // Inputs are only read; the const_cast lets one type serve inputs and outputs.
  return view(type, std::move(shape), const_cast<void*>(data));
}

namespace {

void check_allocatable(ElementType type, const std::vector<int64_t>& shape) {
  int64_t n = 0;
  if (!dims_are_allocatable(to_dtype(type), shape, &n))
    throw Error(
        fmt::format("error: cannot allocate a tensor of shape [{}]", fmt::join(shape, ",")));
}

} // namespace

HostTensor HostTensor::allocate(ElementType type, std::vector<int64_t> shape) {
  check_allocatable(type, shape);
  auto storage = std::make_shared<Tensor>(to_dtype(type), shape);
  HostTensor t = view(type, std::move(shape), static_cast<void*>(storage->data()));
  t.owner_ = std::move(storage);
  return t;
}

HostTensor HostTensor::empty(ElementType type, std::vector<int64_t> shape) {
  check_allocatable(type, shape);
  auto storage = std::make_shared<Tensor>(Tensor::uninitialized(to_dtype(type), shape));
  HostTensor t = view(type, std::move(shape), static_cast<void*>(storage->data()));
  t.owner_ = std::move(storage);
  return t;
}

int64_t HostTensor::num_elements() const { return product(shape_); }

DeviceTensor DeviceTensor::view(ElementType type, std::vector<int64_t> shape, void* device_data) {
  DeviceTensor t;
  t.type_ = type;
  t.shape_ = std::move(shape);
  t.data_ = device_data;
  return t;
}

int64_t DeviceTensor::num_elements() const { return product(shape_); }

namespace {

// The process's CUDA device 0, or the Error of a "cuda" compile without one.
std::shared_ptr<runtime::cuda::Device> cuda_device() {
  Result<std::shared_ptr<runtime::cuda::Device>> device = runtime::cuda::open_device();
  if (!device.ok()) {
    throw Error(
        fmt::format("error: device 'cuda' is not available: {}", device.status().message()));
  }
  return *device;
}

void wait_for(runtime::cuda::Device& device, const Status& copied) {
  throw_if_error(copied);
  throw_if_error(device.synchronize());
}

void check_same(const std::string& what, ElementType type, const std::vector<int64_t>& shape,
                ElementType want_type, const std::vector<int64_t>& want_shape) {
  if (type == want_type && shape == want_shape) return;
  throw Error(fmt::format("error: {} is {}[{}], where {}[{}] was expected", what, to_string(type),
                          fmt::join(shape, ","), to_string(want_type), fmt::join(want_shape, ",")),
              ErrorCode::kInvalidArgument);
}

} // namespace

DeviceTensor DeviceTensor::empty(ElementType type, std::vector<int64_t> shape) {
  check_allocatable(type, shape);
  std::shared_ptr<runtime::cuda::Device> device = cuda_device();
  DeviceTensor t = view(type, std::move(shape), nullptr);
  t.data_ = value_or_throw(device->allocate(t.num_bytes()));
  t.owner_ = std::shared_ptr<void>(t.data_, [device](void* p) { device->release(p); });
  return t;
}

DeviceTensor DeviceTensor::from_host(const HostTensor& host) {
  DeviceTensor t = empty(host.type(), host.shape());
  std::shared_ptr<runtime::cuda::Device> device = cuda_device();
  wait_for(*device, device->to_device(t.data(), host.data(), t.num_bytes()));
  return t;
}

HostTensor DeviceTensor::to_host() const {
  HostTensor host = HostTensor::empty(type_, shape_);
  std::shared_ptr<runtime::cuda::Device> device = cuda_device();
  wait_for(*device, device->to_host(host.data(), data_, num_bytes()));
  return host;
}

void DeviceTensor::copy_from(const DeviceTensor& source) const {
  check_same("the source of a device copy", source.type(), source.shape(), type_, shape_);
  std::shared_ptr<runtime::cuda::Device> device = cuda_device();
  wait_for(*device, device->on_device(data_, source.data(), num_bytes()));
}

struct Model::Impl {
  explicit Impl(ModelSource s) : source(std::move(s)) {}

  ModelSource source; // an in-memory model's bytes only where a dump may run the passes again
  // The graph passes' result, once: each compile clones it (its constants shared), where
  // each imported the model again (a language model's seconds, and its weights twice in
  // memory while the first graph's blocks waited in the host cache).
  std::shared_ptr<const Graph> pipeline;
  CompileOptions options;
  std::vector<TensorSpec> inputs, outputs;
  ModelMetadata metadata;
  bool has_shape_operands = false;               // some input's value determines shapes
  bool has_unknown_ranks = false;                // some input's rank is not in the model
  std::shared_ptr<runtime::cuda::Device> device; // CUDA models
  DeviceKind device_kind = DeviceKind::kCpu;     // options.device, parsed
  std::mutex mutex;                              // guards "compiled", "dynamic" and "dynamic_tried"
  // Compiles for one set of input shapes each, least recently used first; at most
  // shape_cache_size() of them are kept (a dropped one lives on while a run holds it).
  std::vector<std::shared_ptr<const CompiledModel>> compiled;
  std::shared_ptr<const CompiledModel> dynamic; // the compile for symbolic dims, if any
  bool dynamic_tried = false; // the compile for symbolic dims ran (dynamic_shapes)
  // Hot shapes: runs of "dynamic" per set of input dims (forgotten past 1,024 sets), and the
  // one specialized compile at a time that runs in the background for a hot one.
  std::map<std::vector<std::vector<int64_t>>, int> dynamic_runs;
  size_t hot_shapes = 0; // of dynamic_runs, those run specialize_after() times
  std::thread specializing;
  bool specializing_busy = false;

  ~Impl() {
    if (specializing.joinable()) specializing.join();
  }

  // Keeps "c" as the most recently used specialized compile. Called with "mutex" held.
  void remember(std::shared_ptr<const CompiledModel> c) {
    compiled.push_back(std::move(c));
    if (compiled.size() > shape_cache_size()) compiled.erase(compiled.begin());
  }

  // The compiled form for inputs like "given": an earlier one, or a new compile. Compiles run
  // outside the lock, so runs on known shapes go on meanwhile.
  // "on_device": the inputs' data are device pointers (the compile then samples zeros).
  std::shared_ptr<const CompiledModel> for_inputs(const std::vector<runtime::TensorView>& given,
                                                  bool on_device = false) {
    if (auto c = find(given)) return c;
    if (given.size() != inputs.size()) {
      throw Error(fmt::format("error: {}: the model takes {} inputs, {} were given", source.path,
                              inputs.size(), given.size()),
                  ErrorCode::kInvalidArgument);
    }
    // Compiling binds the input types and the values of shape-determining inputs.
    std::vector<Tensor> samples;
    for (const runtime::TensorView& v : given) {
      int64_t n = 0;
      if (!dims_are_allocatable(v.dtype, v.dims, &n))
        throw Error(fmt::format("error: {}: an input has the invalid shape {}", source.path,
                                v.type().to_string()),
                    ErrorCode::kInvalidArgument);
      Tensor t(v.dtype, v.dims);
      if (t.num_bytes() > 0 && !on_device) std::memcpy(t.data(), v.data, t.num_bytes());
      samples.push_back(std::move(t));
    }
    // (Its assumptions, unify_dims's, may not hold for the very inputs it was compiled for:
    // an x of [1, 4, 1, 6] and a y of [3, 1, 5, 6] that broadcast, taken to be of one shape.)
    if (auto c = compile_dynamic(samples); c && c->executable->bind(given).ok()) {
      std::lock_guard<std::mutex> lock(mutex);
      note_dynamic_run(given);
      return c;
    }
    auto c = std::make_shared<const CompiledModel>(value_or_throw(compile(samples, settings())));
    std::lock_guard<std::mutex> lock(mutex);
    remember(c); // a concurrent compile of the same shapes adds a twin: harmless
    return c;
  }

  // On the threads its runs will use: oneDNN's primitives fix their thread count when they are
  // created, and a compile measures library calls (conv_choice, the peak).
  Result<CompiledModel> compile(const std::vector<Tensor>& samples,
                                const CompileSettings& settings) const {
    runtime::ScopedHostThreads threads(threads_from(options));
    return compile_model(source, *pipeline, samples, settings);
  }

  CompileSettings settings() const {
    CompileSettings settings;
    settings.dump_dir = options.dump_dir;
    settings.fusion = options.fusion;
    settings.device = device_kind;
    settings.allow_tf32 = options.allow_tf32;
    settings.allow_bf16 = options.allow_bf16;
    return settings;
  }

  // The compile for every extent of the inputs' symbolic dims, once, when dynamic_shapes
  // asks for it; null when it does not apply or failed (runs then compile per shape).
  std::shared_ptr<const CompiledModel> compile_dynamic(const std::vector<Tensor>& samples) {
    bool symbolic = false;
    for (const TensorSpec& s : inputs)
      symbolic |= std::find(s.shape.begin(), s.shape.end(), -1) != s.shape.end();
    if (!options.dynamic_shapes || !symbolic || has_shape_operands) return nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (dynamic_tried) return nullptr;
      dynamic_tried = true;
    }
    CompileSettings symbolic_settings = settings();
    symbolic_settings.dynamic_shapes = true;
    Result<CompiledModel> c = compile(samples, symbolic_settings);
    if (!c.ok()) {
      log_info("{}: compiling per input shapes: {}", source.path, c.status().message());
      return nullptr;
    }
    auto shared = std::make_shared<const CompiledModel>(std::move(*c));
    std::lock_guard<std::mutex> lock(mutex);
    dynamic = shared;
    return shared;
  }

  std::shared_ptr<const CompiledModel> find(const std::vector<runtime::TensorView>& given) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto it = compiled.rbegin(); it != compiled.rend(); ++it) {
      if (!(*it)->executable->bind(given).ok()) continue;
      std::shared_ptr<const CompiledModel> c = *it;
      compiled.erase(std::next(it).base());
      compiled.push_back(c);
      return c;
    }
    if (dynamic) {
      Result<runtime::Bindings> bound = dynamic->executable->bind(given);
      if (bound.ok()) {
        note_dynamic_run(given);
        return dynamic;
      }
      log_info("{}: compiling for these input shapes: {}", source.path, bound.status().message());
    }
    return nullptr;
  }

  // Counts a run of the dynamic compile at the shapes of "given"; at specialize_after() runs,
  // starts a specialized compile for them in the background (one at a time; CPU only), which
  // later runs at those shapes take once it is kept. Called with "mutex" held.
  void note_dynamic_run(const std::vector<runtime::TensorView>& given) {
    int after = specialize_after();
    if (after == 0 || device_kind != DeviceKind::kCpu) return;
    std::vector<std::vector<int64_t>> key;
    std::vector<DType> dtypes;
    for (const runtime::TensorView& v : given) {
      key.push_back(v.dims);
      dtypes.push_back(v.dtype);
    }
    if (dynamic_runs.size() >= 1024 && !dynamic_runs.contains(key)) {
      dynamic_runs.clear();
      hot_shapes = 0;
    }
    int& runs = ++dynamic_runs[key];
    if (runs == after) ++hot_shapes;
    // More hot shapes than compiles kept (a decoding loop's every past length, from its third
    // generation on): each would be dropped before it paid for its compile, which takes a core.
    if (runs < after || specializing_busy || hot_shapes > shape_cache_size()) return;
    dynamic_runs.erase(key);
    if (specializing.joinable()) specializing.join(); // finished: it cleared the flag
    specializing_busy = true;
    specializing = std::thread([this, key, dtypes] {
      std::vector<Tensor> samples; // zeros: no input's value determines a shape here
      for (size_t i = 0; i < key.size(); ++i)
        samples.emplace_back(dtypes[i], key[i]);
      Result<CompiledModel> c = compile(samples, settings());
      std::lock_guard<std::mutex> lock(mutex);
      if (c.ok()) {
        remember(std::make_shared<const CompiledModel>(std::move(*c)));
        log_info("{}: specialized for a hot shape in the background", source.path);
      } else {
        log_info("{}: no specialized compile for a hot shape: {}", source.path,
                 c.status().message());
      }
      specializing_busy = false;
    });
  }

  // Zero-filled inputs for the declared types, when they alone determine every shape.
  bool static_inputs(std::vector<HostTensor>* out) const {
    if (has_shape_operands || has_unknown_ranks) return false;
    for (const TensorSpec& s : inputs) {
      for (int64_t d : s.shape) {
        if (d < 0) return false;
      }
    }
    for (const TensorSpec& s : inputs)
      out->push_back(HostTensor::allocate(s.type, s.shape));
    return true;
  }

  // The compiled form for device tensors "given", with the errors of what they cannot do.
  std::shared_ptr<const CompiledModel> for_device(const std::vector<runtime::TensorView>& given) {
    if (!device) {
      throw Error(fmt::format("error: {}: device tensors need a model compiled for \"cuda\" "
                              "(this one is for \"{}\")",
                              source.path, options.device),
                  ErrorCode::kInvalidArgument);
    }
    if (has_shape_operands) {
      throw Error(fmt::format("error: {}: some input's values determine shapes: run this model "
                              "with host tensors",
                              source.path),
                  ErrorCode::kInvalidArgument);
    }
    auto c = for_inputs(given, true);
    if (c->staged()) {
      throw Error(fmt::format("error: {}: output shapes depend on input values: run this model "
                              "with host tensors",
                              c->graph.source),
                  ErrorCode::kInvalidArgument);
    }
    return c;
  }

  runtime::RunOptions run_options() const {
    runtime::RunOptions run;
    run.threads = threads_from(options);
    return run;
  }
};

namespace {

std::shared_ptr<Model::Impl> make_impl(ModelSource source, const CompileOptions& options) {
  std::optional<DeviceKind> kind = parse_device_kind(options.device);
  std::shared_ptr<runtime::cuda::Device> cuda;
  if (kind == DeviceKind::kCuda) {
    cuda = cuda_device();
  } else if (!kind) {
    throw Error(fmt::format("error: device '{}' is not available: devices are \"cpu\" and "
                            "\"cuda\"",
                            options.device));
  }
  if (Status s = runtime::check_thread_count(options.threads, "threads"); !s.ok())
    throw Error("error: " + s.message());
  if (Result<int> env = runtime::thread_count_from_environment(); options.threads == 0 && !env.ok())
    throw Error("error: " + env.status().message());
  Graph graph = value_or_throw(run_graph_pipeline(source));
  auto impl = std::make_shared<Model::Impl>(std::move(source));
  for (const Value* v : graph.inputs) {
    impl->inputs.push_back(spec_of(v));
    if (auto words = graph.string_inputs.find(v->name); words != graph.string_inputs.end())
      impl->inputs.back().labels = words->second;
    impl->has_unknown_ranks |= !v->type.shape.has_value();
  }
  for (const Value* v : graph.outputs) {
    impl->outputs.push_back(spec_of(v));
    if (auto labels = graph.label_outputs.find(v->name); labels != graph.label_outputs.end())
      impl->outputs.back().labels = labels->second;
    auto map = graph.map_outputs.find(v->name);
    if (map == graph.map_outputs.end()) continue;
    TensorSpec& spec = impl->outputs.back();
    spec.map_int_keys = !map->second.ints.empty();
    for (int64_t key : map->second.ints)
      spec.map_keys.push_back(std::to_string(key));
    for (const std::string& key : map->second.strings)
      spec.map_keys.push_back(key);
  }
  const ModelProtoInfo& info = graph.metadata;
  impl->metadata = {info.producer_name, info.producer_version, info.domain,        info.doc_string,
                    info.graph_name,    info.graph_doc_string, info.model_version, info.props};
  impl->has_shape_operands = !shape_operand_inputs(graph).empty();
  impl->pipeline = std::make_shared<const Graph>(std::move(graph));
  const char* dump_root = std::getenv("WEFT_DUMP_DIR");
  if (options.dump_dir.empty() && (!dump_root || !*dump_root))
    std::string().swap(impl->source.bytes);
  else if (impl->source.bytes.empty())
    impl->source.bytes.assign(impl->source.borrowed); // the caller's are gone after the compile
  impl->source.borrowed = {};
  impl->options = options;
  impl->device_kind = *kind;
  impl->device = std::move(cuda);
  return impl;
}

} // namespace

Model Model::compile(const std::string& path, const CompileOptions& options) {
  Model m(make_impl(ModelSource(path), options));
  m.warm_up();
  return m;
}

Model Model::compile_bytes(std::string_view bytes, const CompileOptions& options,
                           const std::string& name) {
  Model m(make_impl(ModelSource::borrowed_memory(bytes, name), options));
  m.warm_up();
  return m;
}

void Model::warm_up() const {
  // When the input types determine every shape, generate the kernels now, so that errors
  // surface here.
  std::vector<HostTensor> zeros;
  if (impl_->static_inputs(&zeros)) (void)impl_->for_inputs(views_of(zeros));
}

int default_threads(bool openmp) {
  return openmp ? runtime::default_host_threads() : runtime::available_host_threads();
}

const std::vector<TensorSpec>& Model::inputs() const { return impl_->inputs; }
const ModelMetadata& Model::metadata() const { return impl_->metadata; }
const std::vector<TensorSpec>& Model::outputs() const { return impl_->outputs; }

std::vector<std::vector<int64_t>>
Model::output_shapes(const std::vector<HostTensor>& inputs) const {
  auto compiled = impl_->for_inputs(views_of(inputs));
  if (compiled->staged()) {
    std::vector<std::vector<int64_t>> shapes;
    for (const HostTensor& t : run(inputs))
      shapes.push_back(t.shape());
    return shapes;
  }
  return value_or_throw(compiled->executable->output_shapes(views_of(inputs)));
}

size_t Model::compiled_variants() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->compiled.size() + (impl_->dynamic ? 1 : 0);
}

void Model::run(const std::vector<HostTensor>& inputs,
                const std::vector<HostTensor>& outputs) const {
  std::vector<runtime::TensorView> in = views_of(inputs);
  auto compiled = impl_->for_inputs(in);
  if (compiled->staged()) {
    // Output shapes are known only once the host ops ran: run, then check and copy.
    std::vector<HostTensor> computed = run(inputs);
    if (computed.size() != outputs.size())
      throw Error(fmt::format("error: {}: the model has {} outputs, {} were given",
                              compiled->graph.source, computed.size(), outputs.size()),
                  ErrorCode::kInvalidArgument);
    for (size_t i = 0; i < computed.size(); ++i) {
      runtime::TensorView got = view_of(computed[i]), given = view_of(outputs[i]);
      if (got.type() != given.type())
        throw Error(fmt::format("error: {}: output '{}' is {} for these inputs (its shape "
                                "depends on their values), the buffer given is {}",
                                compiled->graph.source, compiled->output_names[i],
                                got.type().to_string(), given.type().to_string()),
                    ErrorCode::kInvalidArgument);
      if (got.num_bytes() > 0) std::memcpy(given.data, got.data, got.num_bytes());
    }
    return;
  }
  throw_if_error(compiled->executable->run(in, views_of(outputs), impl_->run_options())
                     .with_location({compiled->graph.source, "", "", 0}));
}

std::vector<HostTensor> Model::run(const std::vector<HostTensor>& inputs) const {
  return run_profiled(inputs, nullptr);
}

std::vector<HostTensor> Model::run_profiled(const std::vector<HostTensor>& inputs,
                                            std::vector<KernelTime>* profile) const {
  std::vector<runtime::TensorView> in = views_of(inputs);
  auto compiled = impl_->for_inputs(in);
  if (compiled->staged()) {
    if (profile)
      throw Error(fmt::format("error: {}: per-kernel profiles of models with data-dependent "
                              "shapes are not supported yet",
                              compiled->graph.source));
    std::vector<Tensor> tensors;
    for (const runtime::TensorView& v : in) {
      Tensor t(v.dtype, v.dims);
      if (t.num_bytes() > 0) std::memcpy(t.data(), v.data, t.num_bytes());
      tensors.push_back(std::move(t));
    }
    Result<std::vector<Tensor>> computed = compiled->run(tensors, impl_->run_options());
    throw_if_error(computed.status().with_location({compiled->graph.source, "", "", 0}));
    std::vector<HostTensor> outputs;
    for (const Tensor& t : *computed) {
      outputs.push_back(HostTensor::empty(to_element_type(t.dtype()), t.dims()));
      if (t.num_bytes() > 0) std::memcpy(outputs.back().data(), t.data(), t.num_bytes());
    }
    return outputs;
  }
  const runtime::Executable& exe = *compiled->executable;
  std::vector<std::vector<int64_t>> shapes = value_or_throw(exe.output_shapes(in));
  std::vector<HostTensor> outputs;
  for (size_t o = 0; o < shapes.size(); ++o)
    outputs.push_back(HostTensor::empty(to_element_type(exe.outputs()[o].type.dtype), shapes[o]));
  std::vector<runtime::LaunchTiming> timings;
  runtime::RunOptions options = impl_->run_options();
  if (profile) options.timings = &timings;
  throw_if_error(
      exe.run(in, views_of(outputs), options).with_location({compiled->graph.source, "", "", 0}));
  if (profile) {
    profile->clear();
    runtime::Bindings bound = value_or_throw(exe.bind(in));
    for (size_t l = 0; l < timings.size(); ++l) {
      const runtime::Launch& launch = exe.launches()[l];
      const runtime::LaunchInfo& info = launch.info;
      profile->push_back({launch.name, info.node, info.op_type, info.strategy, info.shapes,
                          info.bytes(bound), timings[l].start_ns, timings[l].end_ns});
    }
  }
  return outputs;
}

void Model::run_on_device(const std::vector<DeviceTensor>& inputs,
                          const std::vector<DeviceTensor>& outputs) const {
  std::vector<runtime::TensorView> in = views_of(inputs);
  auto compiled = impl_->for_device(in);
  runtime::RunOptions options = impl_->run_options();
  options.io_on_device = true;
  throw_if_error(compiled->executable->run(in, views_of(outputs), options)
                     .with_location({compiled->graph.source, "", "", 0}));
}

std::vector<DeviceTensor> Model::run_on_device(const std::vector<DeviceTensor>& inputs) const {
  std::vector<runtime::TensorView> in = views_of(inputs);
  auto compiled = impl_->for_device(in);
  std::shared_ptr<runtime::cuda::Device> device = impl_->device;
  const runtime::Executable& exe = *compiled->executable;
  // This run's shapes: a compile over symbolic dims (dynamic_shapes) has no static ones.
  std::vector<std::vector<int64_t>> shapes = value_or_throw(exe.output_shapes(in));
  std::vector<DeviceTensor> outputs;
  for (size_t o = 0; o < shapes.size(); ++o) {
    DeviceTensor t =
        DeviceTensor::view(to_element_type(exe.outputs()[o].type.dtype), shapes[o], nullptr);
    check_allocatable(t.type(), t.shape());
    void* data = value_or_throw(device->allocate(t.num_bytes()));
    t.data_ = data;
    t.owner_ = std::shared_ptr<void>(data, [device](void* p) { device->release(p); });
    outputs.push_back(std::move(t));
  }
  run_on_device(inputs, outputs);
  return outputs;
}

} // namespace weft
