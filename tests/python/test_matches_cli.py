"""The Python module's outputs equal the CLI's bit for bit, whatever numpy runs it. ctest runs
this file under Debian's numpy 1.24 and under .venv's numpy 2 (with numpy 2, a module built
with pybind11 before 2.12 read dtype item sizes wrong: zero strides, wrong values). The CLI
is WEFT_CLI (ctest sets it); the models are the example and small ones of several dtypes."""

import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

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
