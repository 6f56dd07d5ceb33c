#include "weft/library/dnnl_kernel.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace weft::library {

namespace {

// oneDNN keeps every primitive it creates in a process-wide cache, 1,024 by default: a
// dynamic-shape model that meets a new shape with each run built one per shape and kept them
// all (65 MB over 1,000 shapes of one MatMul). Weft's calls hold their own primitives, so the
// cache only shares identical ones between compiles; 64 bound it, unless the user sets
// DNNL_PRIMITIVE_CACHE_CAPACITY.
constexpr int kPrimitiveCacheCapacity = 64;

} // namespace

const dnnl::engine& engine() {
  static const dnnl::engine e = [] {
    if (!std::getenv("DNNL_PRIMITIVE_CACHE_CAPACITY"))
      dnnl::set_primitive_cache_capacity(kPrimitiveCacheCapacity);
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return e;
}

Dims strides_of(const memory::desc& md) {
  const dnnl_dims_t& s = md.data.format_desc.blocking.strides;
  return Dims(s, s + md.data.ndims);
}

Dims row_major_strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    s[i - 1] = s[i] * dims[i];
  return s;
}

memory::desc row_major(const Dims& dims, memory::data_type type) {
  return memory::desc(dims, type, row_major_strides(dims));
}

memory::desc plain(const Dims& dims) { return row_major(dims, memory::data_type::f32); }

DnnlKernel::DnnlKernel(dnnl::primitive primitive, std::vector<Arg> args, Owned owned,
                       std::string what)
    : primitive_(std::move(primitive)), args_(std::move(args)), owned_(std::move(owned)),
      what_(std::move(what)) {
  for (Arg& a : args_) {
    if (a.internal == memory::desc() || a.internal == a.md) {
      a.internal = memory::desc();
      moves_.emplace_back();
      offsets_.push_back(0);
      continue;
    }
    bool out = a.dnnl_arg == DNNL_ARG_DST;
    moves_.push_back(out ? Move::between(a.internal, a.md) : Move::between(a.md, a.internal));
    offsets_.push_back(scratch_bytes_);
    scratch_bytes_ += (a.internal.get_size() + 63) / 64 * 64;
  }
}

void DnnlKernel::copy_into_dst(int from, const memory::desc& from_md) {
  sum_from_ = from;
  sum_md_ = from_md;
  for (const Arg& a : args_) {
    if (a.dnnl_arg != DNNL_ARG_DST) continue;
    const memory::desc& written = a.internal == memory::desc() ? a.md : a.internal;
    if (written != from_md) sum_move_ = Move::between(from_md, written);
  }
}

int DnnlKernel::buffer_of(int dnnl_arg) const {
  for (const Arg& a : args_) {
    if (a.dnnl_arg == dnnl_arg) return a.buffer;
  }
  return -1;
}

namespace {

bool plain_strides(const memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.data_type != dnnl_f32 || d.format_kind != dnnl_blocked || d.offset0 != 0 ||
      d.format_desc.blocking.inner_nblks != 0)
    return false;
  for (int i = 0; i < d.ndims; ++i) {
    if (d.padded_dims[i] != d.dims[i] || d.padded_offsets[i] != 0) return false;
  }
  return true;
}

} // namespace

DnnlKernel::Move DnnlKernel::Move::between(const memory::desc& from, const memory::desc& to) {
  Move m;
  if (plain_strides(from) && plain_strides(to) && from.dims() == to.dims())
    m.copy = PermuteCopy::between(from.dims(), strides_of(from), strides_of(to));
  if (m.copy && !m.copy->tiled()) m.copy.reset();
  if (!m.copy)
    m.reorder = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), from, engine(), to));
  return m;
}

void DnnlKernel::Move::run(dnnl::stream& stream, memory& from, memory& to) const {
  if (copy)
    copy->run(static_cast<const float*>(from.get_data_handle()),
              static_cast<float*>(to.get_data_handle()));
  else
    reorder.execute(stream, from, to);
}

namespace {

// Points "m" at "p" (oneDNN zero-pads a padded layout at each change of its handle, so only
// on a change).
void point(const memory& m, void* p) {
  if (m.get_data_handle() != p) m.set_data_handle(p);
}

} // namespace

std::unique_ptr<DnnlKernel::Bound> DnnlKernel::bind(void* const* buffers,
                                                    std::byte* scratch) const {
  std::unique_ptr<Bound> b;
  {
    std::lock_guard<std::mutex> lock(idle_mutex_);
    if (!idle_.empty()) {
      b = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!b) {
    b = std::make_unique<Bound>();
    b->stream = dnnl::stream(engine());
    for (const auto& [arg, m] : owned_)
      b->args.push_back({arg, m->get()});
    for (const Arg& a : args_) {
      b->user.emplace_back(a.md, engine(), nullptr);
      bool own = a.internal == memory::desc();
      b->internal.push_back(own ? memory() : memory(a.internal, engine(), nullptr));
      b->args.push_back({a.dnnl_arg, (own ? b->user : b->internal).back().get()});
    }
    if (sum_move_) b->residual = memory(sum_md_, engine(), nullptr);
    const_dnnl_primitive_desc_t pd = nullptr;
    dnnl_primitive_get_primitive_desc(primitive_.get(), &pd);
    const dnnl_memory_desc_t* md =
        pd ? dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0) : nullptr;
    if (md && dnnl_memory_desc_get_size(md) > 0) {
      b->scratchpad = memory(memory::desc(*md), engine());
      b->args.push_back({DNNL_ARG_SCRATCHPAD, b->scratchpad.get()});
    }
  }
  for (size_t i = 0; i < args_.size(); ++i) {
    point(b->user[i], buffers[args_[i].buffer]);
    if (b->internal[i]) point(b->internal[i], scratch + offsets_[i]);
  }
  if (b->residual) point(b->residual, buffers[sum_from_]);
  return b;
}

Status DnnlKernel::run(void* const* buffers, const int64_t* /*extents*/) const {
  thread_local std::vector<std::byte> scratch;
  if (scratch.size() < scratch_bytes_ + 64) scratch.resize(scratch_bytes_ + 64);
  std::byte* base = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
  try {
    std::unique_ptr<Bound> b = bind(buffers, base);
    dnnl::stream& stream = b->stream;
    for (size_t i = 0; i < args_.size(); ++i) {
      bool dst = args_[i].dnnl_arg == DNNL_ARG_DST;
      memory& written = b->internal[i] ? b->internal[i] : b->user[i];
      if (dst && sum_from_ >= 0) { // the residual, into the memory the primitive writes
        if (sum_move_)
          sum_move_.run(stream, b->residual, written);
        else if (written.get_data_handle() != buffers[sum_from_])
          std::memcpy(written.get_data_handle(), buffers[sum_from_], sum_md_.get_size());
      }
      if (b->internal[i] && !dst) moves_[i].run(stream, b->user[i], b->internal[i]);
    }
    dnnl_status_t status = dnnl_primitive_execute(primitive_.get(), stream.get(),
                                                  static_cast<int>(b->args.size()), b->args.data());
    if (status != dnnl_success) throw dnnl::error(status, "could not execute a primitive");
    for (size_t i = 0; i < args_.size(); ++i) {
      if (b->internal[i] && args_[i].dnnl_arg == DNNL_ARG_DST)
        moves_[i].run(stream, b->internal[i], b->user[i]);
    }
    stream.wait();
    std::lock_guard<std::mutex> lock(idle_mutex_);
    idle_.push_back(std::move(b));
  } catch (const dnnl::error& e) {
    return Status::error(fmt::format("oneDNN failed: {}", e.what()));
  }
  return Status();
}

} // namespace weft::library
