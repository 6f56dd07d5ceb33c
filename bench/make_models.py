"""Writes the benchmark models into DIR (run with Debian's Python, which has onnx and torch).
Usage: make_models.py DIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


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
]


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    for name, shape, axes in REDUCTIONS:
        out = [s for i, s in enumerate(shape) if i not in axes]
        save(d, name, [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
             [tensor("x", shape)], [tensor("y", out)],
             [numpy_helper.from_array(np.array(axes, np.int64), "axes")])
    rows, cols = 4096, 1024
    save(d, "softmax_4096x1024", [helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
         [tensor("x", [rows, cols])], [tensor("y", [rows, cols])])
    save(d, "layernorm_4096x1024",
         [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)],
         [tensor("x", [rows, cols])], [tensor("y", [rows, cols])],
         [numpy_helper.from_array(np.ones(cols, np.float32), "g"),
          numpy_helper.from_array(np.zeros(cols, np.float32), "b")])
    import torch
    import torchvision
    torch.manual_seed(0)
    torch.onnx.export(torchvision.models.resnet18().eval(), torch.randn(1, 3, 224, 224),
                      os.path.join(d, "resnet18.onnx"), opset_version=14, input_names=["x"])
    encoder = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                               batch_first=True, activation="gelu").eval()
    torch.onnx.export(encoder, torch.randn(4, 128, 256), os.path.join(d, "encoder_layer.onnx"),
                      opset_version=14, input_names=["x"])


if __name__ == "__main__":
    main()
