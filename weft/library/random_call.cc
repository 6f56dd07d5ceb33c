#include "weft/library/random_call.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>

#include <fmt/format.h>

#include "weft/graph/tensor.h"
#include "weft/library/shape_call.h"
#include "weft/support/float16.h"

namespace weft::library {

namespace {

// Element "i" of a buffer of float type "t", as a double.
double load(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::kF16: return half_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::kBF16: return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::kF64: return static_cast<const double*>(p)[i];
    default: return static_cast<const float*>(p)[i];
  }
}

class RandomKernel final : public runtime::LibraryKernel {
public:
  // "dims": the output's; "classes": Multinomial's (its input's dim 1).
  RandomKernel(Op op, const RandomAttrs& a, DType in, DType out, std::vector<CallExtent> dims,
               CallExtent classes)
      : op_(op), a_(a), in_(in), out_(out), dims_(std::move(dims)), classes_(classes),
        engine_(a.seed ? std::bit_cast<uint32_t>(*a.seed) // any float, NaN included
                       : (uint64_t{std::random_device{}()} << 32) | std::random_device{}()) {}

  Status run(void* const* buffers, const int64_t* extents) const override {
    int64_t n = 1;
    for (const CallExtent& d : dims_)
      n *= d.at(extents);
    bool bernoulli = op_ == Op::kBernoulli, multinomial = op_ == Op::kMultinomial;
    Tensor values(out_, {n});
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::normal_distribution<double> normal(a_.mean, a_.scale);
    bool is_normal = op_ == Op::kRandomNormal || op_ == Op::kRandomNormalLike;
    if (multinomial) {
      draw_classes(buffers[0], dims_[0].at(extents), classes_.at(extents), values);
    } else {
      std::lock_guard<std::mutex> lock(mutex_); // one generator, whichever thread runs
      for (int64_t i = 0; i < n; ++i) {
        double v = is_normal   ? normal(engine_)
                   : bernoulli ? (uniform(engine_) < load(buffers[0], in_, i) ? 1.0 : 0.0)
                               : a_.low + (a_.high - a_.low) * uniform(engine_);
        values.set_double(i, v);
      }
    }
    if (n > 0)
      std::memcpy(buffers[bernoulli || multinomial ? 1 : 0], values.data(), values.num_bytes());
    return Status();
  }

  // Multinomial: each row of "logits" (unnormalized log-probabilities of "classes") gives
  // sample_size indices, each where a uniform draw falls in the row's cumulative sums.
  void draw_classes(const void* logits, int64_t rows, int64_t classes, Tensor& out) const {
    std::vector<double> sums(static_cast<size_t>(classes));
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::lock_guard<std::mutex> lock(mutex_);
    for (int64_t r = 0; r < rows; ++r) {
      double top = -std::numeric_limits<double>::infinity(), total = 0;
      for (int64_t c = 0; c < classes; ++c)
        top = std::max(top, load(logits, in_, r * classes + c));
      for (int64_t c = 0; c < classes; ++c) {
        total += std::exp(load(logits, in_, r * classes + c) - top);
        sums[static_cast<size_t>(c)] = total;
      }
      for (int64_t s = 0; s < a_.sample_size; ++s) {
        auto at = std::upper_bound(sums.begin(), sums.end(), uniform(engine_) * total);
        int64_t c = std::min<int64_t>(at - sums.begin(), classes - 1);
        out.set_int64(r * a_.sample_size + s, c);
      }
    }
  }

  std::string describe() const override {
    return fmt::format("{} values drawn by a Mersenne twister", op_);
  }

private:
  Op op_;
  RandomAttrs a_;
  DType in_, out_;
  std::vector<CallExtent> dims_;
  CallExtent classes_;
  mutable std::mutex mutex_;
  mutable std::mt19937_64 engine_;
};

} // namespace

bool draws_random_values(const Node& node) {
  Op op = node.op_type.id();
  return op == Op::kRandomNormal || op == Op::kRandomNormalLike || op == Op::kRandomUniform ||
         op == Op::kRandomUniformLike || op == Op::kBernoulli || op == Op::kMultinomial;
}

std::optional<LibraryCall> random_call(const Node& node) {
  if (!draws_random_values(node)) return std::nullopt;
  Op op = node.op_type.id();
  const Value* y = node.outputs[0];
  if (!y || !y->type.shape) return std::nullopt;
  LibraryCall call;
  std::vector<CallExtent> dims;
  for (const Dim& d : *y->type.shape)
    dims.push_back(call_extent(d, call.symbols));
  bool reads = op == Op::kBernoulli || op == Op::kMultinomial; // the input's values
  DType in = reads ? node.inputs[0]->type.dtype : y->type.dtype;
  CallExtent classes;
  if (op == Op::kMultinomial) {
    const Value* x = node.inputs[0];
    if (!x->type.shape || x->type.shape->size() != 2) return std::nullopt;
    classes = call_extent((*x->type.shape)[1], call.symbols);
  }
  call.kernel = std::make_shared<RandomKernel>(op, node.attrs_as<RandomAttrs>(), in, y->type.dtype,
                                               std::move(dims), classes);
  if (reads) call.values.push_back(node.inputs[0]);
  call.values.push_back(y);
  call.nodes = {&node};
  return call;
}

} // namespace weft::library
