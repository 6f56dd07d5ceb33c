#include "weft/runtime/executable.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>

#include <fmt/format.h>
#include <omp.h>

#include "weft/runtime/cpu/host_threads.h"
#include "weft/support/host_memory.h"
#include "weft/support/log.h"

namespace weft::runtime {

namespace {

constexpr size_t kAlignment = 64;

size_t align_up(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Why a run's dims "dim" and "bound" break "limit"; empty where they keep it.
std::string broken_limit(const DimLimit& limit, int64_t dim, int64_t bound) {
  using Kind = DimLimit::Kind;
  std::string relation;
  if (limit.kind == Kind::kAtMost && dim > bound) {
    relation = fmt::format("{} <= {}", limit.dim.to_string(), limit.bound.to_string());
  } else if (limit.kind == Kind::kMultipleOf && (bound == 0 || dim % bound != 0)) {
    relation =
        fmt::format("{} to be a multiple of {}", limit.dim.to_string(), limit.bound.to_string());
  } else if (limit.kind == Kind::kEqual && dim != bound) {
    relation = fmt::format("{} = {}", limit.dim.to_string(), limit.bound.to_string());
  } else if (limit.kind == Kind::kOneOrEqual && dim != 1 && dim != bound) {
    relation = fmt::format("{} = 1 or {}", limit.dim.to_string(), limit.bound.to_string());
  } else if (limit.kind == Kind::kNotEmpty && dim > 0 && bound < 1) {
    relation = fmt::format("{} >= 1{}", limit.bound.to_string(),
                           limit.dim.is_static() ? "" : " where " + limit.dim.to_string() + " > 0");
  }
  if (relation.empty()) return "";
  std::string given;
  for (auto [d, value] : {std::pair{&limit.dim, dim}, std::pair{&limit.bound, bound}}) {
    if (d->is_static()) continue;
    given += fmt::format("{}{} = {}", given.empty() ? "" : ", ", d->to_string(), value);
  }
  return fmt::format("these inputs{} break what node '{}' needs: {} ({})",
                     given.empty() ? "" : " (" + given + ")", limit.node, relation, limit.need);
}

} // namespace

namespace {

// The process's default where one was set (the CLI's --threads).
std::atomic<int> default_threads{0};

} // namespace

void set_host_threads(int n) {
  // OMP_NUM_THREADS, else the CPUs, capped by a cgroup's CPU quota: read once.
  static const int loaded = default_host_threads();
  int fallback = default_threads.load();
  // At most OMP_THREAD_LIMIT: teams then have the threads that omp_get_max_threads() says,
  // which oneDNN's sgemm partitions its work by (under OMP_THREAD_LIMIT=1, 2 threads asked
  // for, it left half of a [144, 800] product unwritten).
  omp_set_num_threads(std::min(n > 0          ? n
                               : fallback > 0 ? fallback
                                              : loaded,
                               omp_get_thread_limit()));
}

void set_default_host_threads(int n) {
  if (n > 0) default_threads = n;
  set_host_threads(n);
}

ScopedHostThreads::ScopedHostThreads(int n) : saved_(omp_get_max_threads()) { set_host_threads(n); }

ScopedHostThreads::~ScopedHostThreads() { omp_set_num_threads(saved_); }

size_t plan_arena(const std::vector<Lifetime>& buffers, std::vector<size_t>* offsets) {
  size_t n = buffers.size();
  offsets->assign(n, 0);
  // Which buffers' lifetimes overlap, in one sweep by first launch: those that start within a
  // buffer's lifetime, after it. A dynamic-shape run plans at every new shape: for a decoding
  // step's 381 buffers, comparing every pair with a list per buffer took 0.19 ms, this 0.05.
  std::vector<size_t> by_first(n);
  std::iota(by_first.begin(), by_first.end(), 0);
  std::stable_sort(by_first.begin(), by_first.end(),
                   [&](size_t a, size_t b) { return buffers[a].first < buffers[b].first; });
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t a = 0; a < n; ++a) {
    size_t i = by_first[a];
    for (size_t b = a + 1; b < n && buffers[by_first[b]].first <= buffers[i].last; ++b)
      pairs.emplace_back(i, by_first[b]);
  }
  // Buffer i's: overlapping[start[i], start[i + 1]).
  std::vector<size_t> start(n + 1, 0), overlapping(2 * pairs.size());
  for (auto [i, k] : pairs)
    ++start[i + 1], ++start[k + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<size_t> filled(start.begin(), start.end() - 1);
  for (auto [i, k] : pairs)
    overlapping[filled[i]++] = k, overlapping[filled[k]++] = i;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  // Largest first, then first-fit against the placed buffers whose lifetimes overlap.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  std::vector<bool> placed(n, false);
  std::vector<std::pair<size_t, size_t>> busy; // [begin, end) of placed overlapping buffers
  size_t total = 0;
  for (size_t i : order) {
    busy.clear();
    for (size_t at = start[i]; at < start[i + 1]; ++at) {
      size_t j = overlapping[at];
      if (placed[j]) busy.emplace_back((*offsets)[j], (*offsets)[j] + align_up(buffers[j].bytes));
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + align_up(buffers[i].bytes) <= begin) break;
      offset = std::max(offset, end);
    }
    (*offsets)[i] = offset;
    total = std::max(total, offset + align_up(buffers[i].bytes));
    placed[i] = true;
  }
  return total;
}

Executable::Executable(std::vector<TensorInfo> inputs, std::vector<TensorInfo> outputs,
                       std::vector<Slot> slots, std::vector<Launch> launches,
                       std::vector<int> output_slots, size_t arena_bytes,
                       std::vector<std::shared_ptr<KernelLibrary>> libraries)
    : inputs_(std::move(inputs)), outputs_(std::move(outputs)), slots_(std::move(slots)),
      launches_(std::move(launches)), output_slots_(std::move(output_slots)),
      arena_bytes_(arena_bytes), libraries_(std::move(libraries)) {
  for (const Slot& slot : slots_)
    symbolic_arena_ |= slot.kind == Slot::Kind::kArena && !slot.bytes.is_static();
  // Each distinct dim once.
  std::map<std::string, int> index;
  auto index_of = [&](const Dim& d) {
    auto [it, added] = index.emplace(d.to_string(), static_cast<int>(shape_dims_.size()));
    if (added) shape_dims_.push_back(d);
    return it->second;
  };
  for (const Slot& slot : slots_)
    arena_dims_.push_back(slot.kind == Slot::Kind::kArena ? index_of(slot.bytes) : -1);
  for (const Launch& launch : launches_) {
    std::vector<int>& dims = extent_dims_.emplace_back();
    for (const Dim& d : launch.symbols)
      dims.push_back(index_of(d));
  }
}

Executable::~Executable() {
  for (const Arena& arena : idle_arenas_)
    release(arena);
  for (void* constant : device_constants_) {
    if (constant) device_->release(constant);
  }
}

// The arena's offsets (per slot) for "values" (of shape_dims_), and the bytes of the
// intermediates: planned at compile time, or per run when some size is symbolic.
size_t Executable::place_arena(const std::vector<int64_t>& values,
                               std::vector<size_t>* offsets) const {
  offsets->assign(slots_.size(), 0);
  if (!symbolic_arena_) {
    for (size_t s = 0; s < slots_.size(); ++s)
      (*offsets)[s] = slots_[s].offset;
    return arena_bytes_;
  }
  std::vector<Lifetime> lifetimes;
  std::vector<size_t> arena_slots, placed;
  for (size_t s = 0; s < slots_.size(); ++s) {
    const Slot& slot = slots_[s];
    if (slot.kind != Slot::Kind::kArena) continue;
    size_t bytes = static_cast<size_t>(values[static_cast<size_t>(arena_dims_[s])]);
    lifetimes.push_back({bytes, slot.first, slot.last});
    arena_slots.push_back(s);
  }
  size_t total = plan_arena(lifetimes, &placed);
  for (size_t i = 0; i < arena_slots.size(); ++i)
    (*offsets)[arena_slots[i]] = placed[i];
  return total;
}

// The arena's size: the intermediates and, on a device, this run's inputs and outputs after
// them.
size_t Executable::arena_size(size_t intermediates, const std::vector<TensorView>& inputs,
                              const std::vector<TensorView>& outputs) const {
  size_t bytes = align_up(intermediates);
  // (On the host, 64 bytes more: an empty slot at the end may be read at index 0.)
  if (!device_) return bytes ? bytes + 64 : 0;
  for (const std::vector<TensorView>* list : {&inputs, &outputs}) {
    for (const TensorView& t : *list)
      bytes += align_up(t.num_bytes());
  }
  return bytes;
}

// An idle arena, or a new one when none is idle or the idle one is too small (which goes:
// the pool holds at most one arena per concurrent run). One that replaces a smaller one is a
// quarter larger than asked: a decoding loop's arena grows with its past at every step, and
// a fresh arena each time cost its page faults (1-2 ms a step for a small Llama).
Executable::Arena Executable::take_arena(size_t bytes) const {
  Arena arena;
  {
    std::lock_guard<std::mutex> lock(arena_mutex_);
    if (!idle_arenas_.empty()) {
      arena = idle_arenas_.back();
      idle_arenas_.pop_back();
    }
  }
  if (arena.data && arena.bytes >= bytes) return arena;
  if (arena.data) {
    release(arena);
    bytes = align_up(bytes + bytes / 4);
  }
  if (!device_) return {allocate_host_memory(bytes), bytes};
  Result<void*> p = device_->allocate(bytes);
  return {p.ok() ? *p : nullptr, bytes};
}

void Executable::return_arena(Arena arena) const {
  std::lock_guard<std::mutex> lock(arena_mutex_);
  idle_arenas_.push_back(arena);
}

void Executable::release(Arena arena) const {
  if (device_)
    device_->release(arena.data);
  else
    free_host_memory(arena.data, arena.bytes);
}

Status Executable::upload_constants() const {
  std::lock_guard<std::mutex> lock(arena_mutex_);
  if (!device_constants_.empty()) return Status();
  std::vector<void*> uploaded(slots_.size(), nullptr);
  Status status;
  for (size_t s = 0; s < slots_.size() && status.ok(); ++s) {
    if (slots_[s].kind != Slot::Kind::kConstant) continue;
    const Tensor& t = *slots_[s].constant;
    Result<void*> p = device_->allocate(t.num_bytes());
    if (!p.ok()) {
      status = p.status();
      break;
    }
    uploaded[s] = *p;
    status = device_->to_device(*p, t.data(), t.num_bytes());
  }
  if (status.ok()) status = device_->synchronize();
  if (!status.ok()) {
    for (void* p : uploaded) {
      if (p) device_->release(p);
    }
    return status;
  }
  device_constants_ = std::move(uploaded);
  return Status();
}

Result<double> DeviceMemory::time(const std::function<Status()>& work) {
  int64_t start = now_ns();
  WEFT_RETURN_IF_ERROR(work());
  WEFT_RETURN_IF_ERROR(synchronize());
  return static_cast<double>(now_ns() - start) / 1e6;
}

Result<std::unique_ptr<DeviceMemory::Graph>> DeviceMemory::capture(const std::function<Status()>&) {
  return std::unique_ptr<Graph>();
}

Status DeviceMemory::replay(const Graph&) { return Status::error("this device has no graphs"); }

size_t LaunchInfo::bytes(const Bindings& bound) const {
  size_t total = 0;
  for (const Dim& d : moved)
    total += static_cast<size_t>(eval_dim(d, bound).value_or(0));
  return total;
}

double LaunchInfo::flop_count(const Bindings& bound) const {
  return static_cast<double>(eval_dim(flops, bound).value_or(0));
}

size_t TensorView::num_bytes() const {
  size_t n = static_cast<size_t>(dtype_size(dtype));
  for (int64_t d : dims)
    n *= static_cast<size_t>(d);
  return n;
}

Status Executable::check_input(size_t i, const TensorView& input, Bindings* bound,
                               std::vector<std::pair<size_t, size_t>>* later) const {
  const TensorType& type = inputs_[i].type;
  bool match = input.dtype == type.dtype && type.shape && type.shape->size() == input.dims.size();
  for (size_t d = 0; match && d < input.dims.size(); ++d) {
    const Dim& dim = (*type.shape)[d];
    if (dim.is_static()) {
      match = dim.value() == input.dims[d];
    } else if (dim_is_symbol(dim)) {
      auto [it, inserted] = bound->emplace(dim.symbol_name(), input.dims[d]);
      match = it->second == input.dims[d];
    } else if (later) { // a dim over other inputs' symbols (unify_dims): once they are bound
      later->emplace_back(i, d);
    } else {
      match = eval_dim(dim, *bound) == input.dims[d];
    }
  }
  if (!match) {
    return Status::error(fmt::format("input '{}' must be {}, got {}", inputs_[i].name,
                                     type.to_string(), input.type().to_string()),
                         StatusCode::kInvalidArgument);
  }
  for (const auto& [f, value] : frozen_) {
    if (static_cast<size_t>(f) != i) continue;
    if (value.num_bytes() > 0 && std::memcmp(value.data(), input.data, value.num_bytes()) != 0) {
      return Status::error(
          fmt::format("input '{}' determines shapes and was compiled for the value {}; a new "
                      "value needs a new compile",
                      inputs_[i].name, value.to_string(16)));
    }
  }
  return Status();
}

Result<Bindings> Executable::bind(const std::vector<TensorView>& inputs) const {
  if (inputs.size() != inputs_.size()) {
    return Status::error(
        fmt::format("the model takes {} inputs, {} were given", inputs_.size(), inputs.size()),
        StatusCode::kInvalidArgument);
  }
  Bindings bound;
  std::vector<std::pair<size_t, size_t>> later; // (input, axis)
  for (size_t i = 0; i < inputs.size(); ++i)
    WEFT_RETURN_IF_ERROR(check_input(i, inputs[i], &bound, &later));
  for (auto [i, d] : later) {
    const Dim& dim = (*inputs_[i].type.shape)[d];
    int64_t given = inputs[i].dims[d];
    std::optional<int64_t> want = eval_dim(dim, bound);
    if (!want) {
      // Its one symbol bound from it: "2*h" binds h (solve_dim).
      if (std::optional<std::pair<std::string, int64_t>> x = solve_dim(dim, given)) {
        bound.emplace(x->first, x->second);
        want = eval_dim(dim, bound);
      } else if (bound_symbol(dim)) {
        return Status::error(fmt::format("input '{}' must be {}, got {}: {} is {} for no "
                                         "extent of {}",
                                         inputs_[i].name, inputs_[i].type.to_string(),
                                         inputs[i].type().to_string(), dim.to_string(), given,
                                         dim_symbols(dim)[0]),
                             StatusCode::kInvalidArgument);
      } else {
        want = bound.emplace(dim.symbol_name(), given).first->second;
      }
    }
    if (*want != given) {
      return Status::error(fmt::format("input '{}' must be {}, where {} = {}, got {}",
                                       inputs_[i].name, inputs_[i].type.to_string(),
                                       dim.to_string(), *want, inputs[i].type().to_string()),
                           StatusCode::kInvalidArgument);
    }
  }
  for (const DimLimit& limit : dim_limits_) {
    std::optional<int64_t> dim = eval_dim(limit.dim, bound), other = eval_dim(limit.bound, bound);
    if (!dim || !other) continue;
    if (std::string broken = broken_limit(limit, *dim, *other); !broken.empty())
      return Status::error(broken, StatusCode::kInvalidArgument);
  }
  return bound;
}

std::vector<int64_t> Executable::output_dims(size_t o, const Bindings& bound) const {
  std::vector<int64_t> dims;
  // Compiling checked that the inputs' symbols determine every output dim.
  for (const Dim& d : *outputs_[o].type.shape)
    dims.push_back(eval_dim(d, bound).value_or(0));
  return dims;
}

Result<std::shared_ptr<const Executable::RunShape>>
Executable::run_shape(const std::vector<TensorView>& inputs) const {
  std::shared_ptr<const RunShape> last;
  {
    std::lock_guard<std::mutex> lock(shape_mutex_);
    last = last_shape_;
  }
  bool same = last && last->dims.size() == inputs.size();
  for (size_t i = 0; same && i < inputs.size(); ++i)
    same = last->dtypes[i] == inputs[i].dtype && last->dims[i] == inputs[i].dims;
  if (same) {
    for (const auto& [f, value] : frozen_) { // values are checked at every run
      const TensorView& input = inputs[static_cast<size_t>(f)];
      if (value.num_bytes() > 0 && std::memcmp(value.data(), input.data, value.num_bytes()) != 0) {
        Bindings unused;
        return check_input(static_cast<size_t>(f), input, &unused);
      }
    }
    return last;
  }
  auto shape = std::make_shared<RunShape>();
  WEFT_ASSIGN_OR_RETURN(shape->bound, bind(inputs));
  for (const TensorView& t : inputs) {
    shape->dtypes.push_back(t.dtype);
    shape->dims.push_back(t.dims);
  }
  for (size_t o = 0; o < outputs_.size(); ++o)
    shape->output_dims.push_back(output_dims(o, shape->bound));
  // Compiling checked that the inputs' symbols determine every size and extent.
  std::vector<int64_t> values;
  for (const Dim& d : shape_dims_)
    values.push_back(eval_dim(d, shape->bound).value_or(0));
  shape->intermediates = place_arena(values, &shape->offsets);
  for (const std::vector<int>& dims : extent_dims_) {
    std::vector<int64_t>& extents = shape->extents.emplace_back();
    for (int d : dims)
      extents.push_back(values[static_cast<size_t>(d)]);
  }
  std::lock_guard<std::mutex> lock(shape_mutex_);
  last_shape_ = shape;
  return std::shared_ptr<const RunShape>(shape);
}

Result<std::vector<std::vector<int64_t>>>
Executable::output_shapes(const std::vector<TensorView>& inputs) const {
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const RunShape> shape, run_shape(inputs));
  return shape->output_dims;
}

Status Executable::run(const std::vector<TensorView>& inputs,
                       const std::vector<TensorView>& outputs, const RunOptions& options) const {
  if (options.io_on_device && !device_)
    return Status::error("device tensors were given to a model compiled for the CPU",
                         StatusCode::kInvalidArgument);
  if (options.io_on_device && !frozen_.empty()) {
    return Status::error(fmt::format("input '{}' determines shapes: pass it as a host tensor",
                                     inputs_[static_cast<size_t>(frozen_[0].first)].name),
                         StatusCode::kInvalidArgument);
  }
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<const RunShape> shape, run_shape(inputs));
  if (outputs.size() != outputs_.size()) {
    return Status::error(
        fmt::format("the model has {} outputs, {} were given", outputs_.size(), outputs.size()),
        StatusCode::kInvalidArgument);
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    TensorView expected{outputs_[o].type.dtype, shape->output_dims[o], nullptr};
    if (!(outputs[o].type() == expected.type())) {
      return Status::error(fmt::format("output '{}' must be {}, got {}", outputs_[o].name,
                                       expected.type().to_string(), outputs[o].type().to_string()),
                           StatusCode::kInvalidArgument);
    }
  }
  if (device_) WEFT_RETURN_IF_ERROR(upload_constants());
  const std::vector<size_t>& offsets = shape->offsets;
  size_t intermediates = shape->intermediates;
  size_t bytes = arena_size(intermediates, inputs, outputs);
  Arena arena = bytes ? take_arena(bytes) : Arena{};
  auto give_back = [this, &arena](void*) { return_arena(arena); };
  std::unique_ptr<void, decltype(give_back)> held(arena.data, give_back);
  if (bytes && !arena.data)
    return Status::error(fmt::format("cannot allocate {} bytes of working memory", bytes));
  std::byte* base = static_cast<std::byte*>(arena.data);
  // With host tensors on a device, the run's copies of its inputs and outputs follow the
  // intermediates.
  bool copy_io = device_ && !options.io_on_device;
  std::vector<void*> input_at, output_at;
  size_t io = align_up(intermediates);
  // An empty tensor may be read at index 0 (weft_clamp_index), so it gets an element of zeros
  // to read; its own data pointer may be null (DLPack's empty tensors).
  alignas(64) static const std::byte kEmpty[64] = {};
  for (const TensorView& t : inputs) {
    if (t.num_bytes() == 0 && !copy_io && !options.io_on_device) {
      input_at.push_back(const_cast<std::byte*>(kEmpty));
      continue;
    }
    input_at.push_back(copy_io ? base + io : t.data);
    if (copy_io) WEFT_RETURN_IF_ERROR(device_->to_device(base + io, t.data, t.num_bytes()));
    io += copy_io ? align_up(t.num_bytes()) : 0;
  }
  for (const TensorView& t : outputs) {
    output_at.push_back(copy_io ? base + io : t.data);
    io += copy_io ? align_up(t.num_bytes()) : 0;
  }
  // The address of each slot for this run.
  std::vector<void*> address(slots_.size(), nullptr);
  for (size_t s = 0; s < slots_.size(); ++s) {
    const Slot& slot = slots_[s];
    switch (slot.kind) {
      case Slot::Kind::kInput: address[s] = input_at[static_cast<size_t>(slot.index)]; break;
      case Slot::Kind::kConstant:
        address[s] = device_ ? device_constants_[s] : const_cast<std::byte*>(slot.constant->data());
        break;
      case Slot::Kind::kOutput: address[s] = output_at[static_cast<size_t>(slot.index)]; break;
      case Slot::Kind::kArena: // (an arena of 0 bytes is none: its empty slots read kEmpty)
        address[s] = base ? base + offsets[s] : const_cast<std::byte*>(kEmpty);
        break;
      case Slot::Kind::kAlias: break;
    }
  }
  for (size_t s = 0; s < slots_.size(); ++s) {
    int target = static_cast<int>(s);
    while (slots_[static_cast<size_t>(target)].kind == Slot::Kind::kAlias)
      target = slots_[static_cast<size_t>(target)].index;
    address[s] = address[static_cast<size_t>(target)];
  }
  WEFT_RETURN_IF_ERROR(launch(address, shape, options));
  // Outputs whose slot is not their own storage (an alias, an input, a constant) are copied.
  for (size_t o = 0; o < outputs.size(); ++o) {
    void* src = address[static_cast<size_t>(output_slots_[o])];
    if (outputs[o].num_bytes() == 0) continue;
    if (copy_io) {
      WEFT_RETURN_IF_ERROR(device_->to_host(outputs[o].data, src, outputs[o].num_bytes()));
    } else if (device_ && src != outputs[o].data) {
      WEFT_RETURN_IF_ERROR(device_->on_device(outputs[o].data, src, outputs[o].num_bytes()));
    } else if (src != outputs[o].data) {
      std::memmove(outputs[o].data, src, outputs[o].num_bytes());
    }
  }
  if (device_) WEFT_RETURN_IF_ERROR(device_->synchronize());
  return Status();
}

void Executable::place_on(std::shared_ptr<DeviceMemory> device) {
  device_ = std::move(device);
  const char* graphs = std::getenv("WEFT_CUDA_GRAPHS"); // on unless "0" (docs/knobs.md)
  graphs_.enabled = device_ && !(graphs && std::string(graphs) == "0");
}

Status Executable::launch(const std::vector<void*>& address,
                          const std::shared_ptr<const RunShape>& shape,
                          const RunOptions& options) const {
  if (!graphs_.enabled || options.timings || options.before_launch)
    return run_launches(address, *shape, options);
  std::unique_lock<std::mutex> lock(graphs_.mutex);
  if (graphs_.graph && graphs_.shape == shape && graphs_.address == address) {
    log_debug("CUDA graphs: replayed");
    return device_->replay(*graphs_.graph);
  }
  bool again = !graphs_.failed && graphs_.seen_shape == shape && graphs_.seen_address == address;
  graphs_.seen_shape = shape;
  graphs_.seen_address = address;
  if (!again) {
    lock.unlock();
    return run_launches(address, *shape, options);
  }
  Result<std::unique_ptr<DeviceMemory::Graph>> graph =
      device_->capture([&] { return run_launches(address, *shape, options); });
  if (!graph.ok() || !*graph) {
    graphs_.failed = true;
    log_info("CUDA graphs: off for this model: {}",
             graph.ok() ? "the device cannot capture" : graph.status().message());
    lock.unlock();
    return run_launches(address, *shape, options);
  }
  log_info("CUDA graphs: captured {} launches as one graph", launches_.size());
  graphs_.graph = std::move(*graph);
  graphs_.shape = shape;
  graphs_.address = address;
  return device_->replay(*graphs_.graph);
}

Status Executable::run_launches(const std::vector<void*>& address, const RunShape& shape,
                                const RunOptions& options) const {
  ScopedHostThreads threads(options.threads);
  if (!device_) keep_workers_off_this_cpu();
  if (options.timings) options.timings->assign(launches_.size(), {});
  std::vector<void*> args;
  for (size_t l = 0; l < launches_.size(); ++l) {
    const Launch& launch = launches_[l];
    const std::vector<int64_t>& extents = shape.extents[l];
    args.clear();
    for (int s : launch.slots)
      args.push_back(address[static_cast<size_t>(s)]);
    if (options.before_launch) options.before_launch(l, args.data());
    LaunchTiming* timing = options.timings ? &(*options.timings)[l] : nullptr;
    if (timing) timing->start_ns = now_ns();
    if (launch.library) {
      auto run = [&] { return launch.library->run(args.data(), extents.data()); };
      Status s;
      if (device_ && timing) {
        // Device launches are asynchronous: the device times this one, and the timing ends
        // that many nanoseconds after it started.
        Result<double> ms = device_->time(run);
        s = ms.status();
        if (ms.ok()) timing->end_ns = timing->start_ns + static_cast<int64_t>(*ms * 1e6);
      } else {
        s = run();
      }
      if (!s.ok())
        return Status::error(
            fmt::format("node '{}' ({}): {}", launch.info.node, launch.info.op_type, s.message()));
    } else {
      launch.fn(args.data(), extents.data());
    }
    if (timing && !(device_ && launch.library)) timing->end_ns = now_ns();
  }
  return Status();
}

Result<std::vector<Tensor>> Executable::run(const std::vector<Tensor>& inputs,
                                            const RunOptions& options) const {
  std::vector<TensorView> in;
  for (const Tensor& t : inputs)
    in.push_back(TensorView::of(t));
  WEFT_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> shapes, output_shapes(in));
  std::vector<Tensor> outputs;
  std::vector<TensorView> out;
  for (size_t o = 0; o < outputs_.size(); ++o)
    outputs.push_back(Tensor::uninitialized(outputs_[o].type.dtype, shapes[o]));
  for (const Tensor& t : outputs)
    out.push_back(TensorView::of(t));
  WEFT_RETURN_IF_ERROR(run(in, out, options));
  return outputs;
}

} // namespace weft::runtime
