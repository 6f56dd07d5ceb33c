"""Writes the current ONNX node test suite in the backend-test layout that `weft test-onnx`
reads: OUT/node/CASE/model.onnx and OUT/node/CASE/test_data_set_N/{input,output}_K.pb.

The onnx wheel ships the generators of its node tests, not their data; this runs them
(onnx.backend.test.case.node.collect_testcases) with the onnx that scripts/setup.sh pins
in .venv. Usage: generate_node_suite.py OUT
"""
import os
import shutil
import sys
import warnings

import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node


def proto_of(value, value_info):
    """The protobuf of one input or output value: a tensor, a sequence or an optional."""
    if isinstance(value, onnx.TensorProto):
        return value
    kind = value_info.type.WhichOneof("value")
    if kind == "sequence_type":
        return numpy_helper.from_list(value, value_info.name)
    if kind == "optional_type":
        return numpy_helper.from_optional(value, value_info.name)
    if kind == "map_type":
        return numpy_helper.from_dict(value, value_info.name)
    return numpy_helper.from_array(value, value_info.name)


def write_case(case, out_dir):
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    with open(os.path.join(out_dir, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for n, (inputs, outputs) in enumerate(case.data_sets):
        data_dir = os.path.join(out_dir, f"test_data_set_{n}")
        os.makedirs(data_dir)
        for prefix, values, infos in (("input", inputs, graph.input),
                                      ("output", outputs, graph.output)):
            for k, value in enumerate(values):
                with open(os.path.join(data_dir, f"{prefix}_{k}.pb"), "wb") as f:
                    f.write(proto_of(value, infos[k]).SerializeToString())


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = os.path.join(sys.argv[1], "node")
    warnings.simplefilter("ignore")  # the generators' own numpy overflow warnings
    cases = node.collect_testcases(None)
    for case in cases:
        write_case(case, os.path.join(out, case.name))
    with open(os.path.join(sys.argv[1], "VERSION"), "w") as f:
        f.write(onnx.__version__ + "\n")
    print(f"wrote {len(cases)} node cases of onnx {onnx.__version__} to {out}")


if __name__ == "__main__":
    main()
