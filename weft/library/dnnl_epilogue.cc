#include "weft/library/dnnl_epilogue.h"

#include <algorithm>
#include <limits>
#include <new>
#include <numeric>

#include <fmt/format.h>

#include "weft/graph/op_table.h"
#include "weft/graph/shape_functions.h"
#include "weft/support/host_memory.h"
#include "weft/support/log.h"

namespace weft::library {

Dims dims_of(const Value* v) { return shape_static_dims(*v->type.shape); }

Ints perm_of(const Node& transpose) { return transpose_perm(transpose).value(); }

memory::desc transposed_input(const Node& t, size_t rank) {
  Dims x = dims_of(t.inputs[0]), strides = row_major_strides(x), dims, view;
  Ints perm = perm_of(t);
  for (int64_t p : perm) {
    dims.push_back(x[static_cast<size_t>(p)]);
    view.push_back(strides[static_cast<size_t>(p)]);
  }
  dims.insert(dims.begin(), rank - dims.size(), 1);
  view.insert(view.begin(), rank - view.size(), x.empty() ? 1 : x[0] * strides[0]);
  return memory::desc(dims, memory::data_type::f32, view);
}

memory::desc transposed_output(const Dims& dims, const Node& t) {
  Ints perm = perm_of(t);
  Dims out;
  for (int64_t p : perm)
    out.push_back(dims[static_cast<size_t>(p)]);
  Dims out_strides = row_major_strides(out), strides(dims.size());
  for (size_t k = 0; k < perm.size(); ++k)
    strides[static_cast<size_t>(perm[k])] = out_strides[k];
  return memory::desc(dims, memory::data_type::f32, strides);
}

Ints identity_perm(size_t rank) {
  Ints p(rank);
  std::iota(p.begin(), p.end(), 0);
  return p;
}

std::optional<Ints> operand_transpose(const Value* x, const Node& reader,
                                      const SoleReader& sole_reader,
                                      const std::function<bool(const Node*)>& free) {
  const Node* t = x->producer;
  if (!t || t->op_type != Op::kTranspose || !free(t) || sole_reader(x) != &reader ||
      !t->inputs[0] || !t->inputs[0]->type.shape)
    return std::nullopt;
  std::optional<Ints> perm = transpose_perm(*t);
  int64_t last = perm ? static_cast<int64_t>(perm->size()) - 1 : 0;
  if (!perm || perm->size() < 2 || (perm->back() != last && (*perm)[perm->size() - 2] != last))
    return std::nullopt;
  return perm;
}

std::optional<Ints> result_view(const Node* t, const std::function<bool(const Node*)>& free) {
  if (!t || t->op_type != Op::kTranspose || !free(t) || !t->outputs[0]->type.shape)
    return std::nullopt;
  std::optional<Ints> perm = transpose_perm(*t);
  if (!perm || perm->empty() || perm->back() != static_cast<int64_t>(perm->size()) - 1)
    return std::nullopt;
  Ints view(perm->size());
  for (size_t j = 0; j < perm->size(); ++j)
    view[static_cast<size_t>((*perm)[j])] = static_cast<int64_t>(j);
  return view;
}

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

// Not Round: oneDNN 2.6's eltwise_round post-op gave outputs 20-100 quanta off in quantized
// ResNet-18 and EfficientNet-B0 (residual blocks, depthwise convolutions), where each call
// alone was right; the quantize-dequantize pairs run as generated kernels after the calls.
std::optional<PostOp> post_op(const Node& e, const Value* from) {
  using A = dnnl::algorithm;
  Op op = e.op_type.id();
  PostOp p;
  p.node = &e;
  if (e.outputs.size() != 1 || e.outputs[0]->type.dtype != DType::kF32) return std::nullopt;
  if (op == Op::kRelu) {
    p.algorithm = A::eltwise_relu;
  } else if (op == Op::kLeakyRelu) {
    p.algorithm = A::eltwise_relu;
    p.alpha = e.attrs_as<AlphaAttrs>().alpha;
  } else if (op == Op::kSigmoid) {
    p.algorithm = A::eltwise_logistic;
  } else if (op == Op::kTanh) {
    p.algorithm = A::eltwise_tanh;
  } else if (op == Op::kHardSwish) { // x * min(max(x / 6 + 1 / 2, 0), 1), as ONNX's
    p.algorithm = A::eltwise_hardswish;
  } else if (op == Op::kClip && e.inputs.size() == 1) {
    const auto& a = e.attrs_as<ClipAttrs>();
    p.algorithm = A::eltwise_clip;
    p.alpha = a.min.value_or(-std::numeric_limits<float>::max());
    p.beta = a.max.value_or(std::numeric_limits<float>::max());
  } else if (op == Op::kAdd || op == Op::kMul || (op == Op::kSub || op == Op::kDiv)) {
    if (e.inputs.size() != 2 || e.inputs[0] == e.inputs[1]) return std::nullopt;
    if ((op == Op::kSub || op == Op::kDiv) && e.inputs[0] != from) return std::nullopt;
    p.binary = true;
    p.algorithm = op == Op::kAdd   ? A::binary_add
                  : op == Op::kMul ? A::binary_mul
                  : op == Op::kSub ? A::binary_sub
                                   : A::binary_div;
    p.src1 = e.inputs[0] == from ? e.inputs[1] : e.inputs[0];
    Dims out = dims_of(from), other = dims_of(p.src1);
    if (p.src1->type.dtype != DType::kF32 || other.size() > out.size() ||
        dims_of(e.outputs[0]) != out)
      return std::nullopt;
    other.insert(other.begin(), out.size() - other.size(), 1);
    for (size_t i = 0; i < out.size(); ++i) {
      if (other[i] != 1 && other[i] != out[i]) return std::nullopt;
    }
    p.src1_dims = other;
  } else {
    return std::nullopt;
  }
  return p;
}

Dims channels_first(Dims d) {
  if (d.size() >= 3) std::rotate(d.begin() + 1, d.end() - 1, d.end());
  return d;
}

// The memory of a channels-last value of dims "d" (row-major over them), as a
// descriptor over channels_first(d): a 4-D one is oneDNN's nhwc.
memory::desc channels_last_view(const Dims& d) {
  return memory::desc(channels_first(d), memory::data_type::f32,
                      channels_first(row_major_strides(d)));
}

memory::desc channels_last(const Dims& dims) {
  using T = memory::format_tag;
  T tag = dims.size() == 3 ? T::nwc : dims.size() == 4 ? T::nhwc : T::ndhwc;
  return memory::desc(dims, memory::data_type::f32, tag);
}

namespace {

// The bytes of a layout, a key among the forms of a constant (Tensor::derived). oneDNN's
// descriptors start zeroed, so equal layouts have equal bytes; were two not to, the cost is
// one more packed copy, never a wrong one.
std::string layout_key(const memory::desc& md) {
  return std::string(reinterpret_cast<const char*>(&md.data), sizeof(md.data));
}

} // namespace

std::shared_ptr<const memory> reordered_constant(const Value* w, const memory::desc& given,
                                                 const memory::desc& wanted) {
  bool made = false;
  std::shared_ptr<const memory> packed =
      w->constant->derived_as<memory>("oneDNN " + layout_key(given) + layout_key(wanted), [&] {
        memory from(given, engine(), const_cast<std::byte*>(w->constant->data()));
        // Where a model's weights outgrow the cache, each run streams them from DRAM: on huge
        // pages ResNet-18 ran 5.7% faster, ResNet-50 2.9%, ConvNeXt-Tiny 1.1%, MobileNetV2
        // (whose weights are small) even (medians of 10 alternating runs, Intel Xeon, 2
        // threads, 2026-12-05).
        size_t bytes = wanted.get_size();
        void* p = allocate_host_memory(bytes);
        if (p == nullptr) throw std::bad_alloc();
        std::shared_ptr<void> block(p, [bytes](void* q) { free_host_memory(q, bytes); });
        std::shared_ptr<memory> to(new memory(wanted, engine(), p),
                                   [block](memory* m) { delete m; });
        dnnl::stream stream(engine());
        memory rows; // given's elements row-major, where its dims are not wanted's
        if (given.dims() != wanted.dims()) {
          rows = memory(plain(given.dims()), engine());
          dnnl::reorder(from, rows).execute(stream, from, rows);
          from = memory(plain(wanted.dims()), engine(), rows.get_data_handle());
        }
        dnnl::reorder(from, *to).execute(stream, from, *to);
        stream.wait();
        made = true;
        return to;
      });
  if (!made) log_debug("constant '{}': shares the packed copy of an earlier call", w->name);
  return packed;
}

// The post-ops' attribute, and their src1 arguments bound into "call". A src1 of the
// output's full dims takes the primitive's "layout"; a broadcast one stays as it lies. With
// "channels_last_values", the values' dims are [N, spatial..., C] (Op::kConvChannelsLast's).
dnnl::primitive_attr post_op_attr(const std::vector<PostOp>& ops, LibraryCall& call,
                                  std::vector<DnnlKernel::Arg>& args, const Dims& out,
                                  const Layout& layout, bool channels_last_values, int* summed) {
  dnnl::post_ops po;
  for (size_t i = 0; i < ops.size(); ++i) {
    const PostOp& p = ops[i];
    // With "summed", a first Add of a full-size operand is a sum post-op: the destination
    // holds that operand before the primitive runs, and the primitive adds to it
    // (DnnlKernel::copy_into_dst). oneDNN's brgemm convolutions take sums, but not binary
    // post-ops of full size (they fall back to the older jit kernels).
    if (summed && i == 0 && p.binary && p.algorithm == dnnl::algorithm::binary_add &&
        p.src1_dims.size() == out.size() &&
        (channels_last_values ? channels_first(p.src1_dims) : p.src1_dims) == out) {
      po.append_sum(1.0f);
      *summed = position(call.values, p.src1);
      continue;
    }
    if (!p.binary) {
      po.append_eltwise(1.0f, p.algorithm, p.alpha, p.beta);
      continue;
    }
    Dims dims = channels_last_values ? channels_first(p.src1_dims) : p.src1_dims;
    memory::desc user = channels_last_values ? channels_last_view(p.src1_dims) : plain(p.src1_dims);
    memory::desc internal = dims == out ? layout(out) : user;
    po.append_binary(p.algorithm, internal);
    args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1,
                    position(call.values, p.src1), user, internal});
  }
  dnnl::primitive_attr attr = own_scratchpad();
  attr.set_post_ops(po);
  return attr;
}

dnnl::primitive_attr own_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

memory::desc in_bf16(memory::desc md) {
  md.data.data_type = dnnl_bf16;
  return md;
}

bool bf16_kernel(const std::string& impl) { return impl.find("_bf16") != std::string::npos; }

memory s32_scalar(int32_t value) {
  memory m(memory::desc({1}, memory::data_type::s32, memory::format_tag::x), engine());
  *static_cast<int32_t*>(m.get_data_handle()) = value;
  return m;
}

const Value* final_output(const Node& n, const std::vector<PostOp>& ops) {
  return ops.empty() ? n.outputs[0] : ops.back().node->outputs[0];
}

} // namespace weft::library
