// libFuzzer target for the ONNX importer and the graph pipeline's front: any bytes must give
// a graph or a one-line error, never a crash. Build with clang:
//   CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DWEFT_FUZZ=ON && ninja -C build-fuzz
//   import_fuzzer build-fuzz/tests/import_fuzzer -max_total_time=60 corpus/
#include <cstddef>
#include <cstdint>
#include <string>

#include "weft/graph/passes/canonicalize.h"
#include "weft/graph/passes/fold_constants.h"
#include "weft/onnx/import_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  weft::Result<weft::Graph> graph = weft::import_model_bytes(bytes, "fuzz.onnx", "/nonexistent");
  if (graph.ok()) {
    (void)weft::fold_constants(graph.value());
    (void)weft::canonicalize(graph.value());
  } else if (graph.status().message().find('\n') != std::string::npos) {
    __builtin_trap(); // diagnostics are one line
  }
  return 0;
}
