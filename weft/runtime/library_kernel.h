// A launch that a vendor library runs instead of generated code (oneDNN's matmul and
// convolution, weft/library). It is built once per compiled model, for static shapes or
// (oneDNN) once per set of extents of its symbols, and may run on several threads at once.
#pragma once

#include <cstdint>
#include <string>

#include "weft/support/status.h"

namespace weft::runtime {

class LibraryKernel {
public:
  virtual ~LibraryKernel() = default;
  // "buffers": the addresses of the values the launch binds, in the order its builder
  // documents (the node's inputs, then its outputs). "extents": those of the launch's
  // symbols (Launch::symbols), in order; unread by a kernel built for static shapes.
  virtual Status run(void* const* buffers, const int64_t* extents) const = 0;
  // What runs, for profiles: e.g. "oneDNN convolution (jit:avx2)".
  virtual std::string describe() const = 0;
};

} // namespace weft::runtime
