// What NVRTC's machine code says of each function (a CUDA ELF object, Nvrtc::compile_to_cubin):
// registers, stack frame and static shared memory, and from them how many blocks an SM holds
// at once. `weft inspect --device cuda --registers ARCH` prints them, without a GPU.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "weft/support/status.h"

namespace weft::toolchain {

struct CubinFunction {
  int64_t registers = 0;    // a thread's
  int64_t frame_bytes = 0;  // a thread's stack frame in local memory: spills, or local arrays
  int64_t shared_bytes = 0; // a block's static shared memory (NVRTC's section: the 1 KiB the
                            // system reserves a block included; 0 without any)
};

// The functions of "elf" by name; an error when it is not a 64-bit CUDA ELF object.
Result<std::map<std::string, CubinFunction>> cubin_functions(std::string_view elf);

// Blocks of "block" threads of "f" that an SM of "arch" (sm_80, sm_86, sm_89 or sm_90) holds at
// once: the least of its limits on threads, blocks, registers (64K, allocated per warp, 256 at
// a time) and shared memory (at least the 1 KiB reserved a block). An error for another arch.
Result<int64_t> resident_blocks(const CubinFunction& f, int64_t block, const std::string& arch);

} // namespace weft::toolchain
