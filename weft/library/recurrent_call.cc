#include "weft/library/recurrent_call.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <omp.h>

#include "weft/library/panel_product.h"
#include "weft/support/cpu_clones.h"
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
// element), on the widest vectors the CPU has: inlined into the multiversioned gate functions
// below (a call of its own per gate and entry, through its own dispatch, had cost a quarter
// of the gates' time at batch 32).
__attribute__((always_inline)) inline void activate_all(RnnActivation fn, float* v, int64_t n,
                                                        float clip) {
  if (clip < std::numeric_limits<float>::infinity()) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j)
      v[j] = v[j] < -clip ? -clip : v[j] > clip ? clip : v[j];
  }
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

// One entry's step over n of its hidden units (a thread's share), every pointer at the first of
// them and a gate's units H apart (the hidden size padded to whole cache lines): "x" the
// entry's projection (X W^T + Wb, and Rb but for the GRU; or only Wb + Rb where the state's
// product added X W^T), "g" its state times R^T, which the gates take over, "rb" the GRU's Rb
// (zeros without a bias), "p" the LSTM's peepholes (null without), "h" the state, "next"
// the new one, "c" the LSTM's cell, updated in place. Branch-free loops, on the CPU's widest
// vectors (the library is built for any x86-64: SSE alone left the gates 25% of a step).
struct Gates {
  const float* x;
  float* g;
  const float* rb;
  const float* p;
  const float* h;
  float* next;
  float* c;
  int64_t n, H;
};

// "fn" over n gate inputs, clipped into [-clip, clip] first where "clipped" (the activations
// of h(C) are not).
struct Activations {
  const RnnActivation* f;
  float clip;
  __attribute__((always_inline)) void operator()(int i, float* v, int64_t n,
                                                 bool clipped = true) const {
    activate_all(f[i], v, n, clipped ? clip : std::numeric_limits<float>::infinity());
  }
};

WEFT_CPU_CLONES void rnn_step(const Gates& s, const Activations& act) {
  float* g = s.g;
#pragma omp simd
  for (int64_t j = 0; j < s.n; ++j)
    g[j] += s.x[j];
  act(0, g, s.n);
  std::copy_n(g, s.n, s.next);
}

// The GRU's reset gate r for its step without linear_before_reset, into g[H, 2H), and r * h
// into "rh" (the operand of Rh's product).
WEFT_CPU_CLONES void gru_reset_gate(const Gates& s, const Activations& act, float* rh) {
  const int64_t H = s.H, n = s.n;
  float* r = s.g + H;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j)
    r[j] += s.x[H + j] + s.rb[H + j];
  act(0, r, n);
#pragma omp simd
  for (int64_t j = 0; j < n; ++j)
    rh[j] = r[j] * s.h[j];
}

// z, r, n; H' = n + z (H - n). Without linear_before_reset, r came from gru_reset_gate and
// Rh's part of g is Rh (r * H). The default activations (Sigmoid, Tanh) without clip in one
// pass, as lstm_step's.
WEFT_CPU_CLONES void gru_step(const Gates& s, const Activations& act, bool linear) {
  const int64_t H = s.H, n = s.n;
  const float *x = s.x, *rb = s.rb;
  float *z = s.g, *r = s.g + H, *m = s.g + 2 * H;
  if (linear && act.clip == std::numeric_limits<float>::infinity() &&
      act.f[0] == RnnActivation::kSigmoid && act.f[1] == RnnActivation::kTanh) {
    const float* h = s.h;
    float* next = s.next;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
      float zj = vector_sigmoid(z[j] + (x[j] + rb[j]));
      float rj = vector_sigmoid(r[j] + (x[H + j] + rb[H + j]));
      float mj = vector_tanh(x[2 * H + j] + rj * (m[j] + rb[2 * H + j]));
      next[j] = mj + zj * (h[j] - mj);
    }
    return;
  }
#pragma omp simd
  for (int64_t j = 0; j < n; ++j)
    z[j] += x[j] + rb[j];
  act(0, z, n);
  if (linear) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j)
      r[j] += x[H + j] + rb[H + j];
    act(0, r, n);
#pragma omp simd
    for (int64_t j = 0; j < n; ++j)
      m[j] = x[2 * H + j] + r[j] * (m[j] + rb[2 * H + j]);
  } else {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j)
      m[j] += x[2 * H + j] + rb[2 * H + j];
  }
  act(1, m, n);
#pragma omp simd
  for (int64_t j = 0; j < n; ++j)
    s.next[j] = m[j] + z[j] * (s.h[j] - m[j]);
}

// Whether the activations are the LSTM's defaults (Sigmoid, Tanh, Tanh) without clip, which
// lstm_step computes in one pass over the units: a pass per gate and activation moved each
// unit's values through the cache five times more (18% of a step at batch 32).
bool default_lstm(const Activations& act, bool input_forget) {
  return !input_forget && act.clip == std::numeric_limits<float>::infinity() &&
         act.f[0] == RnnActivation::kSigmoid && act.f[1] == RnnActivation::kTanh &&
         act.f[2] == RnnActivation::kTanh;
}

// The default activations' step in one pass; without peepholes, o no longer waits on the new
// cell (17% faster than adding zeros' products).
template <bool kPeepholes>
__attribute__((always_inline)) inline void default_lstm_step(const Gates& s) {
  const int64_t H = s.H, n = s.n;
  const float *x = s.x, *p = s.p, *g = s.g;
  float *c = s.c, *next = s.next;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    float ai = x[j], af = x[2 * H + j];
    if constexpr (kPeepholes) {
      ai += p[j] * c[j];
      af += p[2 * H + j] * c[j];
    }
    float i = vector_sigmoid(g[j] + ai);
    float forget = vector_sigmoid(g[2 * H + j] + af);
    float cell = vector_tanh(g[3 * H + j] + x[3 * H + j]); // (as the passes below)
    float ct = forget * c[j] + i * cell;
    float ao = x[H + j];
    if constexpr (kPeepholes) ao += p[H + j] * ct;
    float o = vector_sigmoid(g[H + j] + ao);
    c[j] = ct;
    next[j] = o * vector_tanh(ct);
  }
}

// i, o, f, c, with peepholes i, o, f ("p" null without).
WEFT_CPU_CLONES void lstm_step(const Gates& s, const Activations& act, bool input_forget,
                               const float* zero) {
  const int64_t H = s.H, n = s.n;
  if (default_lstm(act, input_forget)) {
    if (s.p)
      default_lstm_step<true>(s);
    else
      default_lstm_step<false>(s);
    return;
  }
  const float *x = s.x, *p = s.p ? s.p : zero;
  float *i = s.g, *o = s.g + H, *forget = s.g + 2 * H, *cell = s.g + 3 * H, *c = s.c;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    i[j] += x[j] + p[j] * c[j];
    forget[j] += x[2 * H + j] + p[2 * H + j] * c[j];
    cell[j] += x[3 * H + j];
  }
  act(0, i, n);
  if (input_forget) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j)
      forget[j] = 1.0f - i[j];
  } else {
    act(0, forget, n);
  }
  act(1, cell, n);
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    c[j] = forget[j] * c[j] + i[j] * cell[j];
    o[j] += x[H + j] + p[H + j] * c[j];
  }
  act(0, o, n);
  std::copy_n(c, n, cell);
  act(2, cell, n, false);
#pragma omp simd
  for (int64_t j = 0; j < n; ++j)
    s.next[j] = o[j] * cell[j];
}

// Wb + Rb (Wb alone for the GRU: "rb" zeros then) added to n columns of "rows" rows of a
// step's X W^T (row stride ldx).
WEFT_CPU_CLONES void add_biases(float* xw, int64_t rows, int64_t ldx, int64_t n, const float* wb,
                                const float* rb) {
  for (int64_t row = 0; row < rows; ++row) {
    float* x = xw + row * ldx;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j)
      x[j] += wb[j] + rb[j];
  }
}

// The positions of the call's values among its buffers; -1 where absent.
struct Slots {
  int x = -1, w = -1, r = -1, bias = -1, lens = -1, h0 = -1, c0 = -1, peepholes = -1;
  int y = -1, y_h = -1, y_c = -1;
};

class RecurrentKernel final : public runtime::LibraryKernel {
public:
  RecurrentKernel(Op op, RecurrentAttrs a, Dim steps, Dim batch, int64_t input, int64_t hidden,
                  DType lens_type, Slots slots, std::vector<std::string> symbols,
                  bool constant_weights)
      : op_(op), cell_(op == Op::kRNN   ? Cell::kRnn
                       : op == Op::kGRU ? Cell::kGru
                                        : Cell::kLstm),
        a_(std::move(a)), steps_(std::move(steps)), batch_(std::move(batch)), input_(input),
        hidden_(hidden), lens_type_(lens_type), s_(slots), symbols_(std::move(symbols)),
        constant_weights_(constant_weights) {}

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
    // Scratch, kept between runs so that a run touches no new pages: a chunk's projection,
    // the state times R^T, the states (two: one read, one written a step), the GRU's r * H,
    // R^T and W^T packed (each thread's columns of each gate in panels), and each thread's
    // rows of X for a chunk where they are not X's own (a reverse direction, layout 1).
    // (Thread-local vectors: the parallel region below reads them through these pointers.)
    thread_local std::vector<float> scratch[10];
    // Each at a cache line's start, and a row of the states, a gate's columns in H R^T and X
    // W^T padded to whole lines (Hp): the threads write their own shares' lines (two threads
    // writing one line had taken a quarter of an LSTM 128 wide at batch 4).
    auto take = [&](size_t i, int64_t n) {
      scratch[i].resize(std::max(scratch[i].size(), static_cast<size_t>(n + 16)));
      return aligned(scratch[i].data());
    };
    const int64_t GH = G * H, Hp = (H + 15) / 16 * 16, GHp = G * Hp;
    const float* zero = zeros(std::max(GHp, 3 * Hp)); // a missing bias, peepholes or state
    // X W^T: at a batch of kFusedRows or more, the LSTM's and the RNN's steps add a step's rows
    // of X times W^T to the state's product, in its blocks ("fused"; 0.3-0.5 ms less than in
    // chunks of an LSTM 256 wide at batch 32, 100 steps); otherwise the steps run in chunks of
    // about 32 rows of X (ceil(32 / batch) steps): each thread projects a chunk's rows onto its
    // own columns of X W^T at the chunk's first step, into its caches, where the gates read them.
    // (One product over the whole sequence by oneDNN's sgemm, then the biases added, had moved
    // its [steps x batch, gates x H] three times through DRAM: a quarter of that LSTM.)
    const bool fused = cell_ != Cell::kGru && B >= kFusedRows;
    const int64_t chunk = fused ? 1
                                : std::clamp<int64_t>((32 + B - 1) / std::max<int64_t>(B, 1), 1,
                                                      std::max<int64_t>(T, 1));
    float *xw = take(0, chunk * B * GHp), *hr = take(1, B * GHp), *h_even = take(2, B * Hp),
          *h_odd = take(3, B * Hp), *c = take(4, B * Hp), *rh = take(5, B * Hp);
    // The steps' threads, each its share of the hidden units (multiples of 16), in every gate:
    // a step's gates then need only its own columns of H R^T, and a barrier ends the step (the
    // GRU without linear_before_reset: one more, before r * H's product). Or, "apart", where
    // X W^T is fused and every thread has kRowsApart entries or more: each thread its own
    // entries over all the units and steps, the steps without barriers (as ONNX Runtime's LSTM
    // splits its batch). Its threads each read all of R^T at every step, but never wait for
    // each other: at each step's barrier, a thread held up (by other processes on its CPU)
    // had held up both.
    const int64_t most = omp_get_max_threads();
    const bool apart = fused && most > 1 && B >= 2 * kRowsApart && B * GH * H >= kParallelStep;
    int64_t threads = apart ? 1 : most;
    int64_t share = (H + threads - 1) / threads;
    share = std::max<int64_t>(16, (share + 15) / 16 * 16);
    if (apart || B * GH * H < kParallelStep) share = std::max<int64_t>(H, 1);
    threads = std::max<int64_t>(1, (H + share - 1) / share);
    const int64_t team_size = apart ? std::min(most, B / kRowsApart) : threads;
    static const PanelProduct kernel = panel_product();
    const Product product = kernel.run;
    const int64_t width = kernel.width;
    // A gate's panels of a share's columns of R^T and of W^T, a share's G of each.
    const int64_t per_gate = (share + width - 1) / width * width * H,
                  per_gate_w = (share + width - 1) / width * width * input_,
                  per_share = G * (per_gate + per_gate_w);
    // The panels of every direction, kept by the call where W and R are constants (the same
    // values at the same place) for its runs with the same shares: packing took about a tenth
    // of a 64-step GRU 256 wide.
    const Packing now{in(s_.w), in(s_.r), threads, share};
    std::shared_ptr<std::vector<float>> kept;
    if (constant_weights_) {
      std::lock_guard<std::mutex> lock(kept_mutex_);
      if (kept_ && kept_packing_ == now) kept = kept_;
    }
    const bool repack = !kept;
    if (constant_weights_ && repack)
      kept = std::make_shared<std::vector<float>>(D * threads * per_share + 16);
    float* all_panels = kept ? aligned(kept->data()) : take(6, D * threads * per_share);
    float* all_rows = take(7, team_size * chunk * B * input_);
    for (int64_t d = 0; d < D; ++d) {
      float* panels = all_panels + d * threads * per_share;
      bool reverse = a_.direction == RnnDirection::kReverse || d == 1;
      const float* w = in(s_.w) + d * GH * input_;
      const float* r = in(s_.r) + d * GH * H;
      const float* bias = s_.bias >= 0 ? in(s_.bias) + d * 2 * GH : nullptr;
      const float* rb = bias ? bias + GH : zero;
      const float* p = s_.peepholes >= 0 ? in(s_.peepholes) + d * 3 * H : zero;
      // Rb and the peepholes, a gate's Hp apart as the gates read them.
      float *rb_p = take(8, GHp), *p_p = take(9, 3 * Hp);
      for (int64_t g = 0; g < G; ++g)
        std::copy_n(rb + g * H, H, rb_p + g * Hp);
      for (int64_t g = 0; g < 3; ++g)
        std::copy_n(p + g * H, H, p_p + g * Hp);
      const Activations act{&a_.activations[static_cast<size_t>(d) * per_direction()],
                            a_.clip ? *a_.clip : std::numeric_limits<float>::infinity()};
      // Added to X W^T: Wb, and Rb but for the GRU's (its reset gate scales Rbh).
      const float* xw_rb = cell_ == Cell::kGru ? zero : rb;
      // A chunk's rows are X's own, batch after batch, forward with layout 0.
      const bool own_rows = a_.layout == 0 && !reverse;
      if (fused) { // the gates' x: Wb + Rb (or zeros), for every entry
        for (int64_t g = 0; g < G; ++g) {
          for (int64_t j = 0; j < H; ++j)
            xw[g * Hp + j] = bias ? bias[g * H + j] + rb[g * H + j] : 0.0f;
        }
      }
      for (int64_t b = 0; b < B; ++b) {
        const float* h0 = in(s_.h0);
        const float* c0 = in(s_.c0);
        int64_t at = state_at(d, b, B);
        std::copy_n(h0 ? h0 + at : zero, H, h_even + b * Hp);
        std::copy_n(c0 ? c0 + at : zero, H, c + b * Hp);
      }
      auto row = [&](int64_t b, int64_t k) -> std::optional<int64_t> { // the entry's time index
        int64_t len = lens[static_cast<size_t>(b)];
        if (k >= len) return std::nullopt;
        return reverse ? len - 1 - k : k;
      };
      // The GRU without linear_before_reset takes only z's and r's columns from H.
      const bool split = cell_ == Cell::kGru && !a_.linear_before_reset;
      const int64_t from_h = split ? 2 : G;
#pragma omp parallel num_threads(static_cast <int>(team_size))
      {
        // A team smaller than asked for (nested in another, or a thread limit) takes the
        // shares in turn; apart, the entries b0 to b1 are this thread's, and the one share
        // every thread's.
        const int64_t team = omp_get_num_threads(), me = omp_get_thread_num();
        const int64_t b0 = apart ? B * me / team : 0, b1 = apart ? B * (me + 1) / team : B;
        auto each_share = [&](auto&& work) {
          for (int64_t s = apart ? 0 : me; s < threads; s += apart ? 1 : team) {
            int64_t u0 = s * share, n = std::min(H, u0 + share) - u0;
            if (n > 0) work(u0, n, panels + s * per_share);
          }
        };
        // Each share's columns of R^T and W^T, packed by its thread (into its caches); apart,
        // by the first thread.
        if (repack && (!apart || me == 0)) {
          each_share([&](int64_t u0, int64_t n, float* mine) {
            for (int64_t g = 0; g < G; ++g) {
              pack_panels(r, H, g * H + u0, n, width, mine + g * per_gate);
              pack_panels(w, input_, g * H + u0, n, width, mine + G * per_gate + g * per_gate_w);
            }
          });
        }
        if (apart) {
#pragma omp barrier
        }
        const Operand none{nullptr, 0, nullptr, 0};
        // The rows of X the entries take at steps k0 to k0 + n_steps, step after step (this
        // thread's entries' only, apart).
        auto x_rows = [&](int64_t k0, int64_t n_steps) {
          if (own_rows) return in(s_.x) + k0 * B * input_;
          float* mine = all_rows + me * chunk * B * input_;
          for (int64_t k = k0; k < k0 + n_steps; ++k) {
            for (int64_t b = b0; b < b1; ++b) {
              float* to = mine + ((k - k0) * B + b) * input_;
              if (std::optional<int64_t> t = row(b, k))
                std::copy_n(in(s_.x) + x_row(*t, b, T, B) * input_, input_, to);
              else
                std::fill_n(to, input_, 0.0f);
            }
          }
          return static_cast<const float*>(mine);
        };
        // The chunk's X W^T + biases, each thread its shares' columns: rows (step - k0) x B + b.
        auto project = [&](int64_t k0) {
          const int64_t n_steps = std::min(chunk, T - k0), rows = n_steps * B;
          const float* xs = x_rows(k0, n_steps);
          each_share([&](int64_t u0, int64_t n, const float* mine) {
            for (int64_t g = 0; g < G; ++g) {
              float* to = xw + g * Hp + u0;
              product(Operand{xs, input_, mine + G * per_gate + g * per_gate_w, input_}, none, rows,
                      to, GHp, n);
              if (bias) add_biases(to, rows, GHp, n, bias + g * H + u0, xw_rb + g * H + u0);
            }
          });
        };
        float *hc = h_even, *hn = h_odd;
        for (int64_t k = 0; k < T; ++k) {
          const int64_t k0 = k / chunk * chunk;
          const float* xs = nullptr;
          if (fused)
            xs = x_rows(k, 1);
          else if (k == k0)
            project(k0);
          each_share([&](int64_t u0, int64_t n, const float* mine) {
            for (int64_t g = 0; g < from_h; ++g) {
              Operand x_w = fused ? Operand{xs + b0 * input_, input_,
                                            mine + G * per_gate + g * per_gate_w, input_}
                                  : none;
              product(Operand{hc + b0 * Hp, Hp, mine + g * per_gate, H}, x_w, b1 - b0,
                      hr + b0 * GHp + g * Hp + u0, GHp, n);
            }
          });
          auto gates = [&](int64_t b, int64_t u0, int64_t n) {
            return Gates{xw + (fused ? 0 : ((k - k0) * B + b) * GHp) + u0,
                         hr + b * GHp + u0,
                         rb_p + u0,
                         s_.peepholes >= 0 ? p_p + u0 : nullptr,
                         hc + b * Hp + u0,
                         hn + b * Hp + u0,
                         c + b * Hp + u0,
                         n,
                         Hp};
          };
          if (split) { // r * H, then times Rh^T
            each_share([&](int64_t u0, int64_t n, const float*) {
              for (int64_t b = b0; b < b1; ++b) {
                if (std::optional<int64_t> t = row(b, k))
                  gru_reset_gate(gates(b, u0, n), act, rh + b * Hp + u0);
              }
            });
#pragma omp barrier
            each_share([&](int64_t u0, int64_t n, const float* mine) {
              product(Operand{rh + b0 * Hp, Hp, mine + 2 * per_gate, H}, none, b1 - b0,
                      hr + b0 * GHp + 2 * Hp + u0, GHp, n);
            });
          }
          each_share([&](int64_t u0, int64_t n, const float*) {
            for (int64_t b = b0; b < b1; ++b) {
              std::optional<int64_t> t = row(b, k);
              if (!t) { // past the entry's length: its state stays
                std::copy_n(hc + b * Hp + u0, n, hn + b * Hp + u0);
                continue;
              }
              Gates s = gates(b, u0, n);
              switch (cell_) {
                case Cell::kRnn: rnn_step(s, act); break;
                case Cell::kGru: gru_step(s, act, a_.linear_before_reset); break;
                case Cell::kLstm: lstm_step(s, act, a_.input_forget, zero); break;
              }
              if (y) std::copy_n(hn + b * Hp + u0, n, y + y_at(*t, d, b, T, B) + u0);
            }
          });
          if (!apart) {
#pragma omp barrier
          }
          std::swap(hc, hn);
        }
      }
      const float* h = T % 2 == 0 ? h_even : h_odd;
      for (int64_t b = 0; b < B; ++b) {
        if (float* y_h = out(s_.y_h)) std::copy_n(h + b * Hp, H, y_h + state_at(d, b, B));
        if (float* y_c = out(s_.y_c)) std::copy_n(c + b * Hp, H, y_c + state_at(d, b, B));
      }
    }
    if (constant_weights_ && repack) {
      std::lock_guard<std::mutex> lock(kept_mutex_);
      kept_ = std::move(kept);
      kept_packing_ = now;
    }
    return Status();
  }

  std::string describe() const override {
    return fmt::format("Weft's {} steps ({} directions, hidden {})", op_, directions(), hidden_);
  }

private:
  // A step of fewer multiply-adds than this (batch x gates x hidden^2) runs on one thread.
  static constexpr int64_t kParallelStep = 65536;
  // The fewest entries a thread takes apart: a block of the product's rows (8 with AVX-512).
  static constexpr int64_t kRowsApart = 8;
  // The smallest batch whose steps add X W^T in their product: a whole block of 4 rows, so
  // that each load of W^T's panels serves 4 entries. AMD EPYC Zen 4 (AVX-512), 2 threads,
  // 100 steps, alternating runs, chunks -> fused: LSTM 64 -> 128 at batch 4 (2 layers)
  // 1.27-1.29 -> 1.11-1.13 ms, at batch 6 1.60 -> 0.92-1.22, 64 -> 256 at batch 4 2.5-2.9 ->
  // 1.96-2.10, 256 -> 256 (2 layers) 4.56-4.59 -> 4.34-4.42, a 2-layer bidirectional LSTM 256
  // wide at batch 4 (200 steps) 20.5-28.0 -> 19.4-23.9. Fewer rows lose where W^T is large:
  // that LSTM at batch 2 10.6-11.4 -> 12.1-14.7 ms, batch 1 LSTMs 3-50% slower.
  static constexpr int64_t kFusedRows = 4;

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

  // The first float of "p" at a cache line's start (p holds 16 floats more than it needs).
  static float* aligned(float* p) {
    return p + (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64 / sizeof(float);
  }

  const float* zeros(int64_t n) const {
    thread_local std::vector<float> z;
    if (static_cast<int64_t>(z.size()) < n) z.assign(static_cast<size_t>(n), 0.0f);
    return z.data();
  }

  Op op_;
  Cell cell_;
  RecurrentAttrs a_;
  Dim steps_, batch_;
  int64_t input_, hidden_;
  DType lens_type_;
  Slots s_;
  std::vector<std::string> symbols_;
  bool constant_weights_; // W and R
  // What R^T's and W^T's panels were packed from, and for which shares.
  struct Packing {
    const float *w = nullptr, *r = nullptr;
    int64_t threads = 0, share = 0;
    bool operator==(const Packing&) const = default;
  };
  mutable std::mutex kept_mutex_;
  mutable std::shared_ptr<std::vector<float>> kept_; // (runs on other threads may hold it)
  mutable Packing kept_packing_;
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
  call.kernel = std::make_shared<RecurrentKernel>(
      node.op_type.id(), a, steps, batch, x[2].value(), hidden, lens_type, s, std::move(symbols),
      node.inputs[1]->is_constant() && node.inputs[2]->is_constant());
  call.nodes = {&node};
  return call;
}

} // namespace weft::library
