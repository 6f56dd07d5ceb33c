"""Two-operand Einsums that are matrix products run as MatMuls (canonicalize.cc's
einsum_as_matmul): batch labels, contracted ones, each operand's own, merged and transposed
into [batch..., m, k] x [batch..., k, n] (a matrix by a vector stays a reduction). Against
float64 numpy, with weights as inputs and as constants (a Reshape of constant weights folds,
and the call packs them), and the kernels: no generated reduction computes any of them."""

import json
import os
import subprocess
import tempfile

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft
from models import make_model

CASES = [
    ("bhid,bhjd->bhij", (2, 3, 5, 8), (2, 3, 6, 8)),  # attention's scores
    ("bik,bkj->bji", (2, 5, 4), (2, 4, 6)),  # the product transposed
    ("td,dnh->tnh", (7, 12), (12, 3, 4)),  # Funnel-Transformer's positional projection
    ("binh,tnh->bnit", (2, 5, 3, 4), (6, 3, 4)),  # Transformer-XL's, r without a batch
    ("bind,snd->bnis", (1, 9, 3, 4), (2, 3, 4)),  # its segment embedding
    ("bnij,bjnd->bind", (1, 3, 5, 6), (1, 6, 3, 4)),  # attention by V, heads in the middle
    ("bhwc,hkc->bhwk", (2, 4, 5, 8), (4, 7, 8)),  # relative positions along one axis
    ("...ij,...jk->...ik", (3, 1, 4, 5), (2, 5, 6)),  # broadcast batch (ellipsis)
    ("ij,kj->ik", (9, 33), (10, 33)),  # x @ W.T
]


def einsum(equation, a_shape, b_shape, constant_b):
    y_shape = np.einsum(equation, np.zeros(a_shape), np.zeros(b_shape)).shape
    inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, a_shape)]
    initializers = []
    rng = np.random.default_rng(len(equation))
    b = rng.standard_normal(b_shape).astype(np.float32)
    if constant_b:
        initializers.append(numpy_helper.from_array(b, "b"))
    else:
        inputs.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, b_shape))
    model = make_model([helper.make_node("Einsum", ["a", "b"], ["y"], equation=equation)], inputs,
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
                       initializers=initializers)
    return model, b


@pytest.mark.parametrize("constant_b", [False, True])
@pytest.mark.parametrize("equation, a_shape, b_shape", CASES)
def test_an_einsum_product_matches_numpy(equation, a_shape, b_shape, constant_b):
    model, b = einsum(equation, a_shape, b_shape, constant_b)
    a = np.random.default_rng(1).standard_normal(a_shape).astype(np.float32)
    feed = {"a": a} if constant_b else {"a": a, "b": b}
    got = weft.compile(model.SerializeToString(), threads=2).run(feed)["y"]
    want = np.einsum(equation, a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "einsum.onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        r = subprocess.run([os.environ["WEFT_CLI"], "inspect", path, "--json"], capture_output=True,
                           text=True, timeout=300, check=True)
    kernels = json.loads(r.stdout)["kernels"]
    assert not any("reduce" in k["strategy"] for k in kernels), kernels
