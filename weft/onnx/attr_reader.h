// AttrReader over an onnx::NodeProto, for the op table's parsers.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "weft/graph/op_table.h"

namespace weft {

class NodeAttrReader final : public AttrReader {
public:
  NodeAttrReader(const onnx::NodeProto& node, std::string base_dir)
      : node_(node), base_dir_(std::move(base_dir)) {}

  Kind kind(std::string_view name) const override;
  int64_t get_int(std::string_view name) const override;
  float get_float(std::string_view name) const override;
  std::string get_string(std::string_view name) const override;
  Ints get_ints(std::string_view name) const override;
  std::vector<float> get_floats(std::string_view name) const override;
  std::vector<std::string> get_strings(std::string_view name) const override;
  Result<Tensor> get_tensor(std::string_view name) const override;
  std::optional<DType> get_dtype(std::string_view name) const override;

private:
  const onnx::AttributeProto* find(std::string_view name) const;

  const onnx::NodeProto& node_;
  std::string base_dir_;
};

} // namespace weft
