// How the runtime launches a generated CUDA function: the contract between the CUDA emitter
// (codegen/emit_cuda.cc), which chooses each function's block and grid, and the device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft::runtime::cuda {

// Blocks of a persistent grid, at most (Device::persistent_grid sizes it to the device).
inline constexpr int64_t kMaxPersistentGrid = 1024;

// One function of a module, as emit_c.h's "// launch" line describes it.
struct LaunchShape {
  std::string function;
  int64_t block = 1;
  bool one_block = false; // grid "1"; otherwise a persistent grid sized to the device
};

// The launch lines of a CUDA translation unit, in order.
std::vector<LaunchShape> parse_launch_lines(const std::string& source);

} // namespace weft::runtime::cuda
