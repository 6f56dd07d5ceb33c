#include "weft/onnx/ml_svm_ops.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "weft/onnx/ml_legacy_ops.h"

namespace weft::contrib {

namespace {

constexpr int kFloat = 1, kDouble = 11; // TensorProto's data types

std::string f64_constant(Expansion& e, const std::vector<float>& v, std::vector<int64_t> dims) {
  return e.constant_of(Tensor::from_vector(DType::kF64, std::move(dims), v));
}

struct Kernel {
  std::string type;
  float gamma = 0.0f, coef0 = 0.0f, degree = 0.0f;
};

Result<Kernel> kernel_of(const Expansion& e) {
  Kernel k{e.string_attr_or("kernel_type", "LINEAR")};
  if (k.type != "LINEAR" && k.type != "POLY" && k.type != "RBF" && k.type != "SIGMOID") {
    return Status::error(
        fmt::format("kernel_type is '{}' (expected LINEAR, POLY, RBF or SIGMOID)", k.type));
  }
  std::vector<float> p = e.floats_of("kernel_params");
  if (!p.empty() && p.size() != 3) {
    return Status::error(
        fmt::format("kernel_params has {} entries, expected 3 (gamma, coef0, degree)", p.size()));
  }
  if (!p.empty()) std::tie(k.gamma, k.coef0, k.degree) = std::tuple(p[0], p[1], p[2]);
  return k;
}

// The kernels [N, V] of "x" [N, F] with the support vectors "sv" [V * F].
Result<std::string> kernels(Expansion& e, const Kernel& k, const std::string& x,
                            const std::vector<float>& sv, int64_t vectors) {
  if (sv.empty() || sv.size() % static_cast<size_t>(vectors) != 0) {
    return Status::error(
        fmt::format("{} support_vectors values do not make {} vectors", sv.size(), vectors));
  }
  int64_t features = static_cast<int64_t>(sv.size()) / vectors;
  if (k.type == "RBF") {
    std::string d = e.op(Op::kSub, {e.unsqueeze(x, {1}), e.floats(sv, {vectors, features})});
    std::string squares = e.reduce(Op::kReduceSum, e.op(Op::kMul, {d, d}), {2}, 0);
    return e.op(Op::kExp, {e.op(Op::kMul, {squares, e.floats({-k.gamma}, {})})});
  }
  std::vector<float> transposed(sv.size());
  for (int64_t v = 0; v < vectors; ++v) {
    for (int64_t f = 0; f < features; ++f)
      transposed[static_cast<size_t>(f * vectors + v)] = sv[static_cast<size_t>(v * features + f)];
  }
  std::string dot = e.op(Op::kMatMul, {x, e.floats(transposed, {features, vectors})});
  if (k.type == "LINEAR") return dot;
  std::string t =
      e.op(Op::kAdd, {e.op(Op::kMul, {dot, e.floats({k.gamma}, {})}), e.floats({k.coef0}, {})});
  if (k.type == "POLY") return e.op(Op::kPow, {t, e.floats({k.degree}, {})});
  return e.op(Op::kTanh, {t});
}

std::vector<float> required_floats(const Expansion& e, const std::string& name, Status& s) {
  std::vector<float> v = e.floats_of(name);
  if (v.empty() && s.ok()) s = Status::error(fmt::format("attribute '{}' is empty", name));
  return v;
}

// The scores of a classifier without support vectors: X coefficients^T + rho[0], [N, C], and
// the label as ONNX Runtime chooses it (for two classes: the second where the highest score
// is >= 0.5 with all coefficients positive, or > 0 with some negative).
Status linear_classes(Expansion& e, const std::string& x, const std::vector<int64_t>& labels,
                      const std::string& transform) {
  Status s;
  std::vector<float> coefficients = required_floats(e, "coefficients", s);
  std::vector<float> rho = required_floats(e, "rho", s);
  WEFT_RETURN_IF_ERROR(s);
  auto classes = static_cast<int64_t>(labels.size());
  if (coefficients.size() % labels.size() != 0) {
    return Status::error(
        fmt::format("{} coefficients do not make {} classes", coefficients.size(), classes));
  }
  int64_t features = static_cast<int64_t>(coefficients.size()) / classes;
  std::vector<float> w(coefficients.size());
  for (int64_t c = 0; c < classes; ++c) {
    for (int64_t f = 0; f < features; ++f)
      w[static_cast<size_t>(f * classes + c)] = coefficients[static_cast<size_t>(c * features + f)];
  }
  std::string scores = e.op(
      Op::kAdd, {e.op(Op::kMatMul, {x, e.floats(w, {features, classes})}), e.floats({rho[0]}, {})});
  std::string best = e.op(Op::kArgMax, {scores}, {int_attr("axis", 1), int_attr("keepdims", 0)});
  if (classes == 2) {
    bool positive =
        std::all_of(coefficients.begin(), coefficients.end(), [](float c) { return c >= 0.0f; });
    std::string top = e.reduce(Op::kReduceMax, scores, {1}, 0);
    std::string second = positive ? e.op(Op::kNot, {e.op(Op::kLess, {top, e.floats({0.5f}, {})})})
                                  : e.op(Op::kGreater, {top, e.floats({0.0f}, {})});
    best = e.op(Op::kWhere, {second, e.constant_of(Tensor::scalar_i64(1)), best});
  }
  e.op(Op::kGather, {e.constant_of(Tensor::vector_i64(labels)), best}, {}, e.out(0));
  e.op(Op::kIdentity, {apply_post_transform(e, transform, scores)}, {}, e.out(1));
  return Status();
}

} // namespace

Status expand_svm_regressor(Expansion& e) {
  WEFT_ASSIGN_OR_RETURN(std::string x, e.matrix_input(kFloat, 9));
  WEFT_ASSIGN_OR_RETURN(Kernel k, kernel_of(e));
  Status s;
  std::vector<float> coefficients = required_floats(e, "coefficients", s);
  std::vector<float> rho = required_floats(e, "rho", s);
  WEFT_RETURN_IF_ERROR(s);
  auto terms = static_cast<int64_t>(coefficients.size());
  int64_t vectors = e.int_attr_or("n_supports", 0);
  if (vectors > 0 && vectors != terms) {
    return Status::error(
        fmt::format("{} coefficients for n_supports = {}", coefficients.size(), vectors));
  }
  // ONNX Runtime ignores post_transform here.
  std::string terms_of = x; // without support vectors, the features weigh directly
  if (vectors > 0) {
    WEFT_ASSIGN_OR_RETURN(terms_of, kernels(e, k, x, e.floats_of("support_vectors"), vectors));
  }
  std::string y = e.op(Op::kMatMul, {terms_of, e.floats(coefficients, {terms, 1})});
  y = e.op(Op::kAdd, {y, e.floats({rho[0]}, {})});
  if (e.int_attr_or("one_class", 0) != 0) {
    std::string inside = e.op(Op::kGreater, {y, e.floats({0.0f}, {})});
    y = e.op(Op::kWhere, {inside, e.floats({1.0f}, {}), e.floats({-1.0f}, {})});
  }
  e.op(Op::kIdentity, {y}, {}, e.out(0));
  return Status();
}

Status expand_svm_classifier(Expansion& e) {
  WEFT_ASSIGN_OR_RETURN(std::string x, e.matrix_input(kFloat, 9));
  WEFT_ASSIGN_OR_RETURN(Kernel k, kernel_of(e));
  WEFT_ASSIGN_OR_RETURN(std::string transform, post_transform_of(e));
  if (find_attr(e.node(), "classlabels_strings")) return Status::error(kStringLabelsRead);
  if (!e.floats_of("prob_a").empty()) {
    return Status::error("probabilities (prob_a, prob_b: scikit-learn's SVC(probability=True)) "
                         "are not supported; export the SVC without probability=True");
  }
  std::vector<int64_t> labels = e.ints_of("classlabels_ints");
  auto classes = static_cast<int64_t>(labels.size());
  if (classes < 2)
    return Status::error(fmt::format("{} class labels; expected 2 or more", classes));
  std::vector<int64_t> per_class = e.ints_of("vectors_per_class");
  auto implausible = [](int64_t n) { return n < 0 || n > std::numeric_limits<int32_t>::max(); };
  if (std::any_of(per_class.begin(), per_class.end(), implausible))
    return Status::error("vectors_per_class holds a count outside [0, 2^31)");
  int64_t vectors = std::accumulate(per_class.begin(), per_class.end(), int64_t{0});
  if (vectors == 0) return linear_classes(e, x, labels, transform);
  if (static_cast<int64_t>(per_class.size()) != classes) {
    return Status::error(
        fmt::format("vectors_per_class has {} entries for {} classes", per_class.size(), classes));
  }
  Status s;
  std::vector<float> coefficients = required_floats(e, "coefficients", s);
  std::vector<float> rho = required_floats(e, "rho", s);
  WEFT_RETURN_IF_ERROR(s);
  int64_t pairs = classes * (classes - 1) / 2;
  if (static_cast<int64_t>(coefficients.size()) < (classes - 1) * vectors ||
      static_cast<int64_t>(rho.size()) < pairs) {
    return Status::error(fmt::format("{} coefficients and {} rho for {} classes and {} support "
                                     "vectors (expected {} and {})",
                                     coefficients.size(), rho.size(), classes, vectors,
                                     (classes - 1) * vectors, pairs));
  }
  WEFT_ASSIGN_OR_RETURN(std::string kx, kernels(e, k, x, e.floats_of("support_vectors"), vectors));
  // Pair (i, j)'s column of W: class i's vectors weigh coefficients row j - 1, class j's row i.
  // Its vote goes to i where the score is > 0, else to j: votes = [s > 0] (A - B) + colsum B.
  std::vector<int64_t> start(per_class.size());
  std::exclusive_scan(per_class.begin(), per_class.end(), start.begin(), int64_t{0});
  std::vector<float> w(static_cast<size_t>(vectors * pairs)),
      diff(static_cast<size_t>(pairs * classes));
  std::vector<float> base(static_cast<size_t>(classes));
  int64_t pair = 0;
  for (int64_t i = 0; i < classes; ++i) {
    for (int64_t j = i + 1; j < classes; ++j, ++pair) {
      for (auto [cls, row] : {std::pair{i, j - 1}, std::pair{j, i}}) {
        for (int64_t m = start[cls]; m < start[cls] + per_class[cls]; ++m)
          w[static_cast<size_t>(m * pairs + pair)] =
              coefficients[static_cast<size_t>(row * vectors + m)];
      }
      diff[static_cast<size_t>(pair * classes + i)] += 1.0f;
      diff[static_cast<size_t>(pair * classes + j)] -= 1.0f;
      base[static_cast<size_t>(j)] += 1.0f;
    }
  }
  // The pairs' sums in f64, as ONNX Runtime sums them: f32 loses ~1e-4 over hundreds of
  // vectors whose terms cancel.
  rho.resize(static_cast<size_t>(pairs));
  std::string kx64 = e.op(Op::kCast, {kx}, {int_attr("to", kDouble)});
  std::string sums = e.op(Op::kMatMul, {kx64, f64_constant(e, w, {vectors, pairs})});
  std::string scores =
      e.op(Op::kAdd, {e.op(Op::kCast, {sums}, {int_attr("to", kFloat)}), e.floats(rho, {pairs})});
  std::string wins = e.op(Op::kCast, {e.op(Op::kGreater, {scores, e.floats({0.0f}, {})})},
                          {int_attr("to", kFloat)});
  std::string votes = e.op(Op::kAdd, {e.op(Op::kMatMul, {wins, e.floats(diff, {pairs, classes})}),
                                      e.floats(base, {classes})});
  std::string best = e.op(Op::kArgMax, {votes}, {int_attr("axis", 1), int_attr("keepdims", 0)});
  e.op(Op::kGather, {e.constant_of(Tensor::vector_i64(labels)), best}, {}, e.out(0));
  if (classes > 2) {
    e.op(Op::kIdentity, {apply_post_transform(e, transform, scores)}, {}, e.out(1));
    return Status();
  }
  // One score s, as ONNX Runtime 1.32 writes it: [-s, s], through the logistic for LOGISTIC;
  // [1 - s, s] for SOFTMAX.
  if (transform == "SOFTMAX") {
    std::string other = e.op(Op::kSub, {e.floats({1.0f}, {}), scores});
    e.op(Op::kConcat, {other, scores}, {int_attr("axis", 1)}, e.out(1));
    return Status();
  }
  std::string both = e.op(Op::kConcat, {e.op(Op::kNeg, {scores}), scores}, {int_attr("axis", 1)});
  e.op(Op::kIdentity, {apply_post_transform(e, transform, both)}, {}, e.out(1));
  return Status();
}

} // namespace weft::contrib
