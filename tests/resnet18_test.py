"""A torchvision ResNet-18 (random weights), exported at test time with Debian's PyTorch:
`weft inspect` prints its graph with a concrete shape on every value.

Usage: resnet18_test.py WEFT_BINARY      (exits 77, a skip, when PyTorch is missing)
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import torch
    import torchvision
except ImportError as e:
    print(f"SKIP: PyTorch or torchvision is not installed ({e}); scripts/setup.sh installs them")
    sys.exit(77)


def main():
    weft = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "resnet18.onnx")
        torch.manual_seed(0)
        model = torchvision.models.resnet18().eval()
        torch.onnx.export(model, torch.randn(1, 3, 224, 224), path, opset_version=13,
                          input_names=["image"], output_names=["logits"])
        text = subprocess.run([weft, "inspect", path, "--after", "eliminate_dead_code"],
                              capture_output=True, text=True, timeout=300)
        assert text.returncode == 0, text.stderr
        print(text.stdout[:2000])
        r = subprocess.run([weft, "inspect", path, "--json"], capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        for p in out["passes"]:
            graph = p["graph"]
            values = graph["inputs"] + graph["constants"] + graph["outputs"]
            for op in graph["ops"]:
                values += op["outputs"]
            for v in values:
                shape = v["shape"]
                assert shape is not None and all(isinstance(d, int) for d in shape), \
                    f"after {p['pass']}: value {v['name']} has shape {shape}"
        ops = [op["op_type"] for op in out["ops"]]
        assert ops.count("Conv") == 20, ops
        assert out["ops"][-1]["outputs"][0]["shape"] == [1, 1000]
        print(f"ok: {len(ops)} ops, every value has a concrete shape after every pass")


if __name__ == "__main__":
    main()
