// oneDNN's convolutions (dnnl.h): direct or Winograd kernels (which one: conv_choice.h), on
// channels-last or blocked activations; the regions kept in the blocked layout; `weft tune`'s
// timing of the two algorithms.
#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include "weft/graph/op_table.h"
#include "weft/graph/shape_functions.h"
#include "weft/library/conv_choice.h"
#include "weft/library/dnnl.h"
#include "weft/library/dnnl_epilogue.h"
#include "weft/library/dnnl_kernel.h"
#include "weft/library/dynamic_call.h"
#include "weft/library/gemv.h"
#include "weft/support/timing.h"

namespace weft::library {

ConvDims conv_shape(const Node& n) {
  const auto& at = n.attrs_as<ConvAttrs>();
  bool quantized = n.op_type == Op::kQLinearConv || n.op_type == Op::kQLinearConvChannelsLast;
  ConvDims s{dims_of(n.inputs[0]), dims_of(n.inputs[quantized ? 3 : 1]), dims_of(n.outputs[0]), {}};
  if (n.op_type == Op::kConvChannelsLast || n.op_type == Op::kQLinearConvChannelsLast) {
    s.dx = channels_first(s.dx);
    s.dy = channels_first(s.dy);
  }
  Ints kernel = at.kernel_shape;
  if (kernel.empty()) kernel.assign(s.dw.begin() + 2, s.dw.end());
  s.win = window_dims(kernel, at.strides, at.dilations, at.pads, at.auto_pad, shape_from_dims(s.dx),
                      shape_from_dims(s.dy));
  return s;
}

PrimitiveWindows primitive_windows(const std::vector<Window>& win, const Dims& dw, int64_t group) {
  PrimitiveWindows p;
  for (const Window& d : win) {
    p.strides.push_back(d.stride);
    p.dilates.push_back(d.dilation - 1);
    p.pad_l.push_back(d.pad_begin);
    p.pad_r.push_back(d.pad_end);
  }
  p.wdims = dw;
  if (group > 1) {
    p.wdims[0] /= group;
    p.wdims.insert(p.wdims.begin(), group);
  }
  return p;
}

namespace {

// $WEFT_DNNL_SUM=0: residuals stay binary post-ops (for comparisons).
bool sum_residuals() {
  static const bool on = knob_on("WEFT_DNNL_SUM");
  return on;
}

// The algorithm a call is built with: the chosen one (winograd_fits), or one forced for
// timing both.
enum class Algorithm : uint8_t { kChosen, kDirect, kWinograd };

// $WEFT_IM2COL=0: 1-D convolutions channels-last stay oneDNN's convolutions, not matmuls over
// im2col tiles (for comparisons).
bool im2col_allowed() {
  static const bool on = knob_on("WEFT_IM2COL");
  return on;
}

// $WEFT_DNNL_BLOCKED=0: direct convolutions stay channels-last (for comparisons).
bool blocked_direct_allowed() {
  static const bool on = knob_on("WEFT_DNNL_BLOCKED");
  return on;
}

// oneDNN's blocked layout of 2-D activations on this CPU, channels in blocks innermost:
// nChw16c (its Winograd kernels' layout) with AVX-512, else nChw8c.
memory::desc blocked(const Dims& dims) {
  return memory::desc(dims, memory::data_type::f32,
                      channel_block() == 16 ? memory::format_tag::nChw16c
                                            : memory::format_tag::nChw8c);
}

// How oneDNN's direct kernel for a 2-D convolution fares on its blocked layout against the
// one for channels-last. Faster where the channels-last one is the plain JIT kernel (no
// brgemm, as on AVX2) with a window larger than 1x1 over at least 16 input channels a group:
// there the blocked kernel took 0.56-0.93x the time ([1, 96, 256, 256] -> 32 channels, 3x3:
// 38 -> 24 ms; ResNet-18's 3x3 ones 0.79-0.93x). As fast for 1x1 kernels without brgemm and
// the stem's 3 channels (AMD EPYC, AVX2, 2 threads, 2026-11-30). Slower against brgemm
// (AVX-512: up to 1.5x, ResNet-18's strided 3x3 convolutions), or where no blocked kernel is.
enum class BlockedKernel : uint8_t { kFaster, kAsFast, kSlower };

// The implementation oneDNN picks for a direct convolution on channels-last activations
// ("jit:avx2", "brg:avx512_core", "x64:gemm:jit", ...).
std::string channels_last_impl(const Node& conv) {
  auto [dx, dw, dy, win] = conv_shape(conv);
  auto [strides, dilates, pad_l, pad_r, wdims] =
      primitive_windows(win, dw, conv.attrs_as<ConvAttrs>().group);
  dnnl::convolution_forward::desc d(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, channels_last(dx),
      memory::desc(wdims, memory::data_type::f32, memory::format_tag::any), memory::desc(),
      channels_last(dy), strides, dilates, pad_l, pad_r);
  return dnnl::convolution_forward::primitive_desc(d, engine()).impl_info_str();
}

BlockedKernel blocked_kernel(const Node& conv) {
  auto [dx, dw, dy, win] = conv_shape(conv);
  if (!blocked_direct_allowed() || dx.size() != 4) return BlockedKernel::kSlower;
  std::string impl = channels_last_impl(conv);
  if (impl.starts_with("jit_1x1:")) return BlockedKernel::kAsFast;
  return impl.starts_with("jit:") && dw[1] >= 16 && dw[2] * dw[3] > 1 ? BlockedKernel::kFaster
                                                                      : BlockedKernel::kSlower;
}

// The cost model of the blocked layout, in bytes moved: a reorder reads and writes a value
// once; the faster blocked kernel saves a share of a convolution's time, its FLOPs at
// kFlopsPerByte (about 150 GFLOP/s against 20 GB/s on 2 AVX2 cores). The share measured
// (alternating runs in one process, AMD EPYC, AVX2, 2 threads, 2026-11-30): 25-50% with 64
// or more input channels on output planes of 56x56 or more (64 -> 64 at 56x56: 0.73x the
// time, at 224x224: 0.66x; 128 -> 128 at 56x56: 0.50x; the U-Net's 0.61-0.63x); 7-21%
// elsewhere (ResNet's 28x28 to 7x7 layers 0.79-0.93x, SqueezeNet's 0.82-0.88x, 32 -> 32 at
// 56x56 to 224x224: 0.81-1.0x), though 32 -> 64 with stride 2 from 256x256 took 0.59x.
constexpr double kFlopsPerByte = 7.5;

double blocked_share(const Dims& dw, const Dims& dy) {
  return dw[1] >= 64 && dy[2] * dy[3] >= 56 * 56 ? 0.3 : 0.15;
}

double elements(const Dims& d) {
  return static_cast<double>(std::accumulate(d.begin(), d.end(), int64_t{1}, std::multiplies<>()));
}

double reorder_cost(const Value* v) { return v ? 2.0 * 4.0 * elements(dims_of(v)) : 0; }

double conv_flops(const Node& conv) {
  auto [dx, dw, dy, win] = conv_shape(conv);
  double taps = elements(Dims(dw.begin() + 1, dw.end())); // per output, each a multiply-add
  return 2.0 * taps * elements(dy);
}

double blocked_gain(const Node& conv) {
  auto [dx, dw, dy, win] = conv_shape(conv);
  return conv_flops(conv) * blocked_share(dw, dy) / kFlopsPerByte;
}

// Whether a convolution whose neighbours lie channels-last runs blocked all the same: its
// kernel's gain outweighs reordering its source and destination, and it is large enough
// (kBlockedAloneFlops) that the reorders run near the bandwidth. SqueezeNet's 3x3
// convolutions of 28-56 MFLOP ran no faster blocked with their reorders than channels-last
// (0.567 against 0.568 ms); the U-Net's of 0.6-3.6 GFLOP 1.3-1.7x faster (38 -> 27 ms).
constexpr double kBlockedAloneFlops = 1e8;

bool blocked_alone(const Node& conv, BlockedKernel kernel) {
  return kernel == BlockedKernel::kFaster && conv_flops(conv) >= kBlockedAloneFlops &&
         blocked_gain(conv) > reorder_cost(conv.inputs[0]) + reorder_cost(conv.outputs[0]);
}

// Conv in 1-3 spatial dims. oneDNN's fast convolutions want channels-last activations, so
// the primitive runs on those, reordered from and to the plain buffers around it, unless
// only a reference implementation exists there; then plain activations. A
// Op::kConvChannelsLast's activations lie channels-last already: nothing to reorder. A 3x3
// convolution that fits oneDNN's Winograd kernels takes them instead, and a direct one runs
// blocked where that pays (blocked_alone) or its neighbours lie so, on activations reordered
// to the blocked layout.
// Weights take oneDNN's preferred layout, reordered once here when they are constant.
// "blocked": values that lie in the blocked layout between convolutions (keep_blocked_layouts).
// With bf16 products (Absorbed::input_casts), the call reads the Cast's bf16 source and
// weights reordered to bf16, sums in f32, and writes f32, or bf16 where it absorbed the Cast
// of its result; oneDNN's direct kernel on channels-last activations then runs it (its bf16
// kernels: AMX or AVX512-BF16; no Winograd, no blocked layout), or none.
std::optional<LibraryCall> conv_call_in(const Node& n, const Absorbed& absorbed,
                                        const std::set<const Value*>& in_blocked,
                                        std::string* why_not,
                                        Algorithm forced = Algorithm::kChosen) {
  const std::vector<PostOp>& ops = absorbed.epilogue;
  const auto& at = n.attrs_as<ConvAttrs>();
  const Value *x = n.inputs[0], *w = n.inputs[1], *b = n.input(2), *y = n.outputs[0];
  bool nhwc = n.op_type == Op::kConvChannelsLast;
  bool bf16 = absorbed.input_casts[0] != nullptr;
  if (bf16 && (!in_blocked.empty() || forced != Algorithm::kChosen || !w->is_constant()))
    return std::nullopt;
  const Value* source = bf16 ? absorbed.input_casts[0]->inputs[0] : x;
  const Value* written =
      absorbed.result_cast ? absorbed.result_cast->outputs[0] : final_output(n, ops);
  if (dims_of(x).size() < 3 || dims_of(x).size() > 5) {
    *why_not = fmt::format("{} spatial dims", dims_of(x).size() - 2);
    return std::nullopt;
  }
  auto [dx, dw, dy, win] = conv_shape(n);
  // Binary post-ops whose operand broadcasts other than over all of the output's dims but
  // its channels: oneDNN 2.6 runs them only in its gemm-based convolution, which gives wrong
  // results with them (a [1, C, H, W] position embedding added over a batch, a [N, 1, H, W]
  // spatial gate, a [N, C, 1, 1] one at N > 1: errors as large as the outputs). They are
  // left to the kernel after the call.
  for (const PostOp& p : ops) {
    Dims d = nhwc ? channels_first(p.src1_dims) : p.src1_dims;
    int64_t elements = std::accumulate(d.begin(), d.end(), int64_t{1}, std::multiplies<>());
    if (p.binary && d != dy && elements != 1 && elements != d[1]) {
      *why_not = fmt::format("a binary post-op's operand of dims [{}]", fmt::join(d, ", "));
      return std::nullopt;
    }
  }
  // The activations as they lie in memory.
  memory::desc x_user = nhwc ? channels_last_view(dims_of(x)) : plain(dx);
  memory::desc y_user = nhwc ? channels_last_view(dims_of(y)) : plain(dy);
  memory::desc residual_user = y_user;
  if (absorbed.cast_transpose) x_user = plain(dx); // the bf16 value before the Transpose
  if (bf16) x_user = in_bf16(x_user);
  if (absorbed.result_cast) y_user = in_bf16(y_user);
  bool src_blocked = in_blocked.contains(x),
       dst_blocked = in_blocked.contains(final_output(n, ops));
  if (src_blocked) x_user = blocked(dx);
  if (dst_blocked) y_user = blocked(dy);
  auto [strides, dilates, pad_l, pad_r, wdims] = primitive_windows(win, dw, at.group);
  // Weights in the layout oneDNN chooses: constants reordered once, weights made at run time
  // (a hypernetwork's, or standardized in forward where that does not fold) at each run. On
  // plain weights oneDNN takes its gemm-based kernel: a 3x3 convolution of 64 channels at
  // 56x56 whose weights were an input ran 2.44 ms there, 0.86 ms with the reorder (oneDNN's
  // Winograd; direct, 1.0 ms), AMD EPYC, 2 threads.
  bool constant_weights = w->is_constant();
  memory::desc wmd(wdims, bf16 ? memory::data_type::bf16 : memory::data_type::f32,
                   memory::format_tag::any);
  memory::desc bmd = b ? plain({dw[0]}) : memory::desc();
  auto build = [&](const Layout& layout, dnnl::algorithm algorithm) {
    memory::desc src = bf16 ? in_bf16(layout(dx)) : layout(dx);
    memory::desc dst = absorbed.result_cast ? in_bf16(layout(dy)) : layout(dy);
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, algorithm, src, wmd, bmd,
                                      dst, strides, dilates, pad_l, pad_r);
    LibraryCall call;
    std::vector<DnnlKernel::Arg> args = {
        {DNNL_ARG_SRC, position(call.values, source), x_user, src}};
    int w_buffer = position(call.values, w); // bound even when reordered, for the profile
    // The destination takes a residual as a sum post-op (oneDNN's brgemm kernels take no
    // full-size binary post-ops): written in place, or reordered into its internal layout
    // (not into a bf16 destination: the residual is f32).
    int summed = -1;
    bool sums = sum_residuals() && !absorbed.result_cast;
    dnnl::primitive_attr attr =
        post_op_attr(ops, call, args, dy, layout, nhwc, sums ? &summed : nullptr);
    dnnl::convolution_forward::primitive_desc pd(d, attr, engine());
    std::string impl = pd.impl_info_str();
    if (impl.starts_with("ref") && layout(dx) != plain(dx)) return LibraryCall{};
    if (bf16 && !bf16_kernel(impl)) return LibraryCall{};
    DnnlKernel::Owned owned;
    if (constant_weights) {
      owned.emplace(DNNL_ARG_WEIGHTS, reordered_constant(w, plain(wdims), pd.weights_desc()));
    } else {
      args.push_back({DNNL_ARG_WEIGHTS, w_buffer, plain(wdims), pd.weights_desc()});
    }
    if (b) args.push_back({DNNL_ARG_BIAS, position(call.values, b), bmd});
    // The residual may lend its memory to the output only if the primitive reads it nowhere
    // else (a block whose residual is also its source: y = conv(p) + p).
    bool residual_only = summed >= 0 && w_buffer != summed &&
                         std::none_of(args.begin(), args.end(),
                                      [&](const DnnlKernel::Arg& a) { return a.buffer == summed; });
    args.push_back({DNNL_ARG_DST, position(call.values, written), y_user, dst});
    bool in_blocks = dx.size() == 4 && layout(dx) == blocked(dx); // (5-D: not blocked)
    std::string blocks = fmt::format("nChw{}c", channel_block());
    std::string where = in_blocks
                            ? (src_blocked && dst_blocked ? fmt::format(", {} in place", blocks)
                               : src_blocked ? fmt::format(", {} in, reordered out", blocks)
                               : dst_blocked ? fmt::format(", reordered in, {} out", blocks)
                                             : fmt::format(", reordered to {}", blocks))
                        : src == x_user ? (nhwc ? ", channels-last in place" : "")
                                        : ", channels-last";
    auto conv = std::make_shared<DnnlKernel>(
        dnnl::convolution_forward(pd), std::move(args), std::move(owned),
        fmt::format("oneDNN convolution ({}{}{}{})", impl, summed >= 0 ? ", residual summed" : "",
                    where, bf16 ? ", bf16 products" : ""));
    memory::desc residual_md;
    if (summed >= 0) {
      residual_md = in_blocked.contains(call.values[static_cast<size_t>(summed)]) ? blocked(dy)
                                                                                  : residual_user;
      conv->copy_into_dst(summed, residual_md);
    }
    // Written in the residual's memory without an internal layout, the destination must lie
    // as the residual does: a reorder does not run in place.
    if (residual_only && (layout(dy) != y_user || residual_md == y_user))
      call.output_in_place_of = {summed, position(call.values, final_output(n, ops))};
    call.kernel = std::move(conv);
    return call;
  };
  using A = dnnl::algorithm;
  bool winograd = forced == Algorithm::kWinograd
                      ? winograd_shaped(dx, at.group, win)
                      : forced == Algorithm::kChosen && winograd_fits(dx, dw, at.group, win);
  if (absorbed.input_concat) { // only Weft's Winograd kernel reads a Concat's parts in place
    if (bf16 || !winograd || !own_winograd_first(dx, dw, win)) return std::nullopt;
    return winograd_conv_call(n, absorbed, in_blocked);
  }
  if (bf16) {
    if (LibraryCall call = build(channels_last, A::convolution_direct); call.kernel) return call;
    return std::nullopt;
  }
  if (winograd) {
    // Weft's own where it goes first (AVX2, large planes) and its layouts and epilogue fit;
    // else oneDNN's where it has one (AVX-512, stride 1).
    if (own_winograd_first(dx, dw, win)) {
      if (std::optional<LibraryCall> call = winograd_conv_call(n, absorbed, in_blocked))
        return call;
    }
    try {
      if (LibraryCall call = build(blocked, A::convolution_winograd); call.kernel) return call;
    } catch (const dnnl::error&) { // no Winograd kernel here (ISA, stride, post-ops)
    }
  }
  if (forced == Algorithm::kWinograd) return std::nullopt;
  // Where oneDNN has no direct JIT kernel for channels-last, only its gemm-based one
  // (im2col; 1-D convolutions with long windows on AVX2), that ran 2x faster on plain
  // activations ([1, 64, 4096] -> 128 channels, 15 taps: 15.4 -> 8.7 ms; 128 -> 128: 35.7 ->
  // 17.7; AMD EPYC, AVX2, 2 threads, 2026-11-30), which lie so here unless the graph made
  // them channels-last: no reorders then either.
  try {
    if (!nhwc && !src_blocked && !dst_blocked && forced == Algorithm::kChosen &&
        blocked_direct_allowed() && channels_last_impl(n).find("gemm") != std::string::npos) {
      if (LibraryCall call = build(plain, A::convolution_direct); call.kernel) return call;
    }
  } catch (const dnnl::error&) { // channels-last below
  }
  try {
    BlockedKernel kernel =
        forced == Algorithm::kChosen ? blocked_kernel(n) : BlockedKernel::kSlower;
    if ((kernel != BlockedKernel::kSlower && (src_blocked || dst_blocked)) ||
        blocked_alone(n, kernel)) {
      if (LibraryCall call = build(blocked, A::convolution_direct); call.kernel) return call;
    }
  } catch (const dnnl::error&) { // no blocked kernel here (post-ops): channels-last below
  }
  try {
    if (LibraryCall call = build(channels_last, A::convolution_direct); call.kernel) return call;
  } catch (const dnnl::error&) { // not implemented channels-last: plain below
  }
  return build(plain, A::convolution_direct);
}

// A buffer per value of "call": a constant's data, else values in [-1, 1).
std::vector<std::vector<float>> test_buffers(const LibraryCall& call) {
  std::vector<std::vector<float>> buffers;
  uint32_t state = 12345;
  for (const Value* v : call.values) {
    Dims d = dims_of(v);
    size_t n =
        static_cast<size_t>(std::accumulate(d.begin(), d.end(), int64_t{1}, std::multiplies<>()));
    std::vector<float>& b = buffers.emplace_back(n);
    if (v->is_constant()) {
      std::memcpy(b.data(), v->constant->data(), n * sizeof(float));
      continue;
    }
    for (float& f : b) {
      state = state * 1664525u + 1013904223u;
      f = static_cast<float>(state >> 8) / static_cast<float>(1 << 23) - 1.0f;
    }
  }
  return buffers;
}

// The median time of runs of "call" on "buffers" over about "seconds" (median_run_ms).
double median_ms(const LibraryCall& call, std::vector<std::vector<float>>& buffers,
                 double seconds) {
  std::vector<void*> args;
  for (std::vector<float>& b : buffers)
    args.push_back(b.data());
  return median_run_ms([&] { return call.kernel->run(args.data(), nullptr).ok(); }, seconds);
}

// A 1-D convolution channels-last as oneDNN runs it: where oneDNN has only its gemm-based
// kernel (long windows on AVX2), as im2col tiles at the matmul's speed (dnnl_im2col.cc), else
// its convolution.
std::optional<LibraryCall> conv1d_onednn_call(const Node& n, const Absorbed& absorbed,
                                              std::string* why_not) {
  if (im2col_allowed() && channels_last_impl(n).find("gemm") != std::string::npos) {
    if (std::optional<LibraryCall> call = im2col_conv_call(n, absorbed)) return call;
  }
  return conv_call_in(n, absorbed, {}, why_not);
}

// Whether Weft's kernel of few output channels runs "n": as `weft tune` recorded, else by
// default ($WEFT_FEW_OUTPUTS=0: never).
bool few_outputs_chosen(const Node& n) {
  static const bool on = knob_on("WEFT_FEW_OUTPUTS");
  if (!on || !few_outputs_shaped(n)) return false;
  if (std::optional<bool> tuned =
          recorded(few_outputs_key(n), "algorithm", "few outputs", "direct"))
    return *tuned;
  return few_outputs_by_default(n);
}

bool channels_last_1d(const Node& n) {
  return n.op_type == Op::kConvChannelsLast && dims_of(n.inputs[0]).size() == 3;
}

} // namespace

std::optional<LibraryCall> conv_call(const Node& n, const Absorbed& absorbed,
                                     std::string* why_not) {
  // A 1x1 convolution of one pixel (batch 1, no pads, one group): a row times constant
  // weights [M, C, 1, 1], as Weft's matrix-vector product where that takes it (2^18 weights or
  // more; fewer are generated code): MobileNetV4's head, 960 -> 1280 channels after the mean
  // over the pixels, took 0.265 ms in oneDNN's brgconv_1x1 (18.6 GB/s), the Gemm after it 0.19
  // ms for as many weights in Weft's call.
  if (gemv_enabled() && !absorbed.input_casts[0] && !absorbed.input_concat &&
      n.attrs_as<ConvAttrs>().group == 1) {
    Dims dx = dims_of(n.inputs[0]), dw = dims_of(n.inputs[1]);
    bool one = dx[0] == 1;
    for (size_t i = 2; i < dw.size(); ++i)
      one = one && dw[i] == 1 && dx[n.op_type == Op::kConvChannelsLast ? i - 1 : i] == 1;
    const auto& pads = n.attrs_as<ConvAttrs>().pads;
    one = one && std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
    if (one) {
      if (std::optional<LibraryCall> call = gemv_call_flat(n.inputs[0], n.inputs[1], n.input(2),
                                                           final_output(n, absorbed.epilogue),
                                                           absorbed.epilogue, dw[1], dw[0], true))
        return call;
    }
  }
  if (few_outputs_chosen(n)) { // its epilogue, if any, stays generated code
    if (std::optional<LibraryCall> call = few_outputs_conv_call(n, absorbed)) return call;
    *why_not = "Weft's kernel of few output channels takes no epilogue";
    return std::nullopt;
  }
  if (!channels_last_1d(n) || absorbed.input_casts[0])
    return conv_call_in(n, absorbed, {}, why_not);
  // Weft's Winograd kernel where it saves enough products (winograd_1d.cc), else oneDNN.
  auto [dx, dw, dy, win] = conv_shape(n);
  if (winograd_1d_fits(dx, dw, n.attrs_as<ConvAttrs>().group, win)) {
    if (std::optional<LibraryCall> call = winograd_conv1d_call(n, absorbed)) return call;
  }
  return conv1d_onednn_call(n, absorbed, why_not);
}

void keep_blocked_layouts(std::map<const Node*, LibraryCall>& calls, const Readers& readers,
                          const std::set<const Value*>& outputs) {
  // The convolutions that may run blocked: Winograd ones, which do anyway, and direct ones
  // whose blocked kernel is as fast or faster.
  struct Conv {
    const Node* head;
    LibraryCall* call;
    const Value *src, *out, *residual;
    bool winograd;
    BlockedKernel kernel;
    size_t region = 0; // its region's index (union-find parent while building)
  };
  std::vector<Conv> convs;
  for (auto& [head, call] : calls) {
    auto kernel = std::dynamic_pointer_cast<const DnnlKernel>(call.kernel);
    // Weft's own Winograd kernel runs as fast on either layout, where the blocked one is its
    // nChw8c (not AVX-512's nChw16c).
    bool own = false;
    const Value* own_residual = winograd_residual(call, &own);
    bool concat = std::any_of(call.nodes.begin(), call.nodes.end(),
                              [](const Node* n) { return n->op_type == Op::kConcat; });
    if ((head->op_type != Op::kConv && head->op_type != Op::kConvChannelsLast) ||
        (!kernel && !own) || (own && channel_block() != 8) || !call.symbols.empty() || concat ||
        dims_of(head->inputs[0]).size() != 4 ||
        (kernel && kernel->describe().find("bf16 products") != std::string::npos))
      continue;
    bool winograd = kernel && kernel->describe().find("wino") != std::string::npos;
    BlockedKernel k = own ? BlockedKernel::kAsFast : BlockedKernel::kFaster;
    try {
      if (!winograd && !own) k = blocked_kernel(*head);
    } catch (const dnnl::error&) {
      continue;
    }
    if (k == BlockedKernel::kSlower) continue;
    int summed = kernel ? kernel->summed() : -1;
    convs.push_back({head, &call, head->inputs[0], call.nodes.back()->outputs[0],
                     own           ? own_residual
                     : summed >= 0 ? call.values[static_cast<size_t>(summed)]
                                   : nullptr,
                     winograd, k, convs.size()});
  }
  std::map<const Node*, size_t> conv_of; // every node of a convolution's call
  for (size_t i = 0; i < convs.size(); ++i) {
    for (const Node* n : convs[i].call->nodes)
      conv_of[n] = i;
  }
  std::function<size_t(size_t)> root = [&](size_t i) {
    return convs[i].region == i ? i : convs[i].region = root(convs[i].region);
  };
  // A value may go blocked when one of those convolutions writes it and others read it, as
  // their source or summed residual only, and its channels are a multiple of the block (so
  // that the blocked layout takes the memory of channels-last). Such values join their
  // convolutions into regions.
  std::set<const Value*> inner;
  for (const Conv& c : convs) {
    Dims d = dims_of(c.out);
    int64_t channels = c.head->op_type == Op::kConvChannelsLast ? d[3] : d[1];
    const std::vector<const Node*>& read_by = readers(c.out);
    if (outputs.contains(c.out) || channels % channel_block() != 0 || read_by.empty()) continue;
    bool fits = true;
    for (const Node* r : read_by) {
      auto it = conv_of.find(r);
      const Conv* q = it == conv_of.end() ? nullptr : &convs[it->second];
      fits = q && q->head->op_type == c.head->op_type &&
             (r == q->head ? std::count(r->inputs.begin(), r->inputs.end(), c.out) == 1 &&
                                 r->inputs[0] == c.out
                           : q->residual == c.out);
      if (!fits) break;
    }
    if (!fits) continue;
    inner.insert(c.out);
    for (const Node* r : read_by)
      convs[root(conv_of.at(r))].region = root(conv_of.at(c.head));
  }
  // A region goes blocked when that costs less (reorder_cost, blocked_gain): blocked, its
  // values that come from or go outside it are reordered, and every direct convolution that
  // is faster blocked gains; channels-last, the convolutions that run blocked alone
  // (Winograd ones, blocked_alone) reorder all their values and gain. So a region of 1x1
  // convolutions only goes blocked when it saves reorders, and SqueezeNet's fire modules
  // (channels-last concatenations on both sides, small 3x3 convolutions) do not.
  std::map<size_t, double> blocked_cost, channels_last_cost;
  for (Conv& c : convs) {
    size_t g = root(c.region);
    c.region = g;
    double gain = c.kernel == BlockedKernel::kFaster && !c.winograd ? blocked_gain(*c.head) : 0;
    blocked_cost[g] -= gain;
    for (const Value* v : {c.src, c.out, c.residual})
      if (!inner.contains(v)) blocked_cost[g] += reorder_cost(v);
    if (c.winograd || blocked_alone(*c.head, c.kernel))
      channels_last_cost[g] +=
          reorder_cost(c.src) + reorder_cost(c.out) + reorder_cost(c.residual) - gain;
  }
  std::set<const Value*> in_blocks;
  for (const Conv& c : convs) {
    if (inner.contains(c.out) && blocked_cost[c.region] < channels_last_cost[c.region])
      in_blocks.insert(c.out);
  }
  if (in_blocks.empty()) return;
  // Every convolution that touches one is built again, or none is.
  std::map<const Node*, LibraryCall> rebuilt;
  for (const Conv& c : convs) {
    if (!in_blocks.contains(c.src) && !in_blocks.contains(c.out) && !in_blocks.contains(c.residual))
      continue;
    Absorbed absorbed;
    const Value* v = c.head->outputs[0];
    for (size_t i = 1; i < c.call->nodes.size(); ++i) {
      std::optional<PostOp> p = post_op(*c.call->nodes[i], v);
      if (!p) return;
      absorbed.epilogue.push_back(*p);
      v = c.call->nodes[i]->outputs[0];
    }
    std::string why_not;
    std::optional<LibraryCall> call;
    try {
      call = conv_call_in(*c.head, absorbed, in_blocks, &why_not);
    } catch (const dnnl::error&) {
    }
    if (!call || !call->kernel) return;
    call->nodes = c.call->nodes;
    rebuilt.emplace(c.head, std::move(*call));
  }
  for (auto& [head, call] : rebuilt)
    calls.at(head) = std::move(call);
}

std::optional<ConvAlgorithmTiming> time_conv_algorithms(const Node& conv, double seconds) {
  if (conv.op_type != Op::kConv && conv.op_type != Op::kConvChannelsLast) return std::nullopt;
  std::vector<const Value*> values(conv.inputs.begin(), conv.inputs.end());
  values.insert(values.end(), conv.outputs.begin(), conv.outputs.end());
  if (unsupported_values(values)) return std::nullopt;
  auto [dx, dw, dy, win] = conv_shape(conv);
  const int64_t group = conv.attrs_as<ConvAttrs>().group;
  // 2-D 3x3: oneDNN's direct kernel against the Winograd kernels; 1-D channels-last: what
  // oneDNN runs against Weft's 1-D Winograd kernel; few output channels: oneDNN's direct
  // kernel against Weft's.
  bool few = few_outputs_shaped(conv);
  bool one_d = !few && channels_last_1d(conv) && winograd_1d_shaped(dx, group, win);
  if (!few && !one_d && !(dims_of(conv.inputs[0]).size() == 4 && winograd_shaped(dx, group, win)))
    return std::nullopt;
  std::string why_not;
  std::optional<LibraryCall> direct, other;
  try {
    direct = one_d ? conv1d_onednn_call(conv, {}, &why_not)
                   : conv_call_in(conv, {}, {}, &why_not, Algorithm::kDirect);
    other = few     ? few_outputs_conv_call(conv, {})
            : one_d ? winograd_conv1d_call(conv, {})
                    : conv_call_in(conv, {}, {}, &why_not, Algorithm::kWinograd);
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
  if (!direct || !direct->kernel || !other || !other->kernel) return std::nullopt;
  std::vector<std::vector<float>> a = test_buffers(*direct), b = test_buffers(*other);
  // Alternating rounds, so that a burst of load on a shared machine does not decide.
  std::vector<double> direct_ms, other_ms;
  for (int round = 0; round < 5; ++round) {
    direct_ms.push_back(median_ms(*direct, a, seconds / 5));
    other_ms.push_back(median_ms(*other, b, seconds / 5));
  }
  std::sort(direct_ms.begin(), direct_ms.end());
  std::sort(other_ms.begin(), other_ms.end());
  if (direct_ms[0] < 0 || other_ms[0] < 0) return std::nullopt;
  ConvAlgorithmTiming t;
  t.geometry = few ? few_outputs_key(conv) : winograd_geometry(dx, dw, win);
  t.alternative = few ? "few outputs" : "winograd";
  t.direct_ms = direct_ms[2];
  t.alternative_ms = other_ms[2];
  t.alternative_by_default = few     ? few_outputs_by_default(conv)
                             : one_d ? winograd_1d_by_default(dx, dw, win)
                                     : winograd_by_default(dx, dw, win);
  return t;
}

Status record_conv_algorithm(const ConvAlgorithmTiming& t) {
  std::string field = t.alternative == "winograd" ? "winograd_ms" : "few_outputs_ms";
  return write_record(t.geometry,
                      {{"algorithm", t.alternative_ms < t.direct_ms ? t.alternative : "direct"},
                       {"direct_ms", t.direct_ms},
                       {field, t.alternative_ms},
                       {"geometry", t.geometry}});
}

std::string placement_geometry(const Node& conv) {
  auto [dx, dw, dy, win] = conv_shape(conv);
  std::vector<int64_t> strides, dilations;
  for (const Window& d : win) {
    strides.push_back(d.stride);
    dilations.push_back(d.dilation);
  }
  return fmt::format("placement: {} strides [{}] dilations [{}] group {}", geometry(dx, dw, win),
                     fmt::join(strides, ","), fmt::join(dilations, ","),
                     conv.attrs_as<ConvAttrs>().group);
}

std::function<double(double)> conv_call_timer(const Node& conv) {
  if (conv.op_type != Op::kConv && conv.op_type != Op::kConvChannelsLast) return {};
  std::vector<const Value*> values(conv.inputs.begin(), conv.inputs.end());
  values.insert(values.end(), conv.outputs.begin(), conv.outputs.end());
  if (unsupported_values(values)) return {};
  std::string why_not;
  auto call = std::make_shared<std::optional<LibraryCall>>();
  try {
    *call = conv_call(conv, {}, &why_not);
  } catch (const dnnl::error&) {
    return {};
  }
  if (!*call || !(*call)->kernel) return {};
  auto buffers = std::make_shared<std::vector<std::vector<float>>>(test_buffers(**call));
  return [call, buffers](double seconds) { return median_ms(**call, *buffers, seconds); };
}

Status record_conv_placement(const Node& conv, double library_ms, double generated_ms) {
  std::string geometry = placement_geometry(conv);
  bool generated = generated_ms < kGeneratedMargin * library_ms;
  return write_record(geometry, {{"runs", generated ? "generated" : "library"},
                                 {"library_ms", library_ms},
                                 {"generated_ms", generated_ms},
                                 {"geometry", geometry}});
}

std::optional<bool> tuned_generated(const Node& conv) {
  if (conv.op_type != Op::kConv && conv.op_type != Op::kConvChannelsLast) return std::nullopt;
  for (const Value* v : {conv.inputs[0], conv.inputs[1], conv.outputs[0]}) {
    if (!v->type.has_static_shape()) return std::nullopt; // tuned for static shapes only
  }
  return recorded(placement_geometry(conv), "runs", "generated", "library");
}

} // namespace weft::library
