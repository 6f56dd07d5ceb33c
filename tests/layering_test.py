"""Checks two rules of docs/architecture.md over the sources, and shows that each check fails
on a violation:
- weft/runtime/ includes nothing from the compiler (codegen/, poly/, fusion/, kernel/);
- op names appear as string literals only where text meets the graph: the op list
  (weft/graph/ops.inc) and the op table's attribute values (op_table.cc). Everything else
  compares and keys on Op values, so a misspelt op does not compile.

Usage: python3 tests/layering_test.py
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPILER_INCLUDE = re.compile(r'#include\s+"weft/(codegen|poly|fusion|kernel)/')
LITERAL = re.compile(r'"([A-Za-z][A-Za-z0-9.]*)"')
OP_NAMES_ALLOWED = {"weft/graph/ops.inc", "weft/graph/op_table.cc"}


def op_names():
    text = open(os.path.join(ROOT, "weft/graph/ops.inc")).read()
    names = set()
    for full in re.findall(r'WEFT_OP\(\w+, "([^"]+)"\)', text):
        names.update({full, full.split(".")[-1]})
    return names


def sources():
    for top in ("weft", "tools", "python"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".cc", ".h")) and not f.endswith("_test.cc"):
                    path = os.path.join(dirpath, f)
                    yield os.path.relpath(path, ROOT), open(path).read()


def runtime_violations(files):
    return [f"{path}:{n}: {line.strip()}" for path, text in files if path.startswith("weft/runtime/")
            for n, line in enumerate(text.splitlines(), 1) if COMPILER_INCLUDE.search(line)]


def op_literal_violations(files, names):
    out = []
    for path, text in files:
        if path in OP_NAMES_ALLOWED:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            code = line
            i = line.find("//")
            if i >= 0 and line[:i].count('"') % 2 == 0:
                code = line[:i]  # a comment
            for m in LITERAL.finditer(code):
                if m.group(1) in names:
                    out.append(f"{path}:{n}: op name \"{m.group(1)}\" as a string: {line.strip()}")
    return out


def main():
    names = op_names()
    assert {"Conv", "Softmax", "ConvChannelsLast", "ai.onnx.ml.Binarizer"} <= names, names
    # The checks catch what they are for.
    bad = [("weft/runtime/x.cc", '#include "weft/codegen/emit_c.h"\n'),
           ("weft/fusion/x.cc", 'if (n.op_type == "Softmax") return;\n')]
    assert len(runtime_violations(bad)) == 1 and len(op_literal_violations(bad, names)) == 1
    files = list(sources())
    problems = runtime_violations(files) + op_literal_violations(files, names)
    for p in problems:
        print(p)
    print(f"{len(files)} files, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
