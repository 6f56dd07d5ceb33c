"""The Python quickstart of the README:  PYTHONPATH=build/python python3 examples/quickstart.py"""
import numpy as np

import weft

model = weft.compile("examples/attention_block.onnx")
for i in model.inputs:
    print("input", i.name, i.dtype, i.shape)
x = np.random.default_rng(0).standard_normal((2, 128, 64), dtype=np.float32)
outputs = model.run({"x": x})
for name, value in outputs.items():
    print("output", name, value.dtype, value.shape, float(value.ravel()[0]))
