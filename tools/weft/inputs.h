// Model inputs for the CLI: from --input files and --fill, or from an ONNX test data set.
#pragma once

#include <string>
#include <vector>

#include "weft/graph/tensor.h"
#include "weft/runtime/executable.h"
#include "weft/support/device_kind.h"
#include "weft/support/status.h"

namespace weft::cli {

// Whether "device" can run models now; prints the one-line error when not (exit 2).
bool device_available(DeviceKind device);

// One tensor per declared input, from "specs" (NAME=FILE) or "fill" (random, zeros, ones),
// with the dims "shapes" gives (NAME=1x3x48x320; free dims are 1 otherwise). One error line
// names what is missing or wrong.
Result<std::vector<Tensor>> gather_inputs(const std::string& model,
                                          const std::vector<std::string>& specs,
                                          const std::string& fill,
                                          const std::vector<std::string>& shapes,
                                          const std::vector<runtime::TensorInfo>& declared);

// The same for the inputs "model" declares (read from the model first).
Result<std::vector<Tensor>> gather_model_inputs(const std::string& model,
                                                const std::vector<std::string>& specs,
                                                const std::string& fill,
                                                const std::vector<std::string>& shapes);

// PREFIX_0.pb, PREFIX_1.pb, ... in "dir", in numeric order.
std::vector<std::string> numbered_files(const std::string& dir, const std::string& prefix);

// The inputs of one test_data_set_N directory (input_K.pb), for the declared inputs.
Result<std::vector<Tensor>> read_data_set_inputs(const std::string& dir,
                                                 const std::vector<runtime::TensorInfo>& declared);

} // namespace weft::cli
