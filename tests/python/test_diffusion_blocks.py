"""The blocks of diffusion UNets, each against a float64 numpy reference. A per-channel Add after
a convolution (the timestep's embedding, [N, C] unsqueezed to [N, C, 1, 1]) becomes the
convolution's bias, computed at run time (canonicalize.cc): the convolution then runs on the
kernels it takes with its own bias (Winograd, depthwise, few outputs, 1-D). GroupNorm as PyTorch
exports it between convolutions stays channels-last (channels_last.cc).
"""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import weft


def conv_reference(x, w, b, pad, group):
    """Direct convolution, stride 1, "pad" on every side, float64: [N, C, *S] -> [N, M, *S']."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    spatial = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(pad, pad)] * spatial)
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    k = w.shape[2:]
    out_sp = [x.shape[2 + i] - k[i] + 1 for i in range(spatial)]
    y = np.zeros([n, m] + out_sp)
    mg = m // group
    for g in range(group):
        xs = x[:, g * cg:(g + 1) * cg]
        for tap in np.ndindex(*k):
            window = xs[(slice(None), slice(None)) +
                        tuple(slice(tap[i], tap[i] + out_sp[i]) for i in range(spatial))]
            wt = w[(slice(g * mg, (g + 1) * mg), slice(None)) + tap]
            y[:, g * mg:(g + 1) * mg] += np.einsum("mc,nc...->nm...", wt, window)
    return y + b.astype(np.float64).reshape([1, m] + [1] * spatial)


CASES = {  # name: (x shape, out channels, kernel, group, the Add's operand shape)
    "winograd_48x48": ([1, 64, 48, 48], 64, 3, 1, [1, 64, 1, 1]),
    "winograd_16x16": ([1, 64, 16, 16], 64, 3, 1, [1, 64, 1, 1]),
    "batch_2": ([2, 32, 20, 20], 32, 3, 1, [1, 32, 1, 1]),
    "depthwise": ([1, 32, 24, 24], 32, 3, 32, [32, 1, 1]),
    "few_outputs": ([1, 64, 32, 32], 3, 3, 1, [1, 3, 1, 1]),
    "one_d": ([1, 16, 100], 32, 5, 1, [32, 1]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_per_channel_add_after_conv(name):
    xs, m, k, group, vs = CASES[name]
    rng = np.random.default_rng(len(name))
    spatial = len(xs) - 2
    w = rng.standard_normal([m, xs[1] // group] + [k] * spatial).astype(np.float32) * 0.1
    b = rng.standard_normal(m).astype(np.float32)
    x = rng.standard_normal(xs).astype(np.float32)
    t = rng.standard_normal([1, 8]).astype(np.float32)
    proj = rng.standard_normal([m, 8]).astype(np.float32)
    pad = k // 2
    # The operand computed from an input at run time: Gemm, then a Reshape to its shape.
    nodes = [helper.make_node("Gemm", ["t", "proj"], ["e"], transB=1),
             helper.make_node("Reshape", ["e", "vshape"], ["v"]),
             helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[pad] * (2 * spatial), group=group),
             helper.make_node("Add", ["c", "v"], ["y"])]
    inits = [numpy_helper.from_array(a, n) for a, n in
             [(w, "w"), (b, "b"), (proj, "proj"), (np.array(vs, np.int64), "vshape")]]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, xs),
                     helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    got = weft.compile(model.SerializeToString(), threads=2).run({"x": x, "t": t})["y"]
    v = (t.astype(np.float64) @ proj.T.astype(np.float64)).reshape(vs)
    want = conv_reference(x, w, b, pad, group) + v
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("batch,groups,skip", [(1, 32, 0), (2, 8, 0), (1, 64, 0), (1, 32, 128), (2, 16, 32)])
def test_group_norm_between_convolutions(batch, groups, skip):
    """GroupNorm as PyTorch exports it (Reshape, InstanceNormalization, Reshape, affine) and
    SiLU between two convolutions, which channels_last keeps channels-last ([N, S, G, C/G]);
    with "skip", of the convolution's 64 channels concatenated with as many of a skip
    connection's, as a UNet's up blocks have (192 channels in 32 groups: 6 a group). Groups of
    a few channels run over whole channel rows, their statistics copied per channel
    (fusion/expand_operands.cc)."""
    c, h, w_ = 64 + skip, 12, 10
    rng = np.random.default_rng(groups + batch + skip)
    x = rng.standard_normal([batch, 16, h, w_]).astype(np.float32)
    e = rng.standard_normal([batch, skip, h, w_]).astype(np.float32)
    w1 = (rng.standard_normal([64, 16, 3, 3]) * 0.2).astype(np.float32)
    w2 = (rng.standard_normal([8, c, 1, 1]) * 0.2).astype(np.float32)
    gamma = rng.standard_normal([c, 1, 1]).astype(np.float32)
    beta = rng.standard_normal([c, 1, 1]).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a0"], pads=[1, 1, 1, 1]),
             helper.make_node("Concat", ["a0", "e"], ["a"], axis=1) if skip else
             helper.make_node("Identity", ["a0"], ["a"]),
             helper.make_node("Reshape", ["a", "grouped"], ["r"]),
             helper.make_node("InstanceNormalization", ["r", "ones", "zeros"], ["n"], epsilon=1e-5),
             helper.make_node("Reshape", ["n", "back"], ["b"]),
             helper.make_node("Mul", ["b", "gamma"], ["s"]), helper.make_node("Add", ["s", "beta"], ["t"]),
             helper.make_node("Sigmoid", ["t"], ["sig"]), helper.make_node("Mul", ["t", "sig"], ["u"]),
             helper.make_node("Conv", ["u", "w2"], ["y"])]
    inits = [numpy_helper.from_array(a, n) for a, n in
             [(w1, "w1"), (w2, "w2"), (gamma, "gamma"), (beta, "beta"),
              (np.array([0, groups, -1], np.int64), "grouped"),
              (np.array([batch, c, h, w_], np.int64), "back"),
              (np.ones(groups, np.float32), "ones"), (np.zeros(groups, np.float32), "zeros")]]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)]
    if skip:
        inputs.append(helper.make_tensor_value_info("e", TensorProto.FLOAT, e.shape))
    graph = helper.make_graph(nodes, "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    feeds = {"x": x, "e": e} if skip else {"x": x}
    got = weft.compile(model.SerializeToString(), threads=2).run(feeds)["y"]
    a = conv_reference(x, w1, np.zeros(64, np.float32), 1, 1)
    a = np.concatenate([a, e.astype(np.float64)], axis=1)
    grouped = a.reshape(batch, groups, -1)
    norm = (grouped - grouped.mean(axis=2, keepdims=True)) / np.sqrt(grouped.var(axis=2, keepdims=True) + 1e-5)
    t = norm.reshape(a.shape) * gamma + beta
    u = t / (1 + np.exp(-t))
    want = conv_reference(u, w2, np.zeros(8, np.float32), 0, 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
