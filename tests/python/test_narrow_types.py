"""float8, float4, int4 and int2 through the Python module: Cast, QuantizeLinear and
DequantizeLinear against ml_dtypes' conversions (which ONNX's reference uses), bit for bit.
Needs onnx 1.18+ and ml_dtypes (the numpy-2 run from .venv); skipped elsewhere."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import weft
from models import make_model

ml_dtypes = pytest.importorskip("ml_dtypes")
if not hasattr(TensorProto, "INT2"):
    pytest.skip("onnx is older than 1.18", allow_module_level=True)

FLOAT8 = {
    TensorProto.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
    TensorProto.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
    TensorProto.FLOAT8E5M2: ml_dtypes.float8_e5m2,
    TensorProto.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz,
}
OPSET = 23


def cast_model(from_type, to_type, n, **attrs):
    return make_model([helper.make_node("Cast", ["x"], ["y"], to=to_type, **attrs)],
                      [helper.make_tensor_value_info("x", from_type, [n])],
                      [helper.make_tensor_value_info("y", to_type, [n])], opset=OPSET)


def run(model, **inputs):
    return weft.compile(model.SerializeToString()).run(inputs)["y"]


def awkward_floats(dtype):
    """Every value of "dtype", the midpoints between neighbours (ties), points just beside
    them, values past the largest, and the specials."""
    codes = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float32)
    finite = np.unique(codes[np.isfinite(codes)]).astype(np.float64)
    mid = (finite[1:] + finite[:-1]) / 2
    big = float(ml_dtypes.finfo(dtype).max)
    x = np.concatenate([finite, mid, mid * (1 + 1e-3), mid * (1 - 1e-3),
                        [big * 1.03, big * 1.1, 1e6, -1e6, np.inf, -np.inf, np.nan, -0.0]])
    return x.astype(np.float32)


def same_bits(got, want):
    got_f, want_f = got.astype(np.float32), want.astype(np.float32)
    both_nan = np.isnan(got_f) & np.isnan(want_f)
    differ = (got.view(np.uint8) != want.view(np.uint8)) & ~both_nan
    assert not differ.any(), list(zip(got_f[differ][:5], want_f[differ][:5]))


@pytest.mark.parametrize("onnx_type", sorted(FLOAT8))
@pytest.mark.parametrize("saturate", [1, 0])
def test_cast_to_float8_rounds_and_saturates_as_ml_dtypes(onnx_type, saturate):
    dtype = FLOAT8[onnx_type]
    x = awkward_floats(dtype)
    got = run(cast_model(TensorProto.FLOAT, onnx_type, x.size, saturate=saturate), x=x)
    info = ml_dtypes.finfo(dtype)
    want = (np.clip(x, float(info.min), float(info.max)) if saturate else x).astype(dtype)
    assert got.dtype == dtype
    same_bits(got, want)


@pytest.mark.parametrize("onnx_type", sorted(FLOAT8))
def test_cast_from_float8_reads_every_code(onnx_type):
    dtype = FLOAT8[onnx_type]
    x = np.arange(256, dtype=np.uint8).view(dtype)
    got = run(cast_model(onnx_type, TensorProto.FLOAT, 256), x=x)
    want = x.astype(np.float32)
    np.testing.assert_array_equal(got, want)


def test_float4_and_int4_int2_wrap_and_saturate_as_ml_dtypes():
    x = np.concatenate([np.arange(-40, 40) / 4, [1e6, -1e6, 6.5, 7.1]]).astype(np.float32)
    for onnx_type, dtype in [(TensorProto.FLOAT4E2M1, ml_dtypes.float4_e2m1fn),
                             (TensorProto.INT4, ml_dtypes.int4),
                             (TensorProto.UINT4, ml_dtypes.uint4),
                             (TensorProto.INT2, ml_dtypes.int2),
                             (TensorProto.UINT2, ml_dtypes.uint2)]:
        values = x if onnx_type == TensorProto.FLOAT4E2M1 else np.trunc(x[:80])
        got = run(cast_model(TensorProto.FLOAT, onnx_type, values.size), x=values)
        same_bits(got, values.astype(dtype))
        back = run(cast_model(onnx_type, TensorProto.FLOAT, values.size), x=got)
        np.testing.assert_array_equal(back, got.astype(np.float32))


def test_cast_to_float16_and_back_rounds_inside_one_kernel():
    x = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
    model = make_model(
        [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
         helper.make_node("Cast", ["h"], ["y"], to=TensorProto.FLOAT)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4096])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4096])], opset=OPSET)
    np.testing.assert_array_equal(run(model, x=x), x.astype(np.float16).astype(np.float32))


def test_blocked_int4_quantize_dequantize_round_trip():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 8)).astype(np.float32)
    block = 4
    scale = (np.abs(x).reshape(3, 2, block).max(axis=2) / 7).astype(np.float32)
    zero = np.zeros((3, 2), dtype=ml_dtypes.int4)
    model = make_model(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1, block_size=block),
         helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1, block_size=block)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [3, 2]),
         helper.make_tensor_value_info("z", TensorProto.INT4, [3, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 8])], opset=OPSET)
    s = np.repeat(scale, block, axis=1)
    want = np.clip(np.rint(x / s), -8, 7) * s
    np.testing.assert_allclose(run(model, x=x, s=scale, z=zero), want, rtol=1e-6, atol=0)


@pytest.mark.parametrize("external", [False, True], ids=["inline", "external"])
def test_sub_byte_initializers_read_back(external, tmp_path):
    """int4, uint4, int2 and uint2 initializers of odd lengths (a last byte half used), inline
    (int32_data) or in an external file (packed bytes, unpacked at import), read back through
    a Cast to int32."""
    import onnx
    cases = [(TensorProto.INT4, [-8, 7, -1, 0, 3, -5, 6]), (TensorProto.UINT4, [0, 15, 7, 8, 1, 9, 14]),
             (TensorProto.INT2, [-2, 1, -1, 0, 1]), (TensorProto.UINT2, [0, 3, 2, 1, 3])]
    nodes, outputs, inits = [], [], []
    for i, (dtype, values) in enumerate(cases):
        inits.append(helper.make_tensor(f"c{i}", dtype, [len(values)], values))
        nodes.append(helper.make_node("Cast", [f"c{i}"], [f"y{i}"], to=TensorProto.INT32))
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.INT32, [len(values)]))
    nodes.append(helper.make_node("Identity", ["x"], ["x_out"]))
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                       outputs + [helper.make_tensor_value_info("x_out", TensorProto.FLOAT, [1])], inits,
                       opset=OPSET)
    path = tmp_path / "m.onnx"
    if external:
        onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                  location="m.data", size_threshold=0)
    else:
        onnx.save(model, path)
    out = weft.compile(path).run({"x": np.ones(1, np.float32)})
    for i, (dtype, values) in enumerate(cases):
        np.testing.assert_array_equal(out[f"y{i}"], np.array(values, np.int32), err_msg=str(dtype))
