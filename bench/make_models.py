"""Writes the benchmark models into DIR (run with Debian's Python, which has onnx and torch), then
DIR/.made, the marker run.sh compares with this file's time to know the models are current.
Usage: make_models.py DIR [--gpu]  (--gpu: also the 8192x4096 norms bench/gpu_bench.py runs)"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import bench_cases as bc  # the parameters torch_peer.py draws the same way


def save(directory, name, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, os.path.join(directory, name + ".onnx"))


def tensor(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


# (name, shape, axes): DESIGN.md's reduction suite.
REDUCTIONS = [
    ("reduce_row_65536x3", [65536, 3], [1]),
    ("reduce_row_64x30000", [64, 30000], [1]),
    ("reduce_col_2048x256", [2048, 256], [0]),
    ("reduce_col_12544x2048", [12544, 2048], [0]),
    ("reduce_col_131072x32", [131072, 32], [0]),
    ("reduce_all_9x1024x1024", [9, 1024, 1024], [0, 1, 2]),
    ("reduce_row_9x1024x1024", [9, 1024, 1024], [2]),
    ("reduce_middle_64x1024x64", [64, 1024, 64], [1]),
    ("reduce_middle_512x16x512", [512, 16, 512], [1]),
    # Each canonical form again at 64 MB or more (the bandwidth goal's size: beyond the L3).
    ("reduce_row_6000000x3", [6000000, 3], [1]),
    ("reduce_row_64x262144", [64, 262144], [1]),
    ("reduce_row_16x1024x1024", [16, 1024, 1024], [2]),
    ("reduce_col_524288x32", [524288, 32], [0]),
    ("reduce_all_16x1024x1024", [16, 1024, 1024], [0, 1, 2]),
    ("reduce_middle_256x256x256", [256, 256, 256], [1]),
]


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def subgraphs(d):
    """The fused-subgraph cases, in ONNX primitives where opset 17 has no single op."""
    rows, cols = 4096, 1024
    x2d = [tensor("x", [rows, cols])]
    # attention softmax: Softmax(x * scale + causal mask), the mask an initializer.
    shape = [8, 8, 256, 256]
    save(d, "attention_softmax_8x8x256x256",
         [node("Mul", ["x", "scale"], ["xs"]), node("Add", ["xs", "mask"], ["xm"]),
          node("Softmax", ["xm"], ["y"], axis=-1)],
         [tensor("x", shape)], [tensor("y", shape)],
         [init("scale", np.float32(bc.ATTENTION_SCALE)), init("mask", bc.causal_mask(shape[-1]))])
    # bias + exact GELU: h = x + b; 0.5 * h * (1 + erf(h / sqrt(2))).
    save(d, "bias_gelu_4096x1024",
         [node("Add", ["x", "b"], ["h"]), node("Div", ["h", "sqrt2"], ["hs"]), node("Erf", ["hs"], ["e"]),
          node("Add", ["e", "one"], ["e1"]), node("Mul", ["h", "e1"], ["he"]),
          node("Mul", ["he", "half"], ["y"])],
         x2d, [tensor("y", [rows, cols])],
         [init("b", bc.param(2, [cols])), init("sqrt2", np.float32(np.sqrt(2))),
          init("one", np.float32(1)), init("half", np.float32(0.5))])
    # logsumexp over the last axis (the ONNX op).
    save(d, "logsumexp_4096x1024",
         [node("ReduceLogSumExp", ["x"], ["y"], axes=[-1], keepdims=0)], x2d, [tensor("y", [rows])])
    # Batch norm in training: statistics over N, H, W (biased variance), then normalize.
    shape = [32, 64, 56, 56]
    channel = [1, shape[1], 1, 1]
    save(d, "bn_train_32x64x56x56",
         [node("ReduceMean", ["x"], ["mean"], axes=[0, 2, 3], keepdims=1), node("Sub", ["x", "mean"], ["dev"]),
          node("Mul", ["dev", "dev"], ["dev2"]), node("ReduceMean", ["dev2"], ["var"], axes=[0, 2, 3], keepdims=1),
          node("Add", ["var", "eps"], ["ve"]), node("Sqrt", ["ve"], ["sd"]), node("Div", ["dev", "sd"], ["n"]),
          node("Mul", ["n", "gamma"], ["ng"]), node("Add", ["ng", "beta"], ["y"])],
         [tensor("x", shape)], [tensor("y", shape)],
         [init("eps", np.float32(bc.EPS_NORM)), init("gamma", bc.param(3, channel)),
          init("beta", bc.param(4, channel))])
    # GroupNorm, 8 groups: statistics per (sample, group) over [32, 8, 8*56*56], then per-channel
    # scale and shift.
    save(d, "groupnorm_32x64x56x56_g8",
         [node("Reshape", ["x", "grouped"], ["xg"]),
          node("ReduceMean", ["xg"], ["mean"], axes=[-1], keepdims=1), node("Sub", ["xg", "mean"], ["dev"]),
          node("Mul", ["dev", "dev"], ["dev2"]), node("ReduceMean", ["dev2"], ["var"], axes=[-1], keepdims=1),
          node("Add", ["var", "eps"], ["ve"]), node("Sqrt", ["ve"], ["sd"]), node("Div", ["dev", "sd"], ["ng"]),
          node("Reshape", ["ng", "full"], ["n"]), node("Mul", ["n", "gamma"], ["ns"]),
          node("Add", ["ns", "beta"], ["y"])],
         [tensor("x", shape)], [tensor("y", shape)],
         [init("grouped", np.array([shape[0], bc.GROUPS, -1], np.int64)), init("full", np.array(shape, np.int64)),
          init("eps", np.float32(bc.EPS_NORM)), init("gamma", bc.param(5, channel)),
          init("beta", bc.param(6, channel))])


def norms(d, rows, cols):
    """Softmax, LayerNormalization and RMSNorm over the last axis of [rows, cols]."""
    shape = f"{rows}x{cols}"
    save(d, "softmax_" + shape, [helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
         [tensor("x", [rows, cols])], [tensor("y", [rows, cols])])
    save(d, "layernorm_" + shape,
         [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)],
         [tensor("x", [rows, cols])], [tensor("y", [rows, cols])],
         [numpy_helper.from_array(np.ones(cols, np.float32), "g"),
          numpy_helper.from_array(np.zeros(cols, np.float32), "b")])
    # RMSNorm: x / sqrt(mean(x^2) + eps) * g.
    save(d, "rmsnorm_" + shape,
         [node("Mul", ["x", "x"], ["x2"]), node("ReduceMean", ["x2"], ["ms"], axes=[-1], keepdims=1),
          node("Add", ["ms", "eps"], ["mse"]), node("Sqrt", ["mse"], ["rms"]),
          node("Reciprocal", ["rms"], ["inv"]), node("Mul", ["x", "inv"], ["n"]),
          node("Mul", ["n", "g"], ["y"])],
         [tensor("x", [rows, cols])], [tensor("y", [rows, cols])],
         [init("eps", np.float32(bc.EPS_RMS)), init("g", bc.param(1, [cols]))])


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    for name, shape, axes in REDUCTIONS:
        out = [s for i, s in enumerate(shape) if i not in axes]
        save(d, name, [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
             [tensor("x", shape)], [tensor("y", out)],
             [numpy_helper.from_array(np.array(axes, np.int64), "axes")])
    norms(d, 4096, 1024)
    if "--gpu" in sys.argv[2:]:  # issue-sized rows for a GPU's bandwidth: 134 MB in, 134 MB out
        norms(d, 8192, 4096)
    subgraphs(d)
    import torch
    import torchvision
    torch.manual_seed(0)
    torch.onnx.export(torchvision.models.resnet18().eval(), torch.randn(1, 3, 224, 224),
                      os.path.join(d, "resnet18.onnx"), opset_version=14, input_names=["x"])
    encoder = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                               batch_first=True, activation="gelu").eval()
    torch.onnx.export(encoder, torch.randn(4, 128, 256), os.path.join(d, "encoder_layer.onnx"),
                      opset_version=14, input_names=["x"])
    if "--gpu" in sys.argv[2:]:  # 1x1 and depthwise convolutions (cuBLAS and cuDNN on a GPU)
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
        from testing.torch_models import randomize_batch_norms
        torch.manual_seed(1)
        mobilenet = randomize_batch_norms(torchvision.models.mobilenet_v2())
        torch.onnx.export(mobilenet, torch.randn(1, 3, 224, 224),
                          os.path.join(d, "mobilenet_v2.onnx"), opset_version=14,
                          input_names=["x"])
    x = torch.randn(bc.GPT_BATCH, bc.GPT_SEQ, bc.GPT_DIM)
    torch.onnx.export(bc.gpt_block(torch), x, os.path.join(d, "gpt_block.onnx"), opset_version=17,
                      input_names=["x"], output_names=["y"])
    open(os.path.join(d, ".made"), "w").close()


if __name__ == "__main__":
    main()
