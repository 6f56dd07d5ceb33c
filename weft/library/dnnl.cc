#include "weft/library/dnnl.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "weft/graph/shape_functions.h"

namespace weft::library {

namespace {

using dnnl::memory;
using Dims = memory::dims;

const dnnl::engine& engine() {
  static const dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

Dims row_major_strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    s[i - 1] = s[i] * dims[i];
  return s;
}

memory::desc plain(const Dims& dims) {
  return memory::desc(dims, memory::data_type::f32, row_major_strides(dims));
}

Dims dims_of(const Value* v) { return shape_static_dims(*v->type.shape); }

// One primitive and the memories it executes on: each argument is a buffer of the launch
// (wrapped per run) or memory the kernel owns (weights reordered at compile time).
class DnnlKernel final : public runtime::LibraryKernel {
public:
  struct Arg {
    int dnnl_arg;
    int buffer; // index into the launch's buffers
    memory::desc md;
  };

  DnnlKernel(dnnl::primitive primitive, std::vector<Arg> args,
             std::unordered_map<int, memory> owned, std::string what)
      : primitive_(std::move(primitive)), args_(std::move(args)), owned_(std::move(owned)),
        what_(std::move(what)) {}

  Status run(void* const* buffers) const override {
    try {
      dnnl::stream stream(engine());
      std::unordered_map<int, memory> args = owned_;
      for (const Arg& a : args_)
        args.emplace(a.dnnl_arg, memory(a.md, engine(), buffers[a.buffer]));
      primitive_.execute(stream, args);
      stream.wait();
    } catch (const dnnl::error& e) {
      return Status::error(fmt::format("oneDNN failed: {}", e.what()));
    }
    return Status();
  }

  std::string describe() const override { return what_; }

private:
  dnnl::primitive primitive_;
  std::vector<Arg> args_;
  std::unordered_map<int, memory> owned_;
  std::string what_;
};

// The position of "v" in "values", appending it if absent.
int position(std::vector<const Value*>& values, const Value* v) {
  auto it = std::find(values.begin(), values.end(), v);
  if (it != values.end()) return static_cast<int>(it - values.begin());
  values.push_back(v);
  return static_cast<int>(values.size()) - 1;
}

// Why oneDNN does not take a node whose values are "values", if it does not: f32 only, and
// no empty tensors (generated code handles both).
std::optional<std::string> unsupported_values(const std::vector<const Value*>& values) {
  for (const Value* v : values) {
    if (!v) continue;
    if (v->type.dtype != DType::kF32)
      return fmt::format("'{}' is {}, and oneDNN runs f32 here", v->name,
                         dtype_name(v->type.dtype));
    std::optional<int64_t> n = shape_num_elements(*v->type.shape);
    if (!n) return fmt::format("'{}' has a symbolic shape", v->name);
    if (*n == 0) return fmt::format("'{}' is empty", v->name);
  }
  return std::nullopt;
}

// dst = src x weights (+ bias) over plain row-major operands, numpy batch broadcasting.
struct MatMulOperands {
  memory::desc a, b, bias, y;
  float alpha = 1.0f;
};

LibraryCall make_matmul(const Node& n, const MatMulOperands& m, const Value* bias) {
  dnnl::primitive_attr attr;
  if (m.alpha != 1.0f) attr.set_output_scales(0, {m.alpha});
  dnnl::matmul::desc d = bias ? dnnl::matmul::desc(m.a, m.b, m.bias, m.y)
                              : dnnl::matmul::desc(m.a, m.b, m.y);
  dnnl::matmul::primitive_desc pd(d, attr, engine());
  LibraryCall call;
  std::vector<DnnlKernel::Arg> args = {
      {DNNL_ARG_SRC, position(call.values, n.inputs[0]), m.a},
      {DNNL_ARG_WEIGHTS, position(call.values, n.inputs[1]), m.b}};
  if (bias) args.push_back({DNNL_ARG_BIAS, position(call.values, bias), m.bias});
  args.push_back({DNNL_ARG_DST, position(call.values, n.outputs[0]), m.y});
  call.kernel = std::make_shared<DnnlKernel>(dnnl::matmul(pd), std::move(args),
                                             std::unordered_map<int, memory>{},
                                             fmt::format("oneDNN matmul ({})", pd.impl_info_str()));
  return call;
}

// MatMul: 1-D operands promoted as numpy does, ranks aligned with leading unit dims.
std::optional<LibraryCall> matmul_call(const Node& n, std::string* why_not) {
  Dims da = dims_of(n.inputs[0]), db = dims_of(n.inputs[1]);
  if (da.size() == 1) da.insert(da.begin(), 1);
  if (db.size() == 1) db.push_back(1);
  size_t rank = std::max(da.size(), db.size());
  if (rank > DNNL_MAX_NDIMS) {
    *why_not = fmt::format("rank {} is above oneDNN's {}", rank, DNNL_MAX_NDIMS);
    return std::nullopt;
  }
  da.insert(da.begin(), rank - da.size(), 1);
  db.insert(db.begin(), rank - db.size(), 1);
  Dims dy(rank);
  for (size_t i = 0; i + 2 < rank; ++i)
    dy[i] = std::max(da[i], db[i]);
  dy[rank - 2] = da[rank - 2];
  dy[rank - 1] = db[rank - 1];
  return make_matmul(n, {plain(da), plain(db), {}, plain(dy)}, nullptr);
}

// Gemm: transposes as strides; C as a broadcast bias when alpha and beta allow it.
std::optional<LibraryCall> gemm_call(const Node& n, std::string* why_not) {
  const auto& at = n.attrs_as<GemmAttrs>();
  Dims sa = dims_of(n.inputs[0]), sb = dims_of(n.inputs[1]);
  int64_t m = at.trans_a ? sa[1] : sa[0], k = at.trans_a ? sa[0] : sa[1];
  int64_t nn = at.trans_b ? sb[0] : sb[1];
  MatMulOperands ops;
  ops.a = memory::desc({m, k}, memory::data_type::f32, at.trans_a ? Dims{1, m} : Dims{k, 1});
  ops.b = memory::desc({k, nn}, memory::data_type::f32, at.trans_b ? Dims{1, k} : Dims{nn, 1});
  ops.y = plain({m, nn});
  ops.alpha = at.alpha;
  const Value* c = n.input(2);
  if (c && at.beta != 0.0f) {
    if (at.alpha != 1.0f || at.beta != 1.0f) {
      *why_not = "alpha and beta other than 1 with C";
      return std::nullopt;
    }
    Dims dc = dims_of(c);
    dc.insert(dc.begin(), 2 - std::min<size_t>(dc.size(), 2), 1);
    if (dc.size() != 2 || (dc[0] != 1 && dc[0] != m) || (dc[1] != 1 && dc[1] != nn)) {
      *why_not = "C does not broadcast to the output";
      return std::nullopt;
    }
    ops.bias = plain(dc);
  } else {
    c = nullptr;
  }
  return make_matmul(n, ops, c);
}

// Conv in 1-3 spatial dims: plain activations, weights in oneDNN's preferred layout
// (reordered once here when they are constant).
std::optional<LibraryCall> conv_call(const Node& n, std::string* why_not) {
  const auto& at = n.attrs_as<ConvAttrs>();
  const Value *x = n.inputs[0], *w = n.inputs[1], *b = n.input(2), *y = n.outputs[0];
  Dims dx = dims_of(x), dw = dims_of(w), dy = dims_of(y);
  if (dx.size() < 3 || dx.size() > 5) {
    *why_not = fmt::format("{} spatial dims", dx.size() - 2);
    return std::nullopt;
  }
  Ints kernel = at.kernel_shape;
  if (kernel.empty()) kernel.assign(dw.begin() + 2, dw.end());
  std::vector<Window> win = window_dims(kernel, at.strides, at.dilations, at.pads, at.auto_pad,
                                        *x->type.shape, *y->type.shape);
  Dims strides, dilates, pad_l, pad_r;
  for (const Window& d : win) {
    strides.push_back(d.stride);
    dilates.push_back(d.dilation - 1); // oneDNN counts the gaps
    pad_l.push_back(d.pad_begin);
    pad_r.push_back(d.pad_end);
  }
  Dims wdims = dw;
  if (at.group > 1) {
    wdims[0] /= at.group;
    wdims.insert(wdims.begin(), at.group);
  }
  bool constant_weights = w->is_constant();
  memory::desc wmd = constant_weights ? memory::desc(wdims, memory::data_type::f32,
                                                     memory::format_tag::any)
                                      : plain(wdims);
  memory::desc bmd = b ? plain({dw[0]}) : memory::desc();
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::convolution_direct, plain(dx), wmd, bmd,
                                    plain(dy), strides, dilates, pad_l, pad_r);
  dnnl::convolution_forward::primitive_desc pd(d, engine());
  LibraryCall call;
  std::vector<DnnlKernel::Arg> args = {{DNNL_ARG_SRC, position(call.values, x), plain(dx)}};
  int w_buffer = position(call.values, w); // bound even when reordered, for the profile
  std::unordered_map<int, memory> owned;
  if (constant_weights) {
    memory given(plain(wdims), engine(), const_cast<std::byte*>(w->constant->data()));
    memory reordered(pd.weights_desc(), engine());
    dnnl::stream stream(engine());
    dnnl::reorder(given, reordered).execute(stream, given, reordered);
    stream.wait();
    owned.emplace(DNNL_ARG_WEIGHTS, reordered);
  } else {
    args.push_back({DNNL_ARG_WEIGHTS, w_buffer, plain(wdims)});
  }
  if (b) args.push_back({DNNL_ARG_BIAS, position(call.values, b), bmd});
  args.push_back({DNNL_ARG_DST, position(call.values, y), plain(dy)});
  call.kernel = std::make_shared<DnnlKernel>(
      dnnl::convolution_forward(pd), std::move(args), std::move(owned),
      fmt::format("oneDNN convolution ({})", pd.impl_info_str()));
  return call;
}

} // namespace

std::optional<LibraryCall> dnnl_call(const Node& node, std::string* why_not) {
  static const std::unordered_map<std::string, std::optional<LibraryCall> (*)(const Node&,
                                                                                std::string*)>
      kBuilders = {{"MatMul", matmul_call}, {"Gemm", gemm_call}, {"Conv", conv_call}};
  auto it = kBuilders.find(node.op_type);
  if (it == kBuilders.end()) return std::nullopt;
  std::vector<const Value*> values(node.inputs.begin(), node.inputs.end());
  values.insert(values.end(), node.outputs.begin(), node.outputs.end());
  if (std::optional<std::string> why = unsupported_values(values)) {
    *why_not = *why;
    return std::nullopt;
  }
  try {
    return it->second(node, why_not);
  } catch (const dnnl::error& e) {
    // Not implemented for these shapes or attributes: generated code runs the node.
    *why_not = fmt::format("oneDNN: {}", e.what());
    return std::nullopt;
  }
}

} // namespace weft::library
