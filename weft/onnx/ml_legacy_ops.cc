#include "weft/onnx/ml_legacy_ops.h"

#include <cmath>

#include <fmt/format.h>

#include "weft/onnx/ml_svm_ops.h"
#include "weft/onnx/ml_tree_ops.h"

namespace weft::contrib {

namespace {

// The node's input as f32, [N, C]; the ops here need opset 9 (Where).
Result<std::string> f32_rows(Expansion& e) { return e.matrix_input(1 /* FLOAT */, 9); }

Status expand_scaler(Expansion& e) {
  WEFT_ASSIGN_OR_RETURN(std::string x, f32_rows(e));
  std::vector<float> offset = e.floats_of("offset"), scale = e.floats_of("scale");
  if (offset.empty()) offset = {0.0f};
  if (scale.empty()) scale = {1.0f};
  std::string shifted = e.op(Op::kSub, {x, e.floats(offset, {int64_t(offset.size())})});
  e.op(Op::kMul, {shifted, e.floats(scale, {int64_t(scale.size())})}, {}, e.out(0));
  return Status();
}

Status expand_normalizer(Expansion& e) {
  WEFT_ASSIGN_OR_RETURN(std::string x, f32_rows(e));
  std::string norm = e.string_attr_or("norm", "MAX"), z;
  if (norm == "MAX") {
    z = e.reduce(Op::kReduceMax, x, {1});
  } else if (norm == "L1") {
    z = e.reduce(Op::kReduceSum, e.op(Op::kAbs, {x}), {1});
  } else if (norm == "L2") {
    z = e.op(Op::kSqrt, {e.reduce(Op::kReduceSum, e.op(Op::kMul, {x, x}), {1})});
  } else {
    return Status::error(fmt::format("attribute 'norm' is '{}' (expected MAX, L1 or L2)", norm));
  }
  std::string zero = e.op(Op::kEqual, {z, e.floats({0.0f}, {})});
  e.op(Op::kWhere, {zero, x, e.op(Op::kDiv, {x, z})}, {}, e.out(0));
  return Status();
}

// X W^T + b for "coefficients" [rows * C] and "intercepts" [rows] (zeros when absent):
// [N, rows].
Result<std::string> linear_scores(Expansion& e, const std::string& x, int64_t rows) {
  std::vector<float> w = e.floats_of("coefficients"), b = e.floats_of("intercepts");
  if (rows < 1 || w.empty() || w.size() % static_cast<size_t>(rows) != 0) {
    return Status::error(fmt::format("{} coefficients do not make {} rows", w.size(), rows));
  }
  if (b.empty()) b.assign(static_cast<size_t>(rows), 0.0f);
  if (static_cast<int64_t>(b.size()) != rows) {
    return Status::error(fmt::format("{} intercepts for {} rows of coefficients", b.size(), rows));
  }
  int64_t columns = static_cast<int64_t>(w.size()) / rows;
  std::vector<float> transposed(w.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < columns; ++c)
      transposed[static_cast<size_t>(c * rows + r)] = w[static_cast<size_t>(r * columns + c)];
  }
  std::string product = e.op(Op::kMatMul, {x, e.floats(transposed, {columns, rows})});
  return e.op(Op::kAdd, {product, e.floats(b, {rows})});
}

Status expand_linear_regressor(Expansion& e) {
  WEFT_ASSIGN_OR_RETURN(std::string x, f32_rows(e));
  std::string transform = e.string_attr_or("post_transform", "NONE");
  if (transform != "NONE")
    return Status::error(fmt::format("post_transform {} is not supported (only NONE)", transform));
  WEFT_ASSIGN_OR_RETURN(std::string y, linear_scores(e, x, e.int_attr_or("targets", 1)));
  e.op(Op::kIdentity, {y}, {}, e.out(0));
  return Status();
}

Status expand_linear_classifier(Expansion& e) {
  WEFT_ASSIGN_OR_RETURN(std::string x, f32_rows(e));
  if (find_attr(e.node(), "classlabels_strings")) return Status::error(kStringLabelsRead);
  WEFT_ASSIGN_OR_RETURN(std::string transform, post_transform_of(e));
  std::vector<float> intercepts = e.floats_of("intercepts");
  std::vector<int64_t> labels = e.ints_of("classlabels_ints");
  auto rows = static_cast<int64_t>(intercepts.size());
  if (rows == 0) rows = labels.empty() ? 1 : static_cast<int64_t>(labels.size());
  if (labels.empty()) {
    for (int64_t i = 0; i < std::max<int64_t>(rows, 2); ++i)
      labels.push_back(i);
  }
  auto classes = static_cast<int64_t>(labels.size());
  bool binary = rows == 1 && classes == 2;
  if (!binary && rows != classes) {
    return Status::error(fmt::format("{} rows of coefficients for {} class labels", rows, classes));
  }
  WEFT_ASSIGN_OR_RETURN(std::string s, linear_scores(e, x, rows));
  std::string label_table = e.constant_of(Tensor::from_vector(DType::kI64, {classes}, labels));
  if (binary) { // as ONNX Runtime: [1 - s, s], [1 - p, p] after LOGISTIC; label 1 where s > 0
    std::string p = transform == "LOGISTIC" ? e.op(Op::kSigmoid, {s}) : s;
    std::string one = e.floats({1.0f}, {});
    e.op(Op::kConcat, {e.op(Op::kSub, {one, p}), p}, {int_attr("axis", 1)}, e.out(1));
    std::string positive = e.op(Op::kGreater, {s, e.floats({0.0f}, {})});
    std::string index = e.op(Op::kCast, {positive}, {int_attr("to", 7 /* INT64 */)});
    std::string flat = e.squeeze(index, {1});
    e.op(Op::kGather, {label_table, flat}, {}, e.out(0));
    return Status();
  }
  std::string scores = apply_post_transform(e, transform, s);
  e.op(Op::kIdentity, {scores}, {}, e.out(1));
  std::string best = e.op(Op::kArgMax, {scores}, {int_attr("axis", 1), int_attr("keepdims", 0)});
  e.op(Op::kGather, {label_table, best}, {}, e.out(0));
  return Status();
}

// "t" in the element type of the node's input: the type the graph declares for it, else
// CastLike's (opset 15 on), else t's own.
std::string like_input(Expansion& e, const Tensor& t) {
  std::string c = e.constant_of(t);
  std::optional<int> declared = e.elem_type(e.in(0));
  if (declared && *declared == dtype_to_onnx(t.dtype())) return c;
  if (declared) return e.op(Op::kCast, {c}, {int_attr("to", *declared)});
  return e.opset() >= 15 ? e.op(Op::kCastLike, {c, e.in(0)}) : c;
}

// Imputer: each element equal to the replaced value (NaN: any NaN) becomes its column's
// imputed value (or the one value for all columns), in X's type.
Status expand_imputer(Expansion& e) {
  if (e.opset() < 9) return Status::error("needs ai.onnx opset 9 or newer beside it");
  std::vector<float> floats = e.floats_of("imputed_value_floats");
  std::vector<int64_t> ints = e.ints_of("imputed_value_int64s");
  if (floats.empty() == ints.empty()) {
    return Status::error(
        "give exactly one of the attributes imputed_value_floats and imputed_value_int64s");
  }
  bool is_float = !floats.empty();
  auto columns = static_cast<int64_t>(is_float ? floats.size() : ints.size());
  Tensor imputed = is_float ? Tensor::from_vector(DType::kF32, {columns}, floats)
                            : Tensor::from_vector(DType::kI64, {columns}, ints);
  std::string x = e.in(0), missing;
  float replaced = e.float_attr_or("replaced_value_float", 0.0f);
  if (is_float && std::isnan(replaced)) {
    missing = e.op(Op::kIsNaN, {x});
  } else {
    Tensor value = is_float ? Tensor::from_vector(DType::kF32, {}, std::vector<float>{replaced})
                            : Tensor::scalar_i64(e.int_attr_or("replaced_value_int64", 0));
    missing = e.op(Op::kEqual, {x, like_input(e, value)});
  }
  e.op(Op::kWhere, {missing, like_input(e, imputed), x}, {}, e.out(0));
  return Status();
}

// OneHotEncoder: X [...] of numbers (cast to int64, as ONNX Runtime compares them) gives f32
// [..., categories], 1 where X is that category. An unknown category gives zeros, also where
// zeros = 0 asks for an error (which Weft cannot raise at run time).
Status expand_one_hot_encoder(Expansion& e) {
  if (find_attr(e.node(), "cats_strings")) return Status::error(kStringInputRead);
  std::vector<int64_t> cats = e.ints_of("cats_int64s");
  if (cats.empty()) return Status::error("attribute 'cats_int64s' is empty");
  std::string x = e.op(Op::kCast, {e.in(0)}, {int_attr("to", 7 /* INT64 */)});
  std::string hit =
      e.op(Op::kEqual, {e.unsqueeze(x, {-1}), e.constant_of(Tensor::vector_i64(cats))});
  e.op(Op::kCast, {hit}, {int_attr("to", 1 /* FLOAT */)}, e.out(0));
  return Status();
}

// LabelEncoder's keys or values ("what": "keys" or "values"): the list attribute of int64s or
// floats, or the tensor (ai.onnx.ml 4); strings are refused.
Result<Tensor> encoder_list(const Expansion& e, const std::string& what) {
  if (find_attr(e.node(), what + "_strings")) {
    return Status::error(what == "keys"
                             ? std::string(kStringInputRead)
                             : "string values are not supported (string tensors are not)");
  }
  if (const onnx::AttributeProto* t = find_attr(e.node(), what + "_tensor")) {
    WEFT_ASSIGN_OR_RETURN(Tensor v, e.tensor(t->t()));
    if (v.dims().size() != 1)
      return Status::error(fmt::format("{}_tensor must be a vector of numbers", what));
    return v;
  }
  std::vector<int64_t> ints = e.ints_of(what + "_int64s");
  std::vector<float> floats = e.floats_of(what + "_floats");
  if (ints.empty() == floats.empty())
    return Status::error(fmt::format("give exactly one list of {}", what));
  return ints.empty() ? Tensor::from_vector(DType::kF32, {int64_t(floats.size())}, floats)
                      : Tensor::vector_i64(ints);
}

// LabelEncoder between numbers (scikit-learn's OrdinalEncoder): each element of X equal to a
// key becomes its value (a NaN key matches NaN; of equal keys, the first), the others the
// default.
Status expand_label_encoder(Expansion& e) {
  if (e.opset() < 11) return Status::error("needs ai.onnx opset 11 or newer beside it");
  WEFT_ASSIGN_OR_RETURN(Tensor keys, encoder_list(e, "keys"));
  WEFT_ASSIGN_OR_RETURN(Tensor values, encoder_list(e, "values"));
  if (keys.num_elements() != values.num_elements() || keys.num_elements() == 0) {
    return Status::error(
        fmt::format("{} keys for {} values", keys.num_elements(), values.num_elements()));
  }
  Tensor fallback(values.dtype(), {});
  if (const onnx::AttributeProto* t = find_attr(e.node(), "default_tensor")) {
    WEFT_ASSIGN_OR_RETURN(Tensor d, e.tensor(t->t()));
    if (d.num_elements() != 1) return Status::error("default_tensor must hold one value");
    fallback.set_double(0, d.get_double(0));
  } else {
    fallback.set_double(0, dtype_is_float(values.dtype())
                               ? double(e.float_attr_or("default_float", -0.0f))
                               : double(e.int_attr_or("default_int64", -1)));
  }
  std::string x = e.unsqueeze(e.in(0), {-1});
  std::string hits = e.op(Op::kEqual, {x, e.constant_of(keys)}); // [..., keys]
  Tensor nan_keys(DType::kBool, {keys.num_elements()});
  bool any_nan = false;
  for (int64_t k = 0; k < keys.num_elements(); ++k) {
    bool nan = dtype_is_float(keys.dtype()) && std::isnan(keys.get_double(k));
    nan_keys.set_int64(k, nan);
    any_nan |= nan;
  }
  if (any_nan) {
    std::string nan = e.op(Op::kAnd, {e.op(Op::kIsNaN, {x}), e.constant_of(nan_keys)});
    hits = e.op(Op::kOr, {hits, nan});
  }
  std::string counts = e.op(Op::kCast, {hits}, {int_attr("to", 6 /* INT32 */)});
  std::string first = e.op(Op::kArgMax, {counts}, {int_attr("axis", -1), int_attr("keepdims", 0)});
  std::string found =
      e.op(Op::kCast, {e.reduce(Op::kReduceMax, counts, {-1}, 0)}, {int_attr("to", 9 /* BOOL */)});
  std::string value = e.op(Op::kGather, {e.constant_of(values), first});
  e.op(Op::kWhere, {found, value, e.constant_of(fallback)}, {}, e.out(0));
  return Status();
}

// ZipMap: a map per row from the labels to X's columns. Weft computes X itself and notes the
// labels as the output's keys (Graph::map_outputs); the expander checks that only the model
// reads it.
Status expand_zip_map(Expansion& e) {
  MapKeys keys{e.ints_of("classlabels_int64s"), e.strings_of("classlabels_strings")};
  if (keys.ints.empty() == keys.strings.empty())
    return Status::error("give exactly one of classlabels_int64s and classlabels_strings");
  e.op(Op::kIdentity, {e.in(0)}, {}, e.out(0));
  e.add_map_output(e.out(0), std::move(keys));
  return Status();
}

} // namespace

Result<std::string> post_transform_of(const Expansion& e) {
  std::string t = e.string_attr_or("post_transform", "NONE");
  if (t != "NONE" && t != "LOGISTIC" && t != "SOFTMAX") {
    return Status::error(
        fmt::format("post_transform {} is not supported (NONE, LOGISTIC or SOFTMAX)", t));
  }
  return t;
}

std::string apply_post_transform(Expansion& e, const std::string& transform, const std::string& s) {
  if (transform == "LOGISTIC") return e.op(Op::kSigmoid, {s});
  if (transform == "SOFTMAX") return e.op(Op::kSoftmax, {s}, {int_attr("axis", 1)});
  return s;
}

std::map<std::string, ContribOp> ml_legacy_ops() {
  return {
      {"ai.onnx.ml.Scaler", {{"X"}, 1, expand_scaler}},
      {"ai.onnx.ml.Normalizer", {{"X"}, 1, expand_normalizer}},
      {"ai.onnx.ml.LinearRegressor", {{"X"}, 1, expand_linear_regressor}},
      {"ai.onnx.ml.LinearClassifier", {{"X"}, 1, expand_linear_classifier}},
      {"ai.onnx.ml.TreeEnsembleRegressor", {{"X"}, 1, expand_tree_ensemble_regressor}},
      {"ai.onnx.ml.TreeEnsembleClassifier", {{"X"}, 1, expand_tree_ensemble_classifier}},
      {"ai.onnx.ml.Imputer", {{"X"}, 1, expand_imputer}},
      {"ai.onnx.ml.OneHotEncoder", {{"X"}, 1, expand_one_hot_encoder}},
      {"ai.onnx.ml.SVMRegressor", {{"X"}, 1, expand_svm_regressor}},
      {"ai.onnx.ml.SVMClassifier", {{"X"}, 1, expand_svm_classifier}},
      {"ai.onnx.ml.ZipMap", {{"X"}, 1, expand_zip_map}},
      {"ai.onnx.ml.LabelEncoder", {{"X"}, 1, expand_label_encoder}},
  };
}

} // namespace weft::contrib
