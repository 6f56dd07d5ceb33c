#include "weft/graph/passes/canonicalize_rewrites.h"

#include <array>
#include <cmath>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "weft/graph/shape_functions.h"

namespace weft::canonicalize_rewrites {

Value* insert_op(Graph& graph, const Node& at, Op op, std::vector<Value*> inputs, TensorType type,
                 OpAttrs attrs, const std::string& value_name, const std::string& node_name) {
  std::string base = fmt::format("{}_{}", at.name, op);
  Value* out =
      graph.add_value(graph.unique_name(value_name.empty() ? base : value_name), std::move(type));
  Node n;
  n.name = graph.unique_node_name(node_name.empty() ? base : node_name);
  n.op_type = op;
  n.opset = at.opset;
  n.conditional = at.conditional;
  n.def = find_op(op, at.opset);
  n.attrs = std::move(attrs);
  n.inputs = std::move(inputs);
  n.outputs = {out};
  graph.insert_node_before(&at, std::move(n));
  return out;
}

bool is_identity_perm(const Ints& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

Value* transposed(Graph& graph, const Node& at, Value* x, const Ints& perm) {
  if (is_identity_perm(perm)) return x;
  Ints dims = shape_static_dims(*x->type.shape), out;
  for (int64_t p : perm)
    out.push_back(dims[static_cast<size_t>(p)]);
  const Node* inner = x->producer;
  Ints composed = perm;
  if (inner && inner->op_type == Op::kTranspose) {
    if (std::optional<Ints> p = transpose_perm(*inner); p && p->size() == perm.size()) {
      for (size_t i = 0; i < perm.size(); ++i)
        composed[i] = (*p)[static_cast<size_t>(perm[i])];
      x = inner->inputs[0];
      if (is_identity_perm(composed)) return x;
    }
  }
  return insert_op(graph, at, Op::kTranspose, {x}, {x->type.dtype, shape_from_dims(out)},
                   TransposeAttrs{composed});
}

namespace {

// An Einsum's labels as a matrix product's: batch ones (both operands and the result, in the
// result's order), each operand's own (m, n: that operand and the result), contracted ones (k:
// both operands only, in the first's order).
struct ProductLabels {
  std::string batch, m, n, k;
};

// The labels of "a, b -> y" as a product's, or none: each label at most once a term, at
// least one contracted and one of each operand's own (an outer product is elementwise; a
// matrix by a vector, a reduction that reads each element once: the generated kernels' own
// forms), and extents equal but for a batch label's 1 (broadcast).
std::optional<ProductLabels> product_labels(const std::string& a, const std::string& b,
                                            const std::string& y, const Ints& da, const Ints& db) {
  auto once = [](const std::string& l) {
    return std::set<char>(l.begin(), l.end()).size() == l.size();
  };
  auto has = [](const std::string& l, char c) { return l.find(c) != std::string::npos; };
  if (!once(a) || !once(b) || !once(y)) return std::nullopt;
  ProductLabels p;
  for (char c : y) {
    if (!has(a, c) && !has(b, c)) return std::nullopt;
    (has(a, c) ? (has(b, c) ? p.batch : p.m) : p.n) += c;
  }
  for (char c : a + b) { // a label of neither the result nor both operands is summed alone
    if (!has(y, c) && !(has(a, c) && has(b, c))) return std::nullopt;
    if (!has(y, c) && !has(p.k, c)) p.k += c;
  }
  if (p.k.empty() || p.m.empty() || p.n.empty()) return std::nullopt;
  for (char c : p.batch + p.k) {
    int64_t x = da[a.find(c)], z = db[b.find(c)];
    if (x != z && (!has(p.batch, c) || (x != 1 && z != 1))) return std::nullopt;
  }
  return p;
}

// "v" (labels "l", dims "d") transposed into the order of "groups", each group merged into
// one dim (a Reshape where any holds more than one label), inserted before "at".
Value* grouped(Graph& graph, const Node& at, Value* v, const std::string& l, const Ints& d,
               const std::vector<std::string>& groups) {
  Ints perm, merged;
  for (const std::string& g : groups) {
    int64_t size = 1;
    for (char c : g) {
      perm.push_back(static_cast<int64_t>(l.find(c)));
      size *= d[l.find(c)];
    }
    merged.push_back(size);
  }
  Value* t = transposed(graph, at, v, perm);
  if (merged == shape_static_dims(*t->type.shape)) return t;
  return insert_op(graph, at, Op::kReshape, {t}, {t->type.dtype, shape_from_dims(merged)},
                   reshape_to(merged));
}

} // namespace

// MatMul(Mul(a, s), b) with s a float constant of one element, and the Mul's output read by
// this MatMul only, is Mul(MatMul(a, b), s) (either operand; two scales multiply). The scale
// then joins the code after the product (attention's scores: the Softmax's kernel), and a
// Transpose before it meets the MatMul, whose oneDNN call reads it through strides. PyTorch's
// scaled_dot_product_attention exports q and k each scaled by the square root of the scale,
// each with its Transpose a kernel of its own (the GPT-2 block's: 2 x 0.035 ms of 2.4).
// f32 and f64: the product rounds once more or less than before (an ulp or two of the scores).
void scale_after_matmul(Graph& graph, Node& node, std::unordered_map<const Value*, int>& uses) {
  const Value* out = node.outputs[0];
  // f16 products are scaled first for their range (scores past 65504 overflow), and rounded
  // in f16 the scores moved by 2 ulp (onnx's test_attention_4d_gqa_*_fp16).
  DType t = out->type.dtype;
  if (node.inputs.size() != 2 || (t != DType::kF32 && t != DType::kF64)) return;
  double scale = 1.0;
  std::array<Value*, 2> operands = {node.inputs[0], node.inputs[1]};
  for (Value*& v : operands) {
    const Node* mul = v->producer;
    if (!mul || mul->op_type != Op::kMul || mul->inputs.size() != 2 || uses[v] != 1 ||
        graph.is_graph_output(v))
      continue;
    for (int c = 0; c < 2; ++c) {
      const Value* s = mul->inputs[static_cast<size_t>(c)];
      Value* x = mul->inputs[static_cast<size_t>(1 - c)];
      if (!s->is_constant() || s->constant->num_elements() != 1 || !(x->type == v->type)) continue;
      double f = s->constant->get_double(0);
      if (!std::isfinite(f)) continue;
      scale *= f;
      v = x;
      break;
    }
  }
  if (operands[0] == node.inputs[0] && operands[1] == node.inputs[1]) return;
  for (int i = 0; i < 2; ++i) {
    Value*& in = node.inputs[static_cast<size_t>(i)];
    if (in != operands[static_cast<size_t>(i)]) {
      --uses[in];
      ++uses[operands[static_cast<size_t>(i)]];
    }
  }
  // The product takes the node's name; the node becomes the Mul that writes its output.
  std::string name = node.name;
  graph.rename_node(&node, graph.unique_node_name(name + "_scale"));
  Value* product = insert_op(graph, node, Op::kMatMul, {operands[0], operands[1]}, out->type,
                             NoAttrs{}, out->name + "_unscaled", name);
  Tensor factor(out->type.dtype, {});
  factor.set_double(0, scale);
  node.op_type = Op::kMul;
  node.def = find_op(Op::kMul, node.opset);
  node.attrs = NoAttrs{};
  node.inputs = {product,
                 graph.add_constant(graph.unique_name(name + "_scale"), std::move(factor))};
}

// Tanh(Softplus(x)), with the Softplus read by the Tanh alone, as Mish's lowering computes it
// (kernel/lower_elementwise.cc): n / (n + 2) with n = e^x (e^x + 2), and 1 from 20 on. The
// TorchScript exporter writes Mish so (x * tanh(softplus(x))), and the log and tanh after
// each other left its kernel scalar code. f32 and f64, from opset 9 (Where).
void tanh_of_softplus(Graph& graph, Node& node, std::unordered_map<const Value*, int>& uses) {
  Value* s = node.inputs[0];
  const Node* softplus = s->producer;
  DType t = s->type.dtype;
  if (!softplus || softplus->op_type != Op::kSoftplus || uses[s] != 1 || graph.is_graph_output(s) ||
      (t != DType::kF32 && t != DType::kF64) || node.opset < 9)
    return;
  Value* x = softplus->inputs[0];
  auto scalar = [&](const std::string& name, double v) {
    Tensor c(t, {});
    c.set_double(0, v);
    return graph.add_constant(graph.unique_name(node.name + name), std::move(c));
  };
  const TensorType& type = node.outputs[0]->type;
  Value* e = insert_op(graph, node, Op::kExp, {x}, type);
  Value* n = insert_op(graph, node, Op::kMul,
                       {e, insert_op(graph, node, Op::kAdd, {e, scalar("_two", 2)}, type)}, type);
  Value* ratio =
      insert_op(graph, node, Op::kDiv,
                {n, insert_op(graph, node, Op::kAdd, {n, scalar("_two", 2)}, type)}, type);
  Value* past = insert_op(graph, node, Op::kGreater, {x, scalar("_twenty", 20)},
                          TensorType{DType::kBool, type.shape});
  node.op_type = Op::kWhere; // in place of the Tanh
  node.def = find_op(Op::kWhere, node.opset);
  node.inputs = {past, scalar("_one", 1), ratio};
  --uses[s];
  uses[x] += 2; // the Exp and the Greater
}

void one_plus_tanh(Graph& graph, Node& node, std::unordered_map<const Value*, int>& uses) {
  for (int side = 0; side < 2; ++side) {
    Value* t = node.inputs[static_cast<size_t>(side)];
    const Value* one = node.inputs[static_cast<size_t>(1 - side)];
    const Node* tanh = t->producer;
    DType type = t->type.dtype;
    bool real =
        type == DType::kF32 || type == DType::kF64 || type == DType::kF16 || type == DType::kBF16;
    if (!tanh || tanh->op_type != Op::kTanh || uses[t] != 1 || graph.is_graph_output(t) || !real ||
        !one->is_constant() || one->constant->num_elements() != 1 ||
        one->constant->get_double(0) != 1.0 || !t->type.shape ||
        one->constant->dims().size() > t->type.shape->size())
      continue;
    Tensor two(type, {});
    two.set_double(0, 2.0);
    Value* c = graph.add_constant(graph.unique_name(node.name + "_two"), std::move(two));
    Value* u = insert_op(graph, node, Op::kMul, {tanh->inputs[0], c}, t->type);
    Value* sigmoid = insert_op(graph, node, Op::kSigmoid, {u}, t->type);
    node.op_type = Op::kMul; // in place of the Add
    node.def = find_op(Op::kMul, node.opset);
    node.inputs = {sigmoid, c};
    --uses[t];
    --uses[one];
    uses[c] += 2;
    return;
  }
}

// Add(Conv(x, w, b), v) with v one value per output channel ([C], [C, 1, 1], [1, C, 1, 1]
// against [N, C, H, W]: a diffusion UNet's time embedding), the Conv read by the Add alone, is
// Conv(x, w, b + v), the bias computed at run time (or folded here where v and b are
// constants). The convolution then runs as it does with its own bias: a per-channel operand
// was a binary post-op, which kept it off the Winograd kernels (a DDPM UNet's 192 -> 64
// channels at 64x64: 2.6 ms on oneDNN's direct kernel). f32; the Add node becomes the Conv.
namespace {

// Node "add" becomes a convolution like "conv" of "inputs" and takes its name ("conv" is
// renamed with "suffix" and left unread); the use counts follow.
void add_becomes_conv(Graph& graph, Node& add, Node& conv, std::vector<Value*> inputs,
                      const std::string& suffix, std::unordered_map<const Value*, int>& uses) {
  for (const Value* v : add.inputs)
    --uses[v];
  for (const Value* v : inputs)
    ++uses[v];
  std::string name = conv.name;
  graph.rename_node(&conv, graph.unique_node_name(name + suffix));
  graph.rename_node(&add, name);
  add.op_type = Op::kConv;
  add.def = conv.def;
  add.opset = conv.opset;
  add.attrs = conv.attrs;
  add.inputs = std::move(inputs);
}

} // namespace

void bias_into_conv(Graph& graph, Node& node, std::unordered_map<const Value*, int>& uses) {
  const TensorType& type = node.outputs[0]->type;
  if (node.inputs.size() != 2 || type.dtype != DType::kF32 || !type.has_static_shape()) return;
  const Shape& ys = *type.shape;
  size_t rank = ys.size();
  for (size_t c = 0; c < 2; ++c) {
    Value *y = node.inputs[c], *v = node.inputs[1 - c];
    Node* conv = y->producer;
    if (!conv || conv->op_type != Op::kConv || conv->outputs.size() != 1 || uses[y] != 1 ||
        graph.is_graph_output(y) || !(y->type == type) || rank < 3 || !v->type.has_static_shape() ||
        v->type.dtype != DType::kF32)
      continue;
    const Shape& vs = *v->type.shape;
    bool per_channel = vs.size() + 1 >= rank && vs.size() <= rank;
    for (size_t i = 0; i < vs.size() && per_channel; ++i)
      per_channel = vs[i] == (i + rank - vs.size() == 1 ? ys[1] : Dim(1));
    if (!per_channel) continue;
    int64_t channels = ys[1].value();
    Value* b = conv->input(2);
    Value* bias;
    if (v->is_constant() && (!b || b->is_constant())) {
      Tensor sum(DType::kF32, {channels});
      for (int64_t i = 0; i < channels; ++i)
        sum.set_double(i, v->constant->get_double(i) + (b ? b->constant->get_double(i) : 0.0));
      bias = graph.add_constant(graph.unique_name(conv->name + "_bias"), std::move(sum));
    } else {
      TensorType per{DType::kF32, Shape{Dim(channels)}};
      bias = insert_op(graph, node, Op::kReshape, {v}, per, reshape_to(Ints{channels}));
      ++uses[v];
      if (b) {
        bias = insert_op(graph, node, Op::kAdd, {b, bias}, per);
        ++uses[b];
      }
    }
    // The Add becomes the convolution and takes its name; the Conv is left unread.
    add_becomes_conv(graph, node, *conv, {conv->inputs[0], conv->inputs[1], bias}, "_unbiased",
                     uses);
    return;
  }
}

void parallel_convs_summed(Graph& graph, Node& node, std::unordered_map<const Value*, int>& uses) {
  const TensorType& type = node.outputs[0]->type;
  if (node.inputs.size() != 2 || node.inputs[0] == node.inputs[1] || type.dtype != DType::kF32 ||
      !type.has_static_shape())
    return;
  Node *a = node.inputs[0]->producer, *b = node.inputs[1]->producer;
  auto fits = [&](const Node* c) {
    return c && c->op_type == Op::kConv && c->outputs.size() == 1 && c->inputs.size() >= 2 &&
           uses[c->outputs[0]] == 1 && !graph.is_graph_output(c->outputs[0]) &&
           c->outputs[0]->type == type && c->inputs[0]->type.has_static_shape() &&
           c->inputs[1]->is_constant() && c->inputs[1]->constant->dtype() == DType::kF32 &&
           (!c->input(2) || c->input(2)->is_constant());
  };
  if (!fits(a) || !fits(b) || a->inputs[0] != b->inputs[0]) return;
  if (a->inputs[1]->constant->num_elements() < b->inputs[1]->constant->num_elements())
    std::swap(a, b);
  const Tensor &big = *a->inputs[1]->constant, &small = *b->inputs[1]->constant;
  const std::vector<int64_t>&db = big.dims(), &ds = small.dims();
  if (db.size() != ds.size() || db.size() < 3 || db[0] != ds[0] || db[1] != ds[1] ||
      a->attrs_as<ConvAttrs>().group != b->attrs_as<ConvAttrs>().group)
    return;
  auto windows = [&](const Node& c, const std::vector<int64_t>& w) {
    const auto& at = c.attrs_as<ConvAttrs>();
    return window_dims(Ints(w.begin() + 2, w.end()), at.strides, at.dilations, at.pads, at.auto_pad,
                       *c.inputs[0]->type.shape, *type.shape);
  };
  std::vector<Window> wa = windows(*a, db), wb = windows(*b, ds);
  Ints offset(wa.size()); // where the small kernel lies in the big one
  for (size_t d = 0; d < wa.size(); ++d) {
    offset[d] = wa[d].pad_begin - wb[d].pad_begin;
    if (wa[d].stride != wb[d].stride || wa[d].dilation != 1 || wb[d].dilation != 1 ||
        offset[d] < 0 || offset[d] + wb[d].kernel > wa[d].kernel ||
        wa[d].pad_end - wb[d].pad_end != wa[d].kernel - wb[d].kernel - offset[d])
      return;
  }
  Tensor sum = big;
  for (int64_t i = 0; i < small.num_elements(); ++i) {
    int64_t at = 0, rest = i, stride = 1; // the big kernel's index of small element i
    for (size_t d = ds.size(); d-- > 0;) {
      int64_t k = rest % ds[d];
      rest /= ds[d];
      at += (k + (d >= 2 ? offset[d - 2] : 0)) * stride;
      stride *= db[d];
    }
    sum.set_double(at, sum.get_double(at) + small.get_double(i));
  }
  std::vector<Value*> inputs = {
      a->inputs[0], graph.add_constant(graph.unique_name(a->name + "_summed"), std::move(sum))};
  if (a->input(2) || b->input(2)) {
    Tensor bias(DType::kF32, {db[0]});
    for (int64_t o = 0; o < db[0]; ++o) {
      double v = 0;
      for (const Node* c : {a, b})
        v += c->input(2) ? c->input(2)->constant->get_double(o) : 0.0;
      bias.set_double(o, v);
    }
    inputs.push_back(
        graph.add_constant(graph.unique_name(a->name + "_summed_bias"), std::move(bias)));
  }
  // The Add becomes the convolution and takes the larger one's name; the two are left unread.
  add_becomes_conv(graph, node, *a, std::move(inputs), "_branch", uses);
}

void einsum_as_matmul(Graph& graph, Node& node) {
  Value *a = node.inputs.size() == 2 ? node.inputs[0] : nullptr, *b = node.input(1);
  const Value* y = node.outputs[0];
  if (!a || !b || !a->type.has_static_shape() || !b->type.has_static_shape() ||
      !y->type.has_static_shape())
    return;
  Ints da = shape_static_dims(*a->type.shape), db = shape_static_dims(*b->type.shape),
       dy = shape_static_dims(*y->type.shape);
  Result<EinsumLabels> labels =
      einsum_labels(node.attrs_as<EinsumAttrs>().equation, {da.size(), db.size()});
  if (!labels.ok()) return;
  const std::string &la = labels->inputs[0], &lb = labels->inputs[1], &ly = labels->output;
  std::optional<ProductLabels> p = product_labels(la, lb, ly, da, db);
  if (!p) return;
  std::vector<std::string> ga, gb;
  for (char c : p->batch) {
    ga.emplace_back(1, c);
    gb.emplace_back(1, c);
  }
  ga.insert(ga.end(), {p->m, p->k});
  gb.insert(gb.end(), {p->k, p->n});
  Value* lhs = grouped(graph, node, a, la, da, ga);
  Value* rhs = grouped(graph, node, b, lb, db, gb);
  // The product [batch..., m, n], its labels unmerged, and their order in the result.
  std::string order = p->batch + p->m + p->n;
  Ints unmerged, perm, product;
  for (char c : order)
    unmerged.push_back(dy[ly.find(c)]);
  for (char c : ly)
    perm.push_back(static_cast<int64_t>(order.find(c)));
  auto extent = [&](const std::string& labels_of) {
    int64_t size = 1;
    for (char c : labels_of)
      size *= dy[ly.find(c)];
    return size;
  };
  product.assign(unmerged.begin(), unmerged.begin() + static_cast<int64_t>(p->batch.size()));
  product.insert(product.end(), {extent(p->m), extent(p->n)});
  DType t = y->type.dtype;
  bool reshape = product != unmerged, transpose = !is_identity_perm(perm);
  if (!reshape && !transpose) {
    node.op_type = Op::kMatMul;
    node.def = find_op(Op::kMatMul, node.opset);
    node.attrs = NoAttrs{};
    node.inputs = {lhs, rhs};
    return;
  }
  Value* out = insert_op(graph, node, Op::kMatMul, {lhs, rhs}, {t, shape_from_dims(product)});
  if (reshape && transpose)
    out = insert_op(graph, node, Op::kReshape, {out}, {t, shape_from_dims(unmerged)},
                    reshape_to(unmerged));
  node.op_type = transpose ? Op::kTranspose : Op::kReshape;
  node.def = find_op(node.op_type, node.opset);
  node.attrs = transpose ? OpAttrs{TransposeAttrs{perm}} : OpAttrs{reshape_to(unmerged)};
  node.inputs = {out};
}

} // namespace weft::canonicalize_rewrites
