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

DnnlKernel::DnnlKernel(dnnl::primitive primitive, std::vector<Arg> args,
                       std::unordered_map<int, memory> owned, std::string what)
    : primitive_(std::move(primitive)), args_(std::move(args)), owned_(std::move(owned)),
      what_(std::move(what)) {
  for (Arg& a : args_) {
    if (a.internal == memory::desc() || a.internal == a.md) {
      a.internal = memory::desc();
      reorders_.emplace_back();
      offsets_.push_back(0);
      continue;
    }
    bool out = a.dnnl_arg == DNNL_ARG_DST;
    reorders_.emplace_back(
        out ? dnnl::reorder::primitive_desc(engine(), a.internal, engine(), a.md)
            : dnnl::reorder::primitive_desc(engine(), a.md, engine(), a.internal));
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
    if (written != from_md)
      sum_reorder_ =
          dnnl::reorder(dnnl::reorder::primitive_desc(engine(), from_md, engine(), written));
  }
}

int DnnlKernel::buffer_of(int dnnl_arg) const {
  for (const Arg& a : args_) {
    if (a.dnnl_arg == dnnl_arg) return a.buffer;
  }
  return -1;
}

Status DnnlKernel::run(void* const* buffers, const int64_t* /*extents*/) const {
  thread_local std::vector<std::byte> scratch;
  if (scratch.size() < scratch_bytes_ + 64) scratch.resize(scratch_bytes_ + 64);
  std::byte* base = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
  try {
    dnnl::stream stream(engine());
    std::unordered_map<int, memory> args = owned_;
    std::vector<std::pair<size_t, memory>> outs; // (arg, user memory) to reorder back
    for (size_t i = 0; i < args_.size(); ++i) {
      const Arg& a = args_[i];
      bool dst = a.dnnl_arg == DNNL_ARG_DST;
      memory user(a.md, engine(), buffers[a.buffer]);
      memory internal =
          a.internal == memory::desc() ? user : memory(a.internal, engine(), base + offsets_[i]);
      if (dst && sum_from_ >= 0) { // the residual, into the memory the primitive writes
        if (sum_reorder_) {
          memory residual(sum_md_, engine(), buffers[sum_from_]);
          sum_reorder_.execute(stream, residual, internal);
        } else if (internal.get_data_handle() != buffers[sum_from_]) {
          std::memcpy(internal.get_data_handle(), buffers[sum_from_], sum_md_.get_size());
        }
      }
      if (a.internal == memory::desc()) {
        args.emplace(a.dnnl_arg, user);
        continue;
      }
      if (dst)
        outs.emplace_back(i, user);
      else
        reorders_[i].execute(stream, user, internal);
      args.emplace(a.dnnl_arg, internal);
    }
    primitive_.execute(stream, args);
    for (auto& [i, user] : outs)
      reorders_[i].execute(stream, args.at(args_[i].dnnl_arg), user);
    stream.wait();
  } catch (const dnnl::error& e) {
    return Status::error(fmt::format("oneDNN failed: {}", e.what()));
  }
  return Status();
}

} // namespace weft::library
