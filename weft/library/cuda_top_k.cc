#include "weft/library/cuda_top_k.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "weft/graph/attrs.h"
#include "weft/library/shape_call.h"
#include "weft/library/top_k_call.h"

namespace weft::library {

namespace {

using runtime::cuda::Device;
using runtime::cuda::Module;

constexpr int64_t kThreads = 256;
static_assert(kCudaTopKMost == 2048, "WEFT_TOPK_MOST in kSource");

// One block per row of the input viewed as [A, N, B] (N the axis). Keys are the values' bits
// made to order as unsigned integers, NaN above every number (below, for the smallest
// first), -0 as +0; the K first keys are those above the K-th (found by four 8-bit radix
// passes: histograms of the candidates' next byte) and, of those equal to it, the lowest
// indices (a block-wide scan keeps index order). Those K are sorted (a bitonic sort in
// shared memory, ties by index) and their values read back from the input, so the bits are
// the input's.
constexpr std::string_view kSource = R"(#ifndef WEFT_CUDA_EMULATION
typedef long long int64_t;
typedef unsigned int uint32_t;
#endif
#define WEFT_TOPK_MOST 2048
__device__ __forceinline__ uint32_t weft_top_k_key(float v, int64_t largest) {
  uint32_t u = v == 0.0f ? 0u : __float_as_uint(v);
  uint32_t k = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  if (v != v) k = 0xffffffffu;
  return largest ? k : ~k;
}
extern "C" __global__ void __launch_bounds__(256) weft_top_k_f32(const float* x, float* values,
    int64_t* indices, int64_t n, int64_t b, int64_t k, int64_t largest) {
  __shared__ uint32_t hist[256];
  __shared__ uint32_t keys[WEFT_TOPK_MOST];
  __shared__ uint32_t where[WEFT_TOPK_MOST];
  __shared__ uint32_t scan[256];
  __shared__ uint32_t state[4];
  const int64_t row = blockIdx.x, i = row / b, j = row % b;
  const float* in = x + i * n * b + j;
  const uint32_t t = threadIdx.x, threads = blockDim.x;
  uint32_t prefix = 0, mask = 0, remaining = (uint32_t)k;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (uint32_t d = t; d < 256; d += threads) hist[d] = 0;
    __syncthreads();
    for (int64_t e = t; e < n; e += threads) {
      uint32_t key = weft_top_k_key(in[e * b], largest);
      if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (t == 0) {
      uint32_t above = 0;
      int d = 255;
      for (; d > 0 && above + hist[d] < remaining; --d) above += hist[d];
      state[0] = prefix | ((uint32_t)d << shift);
      state[1] = remaining - above;
    }
    __syncthreads();
    prefix = state[0];
    remaining = state[1];
    mask |= 255u << shift;
    __syncthreads();
  }
  const uint32_t greater = (uint32_t)k - remaining;
  if (t == 0) { state[2] = 0; state[3] = 0; }
  __syncthreads();
  for (int64_t base = 0; base < n; base += threads) {
    const int64_t e = base + t;
    const uint32_t key = e < n ? weft_top_k_key(in[e * b], largest) : 0u;
    const bool equal = e < n && key == prefix;
    if (e < n && key > prefix) {
      uint32_t at = atomicAdd(&state[2], 1u);
      keys[at] = key;
      where[at] = (uint32_t)e;
    }
    scan[t] = equal ? 1u : 0u;
    __syncthreads();
    for (uint32_t offset = 1; offset < threads; offset <<= 1) {
      uint32_t v = t >= offset ? scan[t - offset] : 0u;
      __syncthreads();
      scan[t] += v;
      __syncthreads();
    }
    const uint32_t taken = state[3], rank = taken + scan[t] - (equal ? 1u : 0u);
    if (equal && rank < remaining) {
      keys[greater + rank] = key;
      where[greater + rank] = (uint32_t)e;
    }
    __syncthreads();
    if (t == 0) state[3] = taken + scan[threads - 1];
    __syncthreads();
  }
  uint32_t p = 1;
  while (p < (uint32_t)k) p <<= 1;
  for (uint32_t e = (uint32_t)k + t; e < p; e += threads) { keys[e] = 0u; where[e] = 0xffffffffu; }
  __syncthreads();
  for (uint32_t size = 2; size <= p; size <<= 1) {
    for (uint32_t stride = size >> 1; stride > 0; stride >>= 1) {
      for (uint32_t e = t; e < p; e += threads) {
        const uint32_t o = e ^ stride;
        if (o <= e) continue;
        const bool ahead = keys[e] > keys[o] || (keys[e] == keys[o] && where[e] < where[o]);
        if (((e & size) == 0) != ahead) {
          uint32_t kk = keys[e]; keys[e] = keys[o]; keys[o] = kk;
          uint32_t ww = where[e]; where[e] = where[o]; where[o] = ww;
        }
      }
      __syncthreads();
    }
  }
  float* out = values + i * k * b + j;
  for (int64_t e = t; e < k; e += threads) {
    const int64_t w = (int64_t)where[e];
    out[e * b] = in[w * b];
    if (indices) indices[i * k * b + j + e * b] = w;
  }
}
)";

// The module, built once per device (NVRTC on a GPU, the host compiler on the emulator).
Result<std::shared_ptr<const Module>> module_on(const std::shared_ptr<Device>& device) {
  static std::mutex mutex;
  static std::map<const Device*, std::pair<std::weak_ptr<Device>, std::shared_ptr<const Module>>>
      built;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = built.find(device.get());
  if (it != built.end() && it->second.first.lock() == device) return it->second.second;
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const Module> module,
                        device->load(std::string(kSource), "the TopK selection"));
  built[device.get()] = {device, module};
  return module;
}

// Binds X, Values[, Indices] in that order.
class CudaTopKKernel final : public runtime::LibraryKernel {
public:
  CudaTopKKernel(std::shared_ptr<Device> device, CallExtent a, CallExtent n, CallExtent b,
                 CallExtent k, bool largest, bool indices)
      : device_(std::move(device)), a_(a), n_(n), b_(b), k_(k), largest_(largest),
        indices_(indices) {}

  Status run(void* const* buffers, const int64_t* extents) const override {
    if (!device_) return Status::error("built without a device (compile only)");
    int64_t a = a_.at(extents), n = n_.at(extents), b = b_.at(extents), k = k_.at(extents);
    if (k > n)
      return Status::error(
          fmt::format("TopK: K = {} is larger than the axis, of {} elements", k, n));
    if (k > kCudaTopKMost || n >= (int64_t{1} << 32))
      return Status::error(fmt::format("TopK on CUDA: K = {} of {} elements is above the "
                                       "selection's {} of fewer than 2^32",
                                       k, n, kCudaTopKMost));
    if (a * b == 0 || k == 0) return Status();
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const Module> module, module_on(device_));
    auto pointer = [&](int i) { return reinterpret_cast<uint64_t>(buffers[i]); };
    return module->launch("weft_top_k_f32", a * b, kThreads,
                          {pointer(0), pointer(1), indices_ ? pointer(2) : 0,
                           static_cast<uint64_t>(n), static_cast<uint64_t>(b),
                           static_cast<uint64_t>(k), largest_ ? 1u : 0u});
  }

  std::string describe() const override { return "radix selection and a bitonic sort per row"; }

private:
  std::shared_ptr<Device> device_;
  CallExtent a_, n_, b_, k_;
  bool largest_, indices_;
};

// The most that "d" can be: its value, or the constant of a minimum "min(C,X)" (dim_min's
// spelling; torchvision takes the top min(300, count) candidates); none when unbounded.
std::optional<int64_t> bound(const Dim& d) {
  if (d.is_static()) return d.value();
  const std::string& s = d.symbol_name();
  if (!s.starts_with("min(")) return std::nullopt;
  size_t comma = s.find(',');
  std::string first = s.substr(4, comma == std::string::npos ? 0 : comma - 4);
  if (first.empty() || !std::all_of(first.begin(), first.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      }))
    return std::nullopt;
  return std::stoll(first);
}

} // namespace

std::optional<LibraryCall> cuda_top_k_call(const Node& node, std::shared_ptr<Device> device) {
  if (node.op_type != Op::kTopK) return std::nullopt;
  const Value* x = node.inputs[0];
  const Value* values = node.outputs.empty() ? nullptr : node.outputs[0];
  const Value* indices = node.outputs.size() > 1 ? node.outputs[1] : nullptr;
  if (!values || !x->type.shape || !values->type.shape || x->type.dtype != DType::kF32)
    return std::nullopt;
  const Shape& xs = *x->type.shape;
  auto rank = static_cast<int64_t>(xs.size());
  int64_t axis = node.attrs_as<TopKAttrs>().axis;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::nullopt;
  const Dim& len = xs[static_cast<size_t>(axis)];
  const Dim& k = (*values->type.shape)[static_cast<size_t>(axis)];
  // Short static axes stay generated code (every pair compared; one kernel with its
  // neighbours); so do selections larger than shared memory holds.
  std::optional<int64_t> most = bound(k);
  if (k.is_unknown() || !most || *most > kCudaTopKMost ||
      (len.is_static() && len.value() <= kGeneratedTopKMaxAxis && shape_is_static(xs) &&
       shape_is_static(*values->type.shape)))
    return std::nullopt;
  for (const Dim& d : xs)
    if (d.is_unknown()) return std::nullopt;
  Dim a = 1, b = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) a = dim_mul(a, xs[static_cast<size_t>(d)]);
    if (d > axis) b = dim_mul(b, xs[static_cast<size_t>(d)]);
  }
  LibraryCall call;
  CallExtent ea = call_extent(a, call.symbols), en = call_extent(len, call.symbols),
             eb = call_extent(b, call.symbols), ek = call_extent(k, call.symbols);
  call.kernel = std::make_shared<CudaTopKKernel>(
      std::move(device), ea, en, eb, ek, node.attrs_as<TopKAttrs>().largest, indices != nullptr);
  call.values = {x, values};
  if (indices) call.values.push_back(indices);
  call.nodes = {&node};
  return call;
}

} // namespace weft::library
