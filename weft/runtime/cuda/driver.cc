// The CUDA driver API's device 0, with libcuda.so.1 loaded at run time with dlopen: building
// Weft needs no CUDA, and without a driver open_driver_device() says so instead of failing to
// start. Kernels are built to PTX by NVRTC for the device's architecture.
//
// Only the entry points Weft uses are declared, with the C ABI of cuda.h and the versioned
// names the driver exports for them (the _v2 ones take 64-bit device pointers and sizes).
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "weft/runtime/cuda/cublas_api.h"
#include "weft/runtime/cuda/cudnn_api.h"
#include "weft/runtime/cuda/device.h"
#include "weft/runtime/cuda/driver_types.h"
#include "weft/runtime/cuda/restrict_check.h"
#include "weft/support/dynamic_library.h"
#include "weft/toolchain/nvrtc.h"

namespace weft::runtime::cuda {

namespace {

constexpr CUresult kCudaSuccess = 0;
constexpr int kAttributeMultiprocessorCount = 16;
constexpr int kAttributeComputeCapabilityMajor = 75;
constexpr int kAttributeComputeCapabilityMinor = 76;

constexpr int64_t kMaxGrid = int64_t{1} << 31; // exclusive
constexpr int64_t kMaxBlock = 1024;

struct DriverApi {
  void* handle = nullptr;
  CUresult (*Init)(unsigned) = nullptr;
  CUresult (*DeviceGetCount)(int*) = nullptr;
  CUresult (*DeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*DeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*CtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*StreamCreate)(CUstream*, unsigned) = nullptr;
  CUresult (*StreamSynchronize)(CUstream) = nullptr;
  CUresult (*MemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*MemFree)(CUdeviceptr) = nullptr;
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream) = nullptr;
  CUresult (*MemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*ModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*ModuleUnload)(CUmodule) = nullptr;
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*GetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*EventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*EventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*EventSynchronize)(CUevent) = nullptr;
  CUresult (*EventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int*, CUfunction, int, size_t) = nullptr;
  // CUDA graphs (stream capture), bound apart: a driver without them runs without graphs.
  bool graphs = false;
  CUresult (*StreamBeginCapture)(CUstream, int) = nullptr;
  CUresult (*StreamEndCapture)(CUstream, CUgraph*) = nullptr;
  CUresult (*GraphInstantiate)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;
  CUresult (*GraphLaunch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*GraphExecDestroy)(CUgraphExec) = nullptr;
  CUresult (*GraphDestroy)(CUgraph) = nullptr;
};

Result<std::unique_ptr<DriverApi>> load_api() {
  auto api = std::make_unique<DriverApi>();
  api->handle = open_first({"libcuda.so.1"});
  if (!api->handle) {
    return Status::error("no CUDA driver: libcuda.so.1 was not found (is an NVIDIA driver "
                         "installed?); run with --device cpu");
  }
  Binder b(api->handle);
  b.bind("cuInit", &api->Init);
  b.bind("cuDeviceGetCount", &api->DeviceGetCount);
  b.bind("cuDeviceGet", &api->DeviceGet);
  b.bind("cuDeviceGetName", &api->DeviceGetName);
  b.bind("cuDeviceGetAttribute", &api->DeviceGetAttribute);
  b.bind("cuDevicePrimaryCtxRetain", &api->DevicePrimaryCtxRetain);
  b.bind("cuCtxSetCurrent", &api->CtxSetCurrent);
  b.bind("cuStreamCreate", &api->StreamCreate);
  b.bind("cuStreamSynchronize", &api->StreamSynchronize);
  b.bind("cuMemAlloc_v2", &api->MemAlloc);
  b.bind("cuMemFree_v2", &api->MemFree);
  b.bind("cuMemcpyHtoDAsync_v2", &api->MemcpyHtoDAsync);
  b.bind("cuMemcpyDtoHAsync_v2", &api->MemcpyDtoHAsync);
  b.bind("cuMemcpyDtoDAsync_v2", &api->MemcpyDtoDAsync);
  b.bind("cuModuleLoadData", &api->ModuleLoadData);
  b.bind("cuModuleUnload", &api->ModuleUnload);
  b.bind("cuModuleGetFunction", &api->ModuleGetFunction);
  b.bind("cuLaunchKernel", &api->LaunchKernel);
  b.bind("cuGetErrorString", &api->GetErrorString);
  b.bind("cuEventCreate", &api->EventCreate);
  b.bind("cuEventRecord", &api->EventRecord);
  b.bind("cuEventSynchronize", &api->EventSynchronize);
  b.bind("cuEventElapsedTime", &api->EventElapsedTime); // every driver has it; _v2 since 12.8
  b.bind("cuOccupancyMaxActiveBlocksPerMultiprocessor",
         &api->OccupancyMaxActiveBlocksPerMultiprocessor);
  Binder graphs(api->handle);
  graphs.bind("cuStreamBeginCapture_v2", &api->StreamBeginCapture);
  graphs.bind("cuStreamEndCapture", &api->StreamEndCapture);
  graphs.bind("cuGraphInstantiateWithFlags", &api->GraphInstantiate);
  graphs.bind("cuGraphLaunch", &api->GraphLaunch);
  graphs.bind("cuGraphExecDestroy", &api->GraphExecDestroy);
  graphs.bind("cuGraphDestroy", &api->GraphDestroy);
  api->graphs = graphs.missing().empty();
  if (!b.missing().empty()) {
    return Status::error(fmt::format("no CUDA driver: libcuda.so.1 lacks {} (is the NVIDIA "
                                     "driver too old?); run with --device cpu",
                                     b.missing()));
  }
  return api;
}

// The process's driver, loaded on first use; the library stays for the life of the process.
Result<const DriverApi*> driver_api() {
  static const Result<std::unique_ptr<DriverApi>> api = load_api();
  if (!api.ok()) return api.status();
  return api->get();
}

std::string error_string(const DriverApi& api, CUresult r) {
  const char* text = nullptr;
  if (api.GetErrorString(r, &text) == kCudaSuccess && text) return text;
  // The stub library (what a machine without a driver may have as libcuda.so.1) has no texts.
  switch (r) {
    case 34:
      return "CUDA_ERROR_STUB_LIBRARY: libcuda.so.1 is the CUDA toolkit's stub, not a driver";
    case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER: the driver is older than this CUDA";
    case 100: return "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected";
    default: return fmt::format("CUDA error {}", r);
  }
}

// The descriptors of one convolution, destroyed with it.
struct ConvDescriptors {
  const CudnnApi& api;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ~ConvDescriptors() {
    for (cudnnTensorDescriptor_t t : {x, y, bias}) {
      if (t) api.DestroyTensorDescriptor(t);
    }
    if (w) api.DestroyFilterDescriptor(w);
    if (conv) api.DestroyConvolutionDescriptor(conv);
  }
};

// C0 broadcast into C and scaled by beta, before a GEMM that adds to it (beta = 1): cuBLAS
// wants C0 at C's full size.
// The runtime's own kernels: GEMM's C0 broadcast, and a wait that keeps the stream busy
// while time() queues its start event and the work (see there).
constexpr const char* kHelperSource = R"(extern "C" __global__ void weft_busy(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
extern "C" __global__ void weft_broadcast_c0(
    float* c, const float* c0, long long batch, long long m, long long n, long long rows,
    long long cols, double beta) {
  long long total = batch * m * n;
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total;
       t += (long long)gridDim.x * blockDim.x) {
    long long j = t % n, i = t / n % m;
    c[t] = (float)(beta * c0[(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j)]);
  }
}
)";

CUdeviceptr to_cu(const void* pointer) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(pointer));
}

// The stream that a capture on this thread records into (DriverDevice::capture); null when
// none is in progress, and work goes to the device's stream.
thread_local CUstream t_capture_stream = nullptr;

// What a device and its modules share: a module keeps it, and so the context, alive.
struct DeviceState {
  const DriverApi* api = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  std::string name;
  int sm_count = 0;
  std::string arch; // "sm_90"

  // "CUDA: <call> failed[ for <subject>]: <error>", or ok.
  Status check(CUresult r, const std::string& call, const std::string& subject = {}) const {
    if (r == kCudaSuccess) return Status();
    std::string what = subject.empty() ? "" : fmt::format(" for {}", subject);
    return Status::error(fmt::format("CUDA: {} failed{}: {}", call, what, error_string(*api, r)));
  }

  // Where this thread's work goes: the capture in progress on it, or the device's stream.
  CUstream queue() const { return t_capture_stream ? t_capture_stream : stream; }

  // The calling thread may not be the one that opened the device, and a context is current per
  // thread; so every entry point that calls the driver makes it current first.
  Status make_current() const { return check(api->CtxSetCurrent(context), "cuCtxSetCurrent"); }
};

class DriverModule final : public Module {
public:
  DriverModule(std::shared_ptr<const DeviceState> state, CUmodule module)
      : state_(std::move(state)), module_(module) {}

  ~DriverModule() override {
    // Unloading needs the module's context current; at exit the driver may already be gone, and
    // there is nothing to do about a failure here anyway.
    if (state_->make_current().ok()) state_->api->ModuleUnload(module_);
  }

  DriverModule(const DriverModule&) = delete;
  DriverModule& operator=(const DriverModule&) = delete;

  Status launch(const std::string& function, int64_t grid, int64_t block,
                const std::vector<uint64_t>& args) const override {
    if (grid < 1 || grid >= kMaxGrid)
      return Status::error(fmt::format("CUDA: {}: grid {} is outside [1, 2^31)", function, grid));
    if (block < 1 || block > kMaxBlock)
      return Status::error(
          fmt::format("CUDA: {}: block {} is outside [1, {}]", function, block, kMaxBlock));
    WEFT_RETURN_IF_ERROR(state_->make_current());
    WEFT_ASSIGN_OR_RETURN(CUfunction f, lookup(function));
    // Every parameter is 8 bytes (a device pointer or an int64), so each one points straight
    // at its value. The driver only reads them, and copies them before cuLaunchKernel returns.
    std::vector<void*> params;
    params.reserve(args.size());
    for (const uint64_t& arg : args)
      params.push_back(const_cast<uint64_t*>(&arg));
    return state_->check(state_->api->LaunchKernel(f, static_cast<unsigned>(grid), 1, 1,
                                                   static_cast<unsigned>(block), 1, 1, 0,
                                                   state_->queue(), params.data(), nullptr),
                         "cuLaunchKernel", function);
  }

  // Asked once per function and block size: launches come often, the answer does not change.
  int64_t resident_blocks(const std::string& function, int64_t block) const override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = resident_.find({function, block});
      if (it != resident_.end()) return it->second;
    }
    if (!state_->make_current().ok()) return 0;
    Result<CUfunction> f = lookup(function);
    int blocks = 0;
    if (!f.ok() || state_->api->OccupancyMaxActiveBlocksPerMultiprocessor(
                       &blocks, *f, static_cast<int>(block), 0) != kCudaSuccess) {
      blocks = 0;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    resident_[{function, block}] = blocks;
    return blocks;
  }

private:
  // The function named "name", looked up on first use; launches may come from several threads.
  Result<CUfunction> lookup(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = functions_.find(name);
    if (it != functions_.end()) return it->second;
    CUfunction f = nullptr;
    WEFT_RETURN_IF_ERROR(state_->check(state_->api->ModuleGetFunction(&f, module_, name.c_str()),
                                       "cuModuleGetFunction", name));
    functions_.emplace(name, f);
    return f;
  }

  std::shared_ptr<const DeviceState> state_;
  CUmodule module_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, CUfunction> functions_;
  mutable std::map<std::pair<std::string, int64_t>, int64_t> resident_;
};

// An instantiated graph; destroying it while a launch of it runs is safe (the driver frees
// it when that launch ends).
class DriverGraph final : public DeviceMemory::Graph {
public:
  DriverGraph(std::shared_ptr<const DeviceState> state, CUgraphExec exec)
      : state_(std::move(state)), exec_(exec) {}
  ~DriverGraph() override {
    if (state_->make_current().ok()) state_->api->GraphExecDestroy(exec_);
  }
  DriverGraph(const DriverGraph&) = delete;
  DriverGraph& operator=(const DriverGraph&) = delete;
  CUgraphExec exec() const { return exec_; }

private:
  std::shared_ptr<const DeviceState> state_;
  CUgraphExec exec_;
};

class DriverDevice final : public Device {
public:
  explicit DriverDevice(std::shared_ptr<const DeviceState> state) : state_(std::move(state)) {}

  std::string describe() const override {
    return fmt::format("{} ({}, {} SMs)", state_->name, state_->arch, state_->sm_count);
  }

  int sm_count() const override { return state_->sm_count; }

  // A 0-byte request gets a 1-byte allocation, so that every allocation is a distinct non-null
  // pointer that release() takes back, like any other.
  Result<void*> allocate(size_t bytes) override {
    WEFT_RETURN_IF_ERROR(state_->make_current());
    CUdeviceptr pointer = 0;
    WEFT_RETURN_IF_ERROR(state_->check(state_->api->MemAlloc(&pointer, bytes == 0 ? 1 : bytes),
                                       "cuMemAlloc", fmt::format("{} bytes", bytes)));
    return reinterpret_cast<void*>(static_cast<uintptr_t>(pointer));
  }

  // Errors are ignored: release has no way to report them, and a failed free leaks at worst.
  void release(void* pointer) override {
    if (!pointer || !state_->make_current().ok()) return;
    state_->api->MemFree(to_cu(pointer));
  }

  Status to_device(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return Status();
    WEFT_RETURN_IF_ERROR(state_->make_current());
    return state_->check(state_->api->MemcpyHtoDAsync(to_cu(dst), src, bytes, state_->queue()),
                         "cuMemcpyHtoDAsync");
  }

  Status to_host(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return Status();
    WEFT_RETURN_IF_ERROR(state_->make_current());
    return state_->check(state_->api->MemcpyDtoHAsync(dst, to_cu(src), bytes, state_->queue()),
                         "cuMemcpyDtoHAsync");
  }

  Status on_device(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return Status();
    WEFT_RETURN_IF_ERROR(state_->make_current());
    return state_->check(
        state_->api->MemcpyDtoDAsync(to_cu(dst), to_cu(src), bytes, state_->queue()),
        "cuMemcpyDtoDAsync");
  }

  Status synchronize() override {
    WEFT_RETURN_IF_ERROR(state_->make_current());
    return state_->check(state_->api->StreamSynchronize(state_->stream), "cuStreamSynchronize");
  }

  // The time between two events on the stream, around what "work" queues: the device's time,
  // without the host's launch latency (resolution about 0.5 us). An idle stream would run the
  // start event at once and then wait for the work's launch to arrive, timing that latency
  // too (a 0.027 ms kernel of an H200 took 0.057 ms so); a one-thread wait of about 25 us
  // (weft_busy) queued first keeps it busy until the work is queued behind the event. The two
  // events are created on the first timing and kept, as the stream is.
  Result<double> time(const std::function<Status()>& work) override {
    WEFT_RETURN_IF_ERROR(state_->make_current());
    const DriverApi& api = *state_->api;
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const Module> helper, helper_module());
    std::lock_guard<std::mutex> lock(timing_mutex_);
    for (CUevent& event : events_) {
      if (!event) WEFT_RETURN_IF_ERROR(state_->check(api.EventCreate(&event, 0), "cuEventCreate"));
    }
    constexpr uint64_t kBusyCycles = 50000; // about 25 us at 2 GHz
    WEFT_RETURN_IF_ERROR(helper->launch("weft_busy", 1, 1, {kBusyCycles}));
    WEFT_RETURN_IF_ERROR(
        state_->check(api.EventRecord(events_[0], state_->stream), "cuEventRecord"));
    WEFT_RETURN_IF_ERROR(work());
    WEFT_RETURN_IF_ERROR(
        state_->check(api.EventRecord(events_[1], state_->stream), "cuEventRecord"));
    WEFT_RETURN_IF_ERROR(state_->check(api.EventSynchronize(events_[1]), "cuEventSynchronize"));
    float ms = 0;
    WEFT_RETURN_IF_ERROR(
        state_->check(api.EventElapsedTime(&ms, events_[0], events_[1]), "cuEventElapsedTime"));
    return static_cast<double>(ms);
  }

  // Stream capture into a stream of the device's own (non-blocking, so that the legacy default
  // stream does not join the capture), in relaxed mode: cuBLAS and cuDNN may allocate during it.
  // Only this thread's work goes there (queue()); other threads keep the device's stream. One
  // capture at a time per device.
  Result<std::unique_ptr<Graph>> capture(const std::function<Status()>& record) override {
    const DriverApi& api = *state_->api;
    if (!api.graphs) return std::unique_ptr<Graph>();
    WEFT_RETURN_IF_ERROR(state_->make_current());
    std::lock_guard<std::mutex> lock(capture_mutex_);
    constexpr unsigned kNonBlocking = 1;
    constexpr int kCaptureRelaxed = 2;
    if (!capture_stream_) {
      WEFT_RETURN_IF_ERROR(
          state_->check(api.StreamCreate(&capture_stream_, kNonBlocking), "cuStreamCreate"));
    }
    WEFT_RETURN_IF_ERROR(state_->check(api.StreamBeginCapture(capture_stream_, kCaptureRelaxed),
                                       "cuStreamBeginCapture"));
    t_capture_stream = capture_stream_;
    Status recorded = record();
    t_capture_stream = nullptr;
    CUgraph graph = nullptr;
    Status ended = state_->check(api.StreamEndCapture(capture_stream_, &graph), "cuStreamEndCapture");
    if (recorded.ok()) recorded = ended;
    CUgraphExec exec = nullptr;
    if (recorded.ok()) {
      recorded = state_->check(api.GraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
    }
    if (graph) api.GraphDestroy(graph); // the instance does not need it
    WEFT_RETURN_IF_ERROR(recorded);
    return std::unique_ptr<Graph>(std::make_unique<DriverGraph>(state_, exec));
  }

  Status replay(const Graph& graph) override {
    WEFT_RETURN_IF_ERROR(state_->make_current());
    return state_->check(
        state_->api->GraphLaunch(static_cast<const DriverGraph&>(graph).exec(), state_->stream),
        "cuGraphLaunch");
  }

  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS gets B first,
  // with the dims swapped, and the same transposes.
  Status gemm(const GemmShape& g, const float* a, const float* b, const float* c0,
              float* c) override {
    WEFT_RETURN_IF_ERROR(state_->make_current());
    WEFT_ASSIGN_OR_RETURN(cublasHandle_t handle, cublas());
    const CublasApi& api = *cublas_api_;
    auto check = [&](cublasStatus_t r, const char* call) {
      return r == 0 ? Status()
                    : Status::error(
                          fmt::format("cuBLAS: {} failed: {}", call, api.GetStatusString(r)));
    };
    WEFT_RETURN_IF_ERROR(check(api.SetStream(handle, state_->queue()), "cublasSetStream"));
    // cublasMath_t: TF32_TENSOR_OP (3) when allowed; DEFAULT (0) keeps f32 GEMMs in fp32.
    WEFT_RETURN_IF_ERROR(check(api.SetMathMode(handle, g.tf32 ? 3 : 0), "cublasSetMathMode"));
    float beta = 0;
    if (c0 && g.c_rows > 0) {
      WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const Module> helper, helper_module());
      auto bits = [](double v) {
        uint64_t u = 0;
        std::memcpy(&u, &v, sizeof(u));
        return u;
      };
      std::vector<uint64_t> args = {
          reinterpret_cast<uint64_t>(c),   reinterpret_cast<uint64_t>(c0),
          static_cast<uint64_t>(g.batch),  static_cast<uint64_t>(g.m),
          static_cast<uint64_t>(g.n),      static_cast<uint64_t>(g.c_rows),
          static_cast<uint64_t>(g.c_cols), bits(g.beta)};
      WEFT_RETURN_IF_ERROR(helper->launch("weft_broadcast_c0", persistent_grid(256), 256, args));
      beta = 1;
    }
    int lda = static_cast<int>(g.trans_a ? g.m : g.k),
        ldb = static_cast<int>(g.trans_b ? g.k : g.n);
    return check(api.SgemmStridedBatched(handle, g.trans_b ? kCublasOpT : kCublasOpN,
                                         g.trans_a ? kCublasOpT : kCublasOpN, static_cast<int>(g.n),
                                         static_cast<int>(g.m), static_cast<int>(g.k), &g.alpha, b,
                                         ldb, g.stride_b, a, lda, g.stride_a, &beta, c,
                                         static_cast<int>(g.n), g.m * g.n,
                                         static_cast<int>(g.batch)),
                 "cublasSgemmStridedBatched");
  }

  // cuDNN's heuristics pick the algorithm once per shape (conv_plan); its workspace is one
  // buffer of the device, grown when a convolution needs more.
  Status conv(const ConvShape& s, const float* x, const float* w, const float* bias,
              float* y) override {
    WEFT_RETURN_IF_ERROR(state_->make_current());
    WEFT_ASSIGN_OR_RETURN(cudnnHandle_t handle, cudnn());
    const CudnnApi& api = *cudnn_api_;
    auto check = [&](cudnnStatus_t r, const char* call) {
      return r == 0
                 ? Status()
                 : Status::error(fmt::format("cuDNN: {} failed: {}", call, api.GetErrorString(r)));
    };
    WEFT_RETURN_IF_ERROR(check(api.SetStream(handle, state_->queue()), "cudnnSetStream"));
    WEFT_ASSIGN_OR_RETURN(const ConvPlan* plan, conv_plan(s, handle));
    WEFT_ASSIGN_OR_RETURN(void* workspace, workspace_of(plan->workspace));
    float one = 1, zero = 0;
    const ConvDescriptors& d = plan->d;
    WEFT_RETURN_IF_ERROR(
        check(api.ConvolutionForward(handle, &one, d.x, x, d.w, w, d.conv, plan->algo, workspace,
                                     plan->workspace, &zero, d.y, y),
              "cudnnConvolutionForward"));
    if (!bias) return Status();
    return check(api.AddTensor(handle, &one, d.bias, bias, &one, d.y, y), "cudnnAddTensor");
  }

  Result<std::shared_ptr<const Module>> load(const std::string& source,
                                             const std::string& name) override {
    WEFT_RETURN_IF_ERROR(check_restrict(source));
    WEFT_ASSIGN_OR_RETURN(const toolchain::Nvrtc* nvrtc, toolchain::Nvrtc::get());
    WEFT_ASSIGN_OR_RETURN(std::string ptx, nvrtc->compile_to_ptx(source, name, state_->arch));
    WEFT_RETURN_IF_ERROR(state_->make_current());
    CUmodule module = nullptr;
    // PTX is loaded as text: the image must be NUL-terminated, which c_str() guarantees.
    WEFT_RETURN_IF_ERROR(
        state_->check(state_->api->ModuleLoadData(&module, ptx.c_str()), "cuModuleLoadData", name));
    return std::shared_ptr<const Module>(std::make_shared<DriverModule>(state_, module));
  }

private:
  // A convolution's descriptors, algorithm and workspace size, chosen on the first run of its
  // shape and kept for the device's life: later runs only launch.
  struct ConvPlan {
    explicit ConvPlan(const CudnnApi& api) : d{api} {}
    ConvDescriptors d;
    int algo = 0;
    size_t workspace = 0;
  };

  Result<const ConvPlan*> conv_plan(const ConvShape& s, cudnnHandle_t handle) {
    std::string key = fmt::format("{} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}", s.n, s.c,
                                  s.h, s.w, s.k, s.kh, s.kw, s.groups, s.pad_h, s.pad_w, s.stride_h,
                                  s.stride_w, s.dilation_h, s.dilation_w, s.out_h, s.out_w, s.tf32);
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = conv_plans_.find(key); it != conv_plans_.end()) return it->second.get();
    const CudnnApi& api = *cudnn_api_;
    Status status;
    auto check = [&](cudnnStatus_t r, const char* call) {
      if (r != 0 && status.ok())
        status = Status::error(fmt::format("cuDNN: {} failed: {}", call, api.GetErrorString(r)));
      return status.ok();
    };
    auto i = [](int64_t v) { return static_cast<int>(v); };
    auto plan = std::make_unique<ConvPlan>(api);
    ConvDescriptors& d = plan->d;
    bool ok =
        check(api.CreateTensorDescriptor(&d.x), "cudnnCreateTensorDescriptor") &&
        check(
            api.SetTensor4dDescriptor(d.x, kCudnnNchw, kCudnnFloat, i(s.n), i(s.c), i(s.h), i(s.w)),
            "cudnnSetTensor4dDescriptor") &&
        check(api.CreateTensorDescriptor(&d.y), "cudnnCreateTensorDescriptor") &&
        check(api.SetTensor4dDescriptor(d.y, kCudnnNchw, kCudnnFloat, i(s.n), i(s.k), i(s.out_h),
                                        i(s.out_w)),
              "cudnnSetTensor4dDescriptor") &&
        check(api.CreateTensorDescriptor(&d.bias), "cudnnCreateTensorDescriptor") &&
        check(api.SetTensor4dDescriptor(d.bias, kCudnnNchw, kCudnnFloat, 1, i(s.k), 1, 1),
              "cudnnSetTensor4dDescriptor") &&
        check(api.CreateFilterDescriptor(&d.w), "cudnnCreateFilterDescriptor") &&
        check(api.SetFilter4dDescriptor(d.w, kCudnnFloat, kCudnnNchw, i(s.k), i(s.c / s.groups),
                                        i(s.kh), i(s.kw)),
              "cudnnSetFilter4dDescriptor") &&
        check(api.CreateConvolutionDescriptor(&d.conv), "cudnnCreateConvolutionDescriptor") &&
        check(api.SetConvolution2dDescriptor(d.conv, i(s.pad_h), i(s.pad_w), i(s.stride_h),
                                             i(s.stride_w), i(s.dilation_h), i(s.dilation_w),
                                             kCudnnCrossCorrelation, kCudnnFloat),
              "cudnnSetConvolution2dDescriptor") &&
        check(api.SetConvolutionGroupCount(d.conv, i(s.groups)), "cudnnSetConvolutionGroupCount") &&
        check(api.SetConvolutionMathType(d.conv, s.tf32 ? kCudnnDefaultMath : kCudnnFmaMath),
              "cudnnSetConvolutionMathType");
    CudnnAlgoPerf perf[8] = {};
    int returned = 0;
    ok = ok && check(api.GetConvolutionForwardAlgorithm(handle, d.x, d.w, d.conv, d.y, 8, &returned,
                                                        perf),
                     "cudnnGetConvolutionForwardAlgorithm_v7");
    if (!ok) return status;
    const CudnnAlgoPerf* pick = nullptr;
    for (int p = 0; p < returned && !pick; ++p) {
      bool tensor_cores =
          perf[p].math_type == kCudnnTensorOpMath || perf[p].math_type == kCudnnAllowConversionMath;
      if (perf[p].status == 0 && (s.tf32 || !tensor_cores)) pick = &perf[p];
    }
    if (!pick) {
      return Status::error(fmt::format("cuDNN has no {}algorithm for this convolution",
                                       s.tf32 ? "" : "fp32 (FMA) "));
    }
    plan->algo = pick->algo;
    ok = check(api.SetConvolutionMathType(d.conv, s.tf32 ? pick->math_type : kCudnnFmaMath),
               "cudnnSetConvolutionMathType") &&
         check(api.GetConvolutionForwardWorkspaceSize(handle, d.x, d.w, d.conv, d.y, plan->algo,
                                                      &plan->workspace),
               "cudnnGetConvolutionForwardWorkspaceSize");
    if (!ok) return status;
    const ConvPlan* out = plan.get();
    conv_plans_.emplace(std::move(key), std::move(plan));
    return out;
  }

  // The cuBLAS handle, created on the first GEMM (with the context current) and kept.
  Result<cublasHandle_t> cublas() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cublas_handle_) return cublas_handle_;
    static const Result<std::unique_ptr<CublasApi>> api = load_cublas();
    if (!api.ok()) return api.status();
    cublas_api_ = api->get();
    cublasStatus_t r = cublas_api_->Create(&cublas_handle_);
    if (r != 0) {
      cublas_handle_ = nullptr;
      return Status::error(
          fmt::format("cuBLAS: cublasCreate failed: {}", cublas_api_->GetStatusString(r)));
    }
    return cublas_handle_;
  }

  // The cuDNN handle, created on the first convolution and kept.
  Result<cudnnHandle_t> cudnn() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cudnn_handle_) return cudnn_handle_;
    // Never destroyed: the device, a static too, destroys its convolution plans through it
    // at exit.
    static const auto* const api = new Result<std::unique_ptr<CudnnApi>>(load_cudnn());
    if (!api->ok()) return api->status();
    cudnn_api_ = (*api)->get();
    cudnnStatus_t r = cudnn_api_->Create(&cudnn_handle_);
    if (r != 0) {
      cudnn_handle_ = nullptr;
      return Status::error(
          fmt::format("cuDNN: cudnnCreate failed: {}", cudnn_api_->GetErrorString(r)));
    }
    return cudnn_handle_;
  }

  // At least "bytes" of device memory for cuDNN. A smaller buffer before it is kept, not
  // freed: graphs captured with it may still use it.
  Result<void*> workspace_of(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (bytes <= workspace_bytes_) return workspace_;
    if (workspace_) retired_workspaces_.push_back(workspace_);
    workspace_ = nullptr;
    workspace_bytes_ = 0;
    WEFT_ASSIGN_OR_RETURN(workspace_, allocate(bytes));
    workspace_bytes_ = bytes;
    return workspace_;
  }

  Result<std::shared_ptr<const Module>> helper_module() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!helper_) {
      WEFT_ASSIGN_OR_RETURN(helper_, load(kHelperSource, "weft runtime helpers"));
    }
    return helper_;
  }

  std::shared_ptr<const DeviceState> state_;
  std::mutex mutex_;
  const CublasApi* cublas_api_ = nullptr;
  cublasHandle_t cublas_handle_ = nullptr;
  const CudnnApi* cudnn_api_ = nullptr;
  cudnnHandle_t cudnn_handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::vector<void*> retired_workspaces_; // see workspace_of
  std::mutex capture_mutex_;
  CUstream capture_stream_ = nullptr; // created by the first capture, kept
  std::shared_ptr<const Module> helper_; // kHelperSource, loaded on first use
  std::map<std::string, std::unique_ptr<ConvPlan>> conv_plans_; // by shape; see conv_plan
  std::mutex timing_mutex_;
  CUevent events_[2] = {nullptr, nullptr}; // start and end of time()
};

Result<std::shared_ptr<Device>> open() {
  WEFT_ASSIGN_OR_RETURN(const DriverApi* api, driver_api());
  CUresult r = api->Init(0);
  if (r != kCudaSuccess)
    return Status::error(fmt::format("no CUDA device: {}", error_string(*api, r)));
  int count = 0;
  r = api->DeviceGetCount(&count);
  if (r != kCudaSuccess)
    return Status::error(fmt::format("no CUDA device: {}", error_string(*api, r)));
  if (count == 0) return Status::error("no CUDA device: the driver reports none");

  auto state = std::make_shared<DeviceState>();
  state->api = api;
  WEFT_RETURN_IF_ERROR(state->check(api->DeviceGet(&state->device, 0), "cuDeviceGet"));
  char name[256] = {};
  WEFT_RETURN_IF_ERROR(
      state->check(api->DeviceGetName(name, sizeof(name), state->device), "cuDeviceGetName"));
  state->name = name;
  int major = 0, minor = 0;
  for (auto [attribute, value] : {std::pair{kAttributeMultiprocessorCount, &state->sm_count},
                                  std::pair{kAttributeComputeCapabilityMajor, &major},
                                  std::pair{kAttributeComputeCapabilityMinor, &minor}}) {
    WEFT_RETURN_IF_ERROR(state->check(api->DeviceGetAttribute(value, attribute, state->device),
                                      "cuDeviceGetAttribute"));
  }
  state->arch = fmt::format("sm_{}{}", major, minor);
  // The primary context is the one the runtime API and other libraries share; it is retained
  // for the life of the process, as is the stream.
  WEFT_RETURN_IF_ERROR(state->check(api->DevicePrimaryCtxRetain(&state->context, state->device),
                                    "cuDevicePrimaryCtxRetain"));
  WEFT_RETURN_IF_ERROR(state->make_current());
  WEFT_RETURN_IF_ERROR(state->check(api->StreamCreate(&state->stream, 0), "cuStreamCreate"));
  return std::shared_ptr<Device>(std::make_shared<DriverDevice>(std::move(state)));
}

} // namespace

Result<std::shared_ptr<Device>> open_driver_device() {
  // One device per process: opening it again would retain the context and create a stream again.
  static const Result<std::shared_ptr<Device>> device = open();
  return device;
}

} // namespace weft::runtime::cuda
