// Device::top_k (device.h): Weft's own CUDA code for TopK, in the CUDA dialect, built once per
// device (NVRTC on a GPU, the host compiler on the emulator).
#include <fmt/format.h>

#include "weft/runtime/cuda/device.h"

namespace weft::runtime::cuda {

namespace {

constexpr int64_t kThreads = 256;
static_assert(kTopKMost == 2048, "WEFT_TOPK_MOST in kSource");

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

} // namespace

Status Device::top_k(const TopKShape& s, const float* x, float* values, int64_t* indices) {
  if (s.k > s.n)
    return Status::error(
        fmt::format("TopK: K = {} is larger than the axis, of {} elements", s.k, s.n));
  if (s.k > kTopKMost || s.n >= (int64_t{1} << 32))
    return Status::error(fmt::format("TopK on CUDA: K = {} of {} elements is above the "
                                     "selection's {} of fewer than 2^32",
                                     s.k, s.n, kTopKMost));
  if (s.rows * s.inner == 0 || s.k == 0) return Status();
  std::shared_ptr<const Module> module;
  {
    std::lock_guard<std::mutex> lock(top_k_mutex_);
    if (!top_k_module_) {
      WEFT_ASSIGN_OR_RETURN(top_k_module_, load(std::string(kSource), "the TopK selection"));
    }
    module = top_k_module_;
  }
  auto address = [](const void* p) { return reinterpret_cast<uint64_t>(p); };
  return module->launch("weft_top_k_f32", s.rows * s.inner, kThreads,
                        {address(x), address(values), address(indices), static_cast<uint64_t>(s.n),
                         static_cast<uint64_t>(s.inner), static_cast<uint64_t>(s.k),
                         s.largest ? 1u : 0u});
}

} // namespace weft::runtime::cuda
