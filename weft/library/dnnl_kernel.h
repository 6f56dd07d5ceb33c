// The runtime half of the oneDNN calls (dnnl.h): the engine, and DnnlKernel, which runs one
// primitive on a launch's buffers. Internal to library/.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "weft/library/permute_copy.h"
#include "weft/runtime/library_kernel.h"

namespace weft::library {

using dnnl::memory;
using Dims = memory::dims;

// oneDNN's CPU engine, created once, with oneDNN's primitive cache bounded (dnnl_kernel.cc).
const dnnl::engine& engine();
// Row-major strides of "dims"; the row-major descriptor over them, and the plain (row-major
// f32) one.
Dims row_major_strides(const Dims& dims);
memory::desc row_major(const Dims& dims, memory::data_type type);
memory::desc plain(const Dims& dims);
// The strides of a memory descriptor built from dims and strides.
Dims strides_of(const memory::desc& md);

// One primitive and the memories it executes on: each argument is a buffer of the launch
// or memory the kernel owns (weights reordered at compile time). An argument the primitive
// wants in another layout ("internal": channels-last, say) is reordered through per-thread
// scratch memory on each run: in before, out after. The memory objects over the buffers are
// kept from run to run (Bound) and pointed at each run's buffers: made afresh, with the
// stream and the argument map, they were about 20 allocations a call, which took a third
// of the time of a chain of small matrix products.
class DnnlKernel final : public runtime::LibraryKernel {
public:
  struct Arg {
    int dnnl_arg;
    int buffer;      // index into the launch's buffers
    memory::desc md; // its layout there
    memory::desc internal = {};
  };

  // Memory the kernel holds by primitive argument: constants (packed weights, zero points).
  using Owned = std::unordered_map<int, std::shared_ptr<const memory>>;

  DnnlKernel(dnnl::primitive primitive, std::vector<Arg> args, Owned owned, std::string what);

  Status run(void* const* buffers, const int64_t* extents) const override;

  std::string describe() const override { return what_; }

  // Before each run, buffer "from", laid out as "from_md", is copied into the destination,
  // which the primitive's sum post-op then adds to (a residual): into the memory the
  // primitive writes (the destination's buffer, or its internal memory when it has an
  // internal layout), reordered where the layouts differ.
  void copy_into_dst(int from, const memory::desc& from_md);

  // The launch buffer bound to a primitive argument (DNNL_ARG_SRC, ...), or -1; the buffer
  // summed into the destination, or -1.
  int buffer_of(int dnnl_arg) const;
  int summed() const { return sum_from_; }

private:
  // The stream and memories of one run in flight, rebound to each run's buffers.
  struct Bound {
    dnnl::stream stream;
    std::vector<memory> user, internal; // per arg; internal empty where it has none
    std::vector<dnnl_exec_arg_t> args;  // the primitive's: owned_ and each arg's memory
    memory residual;                    // sum_md_ over buffer sum_from_, with sum_move_
    memory scratchpad;                  // its own, where the primitive takes one (user mode)
  };
  std::unique_ptr<Bound> bind(void* const* buffers, std::byte* scratch) const;

  // A move of f32 elements between two layouts: Weft's copy where both are plain strides
  // (channels-last and plain), which oneDNN's reorder made at 6-25 GB/s for many channels
  // over small planes (permute_copy.h); oneDNN's reorder for blocked layouts.
  struct Move {
    std::optional<PermuteCopy> copy;
    dnnl::reorder reorder;
    static Move between(const memory::desc& from, const memory::desc& to);
    explicit operator bool() const { return copy || reorder; }
    void run(dnnl::stream& stream, memory& from, memory& to) const;
  };

  dnnl::primitive primitive_;
  std::vector<Arg> args_;
  Owned owned_;
  std::string what_;
  std::vector<Move> moves_;     // per arg; empty where none is needed
  std::vector<size_t> offsets_; // of each reordered arg in the scratch memory
  size_t scratch_bytes_ = 0;
  int sum_from_ = -1;
  memory::desc sum_md_;
  Move sum_move_; // where the residual's layout is not the primitive's destination's
  mutable std::mutex idle_mutex_;
  mutable std::vector<std::unique_ptr<Bound>> idle_; // of finished runs, for the next ones
};

} // namespace weft::library
