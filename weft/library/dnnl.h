// oneDNN for the compute-bound ops on the CPU: MatMul, Gemm and Conv in f32 run as oneDNN
// primitives (Debian's libdnnl), built once per compiled model for its static shapes.
//
// oneDNN takes a node only when it can express it exactly; otherwise (another dtype, empty
// tensors, a Gemm whose alpha and beta do not map onto a bias, a primitive oneDNN does not
// implement) the node stays generated code, which handles every case. docs/library.md says
// which cases go where.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/graph/graph.h"
#include "weft/runtime/cpu/library_kernel.h"
#include "weft/support/status.h"

namespace weft::library {

// A node run by a library: its kernel, and the values the kernel's buffers are, in order.
struct LibraryCall {
  std::shared_ptr<const runtime::LibraryKernel> kernel;
  std::vector<const Value*> values;
};

// oneDNN's kernel for "node", or none when generated code should run it: "why_not" says why
// for the ops oneDNN could take, and stays empty for the others.
std::optional<LibraryCall> dnnl_call(const Node& node, std::string* why_not);

} // namespace weft::library
