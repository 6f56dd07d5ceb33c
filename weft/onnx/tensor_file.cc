#include "weft/onnx/tensor_file.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

// Strings [dims] as each one's index in "vocabulary" (-1 for others).
template <typename Strings>
Result<Tensor> indices_in(const std::vector<int64_t>& dims, const Strings& strings,
                          const std::vector<std::string>& vocabulary, const std::string& path) {
  int64_t count = 0;
  if (!dims_are_allocatable(DType::kI64, dims, &count) ||
      count != static_cast<int64_t>(strings.size())) {
    return Status::error(fmt::format("{}: holds {} strings for dims [{}]", path, strings.size(),
                                     fmt::join(dims, ",")));
  }
  std::unordered_map<std::string, int64_t> index;
  for (size_t i = 0; i < vocabulary.size(); ++i)
    index.emplace(vocabulary[i], static_cast<int64_t>(i));
  Tensor out(DType::kI64, dims);
  for (int64_t i = 0; i < count; ++i) {
    auto it = index.find(strings[static_cast<int>(i)]);
    out.set_int64(i, it == index.end() ? -1 : it->second);
  }
  return out;
}

} // namespace

Result<Tensor> read_tensor_file(const std::string& path) { return read_tensor_file(path, {}); }

Result<Tensor> read_tensor_file(const std::string& path,
                                const std::vector<std::string>& vocabulary) {
  WEFT_ASSIGN_OR_RETURN(TensorFileKind kind, kind_of(path));
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::error(fmt::format("{}: no such file", path), StatusCode::kNoSuchFile);
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (!in) return Status::error(fmt::format("{}: cannot read the file", path));
  std::string bytes = buffer.str();
  Result<Tensor> tensor = Status::error("unreachable");
  if (kind == TensorFileKind::kNpy) {
    if (!vocabulary.empty()) {
      Result<std::optional<NpyStrings>> strings = npy_decode_strings(bytes);
      if (!strings.ok())
        return Status::error(fmt::format("{}: {}", path, strings.status().message()));
      if (*strings) return indices_in((*strings)->dims, (*strings)->strings, vocabulary, path);
    }
    tensor = npy_decode(bytes);
  } else {
    onnx::TensorProto proto;
    if (bytes.empty() || !proto.ParseFromString(bytes)) {
      return Status::error(fmt::format("{}: not a valid TensorProto file", path));
    }
    if (!vocabulary.empty() && proto.data_type() == onnx::TensorProto::STRING) {
      std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
      return indices_in(dims, proto.string_data(), vocabulary, path);
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
