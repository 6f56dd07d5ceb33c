"""Small ONNX models that several of the Python tests build."""

import os
import subprocess

import onnx
from onnx import TensorProto, helper


def has_avx512_vnni():
    """Whether the CPU has AVX-512 VNNI, which Weft's int8-activation kernels for 4- and 8-bit
    weights (MatMulNBits' accuracy level 4, QMoE's 8 bits) need."""
    try:
        with open("/proc/cpuinfo") as f:
            return "avx512_vnni" in f.read().split()
    except OSError:
        return False


def cli_kernels(path, knobs):
    """The kernel table `weft bench --kernels` prints for the model at "path" (random inputs, one
    run) under the environment plus "knobs" (docs/knobs.md)."""
    cli = os.environ.get("WEFT_CLI", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                                  "tools", "weft", "weft"))
    return subprocess.run([cli, "bench", str(path), "--fill", "random", "--iters", "1", "--kernels"],
                          env={**os.environ, **knobs}, capture_output=True, text=True,
                          check=True).stdout


def cpu_flags():
    """The CPU's flags in /proc/cpuinfo ("avx2", "avx512f", ...); empty where it cannot be read."""
    try:
        with open("/proc/cpuinfo") as f:
            return set(f.read().split())
    except OSError:
        return set()


def make_model(nodes, inputs, outputs, initializers=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def softmax_model():
    """y = Softmax(x) over the last axis, s = ReduceSum(y, axis 1); x is f32[N, 16]."""
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    return make_model(
        [helper.make_node("Softmax", ["x"], ["y"], axis=-1),
         helper.make_node("ReduceSum", ["y", "axes"], ["s"], keepdims=0)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, ["N"])],
        [axes])
