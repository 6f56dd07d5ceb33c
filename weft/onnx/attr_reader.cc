#include "weft/onnx/attr_reader.h"

#include "weft/onnx/onnx_dtype.h"
#include "weft/onnx/tensor_proto.h"

namespace weft {

const onnx::AttributeProto* NodeAttrReader::find(std::string_view name) const {
  for (const auto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

AttrReader::Kind NodeAttrReader::kind(std::string_view name) const {
  const onnx::AttributeProto* a = find(name);
  if (!a) return Kind::kMissing;
  using A = onnx::AttributeProto;
  switch (a->type()) {
    case A::INT: return Kind::kInt;
    case A::FLOAT: return Kind::kFloat;
    case A::STRING: return Kind::kString;
    case A::INTS: return Kind::kInts;
    case A::FLOATS: return Kind::kFloats;
    case A::STRINGS: return Kind::kStrings;
    case A::TENSOR: return Kind::kTensor;
    default: return Kind::kOther;
  }
}

int64_t NodeAttrReader::get_int(std::string_view name) const { return find(name)->i(); }
float NodeAttrReader::get_float(std::string_view name) const { return find(name)->f(); }
std::string NodeAttrReader::get_string(std::string_view name) const { return find(name)->s(); }

Ints NodeAttrReader::get_ints(std::string_view name) const {
  const auto& ints = find(name)->ints();
  return Ints(ints.begin(), ints.end());
}

std::vector<float> NodeAttrReader::get_floats(std::string_view name) const {
  const auto& floats = find(name)->floats();
  return std::vector<float>(floats.begin(), floats.end());
}

std::vector<std::string> NodeAttrReader::get_strings(std::string_view name) const {
  const auto& strings = find(name)->strings();
  return std::vector<std::string>(strings.begin(), strings.end());
}

Result<Tensor> NodeAttrReader::get_tensor(std::string_view name) const {
  return tensor_from_proto(find(name)->t(), base_dir_);
}

std::optional<DType> NodeAttrReader::get_dtype(std::string_view name) const {
  return dtype_from_onnx(static_cast<int>(find(name)->i()));
}

} // namespace weft
