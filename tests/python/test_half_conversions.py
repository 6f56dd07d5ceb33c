"""f16 conversions in generated CPU kernels. In blocks of 16 lanes the hardware converts (F16C or
AVX-512: Emitter::emit_half_blocks), elsewhere Weft's per-element code does (weft_h2f,
weft_f2h, weft_round_f16); both round half to even, overflow to inf and keep denormals, so
results equal numpy's float16 arithmetic bit for bit, and each other ($WEFT_HALF_BLOCKS=0)."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper

import weft
from models import make_model

SHAPE = (3, 1037)  # rows of 64 blocks of 16 and a tail of 13

RUN = """
import json, sys
import numpy as np
import weft
x, h = np.load(sys.argv[2]), np.load(sys.argv[3])
out = weft.compile(sys.argv[1]).run({"x": x, "h": h})
np.savez(sys.argv[4], **out)
"""


def model():
    """a = Cast(x, f16); r = Cast(a, f32); c = Cast(h, f32); d = h + a (in f16)."""
    f16, f32 = TensorProto.FLOAT16, TensorProto.FLOAT
    nodes = [helper.make_node("Cast", ["x"], ["a"], to=f16),
             helper.make_node("Cast", ["a"], ["r"], to=f32),
             helper.make_node("Cast", ["h"], ["c"], to=f32),
             helper.make_node("Add", ["h", "a"], ["d"])]
    value = lambda name, t: helper.make_tensor_value_info(name, t, SHAPE)
    return make_model(nodes, [value("x", f32), value("h", f16)],
                      [value("a", f16), value("r", f32), value("c", f32), value("d", f16)])


def inputs():
    """f32 values at f16's edges (ties, denormals, overflow, inf, NaN), then random ones over
    its whole range and beyond; f16 values likewise."""
    edges = [0.0, -0.0, 2**-24, 2**-25, 3 * 2**-26, 2**-25 * (1 + 2**-20), 2**-14, 2**-14 - 2**-25,
             1 + 2**-11, 1 + 3 * 2**-11, -(1 + 2**-11), 65504, 65519.996, 65520, -65520, 1e10,
             np.inf, -np.inf, np.nan, 1e-40, -1e-40, 2049, 2051, 4097]
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(SHAPE) * 2.0**rng.uniform(-30, 18, SHAPE)).astype(np.float32)
    x.flat[:len(edges)] = edges
    x.flat[2000:2000 + len(edges)] = edges  # inside a later row's blocks
    h = (rng.standard_normal(SHAPE) * 2.0**rng.uniform(-26, 15, SHAPE)).astype(np.float16)
    h.flat[100:106] = [np.inf, -np.inf, np.nan, 65504, 2**-24, -0.0]
    return x, h


def run(tmp_path, knobs):
    """Weft's outputs, and the generated source, under the environment plus "knobs"."""
    path, dump = tmp_path / "m.onnx", tmp_path / ("dump" + json.dumps(knobs).replace('"', ""))
    path.write_bytes(model().SerializeToString())
    x, h = inputs()
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "h.npy", h)
    env = {**os.environ, **knobs, "WEFT_DUMP_DIR": str(dump)}
    subprocess.run([sys.executable, "-c", RUN, str(path), str(tmp_path / "x.npy"),
                    str(tmp_path / "h.npy"), str(tmp_path / "out.npz")], env=env, check=True)
    source = "".join(p.read_text() for p in pathlib.Path(dump).rglob("kernels.cc"))
    return dict(np.load(tmp_path / "out.npz")), source


def same(got, want):
    """Bit for bit, except that any NaN equals any NaN (its payload may differ)."""
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    bits = {2: np.uint16, 4: np.uint32}[want.dtype.itemsize]
    mismatch = np.flatnonzero(got.view(bits)[~nan] != want.view(bits)[~nan])
    assert mismatch.size == 0, (got[~nan][mismatch[:5]], want[~nan][mismatch[:5]])


def test_conversions_equal_numpys_bit_for_bit(tmp_path):
    x, h = inputs()
    with np.errstate(over="ignore"):
        a = x.astype(np.float16)
        d = (h.astype(np.float32) + a.astype(np.float32)).astype(np.float16)
    want = {"a": a, "r": a.astype(np.float32), "c": h.astype(np.float32), "d": d}
    blocks, source = run(tmp_path, {})
    calls = ("weft_h2f16(&", "weft_round_f16x16(&", "weft_f2h16(weft_w")
    assert all(call in source for call in calls)  # the blocks ran
    plain, plain_source = run(tmp_path, {"WEFT_HALF_BLOCKS": "0"})
    assert not any(call in plain_source for call in calls)
    for name, value in want.items():
        same(blocks[name], value)
        same(plain[name], value)


def test_conversions_over_a_symbolic_extent():
    """The same model compiled once over a symbolic row length: blocks of 16 and a tail of
    any length (none, part of a block, all of a row shorter than 16)."""
    m = model()
    for v in list(m.graph.input) + list(m.graph.output):
        v.type.tensor_type.shape.dim[1].dim_param = "n"
    compiled = weft.compile(m.SerializeToString(), dynamic_shapes=True)
    x, h = inputs()
    with np.errstate(over="ignore"):
        a = x.astype(np.float16)
        d = (h.astype(np.float32) + a.astype(np.float32)).astype(np.float16)
    want = {"a": a, "r": a.astype(np.float32), "c": h.astype(np.float32), "d": d}
    for columns in (1037, 32, 21, 5):
        out = compiled.run({"x": x[:, :columns].copy(), "h": h[:, :columns].copy()})
        for name, value in want.items():
            same(out[name], value[:, :columns].copy())


def test_reductions_over_f16_rows_and_columns(tmp_path):
    """A row sum and a column max of f16 values, whose lanes convert 16 values at a time
    (CpuReductionWriter's chains): exact (the values are small integers, whose sums f32 and f16
    hold in any order), with and without the blocks."""
    h16 = TensorProto.FLOAT16
    m = make_model([helper.make_node("ReduceSum", ["h", "rows"], ["s"], keepdims=0),
                    helper.make_node("ReduceMax", ["g"], ["c"], axes=[0], keepdims=0)],
                   [helper.make_tensor_value_info("h", h16, [64, 1037]),
                    helper.make_tensor_value_info("g", h16, [300, 520])],
                   [helper.make_tensor_value_info("s", h16, [64]),
                    helper.make_tensor_value_info("c", h16, [520])],
                   [helper.make_tensor("rows", TensorProto.INT64, [1], [1])])
    path = tmp_path / "r.onnx"
    path.write_bytes(m.SerializeToString())
    rng = np.random.default_rng(3)
    h = rng.integers(-1, 2, (64, 1037)).astype(np.float16)
    g = (rng.standard_normal((300, 520)) * 100).astype(np.float16)
    np.save(tmp_path / "h.npy", h)
    np.save(tmp_path / "g.npy", g)
    want = {"s": h.astype(np.float64).sum(axis=1).astype(np.float16), "c": g.max(axis=0)}
    script = ("import sys, numpy as np, weft\n"
              "out = weft.compile(sys.argv[1]).run({'h': np.load(sys.argv[2]), "
              "'g': np.load(sys.argv[3])})\nnp.savez(sys.argv[4], **out)\n")
    for knobs in ({}, {"WEFT_HALF_BLOCKS": "0"}):
        dump = tmp_path / ("dump" + str(len(knobs)))
        env = {**os.environ, **knobs, "WEFT_DUMP_DIR": str(dump)}
        subprocess.run([sys.executable, "-c", script, str(path), str(tmp_path / "h.npy"),
                        str(tmp_path / "g.npy"), str(tmp_path / "out.npz")], env=env, check=True)
        source = "".join(p.read_text() for p in pathlib.Path(dump).rglob("kernels.cc"))
        assert ("weft_h2f16(&" in source) == (not knobs)
        out = dict(np.load(tmp_path / "out.npz"))
        for name, value in want.items():
            same(out[name], value)
