// MatMul, MatMulInteger, QLinearMatMul and Gemm as oneDNN's matmul primitive: operands in
// plain strides (a Transpose absorbed as strides), batch dims folded into rows where they
// step evenly, constant weights packed once, bf16 products where the CPU has them natively.
#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "weft/graph/op_table.h"
#include "weft/graph/shape_functions.h"
#include "weft/library/dnnl.h"
#include "weft/library/dnnl_epilogue.h"
#include "weft/library/dnnl_kernel.h"
#include "weft/library/gemv.h"

namespace weft::library {

namespace {

// dst = src x weights (+ bias) over plain row-major operands, numpy batch broadcasting.
// An operand or the output may be another value read or written through strides (the
// input or output of a Transpose the call absorbed).
struct MatMulOperands {
  memory::desc a, b, bias, y;
  float alpha = 1.0f;
  const Value *a_value = nullptr, *b_value = nullptr, *y_value = nullptr;
  const Value* a_zero_point = nullptr; // MatMulInteger's and QLinearMatMul's, one element
  // QLinearMatMul's requantization: output scales (one, or one per column) and zero point.
  std::vector<float> scales;
  int32_t y_zero_point = 0;
  bool bf16 = false; // bf16 products: constant f32 weights packed as bf16
};

constexpr int64_t kPaddedWeightsRows = 300;

// Constant f32 weights that run faster row-major with each row padded by 16 floats than in
// the layout oneDNN prefers for "pd", or none. Where its matmul is the gemm-based one (AVX2, no
// brgemm), that layout is B transposed (B as given when 64-byte aligned is as slow), which its
// sgemm multiplies 1.4-2.1x slower when A has at most 300 rows all told (above, 512 and more,
// as fast or faster): rows 64 bytes apart from a power-of-two stride no longer share cache
// sets. ConvNeXt-Tiny's stage-4 product 49x768x3072 3.25 -> 1.51 ms, stage 3's 196x384x1536
// 2.21 -> 1.58, BERT-base's 128x768x3072 8.0 -> 4.0 (AMD EPYC, 2 threads, 2026-11-30).
std::optional<memory::desc> padded_weights(const dnnl::matmul::primitive_desc& pd,
                                           const MatMulOperands& m) {
  if (m.a.data_type() != memory::data_type::f32 || pd.impl_info_str() != std::string("gemm:jit"))
    return std::nullopt;
  const Dims b = m.b.dims(), y = m.y.dims();
  if (b.size() < 2 || y.size() < 2 ||
      std::any_of(b.begin(), b.end() - 2, [](int64_t e) { return e != 1; }))
    return std::nullopt;
  int64_t rows = 1; // weights shared by every matrix: one product of all their rows
  for (size_t i = 0; i + 1 < y.size(); ++i)
    rows *= y[i];
  if (rows > kPaddedWeightsRows) return std::nullopt;
  int64_t k = b[b.size() - 2], n = b.back();
  Dims strides(b.size(), k * (n + 16));
  strides.back() = 1;
  strides[b.size() - 2] = n + 16;
  return memory::desc(b, memory::data_type::f32, strides);
}

// Constant weights take oneDNN's preferred layout, reordered (packed) once here, as ONNX
// Runtime prepacks them: the brgemm kernels then read B in the blocks they compute on; or
// padded_weights' layout.
LibraryCall make_matmul(const Node& n, const MatMulOperands& m, const Value* bias,
                        const std::vector<PostOp>& ops) {
  LibraryCall call;
  const Value* w = m.b_value ? m.b_value : n.inputs[1];
  std::vector<DnnlKernel::Arg> args = {
      {DNNL_ARG_SRC, position(call.values, m.a_value ? m.a_value : n.inputs[0]), m.a}};
  int w_buffer = position(call.values, w); // bound even when packed, for the profile
  if (bias) args.push_back({DNNL_ARG_BIAS, position(call.values, bias), m.bias});
  dnnl::primitive_attr attr = post_op_attr(ops, call, args, m.y.dims());
  if (m.alpha != 1.0f) attr.set_output_scales(0, {m.alpha});
  if (!m.scales.empty()) {
    int columns = static_cast<int>(m.y.dims().size()) - 1;
    attr.set_output_scales(m.scales.size() == 1 ? 0 : 1 << columns, m.scales);
  }
  DnnlKernel::Owned owned;
  if (m.y_zero_point != 0) {
    attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
    owned.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST,
                  std::make_shared<const memory>(s32_scalar(m.y_zero_point)));
  }
  if (const Value* z = m.a_zero_point) { // oneDNN reads it as s32: converted at each run
    attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    args.push_back({DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, position(call.values, z),
                    memory::desc({1}, m.a.data_type(), memory::format_tag::x),
                    memory::desc({1}, memory::data_type::s32, memory::format_tag::x)});
  }
  memory::data_type packed_type = m.bf16 ? memory::data_type::bf16 : m.b.data_type();
  memory::desc wmd =
      w->is_constant() ? memory::desc(m.b.dims(), packed_type, memory::format_tag::any) : m.b;
  dnnl::matmul::desc d =
      bias ? dnnl::matmul::desc(m.a, wmd, m.bias, m.y) : dnnl::matmul::desc(m.a, wmd, m.y);
  dnnl::matmul::primitive_desc pd(d, attr, engine());
  std::optional<memory::desc> padded = w->is_constant() ? padded_weights(pd, m) : std::nullopt;
  if (padded) {
    d = bias ? dnnl::matmul::desc(m.a, *padded, m.bias, m.y)
             : dnnl::matmul::desc(m.a, *padded, m.y);
    pd = dnnl::matmul::primitive_desc(d, attr, engine());
  }
  if (w->is_constant()) {
    owned.emplace(DNNL_ARG_WEIGHTS, reordered_constant(w, m.b, pd.weights_desc()));
  } else {
    args.push_back({DNNL_ARG_WEIGHTS, w_buffer, m.b});
  }
  args.push_back(
      {DNNL_ARG_DST, position(call.values, m.y_value ? m.y_value : final_output(n, ops)), m.y});
  Dims dy = m.y.dims();
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < dy.size(); ++i)
    batches *= dy[i];
  std::string gemm = fmt::format("{}x{}x{}", dy.size() < 2 ? 1 : dy[dy.size() - 2],
                                 m.a.dims().back(), dy.back()); // M x K x N
  if (batches != 1) gemm = fmt::format("{} batches of {}", batches, gemm);
  bool integer =
      m.a.data_type() == memory::data_type::u8 || m.a.data_type() == memory::data_type::s8;
  call.kernel = std::make_shared<DnnlKernel>(
      dnnl::matmul(pd), std::move(args), std::move(owned),
      fmt::format("oneDNN {}matmul {} ({}{}{})", integer ? "int8 " : "", gemm, pd.impl_info_str(),
                  padded             ? ", weights in padded rows"
                  : w->is_constant() ? ", packed weights"
                                     : "",
                  m.bf16 ? ", bf16 products" : ""));
  return call;
}

// The rows of A that prompt_weights_layout asks oneDNN about: a prompt's few dozen tokens.
// (oneDNN's brgemm matmul blocks B by its columns alone; the gemm-based one on padded rows
// up to kPaddedWeightsRows.)
constexpr int64_t kPromptRows = 32;

} // namespace

memory::desc prompt_weights_layout(const Dims& kn) {
  MatMulOperands m; // as fold_rows leaves a prompt's product
  m.a = row_major({kPromptRows, kn[0]}, memory::data_type::f32);
  m.b = row_major(kn, memory::data_type::f32);
  m.y = row_major({kPromptRows, kn[1]}, memory::data_type::f32);
  memory::desc any(kn, memory::data_type::f32, memory::format_tag::any);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(m.a, any, m.y), own_scratchpad(), engine());
  if (std::optional<memory::desc> padded = padded_weights(pd, m))
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(m.a, *padded, m.y), own_scratchpad(),
                                      engine());
  return pd.weights_desc();
}

namespace {

// Operands "m" as a call with bf16 products reads them (Absorbed::input_casts): A, and B where
// a Cast makes it, the Casts' bf16 values; constant weights packed as bf16; the result written
// as bf16 where the call absorbed its Cast.
void read_in_bf16(MatMulOperands& m, const Absorbed& absorbed) {
  m.bf16 = true;
  m.a = in_bf16(m.a);
  m.a_value = absorbed.input_casts[0]->inputs[0];
  if (const Node* cast = absorbed.input_casts[1]) {
    m.b = in_bf16(m.b);
    m.b_value = cast->inputs[0];
  }
  if (const Node* cast = absorbed.result_cast) {
    m.y = in_bf16(m.y);
    m.y_value = cast->outputs[0];
  }
}

// "call", unless it should multiply in bf16 ("bf16") and oneDNN's kernel for it is not a bf16
// one (its name says so: "brg:avx512_core_amx_bf16"); then none, and the call without the
// Casts is tried.
std::optional<LibraryCall> bf16_kernel_only(LibraryCall call, bool bf16, std::string* why_not) {
  if (bf16 && !bf16_kernel(call.kernel->describe())) {
    *why_not = "oneDNN has no bf16 kernel for this product";
    return std::nullopt;
  }
  return call;
}

// oneDNN 2.6's AMX matmul on few rows took up to twice the time of a 1x1 convolution over
// the same product, its rows the pixels (channels-last), its weights in cache or not:
// 49x768x3072 0.62 against 0.40 ms cold, 0.44 against 0.15 warm; 196x1536x384 0.67 against
// 0.39; 196x384x1536 0.59 against 0.51; from 784 rows even (2 threads, a Xeon with AMX,
// 2026-12-01). ViT-B/32's 50 tokens have such products: its bf16 products took 19-22 ms a
// run as convolutions against 28-31 as matmuls (3 alternating runs).
constexpr int64_t kPixelRowsMax = 256;

// A bf16 product of few dense rows by constant weights (2-D after fold_rows), with a bias and
// post-ops without operands, as that convolution; none otherwise.
std::optional<LibraryCall> rows_as_pixels(const Node& n, const MatMulOperands& m, const Value* bias,
                                          const std::vector<PostOp>& ops) {
  const Value* w = m.b_value ? m.b_value : n.inputs[1];
  Dims da = m.a.dims(), dy = m.y.dims(), sb = strides_of(m.b);
  if (!m.bf16 || da.size() != 2 || !w->is_constant() || m.alpha != 1.0f || da[0] > kPixelRowsMax ||
      strides_of(m.a) != Dims{da[1], 1} || strides_of(m.y) != Dims{dy[1], 1} ||
      std::any_of(ops.begin(), ops.end(), [](const PostOp& p) { return p.binary; }))
    return std::nullopt;
  using T = memory::data_type;
  int64_t rows = da[0], k = da[1], cols = dy[1];
  memory::desc src({1, k, rows, 1}, m.a.data_type(), memory::format_tag::nhwc);
  memory::desc dst({1, cols, rows, 1}, m.y.data_type(), memory::format_tag::nhwc);
  memory::desc wmd({cols, k, 1, 1}, T::bf16, memory::format_tag::any);
  memory::desc bmd = bias ? memory::desc({cols}, T::f32, memory::format_tag::x) : memory::desc();
  LibraryCall call;
  std::vector<DnnlKernel::Arg> args = {
      {DNNL_ARG_SRC, position(call.values, m.a_value ? m.a_value : n.inputs[0]), src}};
  position(call.values, w); // bound though packed, for the profile
  if (bias) args.push_back({DNNL_ARG_BIAS, position(call.values, bias), bmd});
  dnnl::primitive_attr attr = post_op_attr(ops, call, args, dst.dims());
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::convolution_direct, src, wmd, bmd, dst, {1, 1},
                                    {0, 0}, {0, 0});
  dnnl::convolution_forward::primitive_desc pd(d, attr, engine());
  std::string impl = pd.impl_info_str();
  if (!bf16_kernel(impl)) return std::nullopt;
  // B's element (k, n) as the weights' (n, k).
  memory::desc given({cols, k, 1, 1}, m.b.data_type(), Dims{sb[1], sb[0], 1, 1});
  DnnlKernel::Owned owned;
  owned.emplace(DNNL_ARG_WEIGHTS, reordered_constant(w, given, pd.weights_desc()));
  args.push_back(
      {DNNL_ARG_DST, position(call.values, m.y_value ? m.y_value : final_output(n, ops)), dst});
  call.kernel = std::make_shared<DnnlKernel>(
      dnnl::convolution_forward(pd), std::move(args), std::move(owned),
      fmt::format("oneDNN matmul {}x{}x{} as a 1x1 convolution ({}, packed weights, bf16 products)",
                  rows, k, cols, impl));
  return call;
}

// The row stride of "md" when its leading dims (all but the last) step through its rows
// evenly, as one [rows, columns] matrix; nullopt when they do not.
std::optional<int64_t> even_rows(const memory::desc& md) {
  Dims d = md.dims(), s = strides_of(md);
  std::optional<int64_t> row_step, next;
  for (size_t i = d.size() - 1; i-- > 0;) { // innermost leading dim first
    if (d[i] == 1) continue;
    if (next && s[i] != *next) return std::nullopt;
    if (!row_step) row_step = s[i];
    next = s[i] * d[i];
  }
  // A single row: any step will do; that of a dense row (its own stride may equal the columns'
  // stride, 1 x N written through a transpose's strides, which oneDNN refuses at execution).
  return row_step.value_or(d.back() * s.back());
}

// [batch..., M, K] x [1..., K, N] as one [batch x M, K] x [K, N] matmul, when A's and the
// result's rows step evenly through the batch dims and every post-op operand either spans
// them or broadcasts over them all: oneDNN's brgemm then blocks over all the rows, where 4
// batches of 128 rows ran 7-14% slower (an encoder's projections, 2 threads).
void fold_rows(MatMulOperands& m, std::vector<PostOp>& ops) {
  Dims da = m.a.dims(), db = m.b.dims(), dy = m.y.dims();
  size_t rank = dy.size();
  auto leading = [](const Dims& d) { return Dims(d.begin(), d.end() - 1); };
  Dims rows_of_y = leading(dy), ones(rank - 1, 1);
  if (rank <= 2 || std::any_of(db.begin(), db.end() - 2, [](int64_t d) { return d != 1; })) return;
  std::optional<int64_t> a_step = even_rows(m.a), y_step = even_rows(m.y);
  if (!a_step || !y_step) return;
  for (const PostOp& p : ops) {
    if (p.binary && leading(p.src1_dims) != rows_of_y && leading(p.src1_dims) != ones) return;
  }
  int64_t rows = 1;
  for (int64_t d : rows_of_y)
    rows *= d;
  auto matrix = [](const memory::desc& of, int64_t r, int64_t c, int64_t row_step,
                   int64_t column_step) {
    return memory::desc({r, c}, of.data_type(), Dims{row_step, column_step});
  };
  Dims sb = strides_of(m.b);
  m.a = matrix(m.a, rows, da.back(), *a_step, strides_of(m.a).back());
  m.b = matrix(m.b, db[rank - 2], db.back(), sb[rank - 2], sb.back());
  m.y = matrix(m.y, rows, dy.back(), *y_step, strides_of(m.y).back());
  if (m.bias != memory::desc()) m.bias = row_major({1, dy.back()}, m.bias.data_type());
  for (PostOp& p : ops) {
    if (p.binary) p.src1_dims = {leading(p.src1_dims) == ones ? 1 : rows, p.src1_dims.back()};
  }
}

// The batch dims of a product as few as they can be: those of extent 1 in the result dropped,
// and neighbours merged into one where every operand and post-op operand either spans both
// (its outer one stepping by the inner one's whole extent) or broadcasts over both. oneDNN
// 2.6 takes its brgemm only where a result's batch steps are outer to its rows; a result
// written through a Transpose that moves its rows out of the batch dims (PyTorch's
// nn.MultiheadAttention, batch_first: [B, H, S, D] -> [S, B, H, D]) went to its slower gemm
// (0.20 against 0.16 ms at [4, 4, 128, 64]), though its B and H step as one batch dim.
void merge_batch_dims(MatMulOperands& m, std::vector<PostOp>& ops) {
  struct Shape {
    Dims dims, strides;
  };
  std::vector<Shape> shapes = {
      {m.a.dims(), strides_of(m.a)}, {m.b.dims(), strides_of(m.b)}, {m.y.dims(), strides_of(m.y)}};
  for (const PostOp& p : ops)
    if (p.binary) shapes.push_back({p.src1_dims, row_major_strides(p.src1_dims)});
  const Dims dy = m.y.dims();
  if (dy.size() <= 2 || std::any_of(shapes.begin(), shapes.end(),
                                    [&](const Shape& s) { return s.dims.size() != dy.size(); }))
    return;
  auto spans = [](const Shape& s, size_t i, const Dims& y) {
    return s.dims[i] == y[i] && s.dims[i + 1] == y[i + 1] &&
           s.strides[i] == s.strides[i + 1] * s.dims[i + 1];
  };
  auto erase = [](Dims& d, size_t i) { d.erase(d.begin() + static_cast<ptrdiff_t>(i)); };
  bool changed = false;
  for (size_t i = dy.size() - 2; i-- > 0;) { // batch dims, innermost first
    Dims y = shapes[2].dims;
    bool drop = y[i] == 1;
    bool merge =
        !drop && i + 3 < y.size() && std::all_of(shapes.begin(), shapes.end(), [&](const Shape& s) {
          return spans(s, i, y) || (s.dims[i] == 1 && s.dims[i + 1] == 1);
        });
    if (!drop && !merge) continue;
    for (Shape& s : shapes) {
      if (merge) {
        s.dims[i + 1] *= s.dims[i]; // the inner one's step
      }
      erase(s.dims, i);
      erase(s.strides, i);
    }
    changed = true;
  }
  // A single batch dim that steps inside an operand's matrix goes behind a leading unit one:
  // oneDNN 2.6's brgemm takes such a product as 4-D (acbd), not as 3-D (bac).
  auto inner_batch = [](const Shape& s) {
    return s.dims[0] > 1 && s.strides[0] < std::max(s.strides[1], s.strides[2]);
  };
  if (shapes[2].dims.size() == 3 && std::any_of(shapes.begin(), shapes.begin() + 3, inner_batch)) {
    for (Shape& s : shapes) {
      int64_t size = 1;
      for (size_t d = 0; d < 3; ++d)
        size = std::max(size, s.dims[d] * s.strides[d]);
      s.dims.insert(s.dims.begin(), 1);
      s.strides.insert(s.strides.begin(), size);
    }
    changed = true;
  }
  if (!changed) return;
  // A single row's step is that of a dense row, as even_rows gives it (oneDNN refuses a row
  // step equal to the column stride at execution: 1 x N written through a Transpose).
  for (Shape& s : shapes) {
    size_t r = s.dims.size();
    if (s.dims[r - 2] == 1) s.strides[r - 2] = s.dims[r - 1] * s.strides[r - 1];
  }
  m.a = memory::desc(shapes[0].dims, m.a.data_type(), shapes[0].strides);
  m.b = memory::desc(shapes[1].dims, m.b.data_type(), shapes[1].strides);
  m.y = memory::desc(shapes[2].dims, m.y.data_type(), shapes[2].strides);
  if (m.bias != memory::desc()) {
    Dims row(shapes[2].dims.size(), 1);
    row.back() = shapes[2].dims.back();
    m.bias = row_major(row, m.bias.data_type());
  }
  size_t k = 3;
  for (PostOp& p : ops)
    if (p.binary) p.src1_dims = shapes[k++].dims;
}

} // namespace

// MatMul, and MatMulInteger as oneDNN's int8 matmul (int8_matmul_unfit): 1-D operands
// promoted as numpy does, ranks aligned with leading unit dims. The int8 matmul adds in s32
// and writes s32, or f32 when it absorbs the Cast to f32 after it (the post-ops follow the
// Cast); its activations' zero point is converted to s32 at each run. With bf16 products
// (Absorbed::input_casts), it reads the Casts' bf16 operands (constant weights packed as
// bf16) and writes f32, or bf16 where it absorbed the Cast of its result; none unless
// oneDNN's kernel for it is a bf16 one.
std::optional<LibraryCall> matmul_call(const Node& n, const Absorbed& absorbed,
                                       std::string* why_not) {
  using T = memory::data_type;
  const std::vector<PostOp>& ops = absorbed.epilogue;
  bool qlinear = n.op_type == Op::kQLinearMatMul || n.op_type == Op::kQLinearMatMulBias;
  bool integer = n.op_type == Op::kMatMulInteger || qlinear;
  if (std::optional<std::string> unfit = integer ? int8_matmul_unfit(n) : std::nullopt) {
    *why_not = *unfit;
    return std::nullopt;
  }
  auto int8 = [](const Value* v) { return v->type.dtype == DType::kU8 ? T::u8 : T::s8; };
  const Value* weights = n.inputs[qlinear ? 3 : 1];
  bool bf16 = !integer && absorbed.input_casts[0];
  T a_type = integer ? int8(n.inputs[0]) : T::f32, b_type = integer ? T::s8 : T::f32;
  T y_type = qlinear ? int8(n.outputs[0]) : integer && !absorbed.output_cast ? T::s32 : T::f32;
  Dims da = dims_of(n.inputs[0]), db = dims_of(weights);
  bool transposes =
      absorbed.input_transposes[0] || absorbed.input_transposes[1] || absorbed.output_transpose;
  if ((da.size() == 1 || db.size() == 1) && (!ops.empty() || transposes)) {
    *why_not = "a 1-D operand (the epilogue's shapes would not match)";
    return std::nullopt;
  }
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
  MatMulOperands m;
  m.a = row_major(da, a_type), m.b = row_major(db, b_type), m.y = row_major(dy, y_type);
  if (integer) m.a_zero_point = n.input(2);
  if (bf16) read_in_bf16(m, absorbed);
  if (qlinear) { // requantized as QLinearMatMul's reference does: a_scale * b_scale / y_scale
    m.b_value = weights;
    const Tensor& bs = *n.inputs[4]->constant;
    auto as = static_cast<float>(n.inputs[1]->constant->get_double(0));
    auto ys = static_cast<float>(n.inputs[6]->constant->get_double(0));
    for (int64_t c = 0; c < bs.num_elements(); ++c)
      m.scales.push_back(as * static_cast<float>(bs.get_double(c)) / ys);
    m.y_zero_point = static_cast<int32_t>(n.inputs[7]->constant->get_int64(0));
  }
  if (const Node* t = absorbed.input_transposes[0]) {
    m.a = transposed_input(*t, rank);
    m.a_value = t->inputs[0];
  }
  if (const Node* t = absorbed.input_transposes[1]) {
    m.b = transposed_input(*t, rank);
    m.b_value = t->inputs[0];
  }
  if (const Node* t = absorbed.output_transpose) {
    m.y = transposed_output(dy, *t);
    m.y_value = t->outputs[0];
  }
  if (!m.y_value) m.y_value = final_output(absorbed.output_cast ? *absorbed.output_cast : n, ops);
  // A first Add of a row vector (a Linear's bias; not a broadcast scalar, for which oneDNN
  // has no bias) is the matmul's own bias: added to the accumulators as the binary post-op
  // would be, and cheaper.
  std::vector<PostOp> rest = ops;
  const Value* bias = nullptr;
  if (n.op_type == Op::kQLinearMatMulBias) { // int32, added to the sums before requantization
    bias = n.inputs[8];
    Dims row(rank, 1);
    row.back() = dy.back();
    m.bias = row_major(row, T::s32);
  } else if (!rest.empty() && rest[0].algorithm == dnnl::algorithm::binary_add &&
             rest[0].src1_dims.back() == dy.back() &&
             std::all_of(rest[0].src1_dims.begin(), rest[0].src1_dims.end() - 1,
                         [](int64_t d) { return d == 1; })) {
    bias = rest[0].src1;
    m.bias = plain(rest[0].src1_dims);
    rest.erase(rest.begin());
  }
  if (!integer && !bf16 && !transposes && gemv_enabled()) { // a row by constant weights: Weft's own
    if (std::optional<LibraryCall> call = gemv_call(n.inputs[0], weights, bias, m.y_value, rest))
      return call;
  }
  merge_batch_dims(m, rest);
  fold_rows(m, rest);
  if (std::optional<LibraryCall> call = rows_as_pixels(n, m, bias, rest)) return call;
  return bf16_kernel_only(make_matmul(n, m, bias, rest), bf16, why_not);
}

// Gemm: transposes as strides; C as a broadcast bias when alpha and beta allow it (a bias
// row, or a binary-add post-op when C varies along M). bf16 products as MatMul's.
std::optional<LibraryCall> gemm_call(const Node& n, const Absorbed& absorbed,
                                     std::string* why_not) {
  const std::vector<PostOp>& ops = absorbed.epilogue;
  const auto& at = n.attrs_as<GemmAttrs>();
  Dims sa = dims_of(n.inputs[0]), sb = dims_of(n.inputs[1]);
  int64_t m = at.trans_a ? sa[1] : sa[0], k = at.trans_a ? sa[0] : sa[1];
  int64_t nn = at.trans_b ? sb[0] : sb[1];
  const Value* c = n.input(2);
  bool bf16 = absorbed.input_casts[0] != nullptr;
  if (!bf16 && !at.trans_a && m == 1 && at.alpha == 1.0f && gemv_enabled() &&
      (!c || at.beta == 0.0f || at.beta == 1.0f)) { // a row by constant weights: Weft's own
    const Value* bias = c && at.beta != 0.0f ? c : nullptr;
    if (std::optional<LibraryCall> call =
            gemv_call(n.inputs[0], n.inputs[1], bias, final_output(n, ops), ops, at.trans_b))
      return call;
  }
  MatMulOperands operands;
  operands.a = memory::desc({m, k}, memory::data_type::f32, at.trans_a ? Dims{1, m} : Dims{k, 1});
  operands.b = memory::desc({k, nn}, memory::data_type::f32, at.trans_b ? Dims{1, k} : Dims{nn, 1});
  operands.y = plain({m, nn});
  operands.alpha = at.alpha;
  if (bf16) read_in_bf16(operands, absorbed);
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
    if (dc[0] != 1) {
      // A bias that varies along M runs on oneDNN's reference matmul (~1000x slower here);
      // as the first post-op, a binary add, it keeps the JIT kernel.
      PostOp add;
      add.node = &n;
      add.binary = true;
      add.algorithm = dnnl::algorithm::binary_add;
      add.src1 = c;
      add.src1_dims = dc;
      std::vector<PostOp> with_c = {add};
      with_c.insert(with_c.end(), ops.begin(), ops.end());
      return bf16_kernel_only(make_matmul(n, operands, nullptr, with_c), bf16, why_not);
    }
    operands.bias = plain(dc);
  } else {
    c = nullptr;
  }
  if (std::optional<LibraryCall> call = rows_as_pixels(n, operands, c, ops)) return call;
  return bf16_kernel_only(make_matmul(n, operands, c, ops), bf16, why_not);
}

} // namespace weft::library
