"""Models as today's tools write them, through the CLI: IR 10-14, ai.onnx opsets 18-28,
model-local functions, the fused operators of opset 20-24 (Gelu, RMSNormalization,
GroupNormalization, Attention with a KV cache and grouped heads, RotaryEmbedding, Swish), and
TfIdfVectorizer and ai.onnx.ml's TreeEnsemble.
Each is built with the pinned onnx (1.23.2, .venv) and compared with onnx's reference
implementation (onnx.reference.ReferenceEvaluator) in float64 where it matters.

Usage: .venv/bin/python modern_onnx_test.py WEFT
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper
from onnx.reference import ReferenceEvaluator

WEFT = sys.argv[1] if len(sys.argv) > 1 else "build/tools/weft/weft"
RTOL, ATOL = 1e-4, 1e-5
failures = []


def run_weft(model, feeds, tmp):
    path = os.path.join(tmp, "model.onnx")
    onnx.save(model, path)
    args = [WEFT, "run", path, "--output-dir", os.path.join(tmp, "out")]
    for name, value in feeds.items():
        np.save(os.path.join(tmp, name + ".npy"), value)
        args += ["--input", f"{name}={os.path.join(tmp, name + '.npy')}"]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip())
    return {o.name: np.load(os.path.join(tmp, "out", o.name + ".npy")) for o in model.graph.output}


def check(name, model, feeds, reference=None):
    if reference is None:
        reference = ReferenceEvaluator(model).run(None, feeds)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            ours = run_weft(model, feeds, tmp)
        except RuntimeError as e:
            failures.append(f"{name}: {e}")
            print(f"FAIL {name}: {e}")
            return
    for out, want in zip(model.graph.output, reference):
        got = ours[out.name]
        if got.shape != want.shape or not np.allclose(got, want, rtol=RTOL, atol=ATOL):
            err = np.abs(got.astype(np.float64) - want).max() if got.shape == want.shape else "shape"
            failures.append(f"{name}: output {out.name} differs (max error {err})")
            print(f"FAIL {name}: output {out.name} differs (max error {err})")
            return
    print(f"ok {name} (IR {model.ir_version}, opset {model.opset_import[0].version})")


def model_of(nodes, inputs, outputs, opset, inits=(), functions=(), ir=None):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(f.domain, 1) for f in functions]
    model = helper.make_model(graph, opset_imports=imports, functions=list(functions))
    if ir:
        model.ir_version = ir
    onnx.checker.check_model(model)
    return model


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


rng = np.random.default_rng(0)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def transformer_block(opset):
    """x [B, S, 64]: RMSNorm -> Q, K, V projections -> RotaryEmbedding -> Attention (causal,
    4 query heads over 2 KV heads, a KV cache) -> output projection + residual -> RMSNorm ->
    Gelu MLP + residual. The present key and value are outputs too."""
    B, S, P, H, KV, D = 2, 5, 3, 4, 2, 16
    E = H * D
    w = {n: helper.make_tensor(n, TensorProto.FLOAT, a.shape, a.flatten())
         for n, a in {"wq": rand(E, E) * 0.1, "wk": rand(E, KV * D) * 0.1,
                      "wv": rand(E, KV * D) * 0.1, "wo": rand(E, E) * 0.1,
                      "w1": rand(E, 2 * E) * 0.1, "w2": rand(2 * E, E) * 0.1,
                      "g1": 1 + 0.1 * rand(E), "g2": 1 + 0.1 * rand(E)}.items()}
    positions = np.arange(P, P + S)[None, :].repeat(B, 0).astype(np.int64)
    angles = np.arange(P + S)[:, None] / (10000 ** (np.arange(D // 2) / (D // 2)))
    caches = [helper.make_tensor("cos", TensorProto.FLOAT, angles.shape, np.cos(angles).flatten()),
              helper.make_tensor("sin", TensorProto.FLOAT, angles.shape, np.sin(angles).flatten()),
              helper.make_tensor("pos", TensorProto.INT64, positions.shape, positions.flatten())]
    nodes = [
        helper.make_node("RMSNormalization", ["x", "g1"], ["n1"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["n1", "wq"], ["q"]),
        helper.make_node("MatMul", ["n1", "wk"], ["k"]),
        helper.make_node("MatMul", ["n1", "wv"], ["v"]),
        helper.make_node("RotaryEmbedding", ["q", "cos", "sin", "pos"], ["qr"], num_heads=H),
        helper.make_node("RotaryEmbedding", ["k", "cos", "sin", "pos"], ["kr"], num_heads=KV),
        helper.make_node("Attention", ["qr", "kr", "v", "", "past_k", "past_v"],
                         ["a", "present_k", "present_v"], is_causal=1, q_num_heads=H,
                         kv_num_heads=KV),
        helper.make_node("MatMul", ["a", "wo"], ["o"]),
        helper.make_node("Add", ["x", "o"], ["h"]),
        helper.make_node("RMSNormalization", ["h", "g2"], ["n2"], axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["n2", "w1"], ["up"]),
        helper.make_node("Gelu", ["up"], ["act"], approximate="tanh"),
        helper.make_node("MatMul", ["act", "w2"], ["down"]),
        helper.make_node("Add", ["h", "down"], ["y"]),
    ]
    model = model_of(nodes, [f32("x", [B, S, E]), f32("past_k", [B, KV, P, D]),
                             f32("past_v", [B, KV, P, D])],
                     [f32("y", [B, S, E]), f32("present_k", [B, KV, P + S, D]),
                      f32("present_v", [B, KV, P + S, D])],
                     opset, list(w.values()) + caches)
    return model, {"x": rand(B, S, E), "past_k": rand(B, KV, P, D), "past_v": rand(B, KV, P, D)}


def conv_block(opset):
    """A ConvNeXt-style stage: Conv -> GroupNormalization (per-channel scale, opset 21) ->
    Swish -> depthwise Conv -> Mish, with Split's num_outputs (18) and Pad's axes (18)."""
    C = 8
    inits = [helper.make_tensor("w", TensorProto.FLOAT, [C, 4, 3, 3], (rand(C, 4, 3, 3) * 0.2).flatten()),
             helper.make_tensor("dw", TensorProto.FLOAT, [C, 1, 3, 3], (rand(C, 1, 3, 3) * 0.2).flatten()),
             helper.make_tensor("scale", TensorProto.FLOAT, [C], (1 + 0.1 * rand(C)).flatten()),
             helper.make_tensor("bias", TensorProto.FLOAT, [C], (0.1 * rand(C)).flatten()),
             helper.make_tensor("pads", TensorProto.INT64, [4], [1, 1, 1, 1]),
             helper.make_tensor("axes", TensorProto.INT64, [2], [2, 3])]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("GroupNormalization", ["c", "scale", "bias"], ["g"], num_groups=4),
        helper.make_node("Swish", ["g"], ["s"], alpha=1.0) if opset >= 24 else
        helper.make_node("Sigmoid", ["g"], ["s"]),
        helper.make_node("Pad", ["s", "pads", "", "axes"], ["p"]),
        helper.make_node("Conv", ["p", "dw"], ["d"], group=C),
        helper.make_node("Mish", ["d"], ["m"]),
        helper.make_node("Split", ["m"], ["y0", "y1", "y2"], axis=1, num_outputs=3),
    ]
    model = model_of(nodes, [f32("x", [2, 4, 10, 10])],
                     [f32("y0", [2, 3, 10, 10]), f32("y1", [2, 3, 10, 10]), f32("y2", [2, 2, 10, 10])],
                     opset, inits)
    return model, {"x": rand(2, 4, 10, 10)}


def with_function(opset):
    """A model-local function with an attribute default (IR 10), called twice."""
    constant = helper.make_node("Constant", [], ["s"])
    constant.attribute.append(
        helper.make_attribute_ref("value_float", AttributeProto.FLOAT, ref_attr_name="alpha"))
    f = helper.make_function(
        "local", "ScaledTanh", ["x"], ["y"],
        [constant, helper.make_node("Mul", ["x", "s"], ["xs"]),
         helper.make_node("Tanh", ["xs"], ["y"])],
        [helper.make_opsetid("", opset)], attribute_protos=[helper.make_attribute("alpha", 2.0)])
    nodes = [helper.make_node("ScaledTanh", ["x"], ["a"], domain="local", alpha=0.5),
             helper.make_node("ScaledTanh", ["a"], ["y"], domain="local")]
    return model_of(nodes, [f32("x", [3, 7])], [f32("y", [3, 7])], opset, functions=[f]), \
        {"x": rand(3, 7)}


def branches_that_do_not_fit(opset):
    """Silero VAD's pattern: an If on an input's value (a sample rate) whose untaken branch
    does not fit the run's shapes (a Squeeze of an axis of extent 4), with an If nested in the
    other branch on a shape. Only the taken branch may be checked against the shapes."""
    i64 = TensorProto.INT64
    const = lambda name, vals: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=helper.make_tensor(name, i64, [len(vals)], vals))
    then_branch = helper.make_graph(
        [const("ax1", [1]), helper.make_node("Squeeze", ["x", "ax1"], ["t"])], "then", [],
        [f32("t", ["N"])])
    inner_then = helper.make_graph(
        [const("ax2", [1]), helper.make_node("Squeeze", ["x", "ax2"], ["it"])], "inner_then", [],
        [f32("it", ["N"])])
    inner_else = helper.make_graph(
        [const("ax3", [1]), helper.make_node("ReduceMax", ["x", "ax3"], ["ie"], keepdims=0)],
        "inner_else", [], [f32("ie", ["N"])])
    else_branch = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["shape"], start=1, end=2),
         const("one", [1]), helper.make_node("Equal", ["shape", "one"], ["is_one"]),
         helper.make_node("Squeeze", ["is_one"], ["is_one_scalar"]),
         helper.make_node("If", ["is_one_scalar"], ["inner"], then_branch=inner_then,
                          else_branch=inner_else),
         const("ax4", [1]), helper.make_node("ReduceSum", ["x", "ax4"], ["sum"], keepdims=0),
         helper.make_node("Add", ["inner", "sum"], ["e"])], "else", [], [f32("e", ["N"])])
    nodes = [helper.make_node("Constant", [], ["rate"], value=helper.make_tensor("rate", i64, [], [16000])),
             helper.make_node("Equal", ["sr", "rate"], ["cond"]),
             helper.make_node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch)]
    return model_of(nodes, [f32("x", ["N", "T"]), helper.make_tensor_value_info("sr", i64, [])],
                    [f32("y", ["N"])], opset)


def ml_model(node, x_type, x_shape, y_type, y_shape, opset=21):
    """One node of ai.onnx or ai.onnx.ml (opset 5) on the input X."""
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", x_type, x_shape)],
                              [helper.make_tensor_value_info("Y", y_type, y_shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                    helper.make_opsetid("ai.onnx.ml", 5)])
    onnx.checker.check_model(model)
    return model


def tf_idf(mode, weights=None, skips=1, counts=(0, 3), min_n=1, max_n=2):
    """Unigrams [2, 3, 7] and bigrams (2, 3), (3, 2), (7, 7); the last two share column 4."""
    attrs = dict(mode=mode, min_gram_length=min_n, max_gram_length=max_n, max_skip_count=skips,
                 ngram_counts=list(counts), ngram_indexes=[0, 1, 2, 3, 4, 4],
                 pool_int64s=[2, 3, 7, 2, 3, 3, 2, 7, 7])
    if weights:
        attrs["weights"] = weights
    return helper.make_node("TfIdfVectorizer", ["X"], ["Y"], **attrs)


def tree_ensemble(aggregate, dtype):
    """Three trees over 3 features and 3 targets with every node mode: tree 0 is LEQ, then LT
    (NaN to the true branch) or MEMBER {1, 4}; tree 1 is GTE, then GT, EQ or NEQ; tree 2 a
    stump (NaN to the true branch). Weights are exact in f16."""
    nodes = [  # mode, feature, split, true (leaf?, id), false (leaf?, id), missing tracks true
        (0, 0, 0.5, (0, 1), (0, 2), 0), (1, 1, 2.0, (1, 0), (1, 1), 1),
        (6, 2, np.nan, (1, 2), (1, 3), 0),
        (2, 1, 1.0, (0, 4), (0, 5), 0), (3, 0, -1.0, (1, 4), (0, 6), 0),
        (4, 2, 4.0, (1, 5), (1, 6), 0), (5, 0, 2.0, (1, 7), (1, 8), 0),
        (1, 2, 3.0, (1, 9), (1, 10), 1)]
    leaves = [(0, 1.5), (1, -2.0), (2, 0.25), (0, 4.0), (1, 8.5), (2, -0.75), (0, 3.0),
              (1, 6.0), (2, 2.5), (0, -1.25), (2, 5.0)]
    tensor = lambda values, t: onnx.numpy_helper.from_array(np.array(values, t))  # noqa: E731
    return helper.make_node(
        "TreeEnsemble", ["X"], ["Y"], domain="ai.onnx.ml", aggregate_function=aggregate,
        n_targets=3, tree_roots=[0, 3, 7], nodes_modes=tensor([n[0] for n in nodes], np.uint8),
        nodes_featureids=[n[1] for n in nodes], nodes_splits=tensor([n[2] for n in nodes], dtype),
        nodes_trueleafs=[n[3][0] for n in nodes], nodes_truenodeids=[n[3][1] for n in nodes],
        nodes_falseleafs=[n[4][0] for n in nodes], nodes_falsenodeids=[n[4][1] for n in nodes],
        nodes_missing_value_tracks_true=[n[5] for n in nodes],
        membership_values=tensor([1.0, 4.0, np.nan], np.float32),
        leaf_targetids=[t for t, _ in leaves], leaf_weights=tensor([w for _, w in leaves], dtype))


tree_rows = np.array([[0, 1, 4], [0, 3, 2], [1, 1, 4], [-2, 0, 4], [3, 0, 1], [np.nan, np.nan, 1],
                      [0, np.nan, np.nan], [1, 5, np.nan]])
onnx_types = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE,
              np.float16: TensorProto.FLOAT16}
for aggregate, dtype in ((1, np.float32), (0, np.float64), (2, np.float32), (3, np.float64),
                         (1, np.float16)):
    name = ["average", "sum", "min", "max"][aggregate]
    model = ml_model(tree_ensemble(aggregate, dtype), onnx_types[dtype], [8, 3], onnx_types[dtype],
                     [8, 3])
    check(f"tree_ensemble_{name}_{np.dtype(dtype).name}", model, {"X": tree_rows.astype(dtype)})

tokens = np.array([[2, 3, 2, 7, 7, 3], [3, 2, 3, 3, 2, 9]])
for name, node, feeds in (
        ("tfidf_idf_weighted_int32", tf_idf("IDF", [0.5, 1, 2, 4, 8]), tokens.astype(np.int32)),
        ("tfidf_tfidf_skips_beyond_the_row", tf_idf("TFIDF", [0.5, 1, 2, 4, 8], skips=9),
         tokens),
        ("tfidf_empty_unigram_level", tf_idf("TF", counts=(0, 0), min_n=2), tokens[0]),
        ("tfidf_bigrams_only_skip2", tf_idf("TF", skips=2, min_n=2), tokens),
        # Rows of no tokens: zeros (a Reshape to [1, 0] had read its 0 as "the input's dim").
        ("tfidf_empty_row", tf_idf("TF"), tokens[0, :0]),
        ("tfidf_empty_rows", tf_idf("TFIDF", [0.5, 1, 2, 4, 8]), tokens[:, :0])):
    x_type = TensorProto.INT32 if feeds.dtype == np.int32 else TensorProto.INT64
    y_shape = list(feeds.shape[:-1]) + [5]
    check(name, ml_model(node, x_type, list(feeds.shape), TensorProto.FLOAT, y_shape, opset=9),
          {"X": feeds})

# post_transform is refused by name (the reference ignores it).
with tempfile.TemporaryDirectory() as tmp:
    model = ml_model(tree_ensemble(1, np.float32), TensorProto.FLOAT, [8, 3], TensorProto.FLOAT,
                     [8, 3])
    model.graph.node[0].attribute.append(helper.make_attribute("post_transform", 1))
    path = os.path.join(tmp, "softmax.onnx")
    onnx.save(model, path)
    done = subprocess.run([WEFT, "inspect", path], capture_output=True, text=True)
    if done.returncode != 1 or "post_transform SOFTMAX is not supported (only NONE)" not in done.stderr:
        failures.append(f"post_transform: exit {done.returncode}: {done.stderr.strip()}")
        print("FAIL", failures[-1])
    else:
        print("ok post_transform refused:", done.stderr.strip())

for sr, shape in ((8000, (3, 4)), (16000, (3, 1)), (8000, (2, 1))):
    check(f"if_branches_that_do_not_fit_sr{sr}_{shape[0]}x{shape[1]}", branches_that_do_not_fit(18),
          {"x": rand(*shape), "sr": np.array(sr, np.int64)})

for opset in (23, 24):
    model, feeds = transformer_block(opset)
    check(f"transformer_block_opset{opset}", model, feeds)
for opset in (21, 24):
    model, feeds = conv_block(opset)
    check(f"conv_block_opset{opset}", model, feeds)
model, feeds = with_function(23)
# onnx's evaluator does not apply a function's attribute defaults: the expected values by hand.
check("local_function_opset23", model, feeds, [np.tanh(2.0 * np.tanh(0.5 * feeds["x"]))])

# A model newer than Weft knows: one line naming both versions, exit status 1.
model, feeds = with_function(23)
model.opset_import[0].version = 29
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "new.onnx")
    onnx.save(model, path)
    done = subprocess.run([WEFT, "inspect", path], capture_output=True, text=True)
    lines = done.stderr.strip().splitlines()
    if done.returncode != 1 or len(lines) != 1 or "opset 29 is newer than Weft knows" not in lines[0]:
        failures.append(f"newer opset: exit {done.returncode}: {done.stderr.strip()}")
        print("FAIL", failures[-1])
    else:
        print("ok newer opset refused:", lines[0])

print(f"{19 - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
