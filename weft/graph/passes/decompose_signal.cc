#include "weft/graph/passes/decompose_signal.h"

#include <cmath>

#include "weft/graph/node_builder.h"
#include "weft/graph/shape_functions.h"

namespace weft {

bool stft_ready(const Node& node) {
  for (const Value* v : node.inputs) {
    if (v && !v->type.has_static_shape()) return false;
  }
  return constant_ints(node.input(1)) && (!node.input(3) || constant_ints(node.input(3)));
}

// frames[b, f, n, c] = signal[b, f * step + n, c] (a Gather of constant positions), times
// window[n], then DFT along n.
Status decompose_stft(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  Value* signal = node.inputs[0];
  Value* window = node.input(2);
  WEFT_ASSIGN_OR_RETURN(StftFrames frames, stft_frames(node));
  Tensor positions(DType::kI64, {frames.count, frames.length});
  for (int64_t f = 0; f < frames.count; ++f) {
    for (int64_t n = 0; n < frames.length; ++n)
      positions.set_double(f * frames.length + n, static_cast<double>(f * frames.step + n));
  }
  Value* framed = b.op(Op::kGather, {signal, b.constant("frame_positions", std::move(positions))},
                       AxisAttrs{1});
  if (window) {
    Value* column = b.op(
        Op::kReshape, {window, b.constant("window_shape", Tensor::vector_i64({frames.length, 1}))},
        ReshapeAttrs{});
    framed = b.op(Op::kMul, {framed, column});
  }
  b.op(Op::kDFT, {framed}, DftAttrs{2, false, node.attrs_as<DftAttrs>().onesided}, y);
  return b.status();
}

bool mel_weight_matrix_ready(const Node& node) {
  return constant_ints(node.inputs[0]) && constant_ints(node.inputs[1]);
}

// As the reference computes it: M + 2 band edges evenly spaced in mel (2595 log10(1 + hz /
// 700)) from the lower to the upper edge, each at the frequency bin
// floor((dft_length + 1) hz / sample_rate); filter i rises from edge i to edge i + 1 (a
// single 1 where they coincide) and falls from there to edge i + 2.
Status decompose_mel_weight_matrix(Graph& graph, Node& node, Value* y) {
  NodeBuilder b(graph, node);
  int64_t mels = (*constant_ints(node.inputs[0]))[0];
  int64_t length = (*constant_ints(node.inputs[1]))[0];
  constexpr DType kF64 = DType::kF64;
  auto f64 = [&](Value* v) { return b.op(Op::kCast, {v}, CastAttrs{kF64}); };
  auto c = [&](double v) { return b.constant("c", Tensor::from_vector<double>(kF64, {}, {v})); };
  auto op = [&](Op name, Value* p, Value* q) { return b.op(name, {p, q}); };
  auto where = [&](Value* cond, Value* p, Value* q) { return b.op(Op::kWhere, {cond, p, q}); };
  auto range = [&](int64_t n, std::vector<int64_t> dims) {
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[static_cast<size_t>(i)] = static_cast<double>(i);
    return b.constant("range", Tensor::from_vector<double>(kF64, std::move(dims), v));
  };
  double ln10 = std::log(10.0);
  auto mel = [&](Value* hz) {
    return op(Op::kMul, b.op(Op::kLog, {op(Op::kAdd, op(Op::kDiv, f64(hz), c(700)), c(1))}),
              c(2595 / ln10));
  };
  Value* low = mel(node.inputs[3]);
  Value* step =
      op(Op::kDiv, op(Op::kSub, mel(node.inputs[4]), low), c(static_cast<double>(mels + 2)));
  Value* edge_mel = op(Op::kAdd, op(Op::kMul, range(mels + 2, {mels + 2}), step), low);
  Value* edge_hz =
      op(Op::kMul, op(Op::kSub, b.op(Op::kExp, {op(Op::kMul, edge_mel, c(ln10 / 2595))}), c(1)),
         c(700));
  Value* edges =
      b.op(Op::kFloor, {op(Op::kDiv, op(Op::kMul, edge_hz, c(static_cast<double>(length + 1))),
                           f64(node.inputs[2]))});
  auto part = [&](int64_t begin) {
    return b.op(Op::kSlice, {edges},
                SliceAttrs{Ints{begin}, Ints{begin + mels}, Ints{0}, std::nullopt});
  };
  Value* left = part(0);
  Value* center = part(1);
  Value* right = part(2);
  Value* j = range(length / 2 + 1, {length / 2 + 1, 1}); // [bins, 1] against [mels]
  Value* zero = c(0);
  Value* rising =
      where(op(Op::kAnd, op(Op::kGreaterOrEqual, j, left), op(Op::kLessOrEqual, j, center)),
            op(Op::kDiv, op(Op::kSub, j, left), op(Op::kSub, center, left)), zero);
  rising = where(op(Op::kEqual, center, left), f64(op(Op::kEqual, j, center)), rising);
  Value* falls = op(Op::kAnd, op(Op::kGreater, right, center),
                    op(Op::kAnd, op(Op::kGreaterOrEqual, j, center), op(Op::kLess, j, right)));
  Value* w =
      where(falls, op(Op::kDiv, op(Op::kSub, right, j), op(Op::kSub, right, center)), rising);
  b.op(Op::kCast, {w}, node.attrs_as<CastAttrs>(), y);
  return b.status();
}

} // namespace weft
