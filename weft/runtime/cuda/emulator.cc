// The CUDA emulator (device.h): generated CUDA C++ built by the system compiler against a
// header that provides CUDA's built-ins, with each block's threads run as fibers.
//
// Blocks run one after another; within a block, each thread runs until it reaches a barrier
// (__syncthreads, __syncwarp, a shuffle), and a barrier opens when every thread it names has
// reached it. Shared memory is a static variable (one block runs at a time), and atomics are
// plain read-modify-writes (one fiber runs at a time). When no thread can run and no barrier
// can open, the launch fails: a barrier that some thread never reaches.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <vector>

#include <dlfcn.h>
#include <fmt/format.h>

#include "weft/runtime/cuda/device.h"
#include "weft/runtime/cuda/restrict_check.h"
#include "weft/toolchain/compile_cpu.h"

namespace weft::runtime::cuda {

namespace {

// Compiled ahead of each emulated translation unit (the CUDA prelude then skips its own
// typedefs and constants).
constexpr std::string_view kEmulationHeader = R"(#define WEFT_CUDA_EMULATION 1
#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

using std::abs; using std::acos; using std::acosh; using std::asin; using std::asinh;
using std::atan; using std::atanh; using std::ceil; using std::cos; using std::cosh;
using std::erf; using std::exp; using std::floor; using std::fmod; using std::isinf;
using std::isnan; using std::log; using std::nearbyint; using std::pow; using std::sin;
using std::sinh; using std::sqrt; using std::tan; using std::tanh;

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

struct weft_dim3 { unsigned int x = 0, y = 1, z = 1; };
struct float4 { float x, y, z, w; };

namespace weft_emu {
namespace {  // each library has its own state
enum State { kReady, kBlockBarrier, kWarpBarrier, kDone };
struct Fiber {
  ucontext_t context;
  State state = kReady;
  unsigned int mask = 0;
};
constexpr size_t kStack = 64 * 1024;
weft_dim3 thread_idx, block_idx, block_dim, grid_dim;
std::vector<Fiber> fibers;
std::vector<char> stacks;
ucontext_t scheduler;
unsigned int current = 0;
uint64_t exchange[1024];
std::function<void()> body;

inline void wait(State s, unsigned int mask) {
  unsigned int me = current;
  fibers[me].state = s;
  fibers[me].mask = mask;
  swapcontext(&fibers[me].context, &scheduler);
  thread_idx.x = me;
}
inline void entry() {
  body();
  fibers[current].state = kDone;
}

// Opens the barriers every named thread has reached; false when none opens.
inline bool open_barriers() {
  size_t n = fibers.size();
  bool all_at_block = true, any_at_block = false;
  for (const Fiber& f : fibers) {
    if (f.state == kDone) continue;
    any_at_block |= f.state == kBlockBarrier;
    all_at_block &= f.state == kBlockBarrier;
  }
  if (any_at_block && all_at_block) {
    for (Fiber& f : fibers)
      if (f.state == kBlockBarrier) f.state = kReady;
    return true;
  }
  bool opened = false;
  for (size_t i = 0; i < n; ++i) {
    if (fibers[i].state != kWarpBarrier) continue;
    size_t base = i / 32 * 32;
    unsigned int mask = fibers[i].mask;
    bool all = true;
    for (size_t lane = 0; lane < 32; ++lane) {
      if (!(mask >> lane & 1u) || base + lane >= n) continue;
      const Fiber& f = fibers[base + lane];
      all &= f.state == kWarpBarrier && f.mask == mask;
    }
    if (!all) continue;
    for (size_t lane = 0; lane < 32; ++lane)
      if ((mask >> lane & 1u) && base + lane < n) fibers[base + lane].state = kReady;
    opened = true;
  }
  return opened;
}

// Runs one block; false on a deadlock.
inline bool run_block(unsigned int threads) {
  fibers.assign(threads, Fiber{});
  if (stacks.size() < threads * kStack) stacks.resize(threads * kStack);
  for (unsigned int i = 0; i < threads; ++i) {
    Fiber& f = fibers[i];
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = stacks.data() + i * kStack;
    f.context.uc_stack.ss_size = kStack;
    f.context.uc_link = &scheduler;
    makecontext(&f.context, entry, 0);
  }
  for (;;) {
    bool ran = false, done = true;
    for (unsigned int i = 0; i < threads; ++i) {
      if (fibers[i].state != kReady) continue;
      current = i;
      thread_idx.x = i;
      swapcontext(&scheduler, &fibers[i].context);
      ran = true;
    }
    for (const Fiber& f : fibers)
      done &= f.state == kDone;
    if (done) return true;
    if (!open_barriers() && !ran) return false;
  }
}
} // namespace
} // namespace weft_emu

#define threadIdx weft_emu::thread_idx
#define blockIdx weft_emu::block_idx
#define blockDim weft_emu::block_dim
#define gridDim weft_emu::grid_dim

inline void __syncthreads() { weft_emu::wait(weft_emu::kBlockBarrier, 0); }
inline void __syncwarp(unsigned int mask = 0xffffffffu) { weft_emu::wait(weft_emu::kWarpBarrier, mask); }
inline void __threadfence() {}
template <typename T> T __shfl_xor_sync(unsigned int mask, T v, int lanes, int width = 32) {
  unsigned int me = threadIdx.x, lane = me % 32;
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  weft_emu::exchange[me] = bits;
  weft_emu::wait(weft_emu::kWarpBarrier, mask);
  unsigned int source = lane ^ static_cast<unsigned int>(lanes);
  if (source / width != lane / width) source = lane;
  bits = weft_emu::exchange[me - lane + source];
  weft_emu::wait(weft_emu::kWarpBarrier, mask);
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}
template <typename T> T weft_emu_add(T* p, T v) { T old = *p; *p = old + v; return old; }
template <typename T> T weft_emu_max(T* p, T v) { T old = *p; *p = old < v ? v : old; return old; }
template <typename T> T weft_emu_min(T* p, T v) { T old = *p; *p = v < old ? v : old; return old; }
inline float atomicAdd(float* p, float v) { return weft_emu_add(p, v); }
inline double atomicAdd(double* p, double v) { return weft_emu_add(p, v); }
inline int atomicAdd(int* p, int v) { return static_cast<int>(weft_emu_add(reinterpret_cast<unsigned int*>(p), static_cast<unsigned int>(v))); }
inline unsigned int atomicAdd(unsigned int* p, unsigned int v) { return weft_emu_add(p, v); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { return weft_emu_add(p, v); }
inline int atomicMax(int* p, int v) { return weft_emu_max(p, v); }
inline unsigned int atomicMax(unsigned int* p, unsigned int v) { return weft_emu_max(p, v); }
inline long long atomicMax(long long* p, long long v) { return weft_emu_max(p, v); }
inline unsigned long long atomicMax(unsigned long long* p, unsigned long long v) { return weft_emu_max(p, v); }
inline int atomicMin(int* p, int v) { return weft_emu_min(p, v); }
inline unsigned int atomicMin(unsigned int* p, unsigned int v) { return weft_emu_min(p, v); }
inline long long atomicMin(long long* p, long long v) { return weft_emu_min(p, v); }
inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) { return weft_emu_min(p, v); }
template <typename To, typename From> To weft_emu_cast(From f) { To t; std::memcpy(&t, &f, sizeof(t)); return t; }
inline float __uint_as_float(unsigned int u) { return weft_emu_cast<float>(u); }
inline float __int_as_float(int i) { return weft_emu_cast<float>(i); }
inline unsigned int __float_as_uint(float f) { return weft_emu_cast<unsigned int>(f); }
inline int __float_as_int(float f) { return weft_emu_cast<int>(f); }
inline long long __double_as_longlong(double d) { return weft_emu_cast<long long>(d); }
inline double __longlong_as_double(long long l) { return weft_emu_cast<double>(l); }
)";

// Exported by every emulated translation unit: runs "fn" with "args" on a grid. The
// parameters are all 8 bytes (device pointers, int64_t), passed as such; WEFT_EMU_CALLS is
// one more than the most that a function of the unit takes (most_parameters).
constexpr std::string_view kEmulationLaunch = R"(
namespace weft_emu {
using Arg = uint64_t;
template <size_t> using ArgOf = Arg;
template <size_t... I> void call(void* fn, const Arg* a, std::index_sequence<I...>) {
  reinterpret_cast<void (*)(ArgOf<I>...)>(fn)(a[I]...);
}
template <size_t N> void call_n(void* fn, const Arg* a) { call(fn, a, std::make_index_sequence<N>{}); }
template <size_t... N> constexpr auto table(std::index_sequence<N...>) {
  return std::array<void (*)(void*, const Arg*), sizeof...(N)>{call_n<N>...};
}
} // namespace weft_emu
extern "C" int weft_emu_launch(void* fn, int nargs, const uint64_t* args, unsigned int grid,
                               unsigned int block) {
  static const auto calls = weft_emu::table(std::make_index_sequence<WEFT_EMU_CALLS>{});
  if (nargs < 0 || nargs >= WEFT_EMU_CALLS) return 2;
  weft_emu::grid_dim.x = grid;
  weft_emu::block_dim.x = block;
  weft_emu::body = [&] { calls[static_cast<size_t>(nargs)](fn, args); };
  for (unsigned int b = 0; b < grid; ++b) {
    weft_emu::block_idx.x = b;
    if (!weft_emu::run_block(block)) return 1;
  }
  return 0;
}
)";

using LaunchFn = int (*)(void*, int, const uint64_t*, unsigned int, unsigned int);

// The most parameters of a __global__ function in "source", and at least 64: the launcher
// instantiates a call for each count up to it. (A Concat of 90 Gathers, SSDLite's
// postprocessing, takes more than 180; a GPU's launch takes 4 KB of them, 512 pointers.)
size_t most_parameters(const std::string& source) {
  size_t most = 64;
  for (size_t at = source.find("__global__"); at != std::string::npos;
       at = source.find("__global__", at + 1)) {
    // The signature, on its line: "extern "C" __global__ void ... weft_k0_X(T* b0, ...) {".
    size_t end = std::min(source.find('\n', at), source.size());
    size_t name = source.find("weft_", at);
    if (name >= end) continue;
    size_t open = source.find('(', name), close = source.find(')', open);
    if (open >= end || close >= end) continue;
    size_t commas =
        static_cast<size_t>(std::count(source.begin() + static_cast<std::ptrdiff_t>(open),
                                       source.begin() + static_cast<std::ptrdiff_t>(close), ','));
    most = std::max(most, commas + 1);
  }
  return most;
}

// "v" as a tensor core reads it in TF32: 10 mantissa bits, rounded to nearest (ties away).
float to_tf32(float v) {
  uint32_t u = 0;
  std::memcpy(&u, &v, sizeof(u));
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
  std::memcpy(&v, &u, sizeof(v));
  return v;
}

// The work that a capture on this thread records instead of running (EmulatedDevice::capture),
// as stream capture does on a GPU; null when none is in progress.
thread_local std::vector<std::function<Status()>>* t_recording = nullptr;

// Runs "work" now, or records it into the capture in progress.
Status run_or_record(std::function<Status()> work) {
  if (!t_recording) return work();
  t_recording->push_back(std::move(work));
  return Status();
}

class EmulatedGraph : public DeviceMemory::Graph {
public:
  std::vector<std::function<Status()>> work;
};

class EmulatedModule : public Module {
public:
  EmulatedModule(void* handle, LaunchFn launcher, std::string name)
      : handle_(handle), launch_(launcher), name_(std::move(name)) {}
  ~EmulatedModule() override { dlclose(handle_); }

  Status launch(const std::string& function, int64_t grid, int64_t block,
                const std::vector<uint64_t>& args) const override {
    void* fn = dlsym(handle_, function.c_str());
    if (!fn) return Status::error(fmt::format("{}: no function {}", name_, function));
    if (grid < 1 || block < 1 || block > 1024)
      return Status::error(
          fmt::format("{}: bad launch of {}: grid {}, block {}", name_, function, grid, block));
    return run_or_record(
        [this, function, fn, grid, block, args] { return run(function, fn, grid, block, args); });
  }

private:
  Status run(const std::string& function, void* fn, int64_t grid, int64_t block,
             const std::vector<uint64_t>& args) const {
    // One launch at a time in the process (the emulator runs on the calling thread).
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    int r = launch_(fn, static_cast<int>(args.size()), args.data(), static_cast<unsigned>(grid),
                    static_cast<unsigned>(block));
    if (r == 1) {
      return Status::error(fmt::format("{}: {} deadlocked in the CUDA emulator: a barrier or "
                                       "shuffle that not every thread it names reaches",
                                       name_, function));
    }
    if (r != 0)
      return Status::error(fmt::format("{}: {} has too many parameters", name_, function));
    return Status();
  }

  void* handle_;
  LaunchFn launch_;
  std::string name_;
};

class EmulatedDevice : public Device {
public:
  explicit EmulatedDevice(int sm_count) : sm_count_(sm_count) {}
  std::string describe() const override {
    return fmt::format("CUDA emulator on the host ({} SMs)", sm_count_);
  }
  int sm_count() const override { return sm_count_; }
  Result<void*> allocate(size_t bytes) override {
    void* p = std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256);
    if (!p) return Status::error(fmt::format("cannot allocate {} bytes", bytes));
    return p;
  }
  void release(void* pointer) override { std::free(pointer); }
  Status to_device(void* dst, const void* src, size_t bytes) override {
    return copy(dst, src, bytes);
  }
  Status to_host(void* dst, const void* src, size_t bytes) override {
    return copy(dst, src, bytes);
  }
  Status on_device(void* dst, const void* src, size_t bytes) override {
    return copy(dst, src, bytes);
  }
  Status synchronize() override { return Status(); }
  Status gemm(const GemmShape& g, const float* a, const float* b, const float* c0,
              float* c) override {
    return run_or_record([=, this] { return gemm_now(g, a, b, c0, c); });
  }
  Status conv(const ConvShape& s, const float* x, const float* w, const float* bias,
              float* y) override {
    return run_or_record([=, this] { return conv_now(s, x, w, bias, y); });
  }

  // A graph is the list of what the capture queued, run in order by replay().
  Result<std::unique_ptr<Graph>> capture(const std::function<Status()>& record) override {
    auto graph = std::make_unique<EmulatedGraph>();
    t_recording = &graph->work;
    Status recorded = record();
    t_recording = nullptr;
    WEFT_RETURN_IF_ERROR(recorded);
    return std::unique_ptr<Graph>(std::move(graph));
  }
  Status replay(const Graph& graph) override {
    for (const std::function<Status()>& work : static_cast<const EmulatedGraph&>(graph).work)
      WEFT_RETURN_IF_ERROR(work());
    return Status();
  }

private:
  static Status copy(void* dst, const void* src, size_t bytes) {
    return run_or_record([=] {
      if (bytes) std::memmove(dst, src, bytes);
      return Status();
    });
  }
  // The reference loop, accumulating in double: the emulator checks what the library call
  // binds (operands, transposes, strides, C0, TF32 when allowed), not cuBLAS.
  static Status gemm_now(const GemmShape& g, const float* a, const float* b, const float* c0,
                         float* c) {
    for (int64_t p = 0; p < g.batch; ++p) {
      const float* ap = a + p * g.stride_a;
      const float* bp = b + p * g.stride_b;
      float* cp = c + p * g.m * g.n;
      for (int64_t i = 0; i < g.m; ++i) {
        for (int64_t j = 0; j < g.n; ++j) {
          double sum = 0;
          for (int64_t q = 0; q < g.k; ++q) {
            float x = g.trans_a ? ap[q * g.m + i] : ap[i * g.k + q];
            float y = g.trans_b ? bp[j * g.k + q] : bp[q * g.n + j];
            if (g.tf32) {
              x = to_tf32(x);
              y = to_tf32(y);
            }
            sum += static_cast<double>(x) * y;
          }
          double base = 0;
          if (c0 && g.c_rows > 0)
            base = g.beta * c0[(g.c_rows == 1 ? 0 : i) * g.c_cols + (g.c_cols == 1 ? 0 : j)];
          cp[i * g.n + j] = static_cast<float>(g.alpha * sum + base);
        }
      }
    }
    return Status();
  }
  static Status conv_now(const ConvShape& s, const float* x, const float* w, const float* bias,
                         float* y) {
    int64_t cg = s.c / s.groups, kg = s.k / s.groups;
    for (int64_t b = 0; b < s.n; ++b) {
      for (int64_t o = 0; o < s.k; ++o) {
        int64_t g = o / kg;
        for (int64_t i = 0; i < s.out_h; ++i) {
          for (int64_t j = 0; j < s.out_w; ++j) {
            double sum = bias ? bias[o] : 0.0;
            for (int64_t q = 0; q < cg; ++q) {
              for (int64_t u = 0; u < s.kh; ++u) {
                int64_t yi = i * s.stride_h + u * s.dilation_h - s.pad_h;
                if (yi < 0 || yi >= s.h) continue;
                for (int64_t v = 0; v < s.kw; ++v) {
                  int64_t xj = j * s.stride_w + v * s.dilation_w - s.pad_w;
                  if (xj < 0 || xj >= s.w) continue;
                  float a = x[((b * s.c + g * cg + q) * s.h + yi) * s.w + xj];
                  float f = w[((o * cg + q) * s.kh + u) * s.kw + v];
                  sum += s.tf32 ? static_cast<double>(to_tf32(a)) * to_tf32(f)
                                : static_cast<double>(a) * f;
                }
              }
            }
            y[((b * s.k + o) * s.out_h + i) * s.out_w + j] = static_cast<float>(sum);
          }
        }
      }
    }
    return Status();
  }
  Result<std::shared_ptr<const Module>> load(const std::string& source,
                                             const std::string& name) override {
    // NVCC's freedom with __restrict__, which the host compiler does not take.
    WEFT_RETURN_IF_ERROR(check_restrict(source));
    std::string unit = fmt::format("{}\n{}\n#define WEFT_EMU_CALLS {}\n{}", kEmulationHeader,
                                   source, most_parameters(source) + 1, kEmulationLaunch);
    unit.insert(0, "#include <array>\n");
    WEFT_ASSIGN_OR_RETURN(toolchain::CompiledLibrary built,
                          toolchain::compile_cpu(unit, toolchain::CpuCompiler::from_environment()));
    void* handle = dlopen(built.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      return Status::error(fmt::format("{}: cannot load {}: {}", name, built.path, dlerror()));
    auto launch = reinterpret_cast<LaunchFn>(dlsym(handle, "weft_emu_launch"));
    if (!launch) {
      dlclose(handle);
      return Status::error(fmt::format("{}: {} has no weft_emu_launch", name, built.path));
    }
    return std::shared_ptr<const Module>(std::make_shared<EmulatedModule>(handle, launch, name));
  }

  int sm_count_;
};

} // namespace

Result<std::shared_ptr<Device>> open_emulator_device(int sm_count) {
  return std::shared_ptr<Device>(std::make_shared<EmulatedDevice>(sm_count));
}

} // namespace weft::runtime::cuda
