#include "weft/library/dnnl.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "weft/graph/op_table.h"
#include "weft/graph/shape_functions.h"
#include "weft/library/conv_choice.h"
#include "weft/library/dnnl_epilogue.h"
#include "weft/library/dnnl_kernel.h"
#include "weft/library/dnnl_sgemm.h"
#include "weft/library/dynamic_call.h"

namespace weft::library {

namespace {

// Whether this CPU has "isa" (oneDNN's ISAs are bit sets: each includes the bits of those it
// extends).
bool cpu_has(dnnl::cpu_isa isa) {
  auto bits = static_cast<unsigned>(isa);
  return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & bits) == bits;
}

// The permutation that makes a value of [N, C, spatial...] channels-last.
Ints to_channels_last(const Value* v) {
  Ints perm = {0};
  size_t rank = v->type.shape ? v->type.shape->size() : 0;
  for (size_t d = 2; d < rank; ++d)
    perm.push_back(static_cast<int64_t>(d));
  perm.push_back(1);
  return perm;
}

// Whether constant "w" holds f32 values that bf16 represents exactly (a bf16 model's weights
// after narrow_in_f32): the low 16 bits of each are zero.
bool holds_bf16(const Value* w) {
  if (!w->is_constant() || w->type.dtype != DType::kF32) return false;
  const auto* bits = reinterpret_cast<const uint32_t*>(w->constant->data());
  return std::all_of(bits, bits + w->constant->num_elements(),
                     [](uint32_t b) { return (b & 0xffffu) == 0; });
}

} // namespace

bool int8_products_exact() {
  static const bool exact = [] {
    if (!knob_on("WEFT_ONEDNN_INT8")) return false;
    return cpu_has(dnnl::cpu_isa::avx512_core_vnni) || cpu_has(dnnl::cpu_isa::avx2_vnni);
  }();
  return exact;
}

bool bf16_products_native() {
  static const bool native =
      knob_on("WEFT_ONEDNN_BF16") && cpu_has(dnnl::cpu_isa::avx512_core_bf16);
  return native;
}

std::optional<std::string> int8_matmul_unfit(const Node& n) {
  bool qlinear = n.op_type == Op::kQLinearMatMul || n.op_type == Op::kQLinearMatMulBias;
  if (!qlinear && n.op_type != Op::kMatMulInteger) return "not MatMulInteger or QLinearMatMul";
  const Value *a = n.inputs[0], *b = n.inputs[qlinear ? 3 : 1], *a_zero = n.input(2),
              *b_zero = n.input(qlinear ? 5 : 3), *y = n.outputs[0];
  if (!int8_products_exact())
    return "int8 products are not exact on this CPU (no VNNI), or WEFT_ONEDNN_INT8=0";
  if (qlinear) { // scales constant: per tensor, the weights' also per column
    auto one = [](const Value* v) { return v->is_constant() && v->constant->num_elements() == 1; };
    const Value* b_scale = n.inputs[4];
    if (!one(n.inputs[1]) || !one(n.inputs[6]) || !one(n.inputs[7]) || !a_zero || !one(a_zero) ||
        !b_scale->is_constant() ||
        (b_scale->constant->num_elements() != 1 && b_scale->type.shape->size() != 1) ||
        (y->type.dtype != DType::kU8 && y->type.dtype != DType::kI8))
      return "scales or zero points that are not constants per tensor (or per column)";
  }
  if ((a->type.dtype != DType::kU8 && a->type.dtype != DType::kI8) || b->type.dtype != DType::kI8 ||
      !b->is_constant() || b->constant->rank() != 2 || !a->type.shape || a->type.shape->size() < 2)
    return "not u8 or s8 activations by constant 2-D s8 weights";
  if (const Value* bias = n.op_type == Op::kQLinearMatMulBias ? n.input(8) : nullptr;
      bias &&
      (!bias->is_constant() || bias->type.dtype != DType::kI32 || bias->constant->rank() != 1 ||
       bias->constant->num_elements() != b->constant->dims()[1]))
    return "a bias that is not a constant int32 [N]";
  if (a_zero && shape_num_elements(*a_zero->type.shape) != 1) return "a zero point per row of A";
  if (b_zero) {
    std::vector<int64_t> zeros =
        b_zero->is_constant() ? b_zero->constant->to_int64_vector() : std::vector<int64_t>{1};
    if (std::any_of(zeros.begin(), zeros.end(), [](int64_t z) { return z != 0; }))
      return "the weights' zero point is not 0";
  }
  for (const Value* v : {a, y}) {
    std::optional<int64_t> elements = shape_num_elements(*v->type.shape);
    if (!elements || *elements == 0) return fmt::format("'{}' is empty or symbolic", v->name);
  }
  // A JIT kernel for the product alone (the call may absorb less than it hopes, never this).
  try {
    using T = memory::data_type;
    Dims da = dims_of(a), db = dims_of(b);
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < da.size(); ++i)
      rows *= da[i];
    memory::desc am({rows, da.back()}, a->type.dtype == DType::kU8 ? T::u8 : T::s8,
                    memory::format_tag::ab);
    memory::desc bm(db, T::s8, memory::format_tag::any),
        ym({rows, db[1]}, qlinear ? T::f32 : T::s32, memory::format_tag::ab);
    dnnl::primitive_attr attr;
    if (a_zero) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(am, bm, ym), attr, engine());
    if (std::string(pd.impl_info_str()).starts_with("ref"))
      return "oneDNN has only its reference int8 matmul for it";
  } catch (const dnnl::error& e) {
    return fmt::format("oneDNN: {}", e.what());
  }
  return std::nullopt;
}

bool onednn_resamples(const Node& n) {
  if (n.op_type != Op::kResize || n.inputs[0]->type.dtype != DType::kF32 ||
      !n.inputs[0]->type.has_static_shape() || !n.outputs[0]->type.has_static_shape())
    return false;
  const auto& at = n.attrs_as<ResizeAttrs>();
  Dims dx = dims_of(n.inputs[0]), dy = dims_of(n.outputs[0]);
  std::optional<std::vector<double>> scales = resize_scales(n);
  bool half_pixel = at.coordinate_transformation_mode == ResizeCoordinates::kHalfPixel ||
                    (at.coordinate_transformation_mode == ResizeCoordinates::kPytorchHalfPixel &&
                     std::all_of(dy.begin() + 2, dy.end(), [](int64_t d) { return d > 1; }));
  bool fits = at.mode == ResizeMode::kLinear && half_pixel && !at.antialias && scales &&
              dx.size() >= 3 && dx.size() <= 5 && dx[0] == dy[0] && dx[1] == dy[1];
  for (size_t d = 2; fits && d < dx.size(); ++d) {
    double ratio = static_cast<double>(dy[d]) / static_cast<double>(dx[d]);
    fits = dx[d] > 0 && std::abs((*scales)[d] - ratio) <= 1e-12 * ratio;
  }
  return fits;
}

namespace {

// Whether "concat" joins f32 values of static shapes along their last dim (a channels-last
// value's channels).
bool channels_concat(const Node& concat) {
  int64_t rank = static_cast<int64_t>(concat.outputs[0]->type.shape->size());
  int64_t axis = concat.attrs_as<AxisAttrs>().axis;
  if (axis != rank - 1 && axis != -1) return false;
  return std::all_of(concat.inputs.begin(), concat.inputs.end(), [](const Value* v) {
    return v && v->type.dtype == DType::kF32 && v->type.has_static_shape();
  });
}

// The call over static shapes. "any_implementation" takes the largest form that builds, even
// on oneDNN's reference implementation (a dynamic call at run time, whose form is fixed).
std::optional<LibraryCall> static_call(const Node& node, const SoleReader& sole_reader,
                                       const std::function<bool(const Node*)>& free,
                                       std::string* why_not, bool any_implementation = false) {
  using Builder = std::optional<LibraryCall> (*)(const Node&, const Absorbed&, std::string*);
  static const std::unordered_map<Op, Builder> kBuilders = {
      {Op::kMatMul, matmul_call},
      {Op::kMatMulInteger, matmul_call},
      {Op::kQLinearMatMul, matmul_call},
      {Op::kQLinearMatMulBias, matmul_call},
      {Op::kGemm, gemm_call},
      {Op::kQLinearConv, qlinear_conv_call},
      {Op::kQLinearConvChannelsLast, qlinear_conv_call},
      {Op::kConv, conv_call},
      {Op::kConvTranspose, conv_transpose_call},
      {Op::kResize, resize_call},
      {Op::kConvChannelsLast, conv_call},
      {Op::kMaxPool, pool_call},
      {Op::kAveragePool, pool_call},
      {Op::kMaxPoolChannelsLast, pool_call},
      {Op::kAveragePoolChannelsLast, pool_call}};
  auto it = kBuilders.find(node.op_type);
  if (it == kBuilders.end()) return std::nullopt;
  std::vector<const Value*> values(node.inputs.begin(), node.inputs.end());
  if (node.op_type == Op::kResize) values.resize(1); // roi, scales and sizes: parameters
  values.insert(values.end(), node.outputs.begin(), node.outputs.end());
  // (The int8 calls check their values.)
  bool integer = node.op_type == Op::kMatMulInteger || node.op_type == Op::kQLinearMatMul ||
                 node.op_type == Op::kQLinearMatMulBias || node.op_type == Op::kQLinearConv ||
                 node.op_type == Op::kQLinearConvChannelsLast;
  // Max pooling of u8 or s8 values, whose order dequantizing keeps (quantized_products.h).
  DType x_type = node.inputs[0]->type.dtype;
  bool int8_pool = node.op_type == Op::kMaxPool && (x_type == DType::kU8 || x_type == DType::kI8);
  if (std::optional<std::string> why =
          integer || int8_pool ? std::nullopt : unsupported_values(values)) {
    *why_not = *why; // (Indices are i64)
    return std::nullopt;
  }
  Absorbed all;
  const Value* v = node.outputs[0];
  if (integer) { // MatMulInteger's post-ops only after a Cast to f32, which it absorbs
    const Node* cast = node.op_type == Op::kMatMulInteger ? sole_reader(v) : nullptr;
    bool to_f32 = cast && free(cast) && cast->op_type == Op::kCast &&
                  cast->outputs[0]->type.dtype == DType::kF32;
    all.output_cast = to_f32 ? cast : nullptr;
    v = to_f32 ? cast->outputs[0] : nullptr;
  }
  for (const Node* e = v && !int8_pool ? sole_reader(v) : nullptr; e && free(e);
       e = sole_reader(v)) {
    std::optional<PostOp> p = post_op(*e, v);
    if (!p) break;
    all.epilogue.push_back(*p);
    v = e->outputs[0];
  }
  // A convolution, MatMul or Gemm of a bf16 model (narrow_in_f32 made it f32 between Casts)
  // multiplies in bf16 where the CPU does natively: its operands come from bf16 through Casts
  // (or are constant bf16 values), so the products are as exact as in f32 (sums in f32). The
  // call then reads the bf16 operands and writes its result to bf16 itself (AMX: 3-4x the f32
  // convolution's speed on a Xeon with AMX, docs/library.md).
  // A channels-last convolution's source may be the Transpose of such a Cast (a model's
  // input); the call then reads the bf16 value channels-first, reordered to channels-last.
  bool conv = node.op_type == Op::kConv || node.op_type == Op::kConvChannelsLast;
  bool product = node.op_type == Op::kMatMul || node.op_type == Op::kGemm;
  if ((conv || product) && bf16_products_native()) {
    for (size_t i = 0; i < (conv ? 1 : 2); ++i) {
      const Node* c = node.inputs[i]->producer;
      const Node* t = nullptr;
      if (node.op_type == Op::kConvChannelsLast && c && c->op_type == Op::kTranspose && free(c) &&
          sole_reader(c->outputs[0]) == &node && perm_of(*c) == to_channels_last(c->inputs[0])) {
        t = c;
        c = c->inputs[0]->producer;
      }
      if (c && c->op_type == Op::kCast && free(c) && c->inputs[0]->type.dtype == DType::kBF16 &&
          sole_reader(c->outputs[0]) == (t ? t : &node)) {
        all.input_casts[i] = c;
        all.cast_transpose = t;
      }
    }
    if (!all.input_casts[0] || (!all.input_casts[1] && !holds_bf16(node.inputs[1]))) {
      all.input_casts = {nullptr, nullptr};
      all.cast_transpose = nullptr;
    }
    const Node* r = all.input_casts[0] ? sole_reader(v) : nullptr;
    if (r && r->op_type == Op::kCast && free(r) && r->outputs[0]->type.dtype == DType::kBF16)
      all.result_cast = r;
  }
  if (node.op_type == Op::kMatMul) {
    auto is_transpose = [&](const Node* t) {
      return t && t->op_type == Op::kTranspose && free(t) && t->inputs[0] &&
             t->inputs[0]->type.dtype == DType::kF32 && t->inputs[0]->type.shape->size() >= 2;
    };
    // An A that a Transpose moves across batch dims, against 2-D weights, is not absorbed:
    // its rows would not be one strided matrix, and oneDNN then takes its slow batched gemm
    // (an encoder's input projection after Transpose(x, [1, 0, 2]): 3.6 ms) where a plain
    // copy and its brgemm take 2.2 ms.
    auto batch_moving = [&](const Node* t) {
      Ints perm = perm_of(*t);
      for (size_t d = 0; d + 2 < perm.size(); ++d) {
        if (perm[d] != static_cast<int64_t>(d)) return true;
      }
      return false;
    };
    bool weights_2d = node.inputs[1]->type.shape->size() == 2;
    for (size_t i = 0; i < 2; ++i) {
      const Node* t = node.inputs[i]->producer;
      if (i == 0 && weights_2d && is_transpose(t) && batch_moving(t)) continue;
      if (is_transpose(t) && sole_reader(t->outputs[0]) == &node) all.input_transposes[i] = t;
    }
    if (const Node* t = sole_reader(v); is_transpose(t)) all.output_transpose = t;
  }
  // A 2-D channels-last convolution's source made by a Concat along channels, read by it alone:
  // Weft's Winograd kernel reads the parts in place (conv_call_in); static shapes only (a call
  // over symbolic dims absorbs no producer but Transposes: dynamic_call.cc).
  if (const Node* c = node.op_type == Op::kConvChannelsLast ? node.inputs[0]->producer : nullptr;
      c && c->op_type == Op::kConcat && free(c) && sole_reader(c->outputs[0]) == &node &&
      dims_of(node.inputs[0]).size() == 4 && channels_concat(*c))
    all.input_concat = c;
  static const std::set<Op> kBetweenRegions = {Op::kMaxPool, Op::kAveragePool, Op::kConvTranspose,
                                               Op::kResize};
  if (kBetweenRegions.contains(node.op_type)) { // channels_last's Transposes (Activations)
    const Node* t = node.inputs[0]->producer;
    if (t && t->op_type == Op::kTranspose && free(t) && perm_of(*t) == Ints{0, 3, 1, 2} &&
        sole_reader(t->outputs[0]) == &node)
      all.input_transposes[0] = t;
    const Node* o = sole_reader(v);
    if (o && o->op_type == Op::kTranspose && free(o) && perm_of(*o) == Ints{0, 2, 3, 1})
      all.output_transpose = o;
  }
  // The largest form oneDNN implements (a reference implementation does not count; for
  // MatMul and Gemm not even alone, as the generated kernel is over 10x faster than oneDNN's
  // reference matmul): the Transposes with the longest prefix of the epilogue that works,
  // then the prefixes alone, then the node alone. A Transpose left out is a pass over memory
  // of its own; a post-op left out fuses into the generated kernel after the call (attention's
  // scale and mask, which oneDNN 2.6 runs only in its reference matmul, into the softmax).
  bool matmul = node.op_type == Op::kMatMul || node.op_type == Op::kGemm || integer;
  bool transposes = all.output_transpose || all.input_transposes[0] || all.input_transposes[1] ||
                    all.input_concat;
  // bf16 products (with the Casts) first, where they apply.
  std::vector<Absorbed> attempts;
  for (bool with_casts : {true, false}) {
    if (with_casts && !all.input_casts[0]) continue;
    for (bool with_transposes : {true, false}) {
      if (with_transposes && !transposes) continue;
      for (size_t k = all.epilogue.size() + 1; k-- > 0;) {
        Absorbed a;
        a.output_cast = all.output_cast;
        a.epilogue.assign(all.epilogue.begin(), all.epilogue.begin() + static_cast<ptrdiff_t>(k));
        if (with_transposes) {
          a.input_transposes = all.input_transposes;
          a.input_concat = all.input_concat;
          if (k == all.epilogue.size()) a.output_transpose = all.output_transpose;
        }
        if (with_casts) {
          a.input_casts = all.input_casts;
          a.cast_transpose = all.cast_transpose;
          if (k == all.epilogue.size()) a.result_cast = all.result_cast;
        }
        attempts.push_back(std::move(a));
      }
    }
  }
  for (const Absorbed& attempt : attempts) {
    bool alone = &attempt == &attempts.back();
    try {
      std::optional<LibraryCall> call = it->second(node, attempt, why_not);
      bool reference =
          call && !any_implementation && call->kernel->describe().find("(ref") != std::string::npos;
      if (reference && alone && matmul)
        *why_not = "oneDNN has only its reference matmul for this form";
      if (call && (!reference || (alone && !matmul))) {
        for (const Node* c : attempt.input_casts) {
          if (c) call->nodes.push_back(c);
        }
        if (attempt.cast_transpose) call->nodes.push_back(attempt.cast_transpose);
        for (const Node* t : attempt.input_transposes) {
          if (t) call->nodes.push_back(t);
        }
        if (attempt.input_concat) call->nodes.push_back(attempt.input_concat);
        call->nodes.push_back(&node);
        if (attempt.output_cast) call->nodes.push_back(attempt.output_cast);
        for (const PostOp& p : attempt.epilogue)
          call->nodes.push_back(p.node);
        if (attempt.result_cast) call->nodes.push_back(attempt.result_cast);
        if (attempt.output_transpose) call->nodes.push_back(attempt.output_transpose);
        return call;
      }
    } catch (const dnnl::error& e) {
      // Not implemented for these shapes or attributes: generated code runs the node.
      *why_not = fmt::format("oneDNN: {}", e.what());
    }
  }
  return std::nullopt;
}

} // namespace

std::optional<LibraryCall> dnnl_call(const Node& node, const SoleReader& sole_reader,
                                     const std::function<bool(const Node*)>& free,
                                     std::string* why_not) {
  if (has_symbolic_shapes(node)) {
    if (std::optional<LibraryCall> call = sgemm_call(node, sole_reader, free)) return call;
    return dynamic_call(node, sole_reader, free, why_not, static_call);
  }
  return static_call(node, sole_reader, free, why_not);
}

} // namespace weft::library
