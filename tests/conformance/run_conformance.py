"""Runs `weft test-onnx` over the ONNX backend test data and checks the results against
expected_failures.txt: CI fails when a case that should pass fails, and when an expected
failure starts passing (so the list stays true).

Usage:
  run_conformance.py WEFT [--write-expected] [--markdown FILE]

--write-expected rewrites expected_failures.txt from this run, with a reason derived from
each failure's message; entries saying "no reason derived" need one written by hand.
--markdown writes the pass counts by category and the reasons for what fails.
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import time

DATA = "/usr/share/libonnx-testdata/data"
CATEGORIES = ["node", "pytorch-converted", "pytorch-operator", "simple"]
HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "expected_failures.txt")


def cases():
    out = []
    for category in CATEGORIES:
        directory = os.path.join(DATA, category)
        for name in sorted(os.listdir(directory)):
            if os.path.isdir(os.path.join(directory, name)):
                out.append(f"{category}/{name}")
    return out


def run_all(weft, names, jobs, extra=()):
    """Runs the cases in "jobs" parallel processes (weft test-onnx EXTRA... CASES...);
    returns {case: reason or None}."""
    chunks = [names[i::jobs] for i in range(jobs)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([weft, "test-onnx", *extra] + [os.path.join(DATA, c) for c in chunk],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
             for chunk in chunks if chunk]
    results = {}
    for chunk, proc in zip(chunks, procs):
        out, _ = proc.communicate(timeout=1200)
        lines = [l for l in out.splitlines() if l.startswith(("PASS ", "FAIL "))]
        if len(lines) != len(chunk):
            sys.exit(f"weft test-onnx printed {len(lines)} results for {len(chunk)} cases "
                     f"(exit status {proc.returncode}); output ends with:\n{out[-2000:]}")
        for case, line in zip(chunk, lines):
            results[case] = None if line.startswith("PASS ") else line.split(": ", 1)[1]
    return results


def load_expected():
    expected = []
    with open(EXPECTED) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            pattern, _, reason = line.partition("#")
            expected.append((re.compile(pattern.strip() + "$"), reason.strip()))
    return expected


def reason_for(case, message):
    """A short reason from a case's failure message, for --write-expected."""
    if "training_dropout" in case:
        return "Dropout in training mode draws random masks, which Weft does not do"
    if "BFLOAT16" in case:
        return ("onnx 1.12's expected bf16 values are truncated; Weft rounds to nearest even "
                "(as newer onnx does)")
    if case == "node/test_adam_multiple":
        return ("onnx 1.12's expected values use epsilon 1e-2, which the model does not set "
                "(the default is 1e-6)")
    m = re.search(r"unsupported ops: ([A-Za-z]+) \(domain '([a-z.]+)'", message)
    if m:
        return f"{m.group(1)} (domain {m.group(2)}) is not supported"
    m = re.search(r"unsupported ops: ([A-Za-z]+)", message)
    if m:
        return f"{m.group(1)} is not supported yet"
    m = re.search(r"cannot execute yet: ([A-Za-z]+)", message)
    if m:
        return f"{m.group(1)} has no CPU lowering yet"
    if "not a tensor" in message or "segmented" in message or "dims [" in message:
        return "sequence and optional values are not supported"
    if "STRING" in message:
        return "string tensors are not supported"
    if "input 'like' expects" in message:
        return ("test data gives 'like' a shape [1] that contradicts its declared [3,4]; "
                "Weft checks declared shapes")
    return "no reason derived, write one: " + message[:120]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("weft")
    parser.add_argument("--write-expected", action="store_true")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    if not os.path.isdir(DATA):
        print(f"SKIP: {DATA} is missing (install libonnx-testdata: scripts/setup.sh)")
        return 77
    names = cases()
    start = time.time()
    results = run_all(os.path.abspath(args.weft), names, os.cpu_count() or 2)
    elapsed = time.time() - start

    if args.write_expected:
        with open(EXPECTED, "w") as f:
            f.write("# ONNX backend test cases that Weft is expected to fail, with the reason.\n"
                    "# One regex per line, matched against CATEGORY/CASE; the text after '#' is the\n"
                    "# reason. tests/conformance/run_conformance.py fails CI when a case not listed\n"
                    "# fails, or a listed case passes.\n")
            by_reason = collections.defaultdict(list)
            for case, why in results.items():
                if why is not None:
                    by_reason[reason_for(case, why)].append(case)
            for reason in sorted(by_reason):
                for case in sorted(by_reason[reason]):
                    f.write(f"{re.escape(case)}  # {reason}\n")

    expected = load_expected()
    unexpected_failures, unexpected_passes, reasons = [], [], collections.Counter()
    for case, why in sorted(results.items()):
        match = next((reason for pattern, reason in expected if pattern.match(case)), None)
        if why is not None and match is None:
            unexpected_failures.append(f"{case}: {why}")
        elif why is None and match is not None:
            unexpected_passes.append(case)
        elif why is not None:
            reasons[match] += 1

    counts = collections.OrderedDict((c, [0, 0]) for c in CATEGORIES)
    for case, why in results.items():
        counts[case.split("/")[0]][0 if why is None else 1] += 1
    total_pass = sum(p for p, _ in counts.values())
    print(f"conformance: {total_pass} of {len(results)} cases pass ({elapsed:.0f} s)")
    for category, (passed, failed) in counts.items():
        print(f"  {category}: {passed} passed, {failed} failed")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("# ONNX conformance\n\n"
                    "`weft test-onnx` over the ONNX backend test data of Debian's libonnx-testdata "
                    "(onnx 1.12), on CPU. Regenerate with `tests/conformance/run_conformance.py "
                    "build/tools/weft/weft --markdown docs/conformance.md`.\n\n"
                    "| Category | Passed | Failed | Pass rate |\n| --- | ---: | ---: | ---: |\n")
            for category, (passed, failed) in counts.items():
                f.write(f"| {category} | {passed} | {failed} | {100 * passed / max(passed + failed, 1):.1f}% |\n")
            f.write(f"| **all** | **{total_pass}** | **{len(results) - total_pass}** | "
                    f"**{100 * total_pass / len(results):.1f}%** |\n\n## Why cases fail\n\n"
                    "| Reason | Cases |\n| --- | ---: |\n")
            for reason, n in reasons.most_common():
                f.write(f"| {reason} | {n} |\n")
    for line in unexpected_failures:
        print("UNEXPECTED FAIL " + line)
    for case in unexpected_passes:
        print(f"UNEXPECTED PASS {case}: remove it from tests/conformance/expected_failures.txt")
    return 1 if unexpected_failures or unexpected_passes else 0


if __name__ == "__main__":
    sys.exit(main())
