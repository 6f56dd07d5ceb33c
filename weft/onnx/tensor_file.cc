#include "weft/onnx/tensor_file.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "weft/onnx/npy.h"
#include "weft/onnx/tensor_proto.h"

namespace weft {

namespace {

enum class TensorFileKind { kNpy, kPb };

Result<TensorFileKind> kind_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".npy") return TensorFileKind::kNpy;
  if (ext == ".pb") return TensorFileKind::kPb;
  return Status::error(
      fmt::format("{}: unknown tensor file type '{}'; expected .npy or .pb", path, ext));
}

} // namespace

Result<Tensor> read_tensor_file(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(TensorFileKind kind, kind_of(path));
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::error(fmt::format("{}: no such file", path));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (!in) return Status::error(fmt::format("{}: cannot read the file", path));
  std::string bytes = buffer.str();
  Result<Tensor> tensor = Status::error("unreachable");
  if (kind == TensorFileKind::kNpy) {
    tensor = npy_decode(bytes);
  } else {
    onnx::TensorProto proto;
    if (bytes.empty() || !proto.ParseFromString(bytes)) {
      return Status::error(fmt::format("{}: not a valid TensorProto file", path));
    }
    std::string dir = std::filesystem::path(path).parent_path().string();
    tensor = tensor_from_proto(proto, dir.empty() ? "." : dir);
  }
  if (!tensor.ok()) return Status::error(fmt::format("{}: {}", path, tensor.status().message()));
  return tensor;
}

Status write_tensor_file(const std::string& path, const Tensor& tensor, const std::string& name) {
  WEFT_ASSIGN_OR_RETURN(TensorFileKind kind, kind_of(path));
  std::string bytes = kind == TensorFileKind::kNpy
                          ? npy_encode(tensor)
                          : tensor_to_proto(tensor, name).SerializeAsString();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return Status::error(fmt::format("{}: cannot write the file", path));
  return Status();
}

Tensor as_bf16_if_wanted(Tensor t, DType wanted) {
  bool bits_of_wanted =
      (wanted == DType::kBF16 && t.dtype() == DType::kU16) ||
      ((dtype_is_float8_or_4(wanted) || dtype_packed_bits(wanted) < 8) && t.dtype() == DType::kU8);
  if (!bits_of_wanted) return t;
  Tensor bf(wanted, t.dims());
  std::memcpy(bf.data(), t.data(), t.num_bytes());
  return bf;
}

} // namespace weft
