"""The Python module's outputs equal the CLI's bit for bit, whatever numpy runs it. ctest runs
this file under Debian's numpy 1.24 and under .venv's numpy 2 (with numpy 2, a module built
with pybind11 before 2.12 read dtype item sizes wrong: zero strides, wrong values). The CLI
is WEFT_CLI (ctest sets it); the models are the example, small ones of several dtypes, and a
small ResNet-style network (library calls and generated kernels)."""

import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("WEFT_CLI", os.path.join(ROOT, "build", "tools", "weft", "weft"))


def cli_outputs(model_path, feeds, tmp_path):
    args = [CLI, "run", str(model_path), "--output-dir", str(tmp_path / "out")]
    for name, value in feeds.items():
        np.save(tmp_path / f"{name}.npy", value)
        args += ["--input", f"{name}={tmp_path / (name + '.npy')}"]
    subprocess.run(args, check=True, capture_output=True)
    return {f[:-4]: np.load(tmp_path / "out" / f) for f in os.listdir(tmp_path / "out")}


def elementwise_model(elem_type, shape):
    """y = x * x + x, and s = the row sums of x: every numpy dtype width the API passes."""
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "x"], ["xx"]), helper.make_node("Add", ["xx", "x"], ["y"]),
         helper.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=0)],
        "g", [helper.make_tensor_value_info("x", elem_type, shape)],
        [helper.make_tensor_value_info("y", elem_type, shape),
         helper.make_tensor_value_info("s", elem_type, [shape[0]])], initializer=[axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def check_equal(model_path, feeds, tmp_path):
    ours = weft.compile(str(model_path)).run(feeds)
    theirs = cli_outputs(model_path, feeds, tmp_path)
    assert sorted(ours) == sorted(theirs)
    for name, value in ours.items():
        assert value.dtype == theirs[name].dtype and value.shape == theirs[name].shape, name
        assert value.strides == theirs[name].strides, (name, value.strides)
        np.testing.assert_array_equal(value, theirs[name], err_msg=f"{name} (numpy {np.__version__})")


def test_example_model(tmp_path):
    x = np.random.default_rng(0).standard_normal((2, 128, 64)).astype(np.float32)
    check_equal(os.path.join(ROOT, "examples", "attention_block.onnx"), {"x": x}, tmp_path)


@pytest.mark.parametrize("dtype,elem_type", [
    (np.float32, TensorProto.FLOAT), (np.float64, TensorProto.DOUBLE),
    (np.float16, TensorProto.FLOAT16), (np.int32, TensorProto.INT32),
    (np.int64, TensorProto.INT64), (np.int8, TensorProto.INT8), (np.uint8, TensorProto.UINT8)])
def test_dtypes(tmp_path, dtype, elem_type):
    path = tmp_path / "m.onnx"
    onnx.save(elementwise_model(elem_type, [3, 37]), path)
    x = (np.random.default_rng(1).standard_normal((3, 37)) * 4).astype(dtype)
    check_equal(path, {"x": x}, tmp_path)


def test_non_contiguous_input(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(elementwise_model(TensorProto.FLOAT, [5, 8]), path)
    x = np.random.default_rng(2).standard_normal((8, 5)).astype(np.float32).T  # a strided view
    ours = weft.compile(str(path)).run({"x": x})
    theirs = cli_outputs(path, {"x": np.ascontiguousarray(x)}, tmp_path)
    np.testing.assert_array_equal(ours["y"], theirs["y"])
    np.testing.assert_array_equal(ours["s"], theirs["s"])


def conv_net():
    """A small ResNet-style network, as the model tests export them: a convolution stem with
    BatchNormalization and ReLU, max pooling, a residual block, global average pooling and a
    classifier (oneDNN library calls and generated kernels both)."""
    rng = np.random.default_rng(3)

    def weight(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)

    inits = [weight("w0", 8, 3, 3, 3), weight("w1", 8, 8, 3, 3), weight("fc", 10, 8),
             weight("fcb", 10), weight("scale", 8), weight("bias", 8), weight("mean", 8),
             numpy_helper.from_array(np.full(8, 0.5, np.float32), "var")]
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c0", "scale", "bias", "mean", "var"], ["b0"]),
        helper.make_node("Relu", ["b0"], ["r0"]),
        helper.make_node("MaxPool", ["r0"], ["p0"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p0", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c1", "p0"], ["a1"]),
        helper.make_node("Relu", ["a1"], ["r1"]),
        helper.make_node("GlobalAveragePool", ["r1"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 32, 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])
    graph = helper.make_graph(nodes, "net", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_conv_net(tmp_path):
    path = tmp_path / "net.onnx"
    onnx.save(conv_net(), path)
    x = np.random.default_rng(4).standard_normal((2, 3, 32, 32)).astype(np.float32)
    check_equal(path, {"x": x}, tmp_path)
