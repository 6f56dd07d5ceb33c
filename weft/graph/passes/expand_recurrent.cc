#include "weft/graph/passes/expand_recurrent.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "weft/graph/node_builder.h"
#include "weft/graph/op_table.h"
#include "weft/graph/passes/fold_constants.h"
#include "weft/graph/shape_functions.h"
#include "weft/support/check.h"

namespace weft {

namespace {

enum class Cell { kRnn, kGru, kLstm };

Cell cell_of(const Node& node) {
  if (node.op_type == Op::kGRU) return Cell::kGru;
  if (node.op_type == Op::kLSTM) return Cell::kLstm;
  return Cell::kRnn;
}

int64_t gates_of(Cell cell) { return cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4; }

bool is_recurrent(const Node& node) {
  return node.op_type == Op::kRNN || node.op_type == Op::kGRU || node.op_type == Op::kLSTM;
}

bool inputs_static(const Node& node) {
  for (const Value* v : node.inputs) {
    if (v && !v->type.has_static_shape()) return false;
  }
  return true;
}

// The unrolled computation of one recurrent node. Shapes are those of layout 0 unless said
// otherwise; "time_axis" and "batch_axis" place the sequence and batch dims of X and Y.
class Unroller {
public:
  Unroller(Graph& graph, const Node& node)
      : node_(node), a_(node.attrs_as<RecurrentAttrs>()), cell_(cell_of(node)), b_(graph, node),
        dtype_(node.inputs[0]->type.dtype), time_axis_(a_.layout == 0 ? 0 : 1),
        batch_axis_(1 - time_axis_) {
    const Shape& x = *node.inputs[0]->type.shape;
    steps_ = x[static_cast<size_t>(time_axis_)].value();
    batch_ = x[static_cast<size_t>(batch_axis_)].value();
    hidden_ = (*node.inputs[2]->type.shape)[2].value();
    lens_ = node.input(4);
    // Lengths that are all the full sequence mask nothing.
    if (std::optional<Ints> lens = constant_ints(lens_);
        lens && std::all_of(lens->begin(), lens->end(), [&](int64_t n) { return n == steps_; }))
      lens_ = nullptr;
  }

  // Why the node cannot be unrolled, or ok.
  Status check() const {
    if (steps_ > kMaxUnrolledSteps)
      return Status::error(fmt::format("the sequence has {} steps; Weft unrolls recurrent ops "
                                       "over at most {} steps, and runs longer ones of f32 "
                                       "values as a call on the CPU",
                                       steps_, kMaxUnrolledSteps));
    if (lens_ && node_.opset < 10)
      return Status::error("sequence_lens is supported from opset 10 on");
    return Status();
  }

  // Builds the nodes, the last of which define "outputs" (Y, Y_h, Y_c; null: not wanted).
  // The expansion, defining "outputs"; fails only if a new node is mistyped.
  Status run(const std::vector<Value*>& outputs) {
    want_y_ = outputs[0] != nullptr;
    if (lens_ && lens_->type.dtype != DType::kI64)
      lens64_ = b_.op(Op::kCast, {lens_}, CastAttrs{DType::kI64});
    else
      lens64_ = lens_;
    int64_t directions = a_.direction == RnnDirection::kBidirectional ? 2 : 1;
    std::vector<Value*> ys, hs, cs;
    for (int64_t d = 0; d < directions; ++d) {
      bool reverse = a_.direction == RnnDirection::kReverse || d == 1;
      DirectionOutputs out = direction(d, reverse);
      ys.push_back(out.y);
      hs.push_back(out.state.h);
      cs.push_back(out.state.c);
    }
    int64_t state_dir_axis = a_.layout == 0 ? 0 : 1; // in [D, batch, H] or [batch, D, H]
    if (outputs[0]) b_.stack(ys, a_.layout == 0 ? 1 : 2, outputs[0]);
    if (outputs.size() > 1 && outputs[1]) b_.stack(hs, state_dir_axis, outputs[1]);
    if (outputs.size() > 2 && outputs[2]) b_.stack(cs, state_dir_axis, outputs[2]);
    return b_.status();
  }

private:
  struct State {
    Value* h; // [batch, H]
    Value* c; // LSTM: the cell, [batch, H]
  };
  struct DirectionOutputs {
    Value* y; // [seq, batch, H]; null when Y is not wanted
    State state;
  };
  // The recurrence's operands in one direction.
  struct Weights {
    Value* xw;                        // X W^T + biases, [seq, batch, gates*H]
    Value* rt;                        // R^T, [H, gates*H]
    Value *r_zr, *r_h, *rb_zr, *rb_h; // GRU: R^T's and Rb's parts, [H, 2H] [H, H] [2H] [H]
    Value *p_i, *p_o, *p_f;           // LSTM peepholes [H], or null
    const RnnActivation* f;           // the direction's activations
  };

  Weights weights(int64_t d) {
    int64_t gh = gates_of(cell_) * hidden_;
    Weights w{};
    Value* wt = b_.op(Op::kTranspose, {b_.take(node_.inputs[1], d, 0)}, TransposeAttrs{Ints{1, 0}});
    w.xw = b_.op(Op::kMatMul, {node_.inputs[0], wt});
    Value* bias = node_.input(3) ? b_.take(node_.inputs[3], d, 0) : b_.fill(dtype_, {2 * gh}, 0.0);
    std::vector<Value*> wb_rb = b_.split(bias, 0, {gh, gh});
    w.rt = b_.op(Op::kTranspose, {b_.take(node_.inputs[2], d, 0)}, TransposeAttrs{Ints{1, 0}});
    w.f = &a_.activations[static_cast<size_t>(d) * functions_per_direction()];
    if (cell_ == Cell::kGru) {
      // Rb stays in the steps: with linear_before_reset, the reset gate scales Rbh.
      w.xw = b_.op(Op::kAdd, {w.xw, wb_rb[0]});
      std::vector<Value*> r = b_.split(w.rt, 1, {2 * hidden_, hidden_});
      std::vector<Value*> rb = b_.split(wb_rb[1], 0, {2 * hidden_, hidden_});
      w.r_zr = r[0];
      w.r_h = r[1];
      w.rb_zr = rb[0];
      w.rb_h = rb[1];
    } else {
      w.xw = b_.op(Op::kAdd, {w.xw, b_.op(Op::kAdd, {wb_rb[0], wb_rb[1]})});
    }
    if (cell_ == Cell::kLstm && node_.input(7)) {
      std::vector<Value*> p =
          b_.split(b_.take(node_.inputs[7], d, 0), 0, {hidden_, hidden_, hidden_});
      w.p_i = p[0];
      w.p_o = p[1];
      w.p_f = p[2];
    }
    return w;
  }

  DirectionOutputs direction(int64_t d, bool reverse) {
    Weights wts = weights(d);
    Value* xw = wts.xw;
    // With lengths, the reverse direction runs forward over each entry's reversed sequence.
    bool reversed_input = reverse && lens_;
    if (reversed_input) xw = reverse_sequence(xw);
    int64_t state_dir_axis = a_.layout == 0 ? 0 : 1;
    State state{node_.input(5) ? b_.take(node_.inputs[5], d, state_dir_axis) : zeros_state(),
                nullptr};
    if (cell_ == Cell::kLstm)
      state.c = node_.input(6) ? b_.take(node_.inputs[6], d, state_dir_axis) : zeros_state();
    std::vector<Value*> ys(static_cast<size_t>(steps_));
    for (int64_t k = 0; k < steps_; ++k) {
      int64_t t = reverse && !reversed_input ? steps_ - 1 - k : k;
      State next = step(wts, b_.take(xw, t, time_axis_), state);
      Value* y = next.h;
      if (lens_) {
        Value* valid = mask(k);
        if (want_y_) y = b_.op(Op::kWhere, {valid, next.h, scalar(0.0)});
        next.h = b_.op(Op::kWhere, {valid, next.h, state.h});
        if (next.c) next.c = b_.op(Op::kWhere, {valid, next.c, state.c});
      }
      ys[static_cast<size_t>(t)] = y;
      state = next;
    }
    Value* y = nullptr;
    if (want_y_ && steps_ == 0) { // an empty sequence: Y empty, the states the initial ones
      y = b_.fill(dtype_, time_axis_ == 0 ? Ints{0, batch_, hidden_} : Ints{batch_, 0, hidden_},
                  0.0);
    } else if (want_y_) {
      y = b_.stack(ys, time_axis_);
      if (reversed_input) y = reverse_sequence(y);
    }
    return {y, state};
  }

  State step(const Weights& w, Value* x_t, State prev) {
    switch (cell_) {
      case Cell::kRnn: return {activate(w.f[0], times_add(prev.h, w.rt, x_t)), nullptr};
      case Cell::kGru: return gru_step(w, x_t, prev);
      case Cell::kLstm: return lstm_step(w, x_t, prev);
    }
    return prev;
  }

  // z = f(xz + H Rz^T + Rbz), r = f(xr + H Rr^T + Rbr),
  // n = g(xh + (r H) Rh^T + Rbh), or with linear_before_reset g(xh + r (H Rh^T + Rbh)),
  // H' = (1 - z) n + z H = n + z (H - n).
  State gru_step(const Weights& w, Value* x_t, State prev) {
    std::vector<Value*> x = b_.split(x_t, 1, {hidden_, hidden_, hidden_});
    std::vector<Value*> hzr = b_.split(times_add(prev.h, w.r_zr, w.rb_zr), 1, {hidden_, hidden_});
    Value* z = activate(w.f[0], b_.op(Op::kAdd, {x[0], hzr[0]}));
    Value* r = activate(w.f[0], b_.op(Op::kAdd, {x[1], hzr[1]}));
    Value* pre =
        a_.linear_before_reset
            ? b_.op(Op::kAdd, {x[2], b_.op(Op::kMul, {r, times_add(prev.h, w.r_h, w.rb_h)})})
            : b_.op(Op::kAdd, {x[2], times_add(b_.op(Op::kMul, {r, prev.h}), w.r_h, w.rb_h)});
    Value* n = activate(w.f[1], pre);
    Value* h = b_.op(Op::kAdd, {n, b_.op(Op::kMul, {z, b_.op(Op::kSub, {prev.h, n})})});
    return {h, nullptr};
  }

  // Gates i, o, f, c from x_t + H R^T; peepholes add P * C to i and f (old C) and o (new C).
  // C' = f C + i g(c), H' = o h(C'); with input_forget, f = 1 - i.
  State lstm_step(const Weights& w, Value* x_t, State prev) {
    std::vector<Value*> g =
        b_.split(times_add(prev.h, w.rt, x_t), 1, {hidden_, hidden_, hidden_, hidden_});
    auto peephole = [&](Value* gate, Value* p, Value* c) {
      return p ? b_.op(Op::kAdd, {gate, b_.op(Op::kMul, {p, c})}) : gate;
    };
    Value* i = activate(w.f[0], peephole(g[0], w.p_i, prev.c));
    Value* f = a_.input_forget ? b_.op(Op::kSub, {scalar(1.0), i})
                               : activate(w.f[0], peephole(g[2], w.p_f, prev.c));
    Value* c = b_.op(Op::kAdd,
                     {b_.op(Op::kMul, {f, prev.c}), b_.op(Op::kMul, {i, activate(w.f[1], g[3])})});
    Value* o = activate(w.f[0], peephole(g[1], w.p_o, c));
    return {b_.op(Op::kMul, {o, apply(w.f[2], c)}), c};
  }

  // a * b + c: a MatMul whose Add oneDNN takes as a post-op.
  Value* times_add(Value* a, Value* b, Value* c) {
    return b_.op(Op::kAdd, {b_.op(Op::kMatMul, {a, b}), c});
  }

  // "fn" of a gate's input, clipped first when the node says so.
  Value* activate(RnnActivation fn, Value* v) {
    if (a_.clip) v = b_.op(Op::kClip, {v}, ClipAttrs{-*a_.clip, *a_.clip});
    return apply(fn, v);
  }

  Value* apply(RnnActivation fn, Value* v) {
    return b_.op(op_from_name(rnn_activation_name(fn)), {v});
  }

  // [batch, 1]: is step "k" within each entry's sequence? Shared by the directions.
  Value* mask(int64_t k) {
    auto [it, added] = masks_.try_emplace(k, nullptr);
    if (added) {
      Tensor t(lens_->type.dtype, {});
      t.set_int64(0, k);
      Value* valid = b_.op(Op::kLess, {b_.constant(fmt::format("t{}", k), std::move(t)), lens_});
      it->second = b_.op(Op::kUnsqueeze, {valid}, AxesAttrs{Ints{1}});
    }
    return it->second;
  }

  Value* reverse_sequence(Value* v) {
    return b_.op(Op::kReverseSequence, {v, lens64_}, ReverseSequenceAttrs{batch_axis_, time_axis_});
  }

  size_t functions_per_direction() const {
    return a_.direction == RnnDirection::kBidirectional ? a_.activations.size() / 2
                                                        : a_.activations.size();
  }

  Value* zeros_state() { return b_.fill(dtype_, {batch_, hidden_}, 0.0); }

  Value* scalar(double value) {
    Value*& v = value == 0 ? zero_ : one_;
    if (!v) v = b_.fill(dtype_, {}, value);
    return v;
  }

  const Node& node_;
  const RecurrentAttrs& a_;
  Cell cell_;
  NodeBuilder b_;
  DType dtype_;
  int64_t time_axis_, batch_axis_;
  int64_t steps_ = 0, batch_ = 0, hidden_ = 0;
  Value* lens_ = nullptr;   // sequence_lens, unless it masks nothing
  Value* lens64_ = nullptr; // the same as i64, for ReverseSequence
  bool want_y_ = false;
  std::map<int64_t, Value*> masks_;
  Value* zero_ = nullptr;
  Value* one_ = nullptr;
};

} // namespace

Result<bool> unroll_recurrent(Graph& graph, const std::function<bool(const Node&)>& keep) {
  std::vector<Node*> nodes;
  for (const auto& n : graph.nodes()) {
    if (is_recurrent(*n) && inputs_static(*n) && !keep(*n)) nodes.push_back(n.get());
  }
  for (Node* node : nodes) {
    Unroller unroller(graph, *node);
    WEFT_RETURN_IF_ERROR(unroller.check().with_location(location_of(graph, *node)));
    // The new nodes define the node's output values, so that their names stay.
    std::vector<Value*> outputs = node->outputs;
    for (Value*& out : node->outputs) {
      if (out) out->producer = nullptr;
      out = nullptr;
    }
    WEFT_RETURN_IF_ERROR(unroller.run(outputs).with_location(location_of(graph, *node)));
    graph.remove_nodes_if([&](const Node& n) { return &n == node; });
  }
  // The slices of the weights fold when the weights are constant.
  if (!nodes.empty()) WEFT_RETURN_IF_ERROR(fold_constants(graph));
  return !nodes.empty();
}

Status expand_recurrent(Graph& graph) {
  return unroll_recurrent(graph,
                          [](const Node& n) { return n.inputs[0]->type.dtype == DType::kF32; })
      .status();
}

} // namespace weft
