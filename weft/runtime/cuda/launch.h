// How the runtime launches a generated CUDA function: the contract between the CUDA emitter
// (codegen/emit_cuda.cc), which chooses each function's block and grid, and the device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft::runtime::cuda {

// Blocks of a persistent grid, at most (Device::persistent_grid sizes it to the device).
inline constexpr int64_t kMaxPersistentGrid = 8192;

// One function of a module: its name, threads per block, and whether it runs as one block
// or as a persistent grid. The emitter returns them with the source (codegen/emit_c.h), and
// the function cache keeps them beside it.
struct LaunchShape {
  std::string function;
  int64_t block = 1;
  bool one_block = false; // grid "1"; otherwise a persistent grid sized to the device
};

} // namespace weft::runtime::cuda
