#include "weft/library/recurrent_call.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.h>

#include "weft/support/vector_exp.h"

namespace weft::library {

namespace {

enum class Cell { kRnn, kGru, kLstm };

// (Sigmoid and tanh vectorize: libm's are scalar calls, most of a step's time.)
float apply(RnnActivation fn, float v) {
  switch (fn) {
    case RnnActivation::kSigmoid: return vector_sigmoid(v);
    case RnnActivation::kTanh: return vector_tanh(v);
    case RnnActivation::kRelu: return v > 0 ? v : 0.0f;
    case RnnActivation::kSoftsign: return v / (1.0f + std::abs(v));
    case RnnActivation::kSoftplus: return v > 20 ? v : std::log1p(std::exp(v));
  }
  return v;
}

// "fn" over n gate inputs in place, each clipped into [-clip, clip] first; the switch outside
// the loops, which vectorize (omp simd and -fno-trapping-math: -O2 left them scalar, 2 ns an
// element), on the widest vectors the CPU has.
__attribute__((target_clones("avx512f", "avx2", "default"))) void
activate_all(RnnActivation fn, float* v, int64_t n, float clip) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j)
    v[j] = v[j] < -clip ? -clip : v[j] > clip ? clip : v[j];
  switch (fn) {
    case RnnActivation::kSigmoid:
#pragma omp simd
      for (int64_t j = 0; j < n; ++j)
        v[j] = vector_sigmoid(v[j]);
      return;
    case RnnActivation::kTanh:
#pragma omp simd
      for (int64_t j = 0; j < n; ++j)
        v[j] = vector_tanh(v[j]);
      return;
    default:
      for (int64_t j = 0; j < n; ++j)
        v[j] = apply(fn, v[j]);
      return;
  }
}

// C = A B^T, row-major: A [m, k] (row stride lda), B [n, k], C [m, n] (row stride ldc).
bool times_transposed(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                      float* c, int64_t ldc) {
  if (m == 0 || n == 0) return true;
  if (k == 0) {
    for (int64_t r = 0; r < m; ++r)
      std::fill_n(c + r * ldc, n, 0.0f);
    return true;
  }
  return dnnl_sgemm('N', 'T', m, n, k, 1.0f, a, lda, b, k, 0.0f, c, ldc) == dnnl_success;
}

// The positions of the call's values among its buffers; -1 where absent.
struct Slots {
  int x = -1, w = -1, r = -1, bias = -1, lens = -1, h0 = -1, c0 = -1, peepholes = -1;
  int y = -1, y_h = -1, y_c = -1;
};

class RecurrentKernel final : public runtime::LibraryKernel {
public:
  RecurrentKernel(Op op, RecurrentAttrs a, Dim steps, Dim batch, int64_t input, int64_t hidden,
                  DType lens_type, Slots slots, std::vector<std::string> symbols)
      : op_(op), cell_(op == Op::kRNN   ? Cell::kRnn
                       : op == Op::kGRU ? Cell::kGru
                                        : Cell::kLstm),
        a_(std::move(a)), steps_(std::move(steps)), batch_(std::move(batch)), input_(input),
        hidden_(hidden), lens_type_(lens_type), s_(slots), symbols_(std::move(symbols)) {}

  Status run(void* const* buffers, const int64_t* extents) const override {
    std::map<std::string, int64_t> bound;
    for (size_t i = 0; i < symbols_.size(); ++i)
      bound[symbols_[i]] = extents[i];
    std::optional<int64_t> steps = eval_dim(steps_, bound), batch = eval_dim(batch_, bound);
    if (!steps || !batch)
      return Status::error("recurrent call: the sequence or batch has no extent at these shapes");
    const int64_t T = *steps, B = *batch, H = hidden_, G = gates(), D = directions();
    auto in = [&](int slot) {
      return slot < 0 ? nullptr : static_cast<const float*>(buffers[slot]);
    };
    auto out = [&](int slot) { return slot < 0 ? nullptr : static_cast<float*>(buffers[slot]); };
    std::vector<int64_t> lens(static_cast<size_t>(B), T);
    if (s_.lens >= 0) {
      for (int64_t b = 0; b < B; ++b) {
        lens[static_cast<size_t>(b)] = lens_type_ == DType::kI64
                                           ? static_cast<const int64_t*>(buffers[s_.lens])[b]
                                           : static_cast<const int32_t*>(buffers[s_.lens])[b];
        if (lens[static_cast<size_t>(b)] < 0 || lens[static_cast<size_t>(b)] > T)
          return Status::error(
              fmt::format("sequence_lens[{}] is {}, outside the sequence's {} steps", b,
                          lens[static_cast<size_t>(b)], T));
      }
    }
    float* y = out(s_.y);
    if (y && s_.lens >= 0) std::fill_n(y, T * D * B * H, 0.0f); // steps past an entry's length
    // Scratch, kept between runs so that a run touches no new pages: the projection of the
    // sequence, the state times R^T, the states, and the GRU's r * H.
    // (Thread-local vectors: the parallel loops below read them through these pointers.)
    thread_local std::vector<float> scratch[5];
    auto take = [&](size_t i, int64_t n) {
      scratch[i].resize(std::max(scratch[i].size(), static_cast<size_t>(n)));
      return scratch[i].data();
    };
    float *xw = take(0, T * B * G * H), *hr = take(1, B * G * H), *h = take(2, B * H),
          *c = take(3, B * H), *rh = take(4, B * H);
    for (int64_t d = 0; d < D; ++d) {
      bool reverse = a_.direction == RnnDirection::kReverse || d == 1;
      const float* w = in(s_.w) + d * G * H * input_;
      const float* r = in(s_.r) + d * G * H * H;
      const float* bias = s_.bias >= 0 ? in(s_.bias) + d * 2 * G * H : nullptr;
      const float* p = s_.peepholes >= 0 ? in(s_.peepholes) + d * 3 * H : nullptr;
      const RnnActivation* f = &a_.activations[static_cast<size_t>(d) * per_direction()];
      // X W^T + Wb (+ Rb but for the GRU, whose reset gate scales Rbh), rows in X's order.
      if (!times_transposed(T * B, G * H, input_, in(s_.x), input_, w, xw, G * H))
        return Status::error("oneDNN's sgemm failed on the recurrent call's input projection");
      if (bias) {
#pragma omp parallel for schedule(static) if (T * B * G * H >= kParallelWork)
        for (int64_t row = 0; row < T * B; ++row) {
          float* x = xw + row * G * H;
          for (int64_t j = 0; j < G * H; ++j)
            x[j] += bias[j] + (cell_ == Cell::kGru ? 0.0f : bias[G * H + j]);
        }
      }
      for (int64_t b = 0; b < B; ++b) {
        const float* h0 = in(s_.h0);
        const float* c0 = in(s_.c0);
        int64_t at = state_at(d, b, B);
        std::copy_n(h0 ? h0 + at : zeros(H), H, h + b * H);
        std::copy_n(c0 ? c0 + at : zeros(H), H, c + b * H);
      }
      for (int64_t k = 0; k < T; ++k) {
        // H R^T; the GRU without linear_before_reset takes only z's and r's here.
        bool split = cell_ == Cell::kGru && !a_.linear_before_reset;
        if (!times_transposed(B, split ? 2 * H : G * H, H, h, H, r, hr, G * H))
          return Status::error("oneDNN's sgemm failed on a recurrent step");
        auto row = [&](int64_t b) -> std::optional<int64_t> { // the entry's time index
          int64_t len = lens[static_cast<size_t>(b)];
          if (k >= len) return std::nullopt;
          return reverse ? len - 1 - k : k;
        };
        if (split) { // r * H, then times Rh^T
#pragma omp parallel for schedule(static) if (B * H >= kParallelWork)
          for (int64_t b = 0; b < B; ++b) {
            std::optional<int64_t> t = row(b);
            if (!t) continue;
            reset_gate(xw + x_row(*t, b, T, B) * G * H, hr + b * G * H, bias, f, h + b * H,
                       rh + b * H);
          }
          if (!times_transposed(B, H, H, rh, H, r + 2 * H * H, hr + 2 * H, G * H))
            return Status::error("oneDNN's sgemm failed on a recurrent step");
        }
#pragma omp parallel for schedule(static) if (B * G * H >= kParallelWork)
        for (int64_t b = 0; b < B; ++b) {
          std::optional<int64_t> t = row(b);
          if (!t) continue;
          step(xw + x_row(*t, b, T, B) * G * H, hr + b * G * H, bias, p, f, h + b * H, c + b * H);
          if (y) std::copy_n(h + b * H, H, y + y_at(*t, d, b, T, B));
        }
      }
      for (int64_t b = 0; b < B; ++b) {
        if (float* y_h = out(s_.y_h)) std::copy_n(h + b * H, H, y_h + state_at(d, b, B));
        if (float* y_c = out(s_.y_c)) std::copy_n(c + b * H, H, y_c + state_at(d, b, B));
      }
    }
    return Status();
  }

  std::string describe() const override {
    return fmt::format("Weft's {} steps ({} directions, hidden {}, oneDNN's sgemm)", op_,
                       directions(), hidden_);
  }

private:
  static constexpr int64_t kParallelWork = 32768;

  int64_t gates() const { return cell_ == Cell::kRnn ? 1 : cell_ == Cell::kGru ? 3 : 4; }
  int64_t directions() const { return a_.direction == RnnDirection::kBidirectional ? 2 : 1; }
  size_t per_direction() const { return a_.activations.size() / static_cast<size_t>(directions()); }

  // Offsets of X's (and the projection's) row of step t and entry b, of Y's, and of a
  // state's ([D, batch, H], or [batch, D, H] with layout 1).
  int64_t x_row(int64_t t, int64_t b, int64_t T, int64_t B) const {
    return a_.layout == 0 ? t * B + b : b * T + t;
  }
  int64_t y_at(int64_t t, int64_t d, int64_t b, int64_t T, int64_t B) const {
    int64_t D = directions();
    return (a_.layout == 0 ? (t * D + d) * B + b : (b * T + t) * D + d) * hidden_;
  }
  int64_t state_at(int64_t d, int64_t b, int64_t B) const {
    return (a_.layout == 0 ? d * B + b : b * directions() + d) * hidden_;
  }

  const float* zeros(int64_t n) const {
    thread_local std::vector<float> z;
    if (static_cast<int64_t>(z.size()) < n) z.assign(static_cast<size_t>(n), 0.0f);
    return z.data();
  }

  float rb(const float* bias, int64_t j) const { // Rb's element j (the GRU's)
    return bias ? bias[gates() * hidden_ + j] : 0.0f;
  }

  void activate(RnnActivation fn, float* v, int64_t n, bool clip = true) const {
    float bound = clip && a_.clip ? *a_.clip : std::numeric_limits<float>::infinity();
    activate_all(fn, v, n, bound);
  }

  // The GRU's reset gate r for its step without linear_before_reset, into g[H, 2H), and
  // r * h into "rh" (the next product's operand).
  void reset_gate(const float* x, float* g, const float* bias, const RnnActivation* f,
                  const float* h, float* rh) const {
    const int64_t H = hidden_;
    float* r = g + H;
#pragma omp simd
    for (int64_t j = 0; j < H; ++j)
      r[j] += x[H + j] + rb(bias, H + j);
    activate(f[0], r, H);
#pragma omp simd
    for (int64_t j = 0; j < H; ++j)
      rh[j] = r[j] * h[j];
  }

  // One entry's step: "x" its projection (gates x H), "g" its state times R^T (with a GRU
  // without linear_before_reset, r from reset_gate and Rh's part times r * H), which the
  // gates take over; "h" and "c" its state, updated in place.
  void step(const float* x, float* g, const float* bias, const float* p, const RnnActivation* f,
            float* h, float* c) const {
    const int64_t H = hidden_;
    switch (cell_) {
      case Cell::kRnn:
#pragma omp simd
        for (int64_t j = 0; j < H; ++j)
          g[j] += x[j];
        activate(f[0], g, H);
        std::copy_n(g, H, h);
        return;
      case Cell::kGru: { // z, r, n; H' = n + z (H - n)
        float *z = g, *r = g + H, *n = g + 2 * H;
        bool linear = a_.linear_before_reset;
#pragma omp simd
        for (int64_t j = 0; j < (linear ? 2 * H : H); ++j)
          g[j] += x[j] + rb(bias, j);
        activate(f[0], g, linear ? 2 * H : H);
#pragma omp simd
        for (int64_t j = 0; j < H; ++j)
          n[j] = linear ? x[2 * H + j] + r[j] * (n[j] + rb(bias, 2 * H + j))
                        : x[2 * H + j] + n[j] + rb(bias, 2 * H + j);
        activate(f[1], n, H);
#pragma omp simd
        for (int64_t j = 0; j < H; ++j)
          h[j] = n[j] + z[j] * (h[j] - n[j]);
        return;
      }
      case Cell::kLstm: { // i, o, f, c; peepholes i, o, f
        float *i = g, *o = g + H, *forget = g + 2 * H, *cell = g + 3 * H;
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) {
          i[j] += x[j] + (p ? p[j] * c[j] : 0.0f);
          forget[j] += x[2 * H + j] + (p ? p[2 * H + j] * c[j] : 0.0f);
          cell[j] += x[3 * H + j];
        }
        activate(f[0], i, H);
        if (a_.input_forget) {
#pragma omp simd
          for (int64_t j = 0; j < H; ++j)
            forget[j] = 1.0f - i[j];
        } else {
          activate(f[0], forget, H);
        }
        activate(f[1], cell, H);
#pragma omp simd
        for (int64_t j = 0; j < H; ++j) {
          c[j] = forget[j] * c[j] + i[j] * cell[j];
          o[j] += x[H + j] + (p ? p[H + j] * c[j] : 0.0f);
        }
        activate(f[0], o, H);
        std::copy_n(c, H, cell);
        activate(f[2], cell, H, false); // (h(C) is not clipped)
#pragma omp simd
        for (int64_t j = 0; j < H; ++j)
          h[j] = o[j] * cell[j];
        return;
      }
    }
  }

  Op op_;
  Cell cell_;
  RecurrentAttrs a_;
  Dim steps_, batch_;
  int64_t input_, hidden_;
  DType lens_type_;
  Slots s_;
  std::vector<std::string> symbols_;
};

bool f32(const Value* v) { return !v || (v->type.dtype == DType::kF32 && v->type.shape); }

} // namespace

bool runs_recurrent(const Node& node) {
  if (node.op_type != Op::kRNN && node.op_type != Op::kGRU && node.op_type != Op::kLSTM)
    return false;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value* v = node.inputs[i];
    if (i == 4) {
      if (v && v->type.dtype != DType::kI32 && v->type.dtype != DType::kI64) return false;
    } else if (!f32(v) ||
               ((i == 1 || i == 2 || i == 3 || i == 7) && v && !v->type.has_static_shape())) {
      return false; // (the weights, biases and peepholes static; the states have the batch)
    }
  }
  for (const Value* v : node.outputs) {
    if (!f32(v)) return false;
  }
  const Value* x = node.inputs[0];
  const Value* r = node.input(2);
  const auto& a = node.attrs_as<RecurrentAttrs>();
  int64_t functions = node.op_type == Op::kRNN ? 1 : node.op_type == Op::kGRU ? 2 : 3;
  int64_t directions = a.direction == RnnDirection::kBidirectional ? 2 : 1;
  return x->type.shape->size() == 3 && (*x->type.shape)[2].is_static() && r &&
         static_cast<int64_t>(a.activations.size()) == functions * directions;
}

std::optional<LibraryCall> recurrent_call(const Node& node) {
  if (!runs_recurrent(node)) return std::nullopt;
  const auto& a = node.attrs_as<RecurrentAttrs>();
  const Shape& x = *node.inputs[0]->type.shape;
  Cell cell = node.op_type == Op::kRNN   ? Cell::kRnn
              : node.op_type == Op::kGRU ? Cell::kGru
                                         : Cell::kLstm;
  LibraryCall call;
  Slots s;
  auto bind = [&](const Value* v) {
    if (!v) return -1;
    call.values.push_back(v);
    return static_cast<int>(call.values.size()) - 1;
  };
  s.x = bind(node.inputs[0]);
  s.w = bind(node.input(1));
  s.r = bind(node.input(2));
  s.bias = bind(node.input(3));
  s.lens = bind(node.input(4));
  s.h0 = bind(node.input(5));
  s.c0 = cell == Cell::kLstm ? bind(node.input(6)) : -1;
  s.peepholes = cell == Cell::kLstm ? bind(node.input(7)) : -1;
  auto output = [&](size_t i) { return i < node.outputs.size() ? node.outputs[i] : nullptr; };
  s.y = bind(output(0));
  s.y_h = bind(output(1));
  s.y_c = cell == Cell::kLstm ? bind(output(2)) : -1;
  const Dim& steps = x[a.layout == 0 ? 0 : 1];
  const Dim& batch = x[a.layout == 0 ? 1 : 0];
  std::set<std::string> names;
  for (const Dim& d : {steps, batch}) {
    for (std::string& n : dim_symbols(d))
      names.insert(std::move(n));
  }
  std::vector<std::string> symbols(names.begin(), names.end());
  for (const std::string& n : symbols)
    call.symbols.push_back(Dim::symbol(n));
  int64_t hidden = (*node.inputs[2]->type.shape)[2].value();
  DType lens_type = node.input(4) ? node.input(4)->type.dtype : DType::kI32;
  call.kernel = std::make_shared<RecurrentKernel>(node.op_type.id(), a, steps, batch, x[2].value(),
                                                  hidden, lens_type, s, std::move(symbols));
  call.nodes = {&node};
  return call;
}

} // namespace weft::library
