// TopK on a CUDA device over a long or symbolic axis, as a call of Device::top_k (Weft's own
// CUDA code, runtime/cuda/top_k.cc: per row, a radix selection of the K first elements in
// four passes over the row, then a bitonic sort of those K in shared memory). The generated
// kernel (kernel/lower_positional.cc) compares every element
// with every other, N^2 per row: SSDLite's 90 TopKs of ~3,000 candidates took minutes on the
// emulator, and RetinaNet's over tens of thousands of anchors would take seconds on a GPU.
#pragma once

#include <memory>
#include <optional>

#include "weft/library/dnnl.h"
#include "weft/runtime/cuda/device.h"

namespace weft::library {

// The call for a TopK of f32 values whose axis is symbolic or longer than
// kGeneratedTopKMaxAxis, and whose K is at most runtime::cuda::kTopKMost (static, or a symbolic
// "min(C, X)" with C that small: torchvision's min(300, count)); none otherwise. Results are
// sorted, equal elements in index order, NaN above every number, as the CPU's call.
std::optional<LibraryCall> cuda_top_k_call(const Node& node,
                                           std::shared_ptr<runtime::cuda::Device> device);

} // namespace weft::library
