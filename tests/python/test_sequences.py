"""Sequence values, resolved at import into their elements' tensors (docs/onnx-versions.md,
"Sequences"): the sequence ops between tensor inputs and outputs, at opsets 11 and 13 (their
axes attributes, then inputs), against numpy's list operations; and the clear error where a
sequence's elements are not known at import."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import weft


def compile_model(nodes, inputs, outputs, initializers=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    return weft.compile(model.SerializeToString())


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def i64(name, values):
    return helper.make_tensor(name, TensorProto.INT64, [] if np.ndim(values) == 0 else [len(values)],
                              np.atleast_1d(values).tolist())


rng = np.random.default_rng(7)


def test_build_insert_erase_read():
    """[x, y, z] -> insert w at 1 -> erase the last -> insert x at the back: [x, w, y, x];
    each element read at positions counted from both ends, and the length."""
    c = compile_model(
        [helper.make_node("SequenceConstruct", ["x", "y", "z"], ["s0"]),
         helper.make_node("SequenceInsert", ["s0", "w", "one"], ["s1"]),
         helper.make_node("SequenceErase", ["s1"], ["s2"]),
         helper.make_node("SequenceInsert", ["s2", "x"], ["s3"]),
         helper.make_node("SequenceAt", ["s3", "one"], ["a"]),
         helper.make_node("SequenceAt", ["s3", "minus_two"], ["b"]),
         helper.make_node("SequenceLength", ["s3"], ["n"]),
         helper.make_node("Add", ["a", "b"], ["ab"])],
        [f32(v, [2, 3]) for v in "xyzw"],
        [f32("ab", [2, 3]), helper.make_tensor_value_info("n", TensorProto.INT64, [])],
        [i64("one", 1), i64("minus_two", -2)])
    feed = {v: rng.standard_normal((2, 3)).astype(np.float32) for v in "xyzw"}
    got = c.run(feed)
    seq = [feed["x"], feed["w"], feed["y"], feed["x"]]
    np.testing.assert_array_equal(got["ab"], seq[1] + seq[-2])
    assert got["n"] == len(seq)


@pytest.mark.parametrize("opset", [11, 13])
def test_split_and_concat(opset):
    """Split along dim 1 into its columns without that dim (keepdims 0) and stacked again along
    a new last axis: a transpose; chunks of 2 of a dim of 5 (2, 2, 1), the last one read, and
    all of them joined again."""
    c = compile_model(
        [helper.make_node("SplitToSequence", ["x"], ["cols"], axis=1, keepdims=0),
         helper.make_node("ConcatFromSequence", ["cols"], ["t"], axis=-1, new_axis=1),
         helper.make_node("SplitToSequence", ["y", "two"], ["chunks"], axis=-1),
         helper.make_node("SequenceAt", ["chunks", "minus_one"], ["last"]),
         helper.make_node("ConcatFromSequence", ["chunks"], ["joined"], axis=1)],
        [f32("x", [2, 3, 4]), f32("y", [3, 5])],
        [f32("t", [2, 4, 3]), f32("last", [3, 1]), f32("joined", [3, 5])],
        [i64("two", 2), i64("minus_one", -1)], opset=opset)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    y = rng.standard_normal((3, 5)).astype(np.float32)
    got = c.run({"x": x, "y": y})
    np.testing.assert_array_equal(got["t"], x.transpose(0, 2, 1))
    np.testing.assert_array_equal(got["last"], y[:, 4:])
    np.testing.assert_array_equal(got["joined"], y)


@pytest.mark.parametrize("opset", [12, 13])
def test_split_sizes_at_run_time(opset):
    """A split given at run time (3 sizes) over a dim of any extent: each piece a data-dependent
    slice, read back and concatenated in another order."""
    c = compile_model(
        [helper.make_node("SplitToSequence", ["x", "sizes"], ["parts"]),
         helper.make_node("SequenceAt", ["parts", "one"], ["middle"]),
         helper.make_node("SequenceErase", ["parts", "zero"], ["rest"]),
         helper.make_node("SequenceInsert", ["rest", "middle"], ["again"]),
         helper.make_node("ConcatFromSequence", ["again"], ["y"], axis=0)],
        [f32("x", ["n", 2]), helper.make_tensor_value_info("sizes", TensorProto.INT32, [3])],
        [f32("y", [None, 2])],
        [i64("one", 1), i64("zero", 0)], opset=opset)
    for sizes in ([1, 2, 3], [4, 0, 1]):
        x = rng.standard_normal((sum(sizes), 2)).astype(np.float32)
        ends = np.cumsum(sizes)
        parts = [x[e - s:e] for s, e in zip(sizes, ends)]
        got = c.run({"x": x, "sizes": np.array(sizes, np.int32)})
        np.testing.assert_array_equal(got["y"], np.concatenate(parts[1:] + [parts[1]], axis=0))


def test_elements_unknown_at_import():
    """A position given at run time, and a sequence as the graph's output: each one message."""
    with pytest.raises(weft.WeftError, match=r"\(SequenceAt, opset 13\): position 'p' is not a "
                                             r"constant"):
        compile_model(
            [helper.make_node("SequenceConstruct", ["x", "x"], ["s"]),
             helper.make_node("SequenceAt", ["s", "p"], ["y"])],
            [f32("x", [2]), helper.make_tensor_value_info("p", TensorProto.INT64, [])],
            [f32("y", [2])])
    seq_out = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, [2])
    with pytest.raises(weft.WeftError, match=r"graph output 's' is a sequence"):
        compile_model([helper.make_node("SequenceConstruct", ["x", "x"], ["s"])],
                      [f32("x", [2])], [seq_out])
    with pytest.raises(weft.WeftError, match=r"dim 0 of 'x' is not static"):
        compile_model(
            [helper.make_node("SplitToSequence", ["x"], ["s"]),
             helper.make_node("SequenceLength", ["s"], ["n"])],
            [f32("x", ["n"])], [helper.make_tensor_value_info("n", TensorProto.INT64, [])])


def append_loop(extra_body_nodes=(), start="empty"):
    """for i in range(len(x)): seq.append(x[i] * 2 + i), as TorchScript exports a list filled in
    a loop: an empty sequence carried through a Loop whose body appends to it."""
    body = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["row"], axis=0),
         helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["row", "two_f"], ["twice"]),
         helper.make_node("Add", ["twice", "fi"], ["elem"]),
         helper.make_node("SequenceInsert", ["seq_in", "elem"], ["seq_out"]),
         helper.make_node("Identity", ["cond"], ["cond_out"]), *extra_body_nodes],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("seq_in", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("seq_out", TensorProto.FLOAT, None)],
        [helper.make_tensor("two_f", TensorProto.FLOAT, [], [2.0])])
    first = (helper.make_node("SequenceEmpty", [], ["s0"], dtype=TensorProto.FLOAT) if start == "empty"
             else helper.make_node("SequenceConstruct", ["x"], ["s0"]))
    return [first,
            helper.make_node("Shape", ["x"], ["shape"]),
            helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
            helper.make_node("Loop", ["n", "true", "s0"], ["seq"], body=body)]


def test_list_filled_in_a_loop():
    """The loop's sequence, a scan output: stacked along dim 1, concatenated along dim 0, its
    last element and its length, at several trip counts."""
    c = compile_model(
        append_loop() + [
            helper.make_node("ConcatFromSequence", ["seq"], ["stacked"], axis=1, new_axis=1),
            helper.make_node("ConcatFromSequence", ["seq"], ["joined"], axis=0),
            helper.make_node("SequenceAt", ["seq", "minus_one"], ["last"]),
            helper.make_node("SequenceLength", ["seq"], ["count"])],
        [f32("x", ["n", 3])],
        [f32("stacked", [3, None]), f32("joined", [None]), f32("last", [3]),
         helper.make_tensor_value_info("count", TensorProto.INT64, [])],
        [i64("zero", 0), i64("minus_one", -1),
         helper.make_tensor("true", TensorProto.BOOL, [], [True])])
    for n in (1, 4, 6):
        x = rng.standard_normal((n, 3)).astype(np.float32)
        elems = [x[i] * 2 + i for i in range(n)]
        got = c.run({"x": x})
        np.testing.assert_array_equal(got["stacked"], np.stack(elems, 1))
        np.testing.assert_array_equal(got["joined"], np.concatenate(elems, 0))
        np.testing.assert_array_equal(got["last"], elems[-1])
        assert got["count"] == n


def test_loop_elements_of_unknown_rank():
    """Each element an If's output whose branches declare no shape (as PyTorch's exporter
    writes embedding_bag's per-bag loop): concatenated along dim 0 it needs no rank; stacked
    along a new axis it does, and that is a clear error."""
    def branch(name, op):
        return helper.make_graph(
            [helper.make_node(op, ["row", "two_f"], [name])], name, [],
            [helper.make_tensor_value_info(name, TensorProto.FLOAT, None)])
    body = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["row"], axis=0),
         helper.make_node("Equal", ["i", "one"], ["is_one"]),
         helper.make_node("If", ["is_one"], ["elem"], then_branch=branch("then", "Mul"),
                          else_branch=branch("else", "Add")),
         helper.make_node("SequenceInsert", ["seq_in", "elem"], ["seq_out"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("seq_in", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("seq_out", TensorProto.FLOAT, None)],
        [helper.make_tensor("two_f", TensorProto.FLOAT, [], [2.0]), i64("one", 1)])
    nodes = [helper.make_node("SequenceEmpty", [], ["s0"], dtype=TensorProto.FLOAT),
             helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
             helper.make_node("Loop", ["n", "true", "s0"], ["seq"], body=body)]
    initializers = [i64("zero", 0), helper.make_tensor("true", TensorProto.BOOL, [], [True])]
    c = compile_model(nodes + [helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=0)],
                      [f32("x", ["n", 3])], [f32("y", [None])], initializers)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    expected = np.concatenate([x[i] * 2 if i == 1 else x[i] + 2 for i in range(4)])
    np.testing.assert_array_equal(c.run({"x": x})["y"], expected)
    with pytest.raises(weft.WeftError, match=r"\(ConcatFromSequence, opset 13\): concatenates a "
                                             r"sequence a loop built along axis 1 \(new_axis\), "
                                             r"which needs the rank of its elements"):
        compile_model(nodes + [helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=1,
                                                new_axis=1)],
                      [f32("x", ["n", 3])], [f32("y", [3, None])], initializers)


@pytest.mark.parametrize("case", ["starts full", "read in the body"])
def test_loop_sequences_resolved_only_as_appends(case):
    extra = ([helper.make_node("SequenceLength", ["seq_in"], ["unused"])]
             if case == "read in the body" else [])
    with pytest.raises(weft.WeftError, match=r"\(Loop, opset 13\): carries the sequence 's0' other "
                                             r"than as an empty one the body appends to"):
        compile_model(
            append_loop(extra, start="empty" if extra else "full") +
            [helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=0)],
            [f32("x", ["n", 3])], [f32("y", [None])],
            [i64("zero", 0), helper.make_tensor("true", TensorProto.BOOL, [], [True])])
