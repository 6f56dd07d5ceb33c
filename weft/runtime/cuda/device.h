// A CUDA device as an executable uses it: memory, copies and launches, in order, on one
// stream. Two implementations:
// - the driver API (driver.cc): libcuda.so.1, loaded with dlopen, with kernels built by NVRTC
//   for the device's architecture. Building Weft needs no CUDA, and Weft runs without it.
// - the emulator (emulator.cc), selected by WEFT_CUDA_EMULATOR=1: the same CUDA C++ built by
//   the system compiler against a header that provides CUDA's built-ins, each block's threads
//   run as fibers on the host. It checks the generated kernels' logic without a GPU (barriers
//   that not every thread reaches are reported as a deadlock), not their speed.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "weft/runtime/cuda/launch.h"
#include "weft/runtime/executable.h"
#include "weft/support/status.h"

namespace weft::runtime::cuda {

// A loaded translation unit.
class Module {
public:
  virtual ~Module() = default;
  // Launches "function" on the device's stream with "grid" x "block" threads; "args" are the
  // function's parameters (device pointers and 64-bit integers), in order.
  virtual Status launch(const std::string& function, int64_t grid, int64_t block,
                        const std::vector<uint64_t>& args) const = 0;
  // Blocks of "function" at "block" threads that one SM holds at once, its registers and
  // shared memory counted (the driver's occupancy calculator); 0 where that is unknown.
  virtual int64_t resident_blocks(const std::string& function, int64_t block) const {
    (void)function;
    (void)block;
    return 0;
  }
};

// C = alpha * op(A) op(B) + beta * C0 for "batch" row-major f32 matrices: C is m x n, A is
// m x k (k x m when trans_a), B is k x n (n x k when trans_b). C0, when given, broadcasts to
// C: c_rows is 1 or m, c_cols 1 or n.
struct GemmShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t stride_a = 0, stride_b = 0; // elements between batch entries; 0: one matrix for all
  float alpha = 1, beta = 0;
  int64_t c_rows = 0, c_cols = 0; // C0's dims; 0: no C0 (beta does not apply)
  bool tf32 = false; // TF32 tensor cores allowed (CompileSettings::allow_tf32); else fp32 FMA
};

// Y = conv(X, W) (+ bias per output channel) for NCHW f32 in 2 spatial dims (1-D convs have
// h = kh = out_h = 1): X is n x c x h x w, W is k x (c / groups) x kh x kw, Y is
// n x k x out_h x out_w. Pads are symmetric (pad_h on top and bottom).
struct ConvShape {
  int64_t n = 1, c = 0, h = 1, w = 0;
  int64_t k = 0, kh = 1, kw = 1, groups = 1;
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t out_h = 1, out_w = 0;
  bool tf32 = false; // as GemmShape's
};

// TopK of f32 values over the input viewed as [rows, n, inner] (n the axis): the K first of
// each row, sorted, equal values in index order, NaN above every number (below for the
// smallest first), -0 equal to +0; outputs [rows, k, inner]. K at most kTopKMost.
struct TopKShape {
  int64_t rows = 1, n = 0, inner = 1, k = 0;
  bool largest = true;
};
inline constexpr int64_t kTopKMost = 2048; // the selection is held in shared memory

// Memory, copies (asynchronous, on the device's one stream) and synchronize() are those of
// DeviceMemory, which executables use.
class Device : public DeviceMemory {
public:
  virtual std::string describe() const = 0; // e.g. "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)"
  virtual int sm_count() const = 0;
  // GEMM on the stream (cuBLAS on a GPU): "c0" may be null when the shape has none.
  virtual Status gemm(const GemmShape& shape, const float* a, const float* b, const float* c0,
                      float* c) = 0;
  // Convolution on the stream (cuDNN on a GPU); "bias" may be null.
  virtual Status conv(const ConvShape& shape, const float* x, const float* w, const float* bias,
                      float* y) = 0;
  // TopK on the stream, Weft's own kernel (top_k.cc: per row, a radix selection of the K
  // first, then a bitonic sort of those in shared memory); "indices" may be null.
  Status top_k(const TopKShape& shape, const float* x, float* values, int64_t* indices);
  // Builds and loads a translation unit of the CUDA dialect; "name" is for messages.
  virtual Result<std::shared_ptr<const Module>> load(const std::string& source,
                                                     const std::string& name) = 0;

  // Blocks of a persistent grid of "block"-thread blocks: enough to fill every SM, with
  // "per_sm" blocks each (Module::resident_blocks; when 0, as many as 2048 threads make), at
  // most kMaxPersistentGrid. More would wait for a second wave and, striding over the work
  // from their first point, finish last.
  int64_t persistent_grid(int64_t block, int64_t per_sm = 0) const;

private:
  std::mutex top_k_mutex_;
  std::shared_ptr<const Module> top_k_module_; // built at the first top_k()
};

// The process's device 0: the emulator when $WEFT_CUDA_EMULATOR is 1, else the driver API.
// The error says why there is none ("no CUDA driver: libcuda.so.1 was not found ...").
Result<std::shared_ptr<Device>> open_device();

// The driver API's device 0 (driver.cc).
Result<std::shared_ptr<Device>> open_driver_device();
// The emulator (emulator.cc); "sm_count" sets the size of persistent grids.
Result<std::shared_ptr<Device>> open_emulator_device(int sm_count = 2);

} // namespace weft::runtime::cuda
