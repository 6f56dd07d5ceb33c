// The C++ quickstart of the README: compile a model, run it on ones, print the outputs.
//   c++ -std=c++17 -Iinclude examples/quickstart.cc -Lbuild/lib -lweft -Wl,-rpath,$PWD/build/lib
//   ./a.out examples/attention_block.onnx
#include <iostream>
#include <vector>

#include "weft/weft.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " MODEL.onnx\n";
    return 2;
  }
  try {
    weft::Model model = weft::Model::compile(argv[1]);
    std::vector<weft::HostTensor> inputs;
    std::vector<std::vector<float>> storage; // caller-owned input memory
    for (const weft::TensorSpec& in : model.inputs()) {
      std::vector<int64_t> shape = in.shape;
      for (int64_t& d : shape)
        d = d < 0 ? 1 : d; // symbolic dims: pick 1
      size_t n = 1;
      for (int64_t d : shape)
        n *= static_cast<size_t>(d);
      storage.emplace_back(n, 1.0f);
      inputs.push_back(weft::HostTensor::view(in.type, shape, storage.back().data()));
    }
    std::vector<weft::HostTensor> outputs = model.run(inputs);
    for (size_t i = 0; i < outputs.size(); ++i) {
      const weft::HostTensor& out = outputs[i];
      std::cout << model.outputs()[i].name << ": " << weft::to_string(out.type()) << "[";
      for (size_t d = 0; d < out.shape().size(); ++d)
        std::cout << (d ? "," : "") << out.shape()[d];
      std::cout << "], first element " << out.data_as<float>()[0] << "\n";
    }
  } catch (const weft::Error& e) {
    std::cerr << e.what() << "\n"; // one line: file, node, op type, opset
    return 1;
  }
  return 0;
}
