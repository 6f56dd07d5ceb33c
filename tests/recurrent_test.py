"""RNN, GRU and LSTM, which the CPU runs as Weft's recurrent call (library/recurrent_call.h)
and other devices unroll over time steps (expand_recurrent; on the CPU with WEFT_ONEDNN=0),
run with `weft run` and compared (rtol 1e-4, atol 1e-5) with:
- a NumPy reading of the ONNX spec, one batch entry at a time, on the forms the backend test
  cases leave out: reverse and bidirectional with sequence_lens, layout 1 with initial
  states, clip, GRU without linear_before_reset, LSTM input_forget, Relu, empty sequences
  and batches; each form also unrolled, and over 300 steps, and, through the Python module
  when it imports, compiled once over a symbolic sequence and batch and run at three shapes;
  a wide one (whose steps run in parallel) under OMP_THREAD_LIMIT=1 (Weft then asks for one
  thread: oneDNN's sgemm, which the call's projection is, partitions its work by the threads
  asked for, and had left half of it unwritten); two models with constant weights run in
  turn at batches run on one thread and on two (the call keeps R^T packed between runs);
- PyTorch (when installed): an LSTM and a GRU exported with torch.onnx (rtol 1e-3, atol 1e-4).

Usage: recurrent_test.py WEFT_BINARY
"""
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
                       "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
FUNCTIONS = {"Sigmoid": lambda v: 1 / (1 + np.exp(-v)), "Tanh": np.tanh,
             "Relu": lambda v: np.maximum(v, 0)}


def cell(op, a, fs, x, h, c, w, r, wb, rb, p):
    """One step of one batch entry: the new (h, c)."""
    H = h.shape[0]
    clip = (lambda v: np.clip(v, -a["clip"], a["clip"])) if "clip" in a else (lambda v: v)
    f = FUNCTIONS[fs[0]]
    if op == "RNN":
        return f(clip(w @ x + r @ h + wb + rb)), c
    if op == "GRU":
        gx, gh = w @ x + wb, r @ h + rb
        z = f(clip(gx[:H] + gh[:H]))
        rr = f(clip(gx[H:2 * H] + gh[H:2 * H]))
        if a.get("linear_before_reset"):
            n = FUNCTIONS[fs[1]](clip(gx[2 * H:] + rr * gh[2 * H:]))
        else:
            n = FUNCTIONS[fs[1]](clip(gx[2 * H:] + r[2 * H:] @ (rr * h) + rb[2 * H:]))
        return (1 - z) * n + z * h, c
    g = w @ x + r @ h + wb + rb  # gates i, o, f, c
    pi, po, pf = (p[:H], p[H:2 * H], p[2 * H:]) if p is not None else (0, 0, 0)
    i = f(clip(g[:H] + pi * c))
    fg = 1 - i if a.get("input_forget") else f(clip(g[2 * H:3 * H] + pf * c))
    c = fg * c + i * FUNCTIONS[fs[1]](clip(g[3 * H:]))
    o = f(clip(g[H:2 * H] + po * c))
    return o * FUNCTIONS[fs[2]](c), c


def reference(op, a, X, W, R, B=None, lens=None, h0=None, c0=None, P=None):
    """Y, Y_h, Y_c as the ONNX spec defines them."""
    batch_major = a.get("layout", 0) == 1
    if batch_major:
        X = X.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    S, N, _ = X.shape
    D, _, H = R.shape
    acts = a.get("activations", DEFAULT_ACTIVATIONS[op] * D)
    k = len(acts) // D
    Y = np.zeros((S, D, N, H), np.float32)
    Yh = np.zeros((D, N, H), np.float32)
    Yc = np.zeros((D, N, H), np.float32)
    for d in range(D):
        reverse = a.get("direction") == "reverse" or d == 1
        wb, rb = np.split(B[d], 2) if B is not None else (0, 0)
        for n in range(N):
            h = h0[d, n] if h0 is not None else np.zeros(H, np.float32)
            c = c0[d, n] if c0 is not None else np.zeros(H, np.float32)
            length = lens[n] if lens is not None else S
            for t in (reversed(range(length)) if reverse else range(length)):
                h, c = cell(op, a, acts[d * k:(d + 1) * k], X[t, n], h, c, W[d], R[d], wb, rb,
                            None if P is None else P[d])
                Y[t, d, n] = h
            Yh[d, n], Yc[d, n] = h, c
    if batch_major:
        return Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2), Yc.transpose(1, 0, 2)
    return Y, Yh, Yc


def run_weft(weft, tmp, name, path, inputs, env=None):
    args = [weft, "run", path, "--output-dir", os.path.join(tmp, name + "_out")]
    for key, value in inputs.items():
        file = os.path.join(tmp, f"{name}_{key}.npy")
        np.save(file, value)
        args += ["--input", f"{key}={file}"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, **(env or {})))
    assert r.returncode == 0, f"{name}: {r.stderr}"
    return lambda out: np.load(os.path.join(tmp, name + "_out", out + ".npy"))


ORDER = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]


def spec_values(rng, op, attrs, seq, batch, size, hidden, with_b, lens, initial, peepholes):
    D = 2 if attrs.get("direction") == "bidirectional" else 1
    G = GATES[op]
    batch_major = attrs.get("layout", 0) == 1
    x_shape = [batch, seq, size] if batch_major else [seq, batch, size]
    state_shape = [batch, D, hidden] if batch_major else [D, batch, hidden]
    values = {"X": rng.standard_normal(x_shape), "W": rng.standard_normal([D, G * hidden, size]),
              # (Scaled so that the recurrence contracts: a wide chaotic one would amplify
              # each rounding over hundreds of steps.)
              "R": rng.standard_normal([D, G * hidden, hidden]) * min(0.5, hidden ** -0.5)}
    if with_b:
        values["B"] = rng.standard_normal([D, 2 * G * hidden]) * 0.5
    if lens is not None:
        values["sequence_lens"] = np.array(lens, np.int32)
    if initial:
        values["initial_h"] = rng.standard_normal(state_shape)
        if op == "LSTM":
            values["initial_c"] = rng.standard_normal(state_shape)
    if peepholes:
        values["P"] = rng.standard_normal([D, 3 * hidden])
    return {k: v.astype(np.float32) if v.dtype == np.float64 else v for k, v in values.items()}


def spec_model(name, op, attrs, values, hidden, symbolic=False):
    """The node over "values"' inputs; with "symbolic", the sequence and batch are T and N."""
    batch_major = attrs.get("layout", 0) == 1
    node_inputs = [k if k in values else "" for k in ORDER]
    while node_inputs[-1] == "":
        node_inputs.pop()
    outputs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, node_inputs, outputs, hidden_size=hidden, **attrs)
    f32 = TensorProto.FLOAT

    def dims(k, v):
        d = list(v.shape)
        if symbolic and k == "X":
            d[0], d[1] = ("N", "T") if batch_major else ("T", "N")
        elif symbolic and k == "sequence_lens":
            d[0] = "N"
        elif symbolic and k in ("initial_h", "initial_c"):
            d[0 if batch_major else 1] = "N"
        return d

    def info(k, v):
        return helper.make_tensor_value_info(k, TensorProto.INT32 if v.dtype == np.int32 else f32,
                                             dims(k, v))
    graph = helper.make_graph([node], name, [info(k, values[k]) for k in ORDER if k in values],
                              [helper.make_tensor_value_info(o, f32, [None] * r)
                               for o, r in zip(outputs, [4, 3, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model, outputs


def expected(op, attrs, values):
    return reference(op, attrs, values["X"], values["W"], values["R"], values.get("B"),
                     values.get("sequence_lens"), values.get("initial_h"),
                     values.get("initial_c"), values.get("P"))


UNROLLED = {"WEFT_ONEDNN": "0"}  # no library calls on the CPU: the recurrence unrolls


def check_spec(weft, tmp, name, op, attrs, seq=4, batch=3, size=2, hidden=3, with_b=True,
               lens=None, initial=False, peepholes=False, module=None, envs=({}, UNROLLED)):
    """The form at "seq" steps (the call, then unrolled: "envs"), at 300 (sequence_lens
    scaled), and, with the Python module, once over symbols at three shapes."""
    rng = np.random.default_rng(len(name))
    forms = [(seq, lens, env) for env in envs]
    if seq > 0:
        forms.append((300, None if lens is None else [n * (300 // seq) for n in lens], {}))
    for steps, lengths, env in forms:
        values = spec_values(rng, op, attrs, steps, batch, size, hidden, with_b, lengths,
                             initial, peepholes)
        model, outputs = spec_model(name, op, attrs, values, hidden)
        path = os.path.join(tmp, f"{name}_{steps}.onnx")
        onnx.save(model, path)
        got = run_weft(weft, tmp, f"{name}_{steps}", path, values, env)
        for out, want in zip(outputs, expected(op, attrs, values)):
            np.testing.assert_allclose(got(out), want, rtol=1e-4, atol=1e-5,
                                       err_msg=f"{name} over {steps} steps {env}: {out}")
    if module is not None and seq > 0 and batch > 0:
        shapes = [(seq, batch, lens), (7, 2, None if lens is None else [7, 3]), (1, 4, None)]
        compiled = None
        for steps, entries, lengths in shapes:
            values = spec_values(rng, op, attrs, steps, entries, size, hidden, with_b,
                                 lengths if lens is not None else None, initial, peepholes)
            if lens is not None and lengths is None:
                values["sequence_lens"] = np.full(entries, steps, np.int32)
            model, outputs = spec_model(name, op, attrs, values, hidden, symbolic=True)
            if compiled is None:
                compiled = module.compile(model.SerializeToString(), dynamic_shapes=True)
            got = compiled.run(values)
            for out, want in zip(outputs, expected(op, attrs, values)):
                np.testing.assert_allclose(got[out], want, rtol=1e-4, atol=1e-5,
                                           err_msg=f"{name} over symbols at {steps}x{entries}: {out}")
        assert compiled.compiled_variants == 1, f"{name}: {compiled.compiled_variants} compiles"
    print(f"ok {name}")


def check_constant_weights_over_runs(module):
    """Two LSTMs with constant weights (their R^T's panels kept between runs of a call), run in
    turn at batches run on one thread and on two, each run against the spec's reading."""
    rng = np.random.default_rng(11)
    compiled, weights = [], []
    for name in ("lstm_a", "lstm_b"):
        values = spec_values(rng, "LSTM", {}, 3, 2, 8, 96, True, None, False, False)
        model, _ = spec_model(name, "LSTM", {}, {"X": values["X"]}, 96, symbolic=True)
        node = model.graph.node[0]
        node.input[:] = ["X", "W", "R", "B"]
        model.graph.initializer.extend(
            numpy_helper.from_array(values[k].astype(np.float32), k) for k in ("W", "R", "B"))
        compiled.append(module.compile(model.SerializeToString(), dynamic_shapes=True))
        weights.append(values)
    for which, batch in ((0, 1), (0, 16), (1, 16), (0, 16), (1, 1), (0, 1), (1, 16)):
        w = weights[which]
        x = rng.standard_normal((5, batch, 8)).astype(np.float32)
        got = compiled[which].run({"X": x})
        want = reference("LSTM", {}, x, w["W"], w["R"], w["B"])
        for out, expect in zip(("Y", "Y_h", "Y_c"), want):
            np.testing.assert_allclose(got[out], expect, rtol=1e-4, atol=1e-5,
                                       err_msg=f"model {which}, batch {batch}: {out}")
    print("ok constant_weights_over_runs")


def check_transposed_states(module):
    """Y's [T, 1, N, H] transposed to [T, N, 1, H], as torch.onnx's exports of an LSTM write it
    (canonicalize makes it a Reshape), over symbols at two shapes."""
    rng = np.random.default_rng(5)
    compiled = None
    for steps, batch in ((5, 3), (2, 7)):
        values = spec_values(rng, "LSTM", {}, steps, batch, 8, 16, True, None, False, False)
        if compiled is None:
            model, _ = spec_model("transposed", "LSTM", {}, values, 16, symbolic=True)
            model.graph.node.append(helper.make_node("Transpose", ["Y"], ["Yt"],
                                                     perm=[0, 2, 1, 3]))
            model.graph.output.append(helper.make_tensor_value_info("Yt", TensorProto.FLOAT,
                                                                    ["T", "N", 1, 16]))
            compiled = module.compile(model.SerializeToString(), dynamic_shapes=True)
        got = compiled.run(values)
        want = expected("LSTM", {}, values)[0].transpose(0, 2, 1, 3)
        np.testing.assert_allclose(got["Yt"], want, rtol=1e-4, atol=1e-5,
                                   err_msg=f"transposed states at {steps}x{batch}")
    print("ok transposed_states")


def check_torch(weft, tmp):
    try:
        import torch
    except ImportError:
        print("skip PyTorch comparisons: PyTorch is not installed")
        return
    torch.manual_seed(0)
    for name, module in [("torch_lstm", torch.nn.LSTM(5, 6, batch_first=True, bidirectional=True)),
                         ("torch_gru", torch.nn.GRU(5, 6, num_layers=2))]:
        x = torch.randn(2, 7, 5)
        path = os.path.join(tmp, name + ".onnx")
        with warnings.catch_warnings():  # the exporter's notes on batch sizes and shapes
            warnings.simplefilter("ignore")
            torch.onnx.export(module, (x,), path, opset_version=14, input_names=["x"],
                              output_names=["y", "h"])
        got = run_weft(weft, tmp, name, path, {"x": x.numpy()})
        with torch.no_grad():
            want = module(x)
        np.testing.assert_allclose(got("y"), want[0].numpy(), rtol=1e-3, atol=1e-4, err_msg=name)
        print(f"ok {name}")


def main():
    weft = sys.argv[1]
    try:
        import weft as module
    except ImportError:
        module = None
        print("skip the checks over symbols: the Python module does not import")
    with tempfile.TemporaryDirectory() as tmp:
        check_spec(weft, tmp, "rnn_bidirectional_lens", "RNN", {"direction": "bidirectional"},
                   lens=[4, 2, 1], initial=True, module=module)
        check_spec(weft, tmp, "rnn_reverse_relu_batchwise", "RNN",
                   {"direction": "reverse", "layout": 1, "activations": ["Relu"]}, initial=True,
                   with_b=False, module=module)
        check_spec(weft, tmp, "gru_reset_then_linear_reverse_lens", "GRU",
                   {"direction": "reverse"}, lens=[3, 4, 2], module=module)
        check_spec(weft, tmp, "gru_linear_before_reset_bidirectional_clip", "GRU",
                   {"direction": "bidirectional", "linear_before_reset": 1, "clip": 0.5},
                   initial=True, module=module)
        check_spec(weft, tmp, "lstm_bidirectional_lens_peepholes_batchwise", "LSTM",
                   {"direction": "bidirectional", "layout": 1}, lens=[2, 4, 3], initial=True,
                   peepholes=True, module=module)
        check_spec(weft, tmp, "lstm_input_forget_clip", "LSTM", {"input_forget": 1, "clip": 1.0},
                   initial=True, module=module)
        # Empty sequences and batches: the states are the initial ones (ONNX Runtime 1.32
        # gives zeros, or aborts), as for an entry whose sequence_lens is 0 ("an empty
        # sequence is not supported" before; an empty batch's initial_h was read as [1, H]).
        check_spec(weft, tmp, "lstm_empty_sequence_bidirectional", "LSTM",
                   {"direction": "bidirectional"}, seq=0, initial=True, module=module)
        check_spec(weft, tmp, "gru_empty_sequence_batchwise", "GRU", {"layout": 1}, seq=0,
                   initial=True, module=module)
        check_spec(weft, tmp, "rnn_empty_batch_reverse", "RNN", {"direction": "reverse"},
                   batch=0, initial=True, module=module)
        check_spec(weft, tmp, "lstm_empty_batch_batchwise", "LSTM", {"layout": 1}, batch=0,
                   initial=True, module=module)
        check_spec(weft, tmp, "gru_an_entry_of_length_0", "GRU", {"direction": "bidirectional"},
                   lens=[4, 0, 2], initial=True, module=module)
        # Wide enough that the call's steps run in parallel, each thread its share of the
        # hidden units; then under a thread limit of one.
        check_spec(weft, tmp, "lstm_wide_batch", "LSTM", {}, batch=64, size=8, hidden=128,
                   initial=True, module=module)
        # Hidden units not a multiple of 16 (the threads' shares and the gates' padded
        # columns), X's rows taken per entry (reverse, layout 1, lengths) and as X's own.
        check_spec(weft, tmp, "gru_wide_odd_hidden_bidirectional_batchwise_lens", "GRU",
                   {"direction": "bidirectional", "layout": 1}, seq=5, batch=16, size=24,
                   hidden=200, lens=[5] * 8 + [3] * 8, initial=True, module=module)
        # At a batch of 4 or more, the LSTM's and the RNN's steps add X W^T in their product;
        # below it they take X W^T from a chunk's projection (here in parallel: 2 threads).
        check_spec(weft, tmp, "lstm_wide_chunked_batch_3", "LSTM", {}, seq=11, batch=3, size=20,
                   hidden=160, initial=True, module=module)
        check_spec(weft, tmp, "lstm_fused_batch_5_reverse", "LSTM", {"direction": "reverse"},
                   seq=6, batch=5, size=40, hidden=100, initial=True, module=module)
        check_spec(weft, tmp, "lstm_wide_odd_hidden_peepholes", "LSTM", {}, seq=5, batch=12,
                   size=40, hidden=100, initial=True, peepholes=True, module=module)
        check_spec(weft, tmp, "lstm_wide_bidirectional_batchwise_lens", "LSTM",
                   {"direction": "bidirectional", "layout": 1}, seq=5, batch=10, size=12,
                   hidden=120, lens=[5, 2, 0, 4, 5, 1, 3, 5, 5, 2], module=module)
        check_spec(weft, tmp, "rnn_wide_reverse", "RNN", {"direction": "reverse"}, seq=5,
                   batch=8, size=20, hidden=300, initial=True, module=module)
        # At a batch of 16 or more, the LSTM's and the RNN's threads take their own entries
        # ("apart"): halves of 9, X's rows per entry, lengths and peepholes.
        check_spec(weft, tmp, "lstm_apart_bidirectional_batchwise_lens_peepholes", "LSTM",
                   {"direction": "bidirectional", "layout": 1}, seq=4, batch=18, size=12,
                   hidden=100, lens=[4, 1, 0, 3] * 4 + [2, 4], initial=True, peepholes=True,
                   module=module)
        check_spec(weft, tmp, "rnn_apart_reverse", "RNN", {"direction": "reverse"}, seq=5,
                   batch=17, size=20, hidden=150, initial=True, module=module)
        check_spec(weft, tmp, "gru_wide_thread_limit_1", "GRU", {}, seq=9, batch=16, size=8,
                   hidden=200, lens=[9] * 8 + [5] * 8, initial=True,
                   envs=({"OMP_THREAD_LIMIT": "1"},))
        if module is not None:
            check_constant_weights_over_runs(module)
            check_transposed_states(module)
        check_torch(weft, tmp)


if __name__ == "__main__":
    main()
