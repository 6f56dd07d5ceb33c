#include "weft/library/random_call.h"

#include <bit>
#include <cstring>
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
  RandomKernel(Op op, const RandomAttrs& a, DType in, DType out, std::vector<CallExtent> dims)
      : op_(op), a_(a), in_(in), out_(out), dims_(std::move(dims)),
        engine_(a.seed ? std::bit_cast<uint32_t>(*a.seed) // any float, NaN included
                       : (uint64_t{std::random_device{}()} << 32) | std::random_device{}()) {}

  Status run(void* const* buffers, const int64_t* extents) const override {
    int64_t n = 1;
    for (const CallExtent& d : dims_)
      n *= d.at(extents);
    bool bernoulli = op_ == Op::kBernoulli;
    Tensor values(out_, {n});
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::normal_distribution<double> normal(a_.mean, a_.scale);
    bool is_normal = op_ == Op::kRandomNormal || op_ == Op::kRandomNormalLike;
    {
      std::lock_guard<std::mutex> lock(mutex_); // one generator, whichever thread runs
      for (int64_t i = 0; i < n; ++i) {
        double v = is_normal   ? normal(engine_)
                   : bernoulli ? (uniform(engine_) < load(buffers[0], in_, i) ? 1.0 : 0.0)
                               : a_.low + (a_.high - a_.low) * uniform(engine_);
        values.set_double(i, v);
      }
    }
    if (n > 0) std::memcpy(buffers[bernoulli ? 1 : 0], values.data(), values.num_bytes());
    return Status();
  }

  std::string describe() const override {
    return fmt::format("{} values drawn by a Mersenne twister", op_);
  }

private:
  Op op_;
  RandomAttrs a_;
  DType in_, out_;
  std::vector<CallExtent> dims_;
  mutable std::mutex mutex_;
  mutable std::mt19937_64 engine_;
};

} // namespace

bool draws_random_values(const Node& node) {
  Op op = node.op_type.id();
  return op == Op::kRandomNormal || op == Op::kRandomNormalLike || op == Op::kRandomUniform ||
         op == Op::kRandomUniformLike || op == Op::kBernoulli;
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
  DType in = op == Op::kBernoulli ? node.inputs[0]->type.dtype : y->type.dtype;
  call.kernel = std::make_shared<RandomKernel>(op, node.attrs_as<RandomAttrs>(), in, y->type.dtype,
                                               std::move(dims));
  if (op == Op::kBernoulli) call.values.push_back(node.inputs[0]);
  call.values.push_back(y);
  call.nodes = {&node};
  return call;
}

} // namespace weft::library
