#include "weft/library/moe_call.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <fmt/format.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "weft/library/shape_call.h"
#include "weft/library/weight_only_matmul.h"

namespace weft::library {

namespace {

// One of fc1 and fc2: weights [E, N, K], f32 or block-quantized, and a bias [E, N] or none.
struct Linear {
  const Value* weights = nullptr; // f32 constant, or null when quantized
  const Node* dequantize = nullptr;
  std::optional<BlockQuantized> quantized;
  const Value* bias = nullptr;
  int64_t experts = 0, n = 0, k = 0;
};

bool is_f32_constant(const Value* v, const std::vector<int64_t>& dims) {
  return v && v->is_constant() && v->type.dtype == DType::kF32 && v->constant->dims() == dims;
}

std::optional<Linear> linear_of(const Value* w, const Value* bias, const SoleReader& sole_reader,
                                const Node& moe) {
  Linear l;
  if (w && w->is_constant() && w->type.dtype == DType::kF32 && w->constant->dims().size() == 3) {
    l.weights = w;
    const std::vector<int64_t>& d = w->constant->dims();
    l.experts = d[0], l.n = d[1], l.k = d[2];
  } else if (const Node* dq = w ? w->producer : nullptr) {
    l.quantized = block_quantized(*dq);
    if (!l.quantized || l.quantized->q->dims().size() != 3 || sole_reader(w) != &moe)
      return std::nullopt;
    l.dequantize = dq;
    const std::vector<int64_t>& d = l.quantized->q->dims();
    l.experts = d[0], l.n = d[1], l.k = d[2];
  } else {
    return std::nullopt;
  }
  if (bias && !is_f32_constant(bias, {l.experts, l.n})) return std::nullopt;
  l.bias = bias;
  return l;
}

// The forms moe_call_takes describes: fc1 and fc2, and x's and the logits' [T, H], [T, E].
struct Form {
  Linear fc1, fc2;
  Dim tokens = 1;
  int64_t hidden = 0, experts = 0;
};

std::optional<Form> form_of(const Node& moe, const SoleReader& sole_reader) {
  if (moe.op_type != Op::kMoE || moe.inputs.size() < 5) return std::nullopt;
  const Value *x = moe.inputs[0], *logits = moe.inputs[1];
  for (const Value* v : {x, logits, static_cast<const Value*>(moe.outputs[0])}) {
    if (v->type.dtype != DType::kF32 || !v->type.shape || v->type.shape->size() != 2 ||
        !(*v->type.shape)[1].is_static() || (*v->type.shape)[0].is_unknown())
      return std::nullopt;
  }
  Form f;
  f.tokens = (*x->type.shape)[0];
  f.hidden = (*x->type.shape)[1].value(), f.experts = (*logits->type.shape)[1].value();
  std::optional<Linear> fc1 = linear_of(moe.inputs[2], moe.input(3), sole_reader, moe);
  std::optional<Linear> fc2 = linear_of(moe.inputs[4], moe.input(5), sole_reader, moe);
  const auto& a = moe.attrs_as<MoEAttrs>();
  bool swiglu = a.activation == "swiglu";
  bool known = swiglu || a.activation == "relu" || a.activation == "gelu" || a.activation == "silu";
  if (!fc1 || !fc2 || !known || a.k < 1 || a.k > f.experts ||
      (*logits->type.shape)[0] != f.tokens || fc1->experts != f.experts ||
      fc2->experts != f.experts || fc1->k != f.hidden || fc2->n != f.hidden ||
      fc1->n != (swiglu ? 2 : 1) * fc2->k)
    return std::nullopt;
  f.fc1 = *fc1, f.fc2 = *fc2;
  return f;
}

// What a kernel keeps of a Linear: its buffers' positions in the call's values, and per expert
// the quantized matrix.
struct Weights {
  int64_t n = 0, k = 0;
  int weights = -1, scale = -1, zero = -1, bias = -1;
  int64_t blocks = 0;                    // per row of N, quantized
  std::shared_ptr<const std::vector<QuantizedMatrix>> matrices; // per expert; null for f32
};

float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

class MixtureOfExperts final : public runtime::LibraryKernel {
public:
  MixtureOfExperts(CallExtent tokens, int64_t hidden, int64_t experts, const MoEAttrs& attrs,
                   Weights fc1, Weights fc2)
      : tokens_(tokens), hidden_(hidden), experts_(experts), attrs_(attrs), fc1_(std::move(fc1)),
        fc2_(std::move(fc2)) {}

  // buffers: x, logits, fc1's (weights, or scale, zero and q where read; bias), fc2's, y.
  Status run(void* const* buffers, const int64_t* extents) const override {
    int64_t tokens = tokens_.at(extents), k = attrs_.k;
    const auto* x = static_cast<const float*>(buffers[0]);
    const auto* logits = static_cast<const float*>(buffers[1]);
    auto* y = static_cast<float*>(buffers[last_]);
    // Each expert's tokens and their weights.
    std::vector<std::vector<std::pair<int64_t, float>>> routed(static_cast<size_t>(experts_));
    std::vector<int64_t> order(static_cast<size_t>(experts_));
    for (int64_t t = 0; t < tokens; ++t) {
      const float* l = logits + t * experts_;
      std::iota(order.begin(), order.end(), 0);
      // Larger first, the lower index among equals; NaN above every number (as TopK's call).
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t i, int64_t j) {
        bool ni = std::isnan(l[i]), nj = std::isnan(l[j]);
        if (ni || nj) return ni && (!nj || i < j);
        return l[i] > l[j] || (l[i] == l[j] && i < j);
      });
      // Softmax over the k chosen, or over all E.
      float top = l[order[0]], sum = 0;
      for (int64_t j = 0; j < (attrs_.normalize ? k : experts_); ++j)
        sum += std::exp(l[attrs_.normalize ? order[static_cast<size_t>(j)] : j] - top);
      for (int64_t j = 0; j < k; ++j) {
        int64_t e = order[static_cast<size_t>(j)];
        routed[static_cast<size_t>(e)].emplace_back(t, std::exp(l[e] - top) / sum);
      }
    }
    std::fill(y, y + tokens * hidden_, 0.0f);
    thread_local std::vector<float> rows, h, act, out;
    for (int64_t e = 0; e < experts_; ++e) {
      const auto& mine = routed[static_cast<size_t>(e)];
      auto n = static_cast<int64_t>(mine.size());
      if (n == 0) continue;
      rows.resize(static_cast<size_t>(n * hidden_));
      for (int64_t r = 0; r < n; ++r)
        std::copy_n(x + mine[static_cast<size_t>(r)].first * hidden_, hidden_,
                    rows.data() + r * hidden_);
      h.resize(static_cast<size_t>(n * fc1_.n));
      apply(fc1_, buffers, e, rows.data(), n, h.data());
      act.resize(static_cast<size_t>(n * fc2_.k));
      activate(h.data(), n, act.data());
      out.resize(static_cast<size_t>(n * hidden_));
      apply(fc2_, buffers, e, act.data(), n, out.data());
      for (int64_t r = 0; r < n; ++r) {
        auto [t, w] = mine[static_cast<size_t>(r)];
        float* to = y + t * hidden_;
        const float* from = out.data() + r * hidden_;
#pragma omp simd
        for (int64_t i = 0; i < hidden_; ++i)
          to[i] += w * from[i];
      }
    }
    return Status();
  }

  std::string describe() const override {
    std::string weights = "f32 weights";
    if (fc1_.matrices) {
      const QuantizedMatrix& m = fc1_.matrices->front();
      weights = fmt::format("{}-bit weights{}", m.bits(),
                            m.int8_activations() ? ", int8 activations" : "");
    }
    return fmt::format("Weft mixture of experts, {} experts, top {}, {} ({})", experts_, attrs_.k,
                       attrs_.activation, weights);
  }

  void set_last(int last) { last_ = last; }

private:
  // out [rows, N] = a [rows, K] times expert e's weights transposed, plus its bias.
  static void apply(const Weights& w, void* const* buffers, int64_t e, const float* a, int64_t rows,
                    float* out) {
    if (!w.matrices) {
      const float* we = static_cast<const float*>(buffers[w.weights]) + e * w.n * w.k;
      dnnl_sgemm('N', 'T', rows, w.n, w.k, 1.0f, a, w.k, we, w.k, 0.0f, out, w.n);
    } else {
      int64_t at = e * w.n * w.blocks;
      const auto* q =
          w.weights < 0 ? nullptr : static_cast<const uint8_t*>(buffers[w.weights]) + e * w.n * w.k;
      (*w.matrices)[static_cast<size_t>(e)].multiply(
          a, rows, q, static_cast<const float*>(buffers[w.scale]) + at,
          static_cast<const uint8_t*>(buffers[w.zero]) + at, out);
    }
    if (w.bias < 0) return;
    const float* bias = static_cast<const float*>(buffers[w.bias]) + e * w.n;
    for (int64_t r = 0; r < rows; ++r) {
#pragma omp simd
      for (int64_t i = 0; i < w.n; ++i)
        out[r * w.n + i] += bias[i];
    }
  }

  // act [rows, I] from h [rows, F].
  void activate(const float* h, int64_t rows, float* act) const {
    int64_t width = fc2_.k, f = fc1_.n;
    const std::string& kind = attrs_.activation;
#pragma omp parallel for if (rows * f > (1 << 15))
    for (int64_t r = 0; r < rows; ++r) {
      const float* in = h + r * f;
      float* to = act + r * width;
      if (kind == "swiglu") {
        float limit = attrs_.limit.value_or(std::numeric_limits<float>::infinity());
        for (int64_t i = 0; i < width; ++i) {
          float gate = std::min(in[2 * i], limit);
          float lin = std::max(std::min(in[2 * i + 1], limit), -limit);
          to[i] = gate * sigmoid(attrs_.alpha * gate) * (lin + attrs_.beta);
        }
      } else if (kind == "relu") {
        for (int64_t i = 0; i < width; ++i)
          to[i] = std::max(in[i], 0.0f);
      } else if (kind == "silu") {
        for (int64_t i = 0; i < width; ++i)
          to[i] = in[i] * sigmoid(in[i]);
      } else { // gelu, tanh's approximation
        const float c = std::sqrt(2.0f / static_cast<float>(M_PI));
        for (int64_t i = 0; i < width; ++i) {
          float v = in[i];
          to[i] = v * 0.5f * (1.0f + std::tanh((v + v * v * v * 0.044715f) * c));
        }
      }
    }
  }

  CallExtent tokens_;
  int64_t hidden_, experts_;
  MoEAttrs attrs_;
  Weights fc1_, fc2_;
  int last_ = 0;
};

// The kernel's view of "l", its buffers appended to the call's values; quantized weights that
// every expert's matrix holds in a layout of its own are not bound (LibraryCall::held).
Weights weights_of(const Linear& l, LibraryCall& call) {
  std::vector<const Value*>& values = call.values;
  Weights w;
  w.n = l.n, w.k = l.k;
  if (l.quantized) {
    const Node& dq = *l.dequantize;
    const BlockQuantized& b = *l.quantized;
    w.blocks = (l.k + b.block - 1) / b.block;
    w.matrices = quantized_matrices(b);
    w.scale = static_cast<int>(values.size());
    w.zero = w.scale + 1;
    values.insert(values.end(), {dq.inputs[1], dq.inputs[2]});
    bool read = std::any_of(w.matrices->begin(), w.matrices->end(),
                            [](const QuantizedMatrix& m) { return m.reads_q(); });
    if (read) w.weights = static_cast<int>(values.size());
    (read ? values : call.held).push_back(dq.inputs[0]);
  } else {
    w.weights = static_cast<int>(values.size());
    values.push_back(l.weights);
  }
  if (l.bias) {
    w.bias = static_cast<int>(values.size());
    values.push_back(l.bias);
  }
  return w;
}

} // namespace

bool moe_call_takes(const Node& moe, const SoleReader& sole_reader) {
  return form_of(moe, sole_reader).has_value();
}

std::optional<LibraryCall> moe_call(const Node& moe, const SoleReader& sole_reader) {
  std::optional<Form> f = form_of(moe, sole_reader);
  if (!f) return std::nullopt;
  LibraryCall call;
  call.values = {moe.inputs[0], moe.inputs[1]};
  CallExtent tokens = call_extent(f->tokens, call.symbols);
  Weights fc1 = weights_of(f->fc1, call), fc2 = weights_of(f->fc2, call);
  auto kernel = std::make_shared<MixtureOfExperts>(
      tokens, f->hidden, f->experts, moe.attrs_as<MoEAttrs>(), std::move(fc1), std::move(fc2));
  kernel->set_last(static_cast<int>(call.values.size()));
  call.values.push_back(moe.outputs[0]);
  call.kernel = std::move(kernel);
  for (const Node* dq : {f->fc1.dequantize, f->fc2.dequantize}) {
    if (dq) call.nodes.push_back(dq);
  }
  call.nodes.push_back(&moe);
  return call;
}

} // namespace weft::library
