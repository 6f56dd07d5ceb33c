"""Writes the example models in this directory. Run with Debian's Python:
    /usr/bin/python3 examples/make_examples.py
The .onnx files are committed, so running Weft's examples needs no Python.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def attention_block():
    """Scaled-dot-product attention and a LayerNorm, with the shape subgraph (Shape ->
    Gather -> Concat -> Reshape) and constant axes inputs that exporters emit."""
    rng = np.random.default_rng(0)
    d, heads = 64, 4
    init = [
        numpy_helper.from_array(rng.standard_normal((d, 3 * d)).astype(np.float32) * 0.1, "w_qkv"),
        numpy_helper.from_array(np.full((d,), 1.0, np.float32), "ln_scale"),
        numpy_helper.from_array(np.zeros((d,), np.float32), "ln_bias"),
        numpy_helper.from_array(np.array(1 / np.sqrt(d // heads), np.float32), "scale"),
    ]
    c = lambda name, v: helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(v, np.int64)))
    nodes = [
        helper.make_node("MatMul", ["x", "w_qkv"], ["qkv"], name="qkv_proj"),
        helper.make_node("Split", ["qkv"], ["q", "k", "v"], axis=-1, name="split_qkv"),
        helper.make_node("Shape", ["x"], ["x_shape"], name="shape"),
        c("idx0", [0]), c("idx1", [1]),
        helper.make_node("Gather", ["x_shape", "idx0"], ["batch"], axis=0, name="get_batch"),
        helper.make_node("Gather", ["x_shape", "idx1"], ["seq"], axis=0, name="get_seq"),
        c("heads_dims", [heads, d // heads]),
        helper.make_node("Concat", ["batch", "seq", "heads_dims"], ["split_shape"], axis=0, name="heads_shape"),
        helper.make_node("Reshape", ["q", "split_shape"], ["q4"], name="q_heads"),
        helper.make_node("Reshape", ["k", "split_shape"], ["k4"], name="k_heads"),
        helper.make_node("Reshape", ["v", "split_shape"], ["v4"], name="v_heads"),
        helper.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3], name="q_t"),
        helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1], name="k_t"),
        helper.make_node("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3], name="v_t"),
        helper.make_node("MatMul", ["qt", "kt"], ["scores"], name="scores"),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"], name="scale_scores"),
        helper.make_node("Softmax", ["scaled"], ["probs"], axis=-1, name="softmax"),
        helper.make_node("Dropout", ["probs"], ["probs_d"], name="dropout"),
        helper.make_node("MatMul", ["probs_d", "vt"], ["ctx"], name="context"),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3], name="ctx_t"),
        c("merged", [0, 0, -1]),
        helper.make_node("Reshape", ["ctx_t", "merged"], ["attn"], name="merge_heads"),
        helper.make_node("Add", ["attn", "x"], ["res"], name="residual"),
        helper.make_node("LayerNormalization", ["res", "ln_scale", "ln_bias"], ["y"], axis=-1,
                         epsilon=1e-5, name="layer_norm"),
        c("mean_axes", [-1]),
        helper.make_node("ReduceSum", ["y", "mean_axes"], ["row_sum"], keepdims=0, name="row_sum"),
    ]
    graph = helper.make_graph(
        nodes, "attention_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 128, d])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 128, d]),
         helper.make_tensor_value_info("row_sum", TensorProto.FLOAT, [2, 128])],
        init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "attention_block.onnx"))


if __name__ == "__main__":
    attention_block()
