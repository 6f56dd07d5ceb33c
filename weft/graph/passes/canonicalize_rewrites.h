// The rewrites canonicalize (canonicalize.h) makes so that fusion and the library calls take
// more of a model: an Einsum as a MatMul, a scale moved after a matrix product,
// Tanh(Softplus(x)) as one ratio, 1 + Tanh(u) as a sigmoid, a per-channel Add into a convolution's
// bias, parallel convolutions summed into one; and the node-building and transposing steps they
// share with it. Internal to graph/passes.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "weft/graph/graph.h"
#include "weft/graph/op_table.h"

namespace weft::canonicalize_rewrites {

// A node "op" computing a fresh value of "type" from "inputs", inserted before "at"; the
// value's and the node's names are built from "value_name" and "node_name" (by default the
// node's name and the op).
Value* insert_op(Graph& graph, const Node& at, Op op, std::vector<Value*> inputs, TensorType type,
                 OpAttrs attrs = NoAttrs{}, const std::string& value_name = "",
                 const std::string& node_name = "");

// Whether "perm" leaves every axis in place.
bool is_identity_perm(const Ints& perm);

// "x" transposed by "perm", inserted before "at": x itself for the identity, and a Transpose
// of a Transpose composed into one.
Value* transposed(Graph& graph, const Node& at, Value* x, const Ints& perm);

// A two-operand Einsum that is a matrix product (product_labels: batch labels, contracted
// ones and each operand's own, at least one of the last three kinds each) becomes a MatMul of
// [batch..., m, k] by [batch..., k, n], the labels of each group merged by Reshapes, the
// operands brought into that order by Transposes, which the oneDNN call reads through strides
// where no Reshape follows them, and the product transposed into the result's order. As a
// generated reduction MaxViT's attention ("BGHID,BGHJD->BGHIJ") took 13.7 of 57 ms, and
// Funnel-Transformer's positional projections ("td,dnh->tnh") 100 ms each at 1.5 GFLOP/s.
void einsum_as_matmul(Graph& graph, Node& node);

// MatMul(Mul(a, s), b) with s a float constant of one element, and the Mul's output read by
// this MatMul only, is Mul(MatMul(a, b), s) (either operand; two scales multiply). The scale
// then joins the code after the product (attention's scores: the Softmax's kernel), and a
// Transpose before it meets the MatMul, whose oneDNN call reads it through strides. PyTorch's
// scaled_dot_product_attention exports q and k each scaled by the square root of the scale,
// each with its Transpose a kernel of its own (the GPT-2 block's: 2 x 0.035 ms of 2.4).
// f32 and f64: the product rounds once more or less than before (an ulp or two of the scores).
void scale_after_matmul(Graph& graph, Node& node, std::unordered_map<const Value*, int>& uses);

// Tanh(Softplus(x)), with the Softplus read by the Tanh alone, as Mish's lowering computes it
// (kernel/lower_elementwise.cc): n / (n + 2) with n = e^x (e^x + 2), and 1 from 20 on. The
// TorchScript exporter writes Mish so (x * tanh(softplus(x))), and the log and tanh after
// each other left its kernel scalar code. f32 and f64, from opset 9 (Where).
void tanh_of_softplus(Graph& graph, Node& node, std::unordered_map<const Value*, int>& uses);

// Add(Tanh(u), 1) (either order), the Tanh read by the Add alone, is Mul(Sigmoid(u * 2), 2):
// equal, and the form the tanh GELU that GPT-2, GPT-J, Bloom and T5 v1.1 spell out
// (0.5 x (1 + tanh(c (x + 0.044715 x^3)))) takes in ONNX Gelu's lowering. The sigmoid is one
// exp and a division where tanh adds a polynomial for small arguments, and it keeps the
// relative precision that 1 + tanh(u) loses where tanh(u) nears -1. f32, f64, f16 and bf16;
// the 1 may be of any rank up to the Tanh's, its one element broadcast.
void one_plus_tanh(Graph& graph, Node& node, std::unordered_map<const Value*, int>& uses);

// Add(Conv(x, w, b), v) with v one value per output channel ([C], [C, 1, 1], [1, C, 1, 1]
// against [N, C, H, W]: a diffusion UNet's time embedding), the Conv read by the Add alone, is
// Conv(x, w, b + v), the bias computed at run time (or folded here where v and b are
// constants). The convolution then runs as it does with its own bias: a per-channel operand
// was a binary post-op, which kept it off the Winograd kernels (a DDPM UNet's 192 -> 64
// channels at 64x64: 2.6 ms on oneDNN's direct kernel). f32; the Add node becomes the Conv.
void bias_into_conv(Graph& graph, Node& node, std::unordered_map<const Value*, int>& uses);

// Add(Conv(x, w1, b1), Conv(x, w2, b2)), two convolutions of the same input, stride, group and
// output, each read by the Add alone, with constant weights, where the smaller kernel lies
// inside the larger one at the same output points (MobileOne's and RepVGG's training-time
// branches, 1x1 beside 3x3 beside 3x3), is Conv(x, w1 + w2, b1 + b2), the smaller kernel
// added at its place in the larger: one convolution instead of two and a full-size sum (a
// binary post-op, which kept oneDNN off its brgemm kernels). As structural re-parameterization
// does it once, offline. The Add node becomes the convolution; chains of Adds merge a branch at
// a time. f32; the sums of the weights round once more than the sums of the outputs would.
void parallel_convs_summed(Graph& graph, Node& node, std::unordered_map<const Value*, int>& uses);

} // namespace weft::canonicalize_rewrites
