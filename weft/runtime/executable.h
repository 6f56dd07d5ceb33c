// An executable model on the CPU: a buffer plan over one arena, and a launch list.
//
// Every graph value is a slot: a graph input (the caller's tensor), a constant (owned
// here), a graph output (allocated per run), an arena range (intermediates and kernel
// temporaries, placed by liveness so that ranges are reused), or an alias of another slot
// (Reshape and friends). Runs are independent: each takes an arena of its own, so one
// Executable may run on several threads at once. Arenas are kept for later runs (fresh
// memory would cost a page fault per 4 KiB on every run).
//
// Input dims may be symbols (docs/dynamic-shapes.md): each run binds them to the given
// extents, sizes and places the arena ranges for them, and passes each kernel its extents.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "weft/graph/tensor.h"
#include "weft/runtime/cpu/kernel_library.h"
#include "weft/runtime/library_kernel.h"
#include "weft/support/status.h"

namespace weft::runtime {

struct Slot {
  enum class Kind : uint8_t { kInput, kConstant, kOutput, kArena, kAlias };
  Kind kind = Kind::kArena;
  int index = 0;                          // kInput, kOutput: position; kAlias: the slot aliased
  size_t offset = 0;                      // kArena: byte offset, set by planning
  Dim bytes = 0;                          // kArena: size; a product of input symbols or static
  std::shared_ptr<const Tensor> constant; // kConstant
  int first = 0, last = 0;                // kArena: the launches it must live over

  static Slot input(int i) { return {Kind::kInput, i, 0, 0, nullptr}; }
  static Slot output(int i) { return {Kind::kOutput, i, 0, 0, nullptr}; }
  static Slot constant_of(std::shared_ptr<const Tensor> t) {
    return {Kind::kConstant, 0, 0, 0, std::move(t)};
  }
  static Slot arena(Dim bytes) { return {Kind::kArena, 0, 0, std::move(bytes), nullptr}; }
  static Slot alias_of(int slot) { return {Kind::kAlias, slot, 0, 0, nullptr}; }
};

// The extent each symbol of the inputs' dims stands for in one run.
using Bindings = std::map<std::string, int64_t>;

// What a launch does, for profiles and the per-kernel table.
struct LaunchInfo {
  std::string node;            // the graph node it came from
  std::string op_type;         // that node's op
  std::string strategy;        // e.g. "elementwise", "reduce ROW sum" (kernel::describe_strategy)
  std::string shapes;          // its buffers' types, e.g. "f32[64,128] -> f32[64]"
  std::vector<Dim> moved = {}; // bytes of each input and output, counted once
  Dim flops = 0;               // floating-point operations of a library call (2 per MAC); else 0

  // The bytes it moves when "bound" gives its symbols (a term it cannot evaluate counts 0).
  size_t bytes(const Bindings& bound = {}) const;
  // Its floating-point operations when "bound" gives its symbols (0 where unknown).
  double flop_count(const Bindings& bound = {}) const;
};

// A generated kernel ("fn"), or a library call ("library") when that is set.
struct Launch {
  std::string name; // the kernel
  KernelFn fn = nullptr;
  std::vector<int> slots; // one per kernel buffer, or per value the library call binds
  LaunchInfo info;
  std::shared_ptr<const LibraryKernel> library = nullptr;
  std::vector<Dim> symbols = {}; // the extents "fn" takes, in order (codegen::kernel_symbols)
};

// A tensor in memory that the caller owns: dense, row-major, "dims" static.
struct TensorView {
  DType dtype = DType::kF32;
  std::vector<int64_t> dims;
  void* data = nullptr;

  TensorType type() const { return {dtype, shape_from_dims(dims)}; }
  size_t num_bytes() const;
  static TensorView of(const Tensor& t) {
    return {t.dtype(), t.dims(), const_cast<std::byte*>(t.data())};
  }
};

// When one launch ran, in nanoseconds of the steady clock.
struct LaunchTiming {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

struct RunOptions {
  int threads = 0; // OpenMP threads for this run's kernels; 0 leaves the current setting
  std::vector<LaunchTiming>* timings = nullptr; // when set, one entry per launch
  // Called before each launch with its arguments (its buffers' addresses), for `weft tune`.
  std::function<void(size_t launch, void* const* args)> before_launch;
  // The inputs' and outputs' data are in the executable's device memory (place_on): nothing
  // is copied through the host. An error without a device, or for frozen inputs.
  bool io_on_device = false;
};

// Memory that is not the host's, where an executable's buffers live instead (a CUDA device,
// runtime/cuda/device.h). A run then copies its inputs in and its outputs out, and the
// constants go in once; the launches are library kernels that run there.
class DeviceMemory {
public:
  virtual ~DeviceMemory() = default;
  virtual Result<void*> allocate(size_t bytes) = 0;
  virtual void release(void* pointer) = 0;
  // Copies are asynchronous: the host side must stay alive until synchronize().
  virtual Status to_device(void* dst, const void* src, size_t bytes) = 0;
  virtual Status to_host(void* dst, const void* src, size_t bytes) = 0;
  virtual Status on_device(void* dst, const void* src, size_t bytes) = 0; // device to device
  virtual Status synchronize() = 0;
  // Runs "work", which queues device work, and waits for it: the milliseconds the device spent
  // on it. This default is the host's clock around work() and synchronize(), which includes
  // the launches' own latency; the CUDA driver times between events on its stream instead.
  virtual Result<double> time(const std::function<Status()>& work);

  // Work captured once and replayed as one launch (a CUDA graph).
  class Graph {
  public:
    virtual ~Graph() = default;
  };
  // Captures what "record" queues, without running it, as a graph for replay(); nullptr (not
  // an error) where the device cannot capture. An error of record() or of the capture ends it.
  virtual Result<std::unique_ptr<Graph>> capture(const std::function<Status()>& record);
  // Queues the graph's work, as record() queued it.
  virtual Status replay(const Graph& graph);
};

struct TensorInfo {
  std::string name;
  TensorType type; // static, or with symbols for the dims each run binds
  // An int64 input the model declares as strings (Graph::string_inputs): the strings its
  // values index. Set by model_inputs() only.
  std::vector<std::string> vocabulary;
};

class Executable {
public:
  Executable(std::vector<TensorInfo> inputs, std::vector<TensorInfo> outputs,
             std::vector<Slot> slots, std::vector<Launch> launches, std::vector<int> output_slots,
             size_t arena_bytes, std::vector<std::shared_ptr<KernelLibrary>> libraries);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  const std::vector<Launch>& launches() const { return launches_; }
  size_t arena_bytes() const { return arena_bytes_; }

  // Buffers live in "device" memory; every launch must be a library kernel that runs there.
  // WEFT_CUDA_GRAPHS=1, read here, turns graphs on for this executable (launch()).
  void place_on(std::shared_ptr<DeviceMemory> device);
  // That device; null on the CPU.
  const std::shared_ptr<DeviceMemory>& device() const { return device_; }

  // Input "i" was compiled for "value" (it determines shapes); runs must pass that value.
  void freeze_input(int i, Tensor value) { frozen_.emplace_back(i, std::move(value)); }
  bool has_frozen_inputs() const { return !frozen_.empty(); }
  // The compile took each limit's dim to be at most its "most": runs check it.
  void limit_dims(std::vector<DimLimit> limits) { dim_limits_ = std::move(limits); }

  // The symbols' extents for "inputs" (in the order of inputs()), if each input matches.
  Result<Bindings> bind(const std::vector<TensorView>& inputs) const;
  // The output shapes for "inputs".
  Result<std::vector<std::vector<int64_t>>>
  output_shapes(const std::vector<TensorView>& inputs) const;

  // Runs on "inputs" (in the order of inputs(), with those types), writing into "outputs" (in
  // the order of outputs(), with the shapes output_shapes() gives). Nothing is copied in.
  Status run(const std::vector<TensorView>& inputs, const std::vector<TensorView>& outputs,
             const RunOptions& options = {}) const;

  // The same, with outputs allocated here.
  Result<std::vector<Tensor>> run(const std::vector<Tensor>& inputs,
                                  const RunOptions& options = {}) const;

private:
  std::vector<TensorInfo> inputs_;
  std::vector<TensorInfo> outputs_;
  std::vector<Slot> slots_;
  std::vector<Launch> launches_;
  std::vector<int> output_slots_;
  size_t arena_bytes_;
  std::vector<std::shared_ptr<KernelLibrary>> libraries_;
  std::vector<std::pair<int, Tensor>> frozen_;
  std::vector<DimLimit> dim_limits_;
  std::shared_ptr<DeviceMemory> device_;
  struct Arena {
    void* data = nullptr;
    size_t bytes = 0;
  };
  // Arenas of finished runs, for the next ones. On a device, an arena also holds the run's
  // inputs and outputs, after the intermediates.
  mutable std::mutex arena_mutex_;
  mutable std::vector<Arena> idle_arenas_;
  mutable std::vector<void*> device_constants_; // per slot, uploaded by the first run
  bool symbolic_arena_ = false;                 // some arena slot's size is symbolic
  // What the input types of a run determine: the symbols' extents, the output dims, the
  // arena's layout and each launch's extents. The last one is kept, so that runs at the same
  // shapes (the common case) evaluate no dim.
  struct RunShape {
    std::vector<DType> dtypes;
    std::vector<std::vector<int64_t>> dims;
    Bindings bound;
    std::vector<std::vector<int64_t>> output_dims;
    std::vector<size_t> offsets;
    size_t intermediates = 0;
    std::vector<std::vector<int64_t>> extents; // per launch
  };
  mutable std::mutex shape_mutex_;
  mutable std::shared_ptr<const RunShape> last_shape_;
  // The distinct dims of the arena slots' sizes and the launches' extents, evaluated once per
  // new shape (a decoding step's 381 sizes and 429 extents are 26 dims; evaluating each of
  // them took 0.18 ms a step), and per slot (-1: not in the arena) and launch their indices.
  std::vector<Dim> shape_dims_;
  std::vector<int> arena_dims_;
  std::vector<std::vector<int>> extent_dims_;
  Result<std::shared_ptr<const RunShape>> run_shape(const std::vector<TensorView>& inputs) const;
  // Does "input" match input "i"'s type and, if frozen, its value? Symbols of the type are
  // bound in "bound", or must match what it holds.
  // Binds the symbols of input i's dims; "later" gets the (input, axis) of dims over other
  // inputs' symbols, to check once those are bound (without it they are checked now).
  Status check_input(size_t i, const TensorView& input, Bindings* bound,
                     std::vector<std::pair<size_t, size_t>>* later = nullptr) const;
  std::vector<int64_t> output_dims(size_t o, const Bindings& bound) const;
  size_t place_arena(const std::vector<int64_t>& values, std::vector<size_t>* offsets) const;
  size_t arena_size(size_t intermediates, const std::vector<TensorView>& inputs,
                    const std::vector<TensorView>& outputs) const;
  Arena take_arena(size_t bytes) const;
  void return_arena(Arena arena) const;
  void release(Arena arena) const;
  Status upload_constants() const;
  Status run_launches(const std::vector<void*>& address, const RunShape& shape,
                      const RunOptions& options) const;
  // run_launches, or on a device with WEFT_CUDA_GRAPHS=1, a graph of them: captured when a
  // run repeats the last run's shape and addresses (arena, inputs, outputs), and replayed
  // while runs keep them. Runs that move keep launching one by one; a capture that fails
  // turns graphs off for the executable.
  Status launch(const std::vector<void*>& address, const std::shared_ptr<const RunShape>& shape,
                const RunOptions& options) const;
  struct GraphState {
    std::mutex mutex;
    std::shared_ptr<const RunShape> seen_shape, shape; // of the last run; of the graph
    std::vector<void*> seen_address, address;
    std::unique_ptr<DeviceMemory::Graph> graph;
    bool enabled = false, failed = false;
  };
  mutable GraphState graphs_;
};

// The OpenMP threads of the calling thread's later parallel regions (the generated kernels, the
// library calls, and what a compile creates and measures): n > 0, else the process's default
// (set_default_host_threads, else cpu/host_threads.h's default_host_threads), so that one
// model's threads do not stay with the thread for the next. OMP_NUM_THREADS cannot do it from
// a running process: the OpenMP runtime reads it once, when it loads.
void set_host_threads(int n);
// The default of set_host_threads for the whole process, where n > 0 (the CLI's --threads);
// also sets the calling thread's.
void set_default_host_threads(int n);
// set_host_threads(n) for its lifetime, then the calling thread's count as it was: PyTorch's
// torch.set_num_threads sets the same count where both use GCC's libgomp, and a run or compile
// of Weft's should leave PyTorch's next operations theirs.
class ScopedHostThreads {
public:
  explicit ScopedHostThreads(int n);
  ~ScopedHostThreads();
  ScopedHostThreads(const ScopedHostThreads&) = delete;
  ScopedHostThreads& operator=(const ScopedHostThreads&) = delete;

private:
  int saved_;
};

// Byte offsets for buffers alive over [first, last] launch indices, reusing space between
// buffers whose lifetimes do not overlap; returns the arena size. Offsets are 64-byte aligned.
struct Lifetime {
  size_t bytes;
  int first;
  int last;
};
size_t plan_arena(const std::vector<Lifetime>& buffers, std::vector<size_t>* offsets);

} // namespace weft::runtime
