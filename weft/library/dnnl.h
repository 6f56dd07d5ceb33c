// oneDNN for the compute-bound ops on the CPU: MatMul, Gemm and Conv in f32 run as oneDNN
// primitives (Debian's libdnnl), built once per compiled model for its static shapes, or, in a
// dynamic-shape compile, once per set of extents that a run binds (a few kept).
//
// oneDNN takes a node only when it can express it exactly; otherwise (another dtype, empty
// tensors, a Gemm whose alpha and beta do not map onto a bias, a primitive oneDNN does not
// implement) the node stays generated code, which handles every case. docs/library.md says
// which cases go where. dnnl.cc builds the primitives per op; dnnl_epilogue.h matches the
// epilogues they absorb; dnnl_kernel.h runs them.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "weft/graph/graph.h"
#include "weft/runtime/library_kernel.h"
#include "weft/support/status.h"

namespace weft::library {

// A node run by a library, with the epilogue nodes it absorbed: its kernel, and the values
// the kernel's buffers are, in order.
struct LibraryCall {
  std::shared_ptr<const runtime::LibraryKernel> kernel;
  std::vector<const Value*> values;
  std::vector<const Node*> nodes; // in graph order: absorbed producers, the node, its epilogue
  std::vector<Dim> symbols;       // the kernel's extents (Launch::symbols); none when static
  // (input, output) positions in "values": the output may take the input's memory when the
  // call is the input's last reader (a convolution's residual, summed into its destination,
  // which then needs no copy of it first). Set only where the call reads that input nowhere
  // else.
  std::optional<std::pair<int, int>> output_in_place_of;
  // Constants the kernel reads only in a layout of its own (a weight-only call's int8 tiles):
  // not bound, so that no run reads their tensors in, but counted in the bytes its profile
  // shows it moving.
  std::vector<const Value*> held;
  // What each run's extents must keep for the call to run (a dynamic call's inputs not empty
  // where its output is not), for Graph::dim_limits: a run that breaks one compiles for its
  // own shapes, with generated code.
  std::vector<DimLimit> limits;
};

// The one node that reads a value, or null (no reader, several, or a graph output).
using SoleReader = std::function<const Node*(const Value*)>;

// oneDNN's kernel for "node", or none when generated code should run it: "why_not" says why
// for the ops oneDNN could take, and stays empty for the others. The call absorbs nodes
// that "free" allows: the chain of sole readers after "node" that map onto oneDNN
// post-ops (Relu, LeakyRelu, Sigmoid, Tanh, HardSwish, Clip with constant bounds; Add, Sub, Mul,
// Div by a tensor that broadcasts to the output: a bias, a scale, a residual), and for MatMul,
// Transposes of its operands or result whose only reader or producer it is (strides).
// Over symbolic dims the call is built per set of extents at run time, in the form (the
// nodes it absorbs) that it takes at stand-in extents when compiled.
std::optional<LibraryCall> dnnl_call(const Node& node, const SoleReader& sole_reader,
                                     const std::function<bool(const Node*)>& free,
                                     std::string* why_not);

// Whether oneDNN multiplies bf16 values natively on this CPU (AVX512-BF16, or AMX on Xeons
// from Sapphire Rapids) and WEFT_ONEDNN_BF16 is not 0: a bf16 model's convolutions and
// MatMuls then run as bf16 calls (docs/library.md), and CompileSettings::allow_bf16 applies.
bool bf16_products_native();

// Why a MatMulInteger, QLinearMatMul or weft.QLinearMatMulBias (its bias a constant int32
// [N]) does not run as oneDNN's int8 matmul (u8 or s8 by s8, adding in s32), if it does not.
// That takes u8 or s8 activations of rank 2 or more with one zero point, and constant s8 weights
// [K, N] whose zero point is 0 (absent or all zeros: quantize_dynamic's symmetric weights), over
// static shapes; and only on CPUs whose int8 dot products add into s32 without saturating (VNNI;
// without it oneDNN adds pairs of products in s16 first), and not with WEFT_ONEDNN_INT8=0.
// Elsewhere the graph computes it as an f32 product (graph/passes/quantized_in_float.h), exact up
// to f32's rounding.
std::optional<std::string> int8_matmul_unfit(const Node& n);

// Why a QLinearConv does not run as oneDNN's int8 convolution, if it does not: that takes
// u8 or s8 activations whose scale and zero point are constants per tensor, constant s8
// weights (1-3 spatial dims) with scales per tensor or per output channel and a zero point
// of 0, a constant int32 bias, over static shapes, on CPUs where int8_matmul_unfit's
// products are exact, and where oneDNN has a JIT kernel for it.
std::optional<std::string> int8_conv_unfit(const Node& n);

// Whether a Conv is a grouped convolution of few channels a group that generated code runs
// faster on plain activations than oneDNN does: a 1-D one of up to 7 channels a group
// (depthwise included: a Conformer's, LFM2's), where oneDNN 2.6 has only slow kernels; a 2-D
// one of 2-7 channels a group (ResNeXt's 32 groups of 4) onto a plane of 28x28 or more, on
// CPUs without AVX-512, where oneDNN has only its im2col kernel for it. The channels_last pass
// leaves it plain, between Transposes, and driver/select_library.cc has generated code run it
// (docs/library.md).
bool few_channels_a_group(const Node& conv);

// Whether oneDNN's linear resampling computes a Resize as ONNX does: linear, of the spatial dims
// (N and C kept), with half-pixel coordinates (pytorch_half_pixel too, where no output dim is
// 1), f32, static shapes, the scales out / in (oneDNN takes them from the dims). oneDNN
// computes the source coordinate as (i + 0.5) * in / out - 0.5 and clamps the taps into the
// input, as ONNX does.
bool onednn_resamples(const Node& n);

// The nodes that read a value.
using Readers = std::function<const std::vector<const Node*>&(const Value*)>;

// Between oneDNN convolutions, values lie channels-last (or plain), and a convolution that
// runs on oneDNN's blocked layout (nChw16c with AVX-512, else nChw8c: Winograd, or a direct
// kernel faster so) reorders them to and from it. Values that only convolutions write and
// read (as their source, or a residual they sum) join them into regions, and a region whose
// reorders and kernels cost less blocked lies blocked: the calls of "calls" (by head node)
// that write or read such values are built again to take them so (docs/library.md). None
// changes when one of them cannot be. "outputs": the graph's outputs, which stay as they are.
void keep_blocked_layouts(std::map<const Node*, LibraryCall>& calls, const Readers& readers,
                          const std::set<const Value*>& outputs);

// 2-D 3x3 convolutions with stride 1, no dilation and one group run on oneDNN's direct
// kernels or its Winograd ones. By default those with at least 32 channels on each side take
// Winograd; `weft tune` times both algorithms per convolution geometry (time_conv_algorithms)
// and records the faster (record_conv_algorithm), in "$WEFT_CACHE_DIR/tuning/conv-*.json",
// keyed by the geometry, the CPU's model and the OpenMP thread count. Later compiles on that
// machine take the recorded algorithm. So do convolutions of few output channels, between
// oneDNN's direct kernels and Weft's kernel for them (dnnl_epilogue.h: few_outputs_conv_call).
struct ConvAlgorithmTiming {
  std::string geometry; // "x [1,128,28,28] w [32,128,3,3] pads [1,1,1,1]"
  std::string alternative; // to oneDNN's direct kernel: "winograd" or "few outputs"
  double direct_ms = 0, alternative_ms = 0;
  bool alternative_by_default = false; // the algorithm compiles take without a record
};

// Both algorithms of "conv" (Conv or weft.ConvChannelsLast, without its epilogue) on
// pseudo-random activations, in alternating rounds of about "seconds" in all; none for a
// node without both. A 1-D weft.ConvChannelsLast of stride 1 takes the same record: oneDNN's
// call ("direct") against Weft's 1-D Winograd kernel (winograd_1d.cc). A 2-D one of at most
// kFewOutputsMost output channels: oneDNN's call against Weft's kernel for them.
std::optional<ConvAlgorithmTiming> time_conv_algorithms(const Node& conv, double seconds);

// Records the faster algorithm of "timing" for later compiles.
Status record_conv_algorithm(const ConvAlgorithmTiming& timing);

// Whether a convolution is a library call or generated code: a default rule decides
// (stages::select_library_calls), unless `weft tune` timed both and recorded the faster
// (record_conv_placement), in "$WEFT_CACHE_DIR/tuning/conv-*.json" like the algorithms above,
// keyed by the shape with its strides, dilations and groups.
//
// A function timing the call of "conv" alone (without its epilogue) on pseudo-random
// activations, the one compiles take (oneDNN's, or Weft's Winograd or few-outputs kernel):
// each call measures a round of about "seconds" and returns its median in ms (negative if the
// call failed). Empty when no library call runs "conv".
std::function<double(double seconds)> conv_call_timer(const Node& conv);

// The key of the record of "conv" (static shapes): its shape, strides, dilations and groups.
std::string placement_geometry(const Node& conv);

// Generated code replaces a call that it runs in this share of the call's time or less: the
// call is the default, and a difference within a shared machine's noise changes nothing.
inline constexpr double kGeneratedMargin = 0.9;

// The record of what ran faster for the shape of "conv": the library call ("library_ms") or
// generated code ("generated_ms", by kGeneratedMargin).
Status record_conv_placement(const Node& conv, double library_ms, double generated_ms);

// The recorded choice for the shape of "conv": true for generated code; none without a record
// or static shapes.
std::optional<bool> tuned_generated(const Node& conv);

} // namespace weft::library
