#include "weft/onnx/contrib_ops.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include "weft/onnx/contrib_decoder_ops.h"
#include "weft/onnx/contrib_expansion.h"
#include "weft/onnx/contrib_transformer_ops.h"
#include "weft/onnx/ml_legacy_ops.h"
#include "weft/onnx/model_checks.h"

namespace weft {
namespace contrib {
namespace {

// QLinearAdd, QLinearMul: C = Q(DQ(A) op DQ(B)), broadcast.
ContribOp binary(Op op) {
  return {
      {"A", "A_scale", "A_zero_point", "B", "B_scale", "B_zero_point", "C_scale", "C_zero_point"},
      7,
      [op](Expansion& e) {
        std::string a = e.dequantize(e.in(0), e.in(1), e.in(2));
        std::string b = e.dequantize(e.in(3), e.in(4), e.in(5));
        e.quantize(e.op(op, {a, b}), e.in(6), e.in(7), e.in(0));
        return Status();
      }};
}

// QLinearSigmoid, QLinearLeakyRelu: Y = Q(op(DQ(X))).
ContribOp unary(Op op, std::vector<onnx::AttributeProto> (*attrs)(const Expansion&)) {
  return {
      {"X", "X_scale", "X_zero_point", "Y_scale", "Y_zero_point"}, 4, [op, attrs](Expansion& e) {
        std::string x = e.dequantize(e.in(0), e.in(1), e.in(2));
        e.quantize(e.op(op, {x}, attrs(e)), e.in(3), e.in(4), e.in(0));
        return Status();
      }};
}

std::vector<onnx::AttributeProto> no_attrs(const Expansion&) { return {}; }

std::vector<onnx::AttributeProto> leaky_relu_attrs(const Expansion& e) {
  return {float_attr("alpha", e.float_attr_or("alpha", 0.01f))};
}

// Pools whose quantized form may also take NHWC input (channels_last), which Weft refuses.
Status channels_first(const Expansion& e) {
  if (e.int_attr_or("channels_last", 0) == 0) return Status();
  return Status::error("channels_last=1 is not supported (NCHW input only)");
}

// QLinearConcat(Y_scale, Y_zero_point, (X, X_scale, X_zero_point)...).
Status expand_concat(Expansion& e) {
  const onnx::NodeProto& n = e.node();
  if (n.input_size() < 5 || (n.input_size() - 2) % 3 != 0) {
    return Status::error(fmt::format("has {} inputs: it takes Y_scale, Y_zero_point and then a "
                                     "(tensor, scale, zero point) triple per input",
                                     n.input_size()));
  }
  if (!find_attr(n, "axis")) return Status::error("attribute 'axis' is required");
  std::vector<std::string> parts;
  for (int i = 2; i < n.input_size(); i += 3)
    parts.push_back(e.dequantize(e.in(i), e.in(i + 1), e.in(i + 2)));
  e.quantize(e.op(Op::kConcat, parts, {int_attr("axis", e.int_attr_or("axis", 0))}), e.in(0),
             e.in(1), e.in(2));
  return Status();
}

// QGemm(A, a_scale, a_zero_point, B, b_scale, b_zero_point, C, y_scale, y_zero_point):
// alpha * A' B' + C, with C's int32 bias at scale a_scale * b_scale (B's per column when
// b_scale is); quantized when y_scale is given, float otherwise.
Status expand_qgemm(Expansion& e) {
  int64_t trans_b = e.int_attr_or("transB", 0);
  std::string a = e.dequantize(e.in(0), e.in(1), e.in(2));
  std::string b = e.dequantize(e.in(3), e.in(4), e.in(5), e.axis_of(e.in(4), trans_b ? 0 : 1));
  std::string c;
  if (!e.in(6).empty())
    c = e.dequantize(e.in(6), e.op(Op::kMul, {e.in(1), e.in(4)}), "", e.axis_of(e.in(4), 0));
  std::vector<onnx::AttributeProto> attrs = {float_attr("alpha", e.float_attr_or("alpha", 1.0f)),
                                             int_attr("transA", e.int_attr_or("transA", 0)),
                                             int_attr("transB", trans_b)};
  if (e.in(7).empty()) {
    e.op(Op::kGemm, {a, b, c}, attrs, e.out(0));
  } else {
    e.quantize(e.op(Op::kGemm, {a, b, c}, attrs), e.in(7), e.in(8), e.in(0));
  }
  return Status();
}

// QLinearSoftmax(X, X_scale, x_zero_point, y_scale, y_zero_point), axis and the ai.onnx
// "opset" whose Softmax it follows: before 13, over the input flattened at axis.
Status expand_softmax(Expansion& e) {
  const onnx::AttributeProto* version = find_attr(e.node(), "opset");
  if (!version) return Status::error("attribute 'opset' is required");
  int64_t axis = e.int_attr_or("axis", version->i() < 13 ? 1 : -1);
  std::string x = e.dequantize(e.in(0), e.in(1), e.in(2)), y;
  if (version->i() < 13) {
    std::string flat = e.op(Op::kFlatten, {x}, {int_attr("axis", axis)});
    y = e.op(Op::kReshape,
             {e.op(Op::kSoftmax, {flat}, {int_attr("axis", 1)}), e.op(Op::kShape, {x})});
  } else if (e.opset() >= 13 || axis == -1) {
    y = e.op(Op::kSoftmax, {x}, {int_attr("axis", axis)});
  } else {
    return Status::error(fmt::format("a Softmax over axis {} alone needs ai.onnx opset 13 or "
                                     "later (the model's is {})",
                                     axis, e.opset()));
  }
  e.quantize(y, e.in(3), e.in(4), e.in(0));
  return Status();
}

// QLinearReduceMean(data, data_scale, data_zero_point, reduced_scale, reduced_zero_point).
Status expand_reduce_mean(Expansion& e) {
  const onnx::AttributeProto* axes = find_attr(e.node(), "axes");
  if (!axes) return Status::error("attribute 'axes' is required");
  std::vector<int64_t> list(axes->ints().begin(), axes->ints().end());
  std::string x = e.dequantize(e.in(0), e.in(1), e.in(2));
  e.quantize(e.mean(x, list, e.int_attr_or("keepdims", 1)), e.in(3), e.in(4), e.in(0));
  return Status();
}

// ai.onnx's QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
// y_zero_point, B) on constant weights, in the form ORT's QDQ format writes: the library runs
// it on f32 weights folded at compile time. B's int32 bias has scale x_scale * w_scale.
Status expand_qlinear_conv(Expansion& e) {
  std::string x = e.dequantize(e.in(0), e.in(1), e.in(2));
  std::string w = e.dequantize(e.in(3), e.in(4), e.in(5), e.axis_of(e.in(4), 0));
  std::string b;
  if (!e.in(8).empty())
    b = e.dequantize(e.in(8), e.op(Op::kMul, {e.in(1), e.in(4)}), "", e.axis_of(e.in(4), 0));
  e.quantize(e.op(Op::kConv, {x, w, b}, e.attrs_except("")), e.in(6), e.in(7), e.in(0)); // all
  return Status();
}

// QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point),
// likewise; scales per row of a and per column of b.
Status expand_qlinear_matmul(Expansion& e) {
  std::string a = e.dequantize(e.in(0), e.in(1), e.in(2), e.axis_of(e.in(1), -2));
  std::string b = e.dequantize(e.in(3), e.in(4), e.in(5), e.axis_of(e.in(4), -1));
  e.quantize(e.op(Op::kMatMul, {a, b}), e.in(6), e.in(7), e.in(0));
  return Status();
}

// The "bits"-bit unsigned integer "j" of the bytes from "data" on, packed low bits first.
int64_t unpacked(const std::byte* data, int64_t j, int64_t bits) {
  auto byte = static_cast<unsigned>(data[j * bits / 8]);
  return static_cast<int64_t>((byte >> (j * bits % 8)) & ((1u << bits) - 1));
}

// MatMulNBits(A, B, scales, zero_points, g_idx, bias): A times weights quantized to "bits"
// (2, 4 or 8) bits in blocks of block_size along K, ONNX Runtime's weight-only quantization
// (its MatMulNBitsQuantizer; int4 language models): B [N, blocks, block_size * bits / 8],
// packed low bits first; scales [N, blocks] (or flat); zero_points uint8, packed the same way
// per row of N (2^(bits - 1) when absent). 4- and 8-bit weights stay quantized at any opset
// (Weft's graph takes a blocked DequantizeLinear of u4 whatever the model's opset); 2-bit ones
// are dequantized to [K, N] in the scales' type here, at import, and the MatMul runs on them.
// Refused: weights, scales or zero points given at run time, zero points in the scales' type,
// and g_idx.
Status expand_matmul_nbits(Expansion& e) {
  int64_t k = e.int_attr_or("K", 0), n = e.int_attr_or("N", 0), bits = e.int_attr_or("bits", 4),
          block = e.int_attr_or("block_size", 0);
  int64_t elements = 0;
  if (k <= 0 || n <= 0 || block < 16 || block > 65536 || (block & (block - 1)) != 0 ||
      !dims_are_allocatable(DType::kF64, {k, n}, &elements))
    return Status::error("attributes K and N must be positive, K x N weights allocatable, and "
                         "block_size a power of 2 from 16 to 65536");
  if (bits != 2 && bits != 4 && bits != 8)
    return Status::error(fmt::format("bits={} is not supported (2, 4 or 8)", bits));
  if (!e.in(4).empty()) return Status::error("g_idx is not supported");
  const onnx::TensorProto *bp = e.constant(e.in(1)), *sp = e.constant(e.in(2)),
                          *zp = e.in(3).empty() ? nullptr : e.constant(e.in(3));
  if (!bp || !sp || (!e.in(3).empty() && !zp))
    return Status::error("B, scales and zero_points given at run time are not supported");
  WEFT_ASSIGN_OR_RETURN(const Tensor b, e.tensor(*bp));
  WEFT_ASSIGN_OR_RETURN(const Tensor scales, e.tensor(*sp));
  std::optional<Tensor> zeros;
  if (zp) {
    WEFT_ASSIGN_OR_RETURN(zeros, e.tensor(*zp));
  }
  int64_t blocks = (k + block - 1) / block, blob = block * bits / 8;
  int64_t zero_row = (blocks * bits + 7) / 8; // zero points' bytes per row of N
  if (b.dtype() != DType::kU8 || b.num_elements() != n * blocks * blob)
    return Status::error(fmt::format("B must be uint8 [{}, {}, {}]", n, blocks, blob));
  if (!dtype_is_float(scales.dtype()) || scales.num_elements() != n * blocks)
    return Status::error(fmt::format("scales must hold {} x {} floats", n, blocks));
  if (zeros && (zeros->dtype() != DType::kU8 || zeros->num_elements() != n * zero_row))
    return Status::error(fmt::format("zero_points must be uint8 packed as {} x {} bytes (zero "
                                     "points in the scales' type are not supported)",
                                     n, zero_row));
  std::string bias = e.in(5), y;
  if (bits == 4 || bits == 8) {
    // Kept quantized: DequantizeLinear of q [N, K] in blocks along K (zero points 2^(bits - 1)
    // where absent; accuracy_level carried), transposed, as the weight-only call takes it
    // (weight_only_matmul.h).
    DType type = bits == 4 ? DType::kU4 : DType::kU8;
    Tensor s(scales.dtype(), {n, blocks}), z(type, {n, blocks});
    std::copy_n(scales.data(), s.num_bytes(), s.data());
    for (int64_t c = 0; c < n; ++c) {
      for (int64_t i = 0; i < blocks; ++i)
        z.set_int64(c * blocks + i,
                    zeros ? unpacked(zeros->data() + c * zero_row, i, bits) : 1 << (bits - 1));
    }
    std::string weights;
    if (k % block == 0) { // B's bytes are q's ONNX packing, [N, K] low bits first: as they are
      weights = e.packed_constant(type, {n, k}, b.data(), b.num_bytes(), *bp);
    } else { // each block's bytes padded: unpacked one value at a time
      Tensor q(type, {n, k});
      auto* to = reinterpret_cast<uint8_t*>(q.data()); // (u4 and u8 hold a byte each)
      for (int64_t c = 0; c < n; ++c) {
        for (int64_t i = 0; i < blocks; ++i) {
          const std::byte* blob_data = b.data() + (c * blocks + i) * blob;
          for (int64_t j = 0; j < block && i * block + j < k; ++j)
            to[c * k + i * block + j] = static_cast<uint8_t>(unpacked(blob_data, j, bits));
        }
      }
      weights = e.constant_of(q);
    }
    std::string wt = e.op(Op::kDequantizeLinear, {weights, e.constant_of(s), e.constant_of(z)},
                          {int_attr("axis", 1), int_attr("block_size", block),
                           int_attr("accuracy_level", e.int_attr_or("accuracy_level", 0))});
    std::string w = e.op(Op::kTranspose, {wt}, {ints_attr("perm", {1, 0})});
    y = e.op(Op::kMatMul, {e.in(0), w}, {}, bias.empty() ? e.out(0) : "");
    if (!bias.empty()) e.op(Op::kAdd, {y, bias}, {}, e.out(0));
    return Status();
  }
  Tensor w(scales.dtype(), {k, n});
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t i = 0; i < blocks; ++i) {
      double scale = scales.get_double(c * blocks + i);
      int64_t zero = zeros ? unpacked(zeros->data() + c * zero_row, i, bits) : 1 << (bits - 1);
      const std::byte* blob_data = b.data() + (c * blocks + i) * blob;
      for (int64_t j = 0; j < block && i * block + j < k; ++j)
        w.set_double((i * block + j) * n + c,
                     static_cast<double>(unpacked(blob_data, j, bits) - zero) * scale);
    }
  }
  y = e.op(Op::kMatMul, {e.in(0), e.constant_of(w)}, {}, bias.empty() ? e.out(0) : "");
  if (!bias.empty()) e.op(Op::kAdd, {y, bias}, {}, e.out(0));
  return Status();
}

// GatherBlockQuantized(data, indices, scales, zero_points): rows of a 4-bit table (ONNX Runtime
// GenAI's int4 embeddings, often the language model head's weights shared): data uint8 [V, H / 2],
// two values a byte, low half first; scales [V, H / block_size]; zero_points uint8 packed the
// same way, 8 when absent. Only the gathered rows are unpacked (BitwiseAnd and BitShift) and
// dequantized. Refused: another gather_axis or quantize_axis than the first and the last of 2-D
// data, bits other than 4.
Status expand_gather_block_quantized(Expansion& e) {
  if (e.opset() < 18) return Status::error("needs ai.onnx opset 18 or later (BitwiseAnd)");
  if (e.int_attr_or("bits", 4) != 4) return Status::error("only bits=4 is supported");
  if (e.int_attr_or("gather_axis", 0) != 0 || e.int_attr_or("quantize_axis", 1) != 1)
    return Status::error("only gather_axis 0 and quantize_axis 1 (2-D data) are supported");
  int64_t block = e.int_attr_or("block_size", 128);
  if (block < 16 || (block & (block - 1)) != 0)
    return Status::error("block_size must be a power of 2, 16 or more");
  const onnx::TensorProto *data = e.constant(e.in(0)), *scale = e.constant(e.in(2));
  if (data && scale && data->dims_size() == 2 && scale->dims_size() == 2 &&
      2 * data->dims(1) != scale->dims(1) * block)
    return Status::error(fmt::format("rows of {} values in {} scales' blocks of {} are not "
                                     "supported (a last block shorter than block_size)",
                                     2 * data->dims(1), scale->dims(1), block));
  // The 4-bit values of the rows of "packed" at the indices, [..., 2 x bytes] (low half first).
  auto unpacked_rows = [&](const std::string& packed) {
    std::string bytes = e.op(Op::kGather, {packed, e.in(1)}, {int_attr("axis", 0)});
    std::string low =
        e.op(Op::kBitwiseAnd,
             {bytes, e.constant_of(Tensor::from_vector<uint8_t>(DType::kU8, {}, {15}))});
    onnx::AttributeProto right;
    right.set_name("direction");
    right.set_type(onnx::AttributeProto::STRING);
    right.set_s("RIGHT");
    std::string high =
        e.op(Op::kBitShift,
             {bytes, e.constant_of(Tensor::from_vector<uint8_t>(DType::kU8, {}, {4}))}, {right});
    std::string pairs = e.op(
        Op::kConcat,
        {e.op(Op::kUnsqueeze, {low, e.ints({-1})}), e.op(Op::kUnsqueeze, {high, e.ints({-1})})},
        {int_attr("axis", -1)});
    std::string shape =
        e.op(Op::kConcat, {e.op(Op::kShape, {bytes}, {int_attr("end", -1)}), e.ints({-1})},
             {int_attr("axis", 0)});
    return e.op(Op::kReshape, {pairs, shape});
  };
  std::string scales =
      e.op(Op::kGather, {e.in(2), e.in(1)}, {int_attr("axis", 0)}); // [..., blocks]
  std::string values = e.op(Op::kCastLike, {unpacked_rows(e.in(0)), scales});
  std::string zeros = e.in(3).empty() ? e.scalar(8.0, scales)
                                      : e.op(Op::kCastLike, {unpacked_rows(e.in(3)), scales});
  if (!e.in(3).empty()) // as many as the blocks (a byte's spare half dropped)
    zeros = e.op(Op::kSlice, {zeros, e.ints({0}),
                              e.op(Op::kShape, {scales}, {int_attr("start", -1)}), e.ints({-1})});
  // [..., blocks, block_size] per block, then the rows again.
  std::string blocked =
      e.op(Op::kReshape, {values, e.op(Op::kConcat, {e.op(Op::kShape, {scales}), e.ints({block})},
                                       {int_attr("axis", 0)})});
  auto per_block = [&](const std::string& t) { return e.op(Op::kUnsqueeze, {t, e.ints({-1})}); };
  std::string scaled =
      e.op(Op::kMul, {e.op(Op::kSub, {blocked, e.in(3).empty() ? zeros : per_block(zeros)}),
                      per_block(scales)});
  std::string rows =
      e.op(Op::kConcat, {e.op(Op::kShape, {scales}, {int_attr("end", -1)}), e.ints({-1})},
           {int_attr("axis", 0)});
  e.op(Op::kReshape, {scaled, rows}, {}, e.out(0));
  return Status();
}

// Does the QLinearConv or QLinearMatMul "e" take the float path: constant weights (input 3)
// of rank 2 or more, with a scale and zero point of one element or one per output channel
// (other lengths stay for infer_qlinear's error), and before opset 13 (no DequantizeLinear
// axis) scales and zero points of one element.
bool weights_constant(const Expansion& e) {
  const onnx::TensorProto* w = e.constant(e.in(3));
  if (!w || w->dims_size() < 2) return false;
  int64_t channels =
      graph_op(e.node()) == Op::kQLinearConv ? w->dims(0) : w->dims(w->dims_size() - 1);
  for (int i : {4, 5}) {
    const onnx::TensorProto* t = e.constant(e.in(i));
    if (!e.in(i).empty() && (!t || (num_elements(*t) != 1 && num_elements(*t) != channels)))
      return false;
  }
  if (e.opset() >= 13) return true;
  for (int i : {1, 2, 4, 5, 6, 7}) {
    if (e.in(i).empty()) continue;
    const onnx::TensorProto* t = e.constant(e.in(i));
    if (!t || e.axis_of(e.in(i), 0)) return false;
  }
  return true;
}

// By qualified name: "com.microsoft.QGemm".
const std::map<std::string, ContribOp>& contrib_ops() {
  static const std::map<std::string, ContribOp> ops = [] {
    std::map<std::string, ContribOp> quantized = {
        {"com.microsoft.QGemm",
         {{"A", "a_scale", "a_zero_point", "B", "b_scale", "b_zero_point", "C", "y_scale",
           "y_zero_point"},
          5,
          expand_qgemm}},
        {"com.microsoft.GatherBlockQuantized",
         {{"data", "indices", "scales", "zero_points"}, 3, expand_gather_block_quantized}},
        {"com.microsoft.MatMulNBits",
         {{"A", "B", "scales", "zero_points", "g_idx", "bias"}, 3, expand_matmul_nbits}},
        {"com.microsoft.QLinearAdd", binary(Op::kAdd)},
        {"com.microsoft.QLinearAveragePool",
         {{"X", "x_scale", "x_zero_point", "y_scale", "y_zero_point"},
          4,
          [](Expansion& e) {
            WEFT_RETURN_IF_ERROR(channels_first(e));
            std::string x = e.dequantize(e.in(0), e.in(1), e.in(2));
            e.quantize(e.op(Op::kAveragePool, {x}, e.attrs_except("channels_last")), e.in(3),
                       e.in(4), e.in(0));
            return Status();
          }}},
        {"com.microsoft.QLinearConcat", {{}, 0, expand_concat}},
        {"com.microsoft.QLinearGlobalAveragePool",
         {{"X", "x_scale", "x_zero_point", "y_scale", "y_zero_point"},
          5,
          [](Expansion& e) {
            WEFT_RETURN_IF_ERROR(channels_first(e));
            std::string x = e.dequantize(e.in(0), e.in(1), e.in(2));
            e.quantize(e.op(Op::kGlobalAveragePool, {x}), e.in(3), e.in(4), e.in(0));
            return Status();
          }}},
        {"com.microsoft.QLinearLeakyRelu", unary(Op::kLeakyRelu, leaky_relu_attrs)},
        {"com.microsoft.QLinearMul", binary(Op::kMul)},
        {"com.microsoft.QLinearReduceMean",
         {{"data", "data_scale", "data_zero_point", "reduced_scale", "reduced_zero_point"},
          4,
          expand_reduce_mean}},
        {"com.microsoft.QLinearSigmoid", unary(Op::kSigmoid, no_attrs)},
        {"com.microsoft.QLinearSoftmax",
         {{"X", "X_scale", "x_zero_point", "y_scale", "y_zero_point"}, 4, expand_softmax}},
        {"com.microsoft.QLinearWhere",
         {{"condition", "X", "x_scale", "x_zero_point", "Y", "y_scale", "y_zero_point", "z_scale",
           "z_zero_point"},
          9,
          [](Expansion& e) {
            std::string x = e.dequantize(e.in(1), e.in(2), e.in(3));
            std::string y = e.dequantize(e.in(4), e.in(5), e.in(6));
            e.quantize(e.op(Op::kWhere, {e.in(0), x, y}), e.in(7), e.in(8), e.in(1));
            return Status();
          }}},
    };
    quantized.merge(transformer_ops());
    quantized.merge(decoder_ops());
    quantized.merge(ml_legacy_ops());
    return quantized;
  }();
  return ops;
}

// Required inputs (the first "required", those with names ending in "_zero_point" aside,
// which are optional in every op here) are given, and no more than the op takes.
Status check_inputs(const onnx::NodeProto& node, const ContribOp& op) {
  if (op.inputs.empty()) return Status();
  if (static_cast<size_t>(node.input_size()) > op.inputs.size()) {
    return Status::error(
        fmt::format("has {} inputs, at most {}", node.input_size(), op.inputs.size()));
  }
  for (size_t i = 0; i < op.required; ++i) {
    std::string_view name = op.inputs[i];
    bool optional = name.ends_with("_zero_point");
    if (!optional && (static_cast<int>(i) >= node.input_size() || node.input(i).empty()))
      return Status::error(fmt::format("input '{}' is required", name));
  }
  return Status();
}

// The rank of a Cast's, an Identity's or a ReduceSum's output, where its input's is known
// (ONNX Runtime's optimizer makes an attention's [B] mask_index as ReduceSum(Cast(mask), 1)).
std::optional<int> output_rank(const onnx::NodeProto& n, const Scope& scope) {
  Op op = graph_op(n);
  auto in = n.input_size() > 0 ? scope.ranks.find(n.input(0)) : scope.ranks.end();
  if (n.output_size() != 1 || in == scope.ranks.end()) return std::nullopt;
  if (op == Op::kCast || op == Op::kIdentity) return in->second;
  if (op != Op::kReduceSum) return std::nullopt;
  const onnx::AttributeProto* keepdims = find_attr(n, "keepdims");
  if (!keepdims || keepdims->i() != 0) return in->second;
  if (const onnx::AttributeProto* axes = find_attr(n, "axes")) // (before opset 13)
    return in->second - axes->ints_size();
  auto axes = n.input_size() > 1 ? scope.constants.find(n.input(1)) : scope.constants.end();
  if (axes == scope.constants.end() || axes->second->dims_size() != 1) return std::nullopt;
  return in->second - static_cast<int>(axes->second->dims(0));
}

class Expander {
public:
  Expander(int opset, std::string name) : opset_(opset), name_(std::move(name)) {}

  // "outer": the constants of the graphs around this one.
  // "maps": where the graph's map outputs go (the model's graph: Graph::map_outputs); none for
  // nested graphs, which cannot have them.
  Status expand_graph(onnx::GraphProto& graph, const Scope& outer,
                      std::map<std::string, MapKeys>* maps = nullptr) {
    Nodes out;
    Scope scope{outer.base_dir, outer.constants, {}, outer.ranks, outer.elem_types, {}};
    for (const onnx::TensorProto& t : graph.initializer()) {
      scope.constants[t.name()] = &t;
      scope.ranks[t.name()] = t.dims_size();
    }
    for (const auto* infos : {&graph.input(), &graph.value_info(), &graph.output()}) {
      for (const onnx::ValueInfoProto& v : *infos) {
        if (!v.type().has_tensor_type()) continue;
        const onnx::TypeProto::Tensor& t = v.type().tensor_type();
        if (t.has_shape() && infos != &graph.output()) scope.ranks[v.name()] = t.shape().dim_size();
        if (t.elem_type() != 0) scope.elem_types[v.name()] = t.elem_type();
      }
    }
    for (onnx::NodeProto& node : *graph.mutable_node()) {
      for (onnx::AttributeProto& a : *node.mutable_attribute()) {
        if (a.has_g()) WEFT_RETURN_IF_ERROR(expand_graph(*a.mutable_g(), scope));
        for (onnx::GraphProto& g : *a.mutable_graphs())
          WEFT_RETURN_IF_ERROR(expand_graph(g, scope));
      }
      std::string base = node.name().empty() ? node.op_type() : node.name();
      Expansion e(node, out, scope, opset_, fmt::format("{}__q{}/", base, count_));
      if (is_onnx_domain(node.domain()) && node.input_size() >= 8 && weights_constant(e) &&
          (graph_op(node) == Op::kQLinearConv || graph_op(node) == Op::kQLinearMatMul)) {
        ++count_;
        WEFT_RETURN_IF_ERROR(graph_op(node) == Op::kQLinearConv ? expand_qlinear_conv(e)
                                                                : expand_qlinear_matmul(e));
        continue;
      }
      // ONNX Runtime registers its RMSNorm in the ai.onnx domain: not an ONNX op.
      bool rms_norm =
          is_onnx_domain(node.domain()) && node.op_type() == "SimplifiedLayerNormalization";
      auto it = contrib_ops().find(rms_norm ? "com.microsoft.SkipSimplifiedLayerNormalization"
                                            : fmt::format("{}.{}", node.domain(), node.op_type()));
      if (node.domain() == kWeftDomain)
        return Status::error(fmt::format("{}: node '{}': domain '{}' is Weft's own (no model can "
                                         "use it)",
                                         name_, base, kWeftDomain));
      bool expanded_domain = node.domain() == kMicrosoftDomain || node.domain() == kMlDomain;
      if ((!expanded_domain && !rms_norm) || it == contrib_ops().end()) {
        onnx::NodeProto* kept = out.Add();
        *kept = std::move(node);
        if (std::optional<int> rank = output_rank(*kept, scope))
          scope.ranks[kept->output(0)] = *rank;
        const onnx::AttributeProto* value = find_attr(*kept, "value");
        if (graph_op(*kept) == Op::kConstant && kept->output_size() == 1 && value && value->has_t())
          scope.constants[kept->output(0)] = &value->t();
        continue;
      }
      ++count_;
      Status s = rms_norm ? expand_simplified_layer_norm(e) : check_inputs(node, it->second);
      if (s.ok() && !rms_norm) s = it->second.expand(e);
      if (!s.ok()) {
        return Status::error(fmt::format("{}: node '{}' ({}.{}): {}", name_, base,
                                         rms_norm ? "ai.onnx" : node.domain(), node.op_type(),
                                         s.message()));
      }
    }
    graph.mutable_node()->Swap(&out);
    return declare_map_outputs(graph, scope, maps);
  }

  // The map outputs of "scope" declared as the f32 tensors they now are, and noted in "maps".
  Status declare_map_outputs(onnx::GraphProto& graph, const Scope& scope,
                             std::map<std::string, MapKeys>* maps) {
    for (const auto& [value, keys] : scope.map_outputs) {
      auto is_read = [&](const onnx::NodeProto& n) {
        return std::find(n.input().begin(), n.input().end(), value) != n.input().end();
      };
      auto declared =
          std::find_if(graph.mutable_output()->begin(), graph.mutable_output()->end(),
                       [&](const onnx::ValueInfoProto& o) { return o.name() == value; });
      if (!maps || declared == graph.mutable_output()->end() ||
          std::any_of(graph.node().begin(), graph.node().end(), is_read)) {
        return Status::error(fmt::format("{}: ZipMap's '{}' is {}: Weft makes a sequence of maps "
                                         "only as an output of the model's graph",
                                         name_, value,
                                         maps ? "read inside the model" : "in a nested graph"));
      }
      declared->mutable_type()->Clear();
      declared->mutable_type()->mutable_tensor_type()->set_elem_type(1 /* FLOAT */);
      auto* infos = graph.mutable_value_info(); // a declaration there would say sequence too
      infos->erase(std::remove_if(infos->begin(), infos->end(),
                                  [&](const onnx::ValueInfoProto& v) { return v.name() == value; }),
                   infos->end());
      (*maps)[value] = keys;
    }
    return Status();
  }

private:
  int opset_;
  std::string name_;
  int count_ = 0;
};

} // namespace
} // namespace contrib

Result<std::map<std::string, MapKeys>> expand_contrib_ops(onnx::ModelProto& model, int opset,
                                                          const std::string& name,
                                                          const std::string& base_dir) {
  std::map<std::string, MapKeys> maps;
  WEFT_RETURN_IF_ERROR(contrib::Expander(opset, name)
                           .expand_graph(*model.mutable_graph(),
                                         contrib::Scope{base_dir, {}, {}, {}, {}, {}}, &maps));
  return maps;
}

namespace {

// The ops of "domain" that expand_contrib_ops() expands, by their names there.
std::vector<std::string> expanded_op_names(std::string_view domain) {
  std::vector<std::string> names;
  std::string prefix = fmt::format("{}.", domain);
  for (const auto& [name, op] : contrib::contrib_ops()) {
    if (name.starts_with(prefix)) names.push_back(name.substr(prefix.size()));
  }
  return names;
}

} // namespace

std::vector<std::string> contrib_op_names() { return expanded_op_names(kMicrosoftDomain); }

std::vector<std::string> ml_expanded_op_names() { return expanded_op_names(kMlDomain); }

std::string contrib_ops_list() {
  std::vector<std::string> names = contrib_op_names();
  return fmt::format("{} and {}", fmt::join(names.begin(), names.end() - 1, ", "), names.back());
}

} // namespace weft
