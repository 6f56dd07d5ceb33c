"""Weights in external data files are used where they lie: the file is memory-mapped
(weft/support/mapped_file.h), a kernel that packs a weight into its own layout lets the
original's pages go, and 4-bit weights are read packed, never unpacked. Results against float64
references, with the data on cache lines (mapped) and off them (read in); memory against the
same model read in (WEFT_MAP_EXTERNAL_DATA=0), in fresh processes."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft
from models import cpu_flags, has_avx512_vnni
from test_quantized import matmul_nbits_case


def save_external(model, directory, skew=0):
    """"model" saved in "directory" with every initializer in weights.bin, each "skew" bytes past
    a page (ONNX's writer puts those of 1 MB and more on pages; Weft maps those on cache lines,
    and reads the others in); its path."""
    m = type(model)()
    m.CopyFrom(model)
    data = bytearray()
    for t in m.graph.initializer:
        raw = t.raw_data if t.HasField("raw_data") else numpy_helper.to_array(t).tobytes()
        offset = -(-len(data) // 4096) * 4096 + skew
        data.extend(b"\0" * (offset - len(data)) + raw)
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        del t.external_data[:]
        for key, value in (("location", "weights.bin"), ("offset", str(offset)), ("length", str(len(raw)))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
    with open(os.path.join(directory, "weights.bin"), "wb") as f:
        f.write(data)
    path = os.path.join(directory, "model.onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def strategies(profile):
    return [p["strategy"] for p in profile if p["op_type"] != "Add"]


@pytest.mark.parametrize("skew", [0, 4])  # mapped; off cache lines, read in
@pytest.mark.parametrize("bits, accuracy_level, k, block, rows_shape", [
    (4, 4, 256, 32, [1]), (4, 4, 320, 64, [5]), (4, 0, 256, 32, [1]), (4, 0, 96, 32, [3]),
    (8, 4, 160, 32, [2]), (4, 0, 80, 32, [1]),  # K not a multiple of the block: one byte a weight
])
def test_matmul_nbits_weights_are_read_where_they_lie(tmp_path, skew, bits, accuracy_level, k, block, rows_shape):
    """MatMulNBits' packed weights from an external data file: the weight-only call's layouts
    are made from the file's packing (4 bits two a byte) where it is mapped."""
    int8 = accuracy_level == 4 and has_avx512_vnni()
    model, a, want = matmul_nbits_case(bits, True, True, k, 40, block, rows_shape, 21,
                                       accuracy_level=accuracy_level, int8_reference=int8)
    got, profile = weft.compile(save_external(model, tmp_path, skew)).profile({"a": a})
    assert [s.split(" matrix")[0] for s in strategies(profile)] == [f"Weft {bits}-bit weights"], profile
    np.testing.assert_allclose(got["y"], want, rtol=1e-5, atol=1e-4)


def gemv_model(k, n, transposed, rows="rows"):
    rng = np.random.default_rng(5)
    w = rng.standard_normal((n, k) if transposed else (k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    node = (helper.make_node("Gemm", ["x", "w", "bias"], ["y"], transB=1) if transposed else
            helper.make_node("MatMul", ["x", "w"], ["y"]))
    inits = [numpy_helper.from_array(w, "w")] + ([numpy_helper.from_array(bias, "bias")] if transposed else [])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, (w.T if transposed else w).astype(np.float64), bias.astype(np.float64) if transposed else 0


@pytest.mark.parametrize("transposed", [False, True])
def test_a_row_reads_mapped_weights_in_the_prompts_packed_layout(tmp_path, transposed):
    """A language model's decoding step (one row, Weft's matrix-vector call) reads mapped
    weights in the layout oneDNN's product of a prompt packs them in (blocks of columns with
    AVX-512), so that the model holds one copy of them; read in, it reads the original. K and
    N not multiples of the blocks."""
    k, n = 1000, 300
    model, w, bias = gemv_model(k, n, transposed, rows=1)
    x = np.random.default_rng(6).standard_normal((1, k)).astype(np.float32)
    for skew, packed in ((0, True), (4, False)):
        directory = tmp_path / str(skew)
        directory.mkdir()
        got, profile = weft.compile(save_external(model, directory, skew)).profile({"x": x})
        strategy = strategies(profile)
        assert len(strategy) == 1 and strategy[0].startswith("Weft matrix-vector product"), profile
        assert ("packed weights" in strategy[0]) == packed, strategy
        np.testing.assert_allclose(got["y"], x.astype(np.float64) @ w + bias, rtol=1e-4, atol=1e-4)


GROWTH = """
import json, sys, numpy as np, weft
def rss():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS")) / 1024
path, feeds = sys.argv[1], json.loads(sys.argv[2])
start = rss()
model = weft.compile(path, dynamic_shapes=True)
for name, shape in feeds:
    model.run({name: np.ones(shape, np.float32)})
print(rss() - start)
"""


def growth_mb(path, feeds, mapped):
    env = dict(os.environ, WEFT_MAP_EXTERNAL_DATA="1" if mapped else "0", WEFT_SPECIALIZE_AFTER="0")
    done = subprocess.run([sys.executable, "-c", GROWTH, str(path), json.dumps(feeds)], env=env, check=True,
                          capture_output=True, text=True)
    return float(done.stdout.split()[-1])


def test_mapped_weights_are_held_once(tmp_path):
    """Memory of a compile and runs, mapped against read in (fresh processes): f32 weights
    read by a prompt's product (packed) and then by single rows (the same packed copy, the
    original's pages let go): 16 MB less; 4-bit weights, with int8 activations (their tiles
    made from the file's packing) or f32 ones (packed for AVX-512, which prompts dequantize
    from too), never unpacked a byte a weight: 16 MB less."""
    k = n = 2048
    model, _, _ = gemv_model(k, n, False)
    path = save_external(model, tmp_path)
    feeds = [["x", [8, k]], ["x", [1, k]]]
    read_in, mapped = growth_mb(path, feeds, False), growth_mb(path, feeds, True)
    assert mapped < read_in - 12, (read_in, mapped)
    levels = ([4] if has_avx512_vnni() else []) + ([0] if "avx512f" in cpu_flags() else [])
    for level in levels:
        model, _, _ = matmul_nbits_case(4, True, False, 4096, 4096, 32, [1], 21, accuracy_level=level)
        directory = tmp_path / f"int4_{level}"
        directory.mkdir()
        path = save_external(model, directory)
        feeds = [["a", [1, 4096]]]
        read_in, mapped = growth_mb(path, feeds, False), growth_mb(path, feeds, True)
        assert mapped < read_in - 12, (level, read_in, mapped)
