// The compile-time half of the oneDNN calls (dnnl.h): which epilogue nodes a call absorbs
// as oneDNN post-ops, the values a call binds, and helpers the calls share. Internal to
// library/.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "weft/graph/graph.h"
#include "weft/graph/shape_functions.h"
#include "weft/library/dnnl.h"
#include "weft/library/dnnl_kernel.h"

namespace weft::library {

// The static dims of "v".
Dims dims_of(const Value* v);

// The permutation of a Transpose (the library takes those of values whose rank is known).
Ints perm_of(const Node& transpose);
// Transpose(x, perm) read in place: x's plain strides, permuted; "rank" pads leading dims.
memory::desc transposed_input(const Node& t, size_t rank);
// A result of "dims" written so that Transpose(perm) of it lies plain in memory.
memory::desc transposed_output(const Dims& dims, const Node& t);

// The identity permutation of "rank" dims.
Ints identity_perm(size_t rank);
// For sgemm's products through strides (dnnl_sgemm.h, attention_call.h): the permutation of
// the Transpose that produces operand "x" of "reader", when reader alone reads x, "free"
// allows the Transpose, its input's shape is known, and it keeps that input's last dim among
// the matrix's two (rows or columns contiguous); none otherwise.
std::optional<Ints> operand_transpose(const Value* x, const Node& reader,
                                      const SoleReader& sole_reader,
                                      const std::function<bool(const Node*)>& free);
// The same for a result read only by Transpose "t" (may be null), which must keep the last dim
// last: the view of t's output that the product writes (view dim k is dim view[k] of it).
std::optional<Ints> result_view(const Node* t, const std::function<bool(const Node*)>& free);

// The position of "v" in "values", appending it if absent.
int position(std::vector<const Value*>& values, const Value* v);

// Why oneDNN does not take a node whose values are "values", if it does not: f32 only, and
// no empty tensors (generated code handles both).
std::optional<std::string> unsupported_values(const std::vector<const Value*>& values);

// An epilogue node as a oneDNN post-op: an activation, or an arithmetic op with another
// operand ("src1") that broadcasts to the output without growing it.
struct PostOp {
  const Node* node = nullptr;
  bool binary = false;
  dnnl::algorithm algorithm = dnnl::algorithm::undef;
  float alpha = 0.0f, beta = 0.0f; // eltwise parameters
  const Value* src1 = nullptr;
  Dims src1_dims; // aligned to the output's rank
};

// "e", which reads "from", as a post-op, if oneDNN has one for it.
std::optional<PostOp> post_op(const Node& e, const Value* from);

// How the primitive lays out a full-size activation of these dims (the buffer's own layout
// is always plain).
using Layout = std::function<memory::desc(const Dims&)>;

// Dims of a channels-last value ([N, spatial..., C]) in oneDNN's order [N, C, spatial...].
Dims channels_first(Dims d);

// The memory of a channels-last value of dims "d" (row-major over them), as a
// descriptor over channels_first(d): a 4-D one is oneDNN's nhwc.
memory::desc channels_last_view(const Dims& d);

// oneDNN's channels-last layout of dims [N, C, spatial...] (nwc, nhwc, ndhwc).
memory::desc channels_last(const Dims& dims);

// Constant "w", laid out as "given", reordered into memory of layout "wanted", once for every
// call that reads it so while it lives (Tensor::derived): the layers of a model that shares
// its weights (ALBERT's 12 held 12 packed copies of each, 11 GB in all), a dynamic call's
// builds per shape, and every compile of one model (each for a new shape held one more).
// "given" may have other dims than "wanted" (as many elements): its elements row-major are then
// wanted's row-major (a 1-D convolution's weights [M, C, taps] viewed [taps, C, M] for the
// matrix [taps * C, M]). The packed copy lies in Weft's host memory (host_memory.h): one of 2
// MiB or more on huge pages, which oneDNN's own allocation, on small pages, leaves to the
// system's THP mode; it lives while the constant or a call holds it.
std::shared_ptr<const memory> reordered_constant(const Value* w, const memory::desc& given,
                                                 const memory::desc& wanted);

// The layout oneDNN's matmul of a few rows by constant weights of dims [K, N] packs them in
// (dnnl_matmul.cc; its padded rows where it takes those): the one the products of a language
// model's prompt read, which its decoding steps' Weft matrix-vector products can read too
// (gemv.h), instead of the original beside it.
memory::desc prompt_weights_layout(const Dims& kn);

// Attributes by which a primitive takes its scratchpad as an argument (scratchpad_mode::user),
// which DnnlKernel gives each run in flight its own of: in oneDNN's default mode its
// convolutions shared one, and concurrent runs of a model (threads of one process) gave wrong
// results (test_api.py: test_concurrent_library_calls, 1 in 10 before). Every primitive a
// DnnlKernel runs is built with them (post_op_attr's, QLinearConv's, pooling's, resampling's).
dnnl::primitive_attr own_scratchpad();

// The post-ops' attribute, and their src1 arguments bound into "call". A src1 of the
// output's full dims takes the primitive's "layout"; a broadcast one stays as it lies. With
// "channels_last_values", the values' dims are [N, spatial..., C] (Op::kConvChannelsLast's).
// With "summed", a first Add of a full-size operand is a sum post-op: the destination
// holds that operand before the primitive runs, and the primitive adds to it
// (DnnlKernel::copy_into_dst); "summed" gets that operand's position.
dnnl::primitive_attr post_op_attr(const std::vector<PostOp>& ops, LibraryCall& call,
                                  std::vector<DnnlKernel::Arg>& args, const Dims& out,
                                  const Layout& layout = plain, bool channels_last_values = false,
                                  int* summed = nullptr);

// What a call absorbs beside its node: post-ops, for MatMul, Transposes of its operands
// (read through strides) and of its result (written through strides), for
// MatMulInteger, the Cast of its result to f32 before the post-ops (the primitive then
// writes f32), and for a convolution, MatMul or Gemm with bf16 products
// (bf16_products_native), the Casts from bf16 that make its operands (a convolution's source,
// perhaps then made channels-last by a Transpose; a product's A, and B unless B is constant) and
// the Cast to bf16 of its last result (the primitive reads and writes bf16); for a channels-last
// convolution, the Concat along channels that makes its source, whose parts Weft's Winograd
// kernel reads in place (the Concat's output is never written).
struct Absorbed {
  std::vector<PostOp> epilogue;
  std::array<const Node*, 2> input_transposes = {nullptr, nullptr};
  const Node* input_concat = nullptr;
  const Node* output_transpose = nullptr;
  const Node* output_cast = nullptr;
  std::array<const Node*, 2> input_casts = {nullptr, nullptr};
  const Node* cast_transpose = nullptr; // between a convolution's source Cast and it
  const Node* result_cast = nullptr;
};

// "md" with bf16 elements, laid out alike (its strides count elements).
memory::desc in_bf16(memory::desc md);
// Whether oneDNN's implementation "impl" is one of its bf16 kernels ("brg:avx512_core_amx_bf16").
bool bf16_kernel(const std::string& impl);

// The channels of a block in oneDNN's blocked layout on this CPU: 16 with AVX-512, else 8
// (conv_choice.cc).
int64_t channel_block();

// The value the primitive writes: the last epilogue node's output, or the node's own.
const Value* final_output(const Node& n, const std::vector<PostOp>& ops);

// MatMul, MatMulInteger and QLinearMatMul (int8_matmul_unfit), and Gemm, as oneDNN's matmul
// (dnnl_matmul.cc).
std::optional<LibraryCall> matmul_call(const Node& n, const Absorbed& absorbed,
                                       std::string* why_not);
std::optional<LibraryCall> gemm_call(const Node& n, const Absorbed& absorbed, std::string* why_not);
// A convolution's activation dims [N, C, spatial...] and its windows (Conv, QLinearConv and
// their channels-last forms; dnnl_conv.cc).
struct ConvDims {
  Dims dx, dw, dy;
  std::vector<Window> win;
};
ConvDims conv_shape(const Node& n);

// A convolution's windows and weights as oneDNN's primitives take them: it counts the gaps
// of a dilation, and grouped weights are [G, M / G, C / G, k...].
struct PrimitiveWindows {
  Dims strides, dilates, pad_l, pad_r, wdims;
};
PrimitiveWindows primitive_windows(const std::vector<Window>& win, const Dims& dw, int64_t group);

// Conv and weft.ConvChannelsLast as a oneDNN convolution (dnnl_conv.cc).
std::optional<LibraryCall> conv_call(const Node& n, const Absorbed& absorbed, std::string* why_not);
// A weft.ConvChannelsLast in 1-D of one group, with constant weights, as oneDNN matmuls over
// tiles of its im2col matrix (dnnl_im2col.cc); none where the epilogue does not fit (a src1
// broadcast other than per channel) or oneDNN would run its reference matmul.
std::optional<LibraryCall> im2col_conv_call(const Node& n, const Absorbed& absorbed);
// A 2-D weft.ConvChannelsLast of one group and at most kFewOutputsMost output channels, with
// constant weights and no dilation along the row, as Weft's own kernel (few_outputs_conv.cc),
// on AVX2 or AVX-512: oneDNN's kernels put output channels along the vector, this one the
// taps along a row and the input channels. It takes no epilogue (those nodes stay generated
// code, after the call).
constexpr int64_t kFewOutputsMost = 16;
bool few_outputs_shaped(const Node& n);
std::optional<LibraryCall> few_outputs_conv_call(const Node& n, const Absorbed& absorbed);
// Whether it runs such a convolution without a tuning record (its channels and row of taps),
// and the key of that record.
bool few_outputs_by_default(const Node& n);
std::string few_outputs_key(const Node& n);

// A 2-D 3x3 Conv or weft.ConvChannelsLast of stride 1 or 2 and one group over constant
// weights, channels in multiples of 8, as Weft's own Winograd kernel, F(4x4, 3x3) or
// F(2x2, 3x3) (winograd.cc), on AVX2 (its products on AVX-512 where the CPU has it): its
// activations lie blocked (nChw8c, those in "in_blocked", where that is oneDNN's block) or
// channels-last; none where a value lies otherwise (plain, nChw16c), the CPU lacks AVX2, the
// transformed weights would be too large, or the epilogue is other than ReLU, LeakyReLU and
// the Add of a full-size operand.
std::optional<LibraryCall> winograd_conv_call(const Node& n, const Absorbed& absorbed,
                                              const std::set<const Value*>& in_blocked);
// A 1-D weft.ConvChannelsLast of stride 1 (any dilation) and one group over constant weights
// as Weft's own Winograd kernel, F(4, 3) over its taps in chunks of 3 (winograd_1d.cc), on
// AVX2 (AVX-512 where the CPU has it): input channels in whole groups of V (8, or 16 with
// AVX-512), output channels in multiples of 8; none otherwise, or where the transformed
// weights would be too large or the epilogue is other than ReLU, LeakyReLU and the Add of a
// full-size operand.
std::optional<LibraryCall> winograd_conv1d_call(const Node& n, const Absorbed& absorbed);
// The full-size operand a call of winograd_conv_call or winograd_conv1d_call adds (null if none);
// "is_winograd" says whether the call is one.
const Value* winograd_residual(const LibraryCall& call, bool* is_winograd);
// QLinearConv as oneDNN's int8 convolution (dnnl_qconv.cc; int8_conv_unfit says when).
std::optional<LibraryCall> qlinear_conv_call(const Node& n, const Absorbed& absorbed,
                                             std::string* why_not);

// The calls between channels-last regions (dnnl_spatial.cc), each on activations read and
// written through the Transposes it absorbed, or plain: ConvTranspose in 1-3 spatial dims as
// oneDNN's deconvolution; Resize where oneDNN's linear resampling computes it as ONNX does
// (onednn_resamples); MaxPool and AveragePool, and their channels-last forms, as oneDNN's
// pooling.
std::optional<LibraryCall> conv_transpose_call(const Node& n, const Absorbed& absorbed,
                                               std::string* why_not);
std::optional<LibraryCall> resize_call(const Node& n, const Absorbed& absorbed,
                                       std::string* why_not);
std::optional<LibraryCall> pool_call(const Node& n, const Absorbed& absorbed, std::string* why_not);

// A one-element s32 memory holding "value" (an int8 call's zero point, a run-time argument).
memory s32_scalar(int32_t value);

// Whether int8 products are exact on this CPU (VNNI; not with WEFT_ONEDNN_INT8=0), which
// oneDNN's int8 calls require.
bool int8_products_exact();

} // namespace weft::library
