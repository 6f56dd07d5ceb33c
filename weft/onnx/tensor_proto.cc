#include "weft/onnx/tensor_proto.h"

#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "weft/onnx/onnx_dtype.h"

namespace weft {

namespace {

using P = onnx::TensorProto;

Status tensor_error(const P& proto, const std::string& what) {
  return Status::error(fmt::format("tensor '{}': {}", proto.name(), what));
}

// Copies "count" typed-field elements into "out", converting each to the tensor's dtype.
template <typename Field, typename Set>
Status copy_field(const P& proto, const Field& field, Tensor& out, Set set) {
  if (field.size() != out.num_elements()) {
    return tensor_error(proto, fmt::format("holds {} elements, its dims need {}", field.size(),
                                           out.num_elements()));
  }
  for (int64_t i = 0; i < out.num_elements(); ++i)
    set(i, field.Get(static_cast<int>(i)));
  return Status();
}

// Bytes of "count" elements of "dtype" in ONNX's packed form (two int4s, four int2s a byte).
size_t packed_bytes(DType dtype, int64_t count) {
  return static_cast<size_t>((count * dtype_packed_bits(dtype) + 7) / 8);
}

// Every element of "out" written (a byte each, in its low bits, as Weft keeps them), from
// "packed", lowest bits first.
void unpack(const uint8_t* packed, Tensor& out) {
  unpack_elements(out.dtype(), packed, out.num_elements(), reinterpret_cast<uint8_t*>(out.data()));
}

std::string pack(const Tensor& t) {
  int bits = dtype_packed_bits(t.dtype());
  int per_byte = 8 / bits;
  std::string packed(packed_bytes(t.dtype(), t.num_elements()), '\0');
  const auto* src = reinterpret_cast<const uint8_t*>(t.data());
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    uint8_t v = src[i] & static_cast<uint8_t>((1u << bits) - 1);
    packed[static_cast<size_t>(i / per_byte)] |= static_cast<char>(v << (bits * (i % per_byte)));
  }
  return packed;
}

// Number of elements in the typed field that holds "dtype" data.
int64_t typed_field_size(const P& proto, DType dtype) {
  switch (dtype) {
    case DType::kF32: return proto.float_data_size();
    case DType::kF64: return proto.double_data_size();
    case DType::kI64: return proto.int64_data_size();
    case DType::kU32:
    case DType::kU64: return proto.uint64_data_size();
    default: return proto.int32_data_size();
  }
}

Status read_typed_fields(const P& proto, Tensor& out) {
  DType t = out.dtype();
  switch (t) {
    case DType::kF32:
      return copy_field(proto, proto.float_data(), out,
                        [&](int64_t i, float v) { out.set_double(i, v); });
    case DType::kF64:
      return copy_field(proto, proto.double_data(), out,
                        [&](int64_t i, double v) { out.set_double(i, v); });
    case DType::kI64:
      return copy_field(proto, proto.int64_data(), out,
                        [&](int64_t i, int64_t v) { out.set_int64(i, v); });
    case DType::kU32:
    case DType::kU64:
      return copy_field(proto, proto.uint64_data(), out,
                        [&](int64_t i, uint64_t v) { out.set_int64(i, static_cast<int64_t>(v)); });
    case DType::kF16:
    case DType::kBF16:
    case DType::kU16:
      // int32_data holds the 16-bit patterns.
      return copy_field(proto, proto.int32_data(), out, [&](int64_t i, int32_t v) {
        uint16_t bits = static_cast<uint16_t>(v);
        std::memcpy(out.data() + i * 2, &bits, 2);
      });
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ:
    case DType::kF8E8M0:
      // int32_data holds the 8-bit patterns.
      return copy_field(proto, proto.int32_data(), out,
                        [&](int64_t i, int32_t v) { out.data()[i] = static_cast<std::byte>(v); });
    default: // i8, i16, i32, u8, bool
      return copy_field(proto, proto.int32_data(), out,
                        [&](int64_t i, int32_t v) { out.set_int64(i, v); });
  }
}

// Where the tensor's "expected" bytes of external data lie: a file and an offset.
struct ExternalBytes {
  std::filesystem::path path;
  int64_t offset = 0;
};

Result<ExternalBytes> locate_external(const P& proto, const std::string& base_dir,
                                      size_t expected) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& entry : proto.external_data()) {
    try {
      if (entry.key() == "location") location = entry.value();
      if (entry.key() == "offset") offset = std::stoll(entry.value());
      if (entry.key() == "length") length = std::stoll(entry.value());
    } catch (const std::exception&) {
      return tensor_error(proto, fmt::format("external data '{}' is not a number", entry.key()));
    }
  }
  std::filesystem::path rel(location);
  if (location.empty() || rel.is_absolute() ||
      std::find(rel.begin(), rel.end(), "..") != rel.end()) {
    return tensor_error(proto, fmt::format("external data location '{}' must be a relative path "
                                           "inside the model's directory",
                                           location));
  }
  std::filesystem::path path = std::filesystem::path(base_dir) / rel;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return tensor_error(proto, fmt::format("cannot open external data file {}", path.string()));
  in.seekg(0, std::ios::end);
  int64_t size = in.tellg();
  if (length < 0) length = static_cast<int64_t>(expected);
  if (offset < 0 || offset > size || length > size - offset) {
    return tensor_error(proto, fmt::format("external data [{}, +{}) lies outside {} ({} bytes)",
                                           offset, length, path.string(), size));
  }
  if (static_cast<size_t>(length) != expected) {
    return tensor_error(proto,
                        fmt::format("has {} bytes of data, its dims need {}", length, expected));
  }
  return ExternalBytes{path, offset};
}

// Reads the tensor's "expected" bytes of external data into "into".
Status read_external(const P& proto, const std::string& base_dir, size_t expected,
                     std::byte* into) {
  WEFT_ASSIGN_OR_RETURN(ExternalBytes at, locate_external(proto, base_dir, expected));
  std::ifstream in(at.path, std::ios::binary);
  in.seekg(at.offset);
  in.read(reinterpret_cast<char*>(into), static_cast<std::streamsize>(expected));
  if (!in) return tensor_error(proto, "cannot read external data from " + at.path.string());
  return Status();
}

// The tensor as it lies in its mapped external data file, where it starts on a cache line
// (as Weft's own tensors do: kernels' vectors then do not straddle lines); ONNX's writer
// puts tensors of 1 MB and more on page boundaries. Null otherwise.
Result<std::optional<Tensor>> mapped_external(const P& proto, const std::string& base_dir,
                                              DType dtype, std::vector<int64_t> dims,
                                              size_t expected) {
  if (!MappedFile::enabled() || expected == 0) return std::optional<Tensor>();
  WEFT_ASSIGN_OR_RETURN(ExternalBytes at, locate_external(proto, base_dir, expected));
  if (at.offset % 64 != 0) return std::optional<Tensor>();
  Result<std::shared_ptr<const MappedFile>> file = MappedFile::open(at.path.string());
  // Where the mapping fails, or the file changed since it was measured, the read names why.
  if (!file.ok() || expected > (*file)->size() - std::min<size_t>(at.offset, (*file)->size()))
    return std::optional<Tensor>();
  return std::optional<Tensor>(
      Tensor::mapped(dtype, std::move(dims), *file, static_cast<size_t>(at.offset)));
}

} // namespace

Result<Tensor> tensor_from_proto(const P& proto, const std::string& base_dir) {
  std::optional<DType> dtype = dtype_from_onnx(proto.data_type());
  if (!dtype) {
    return tensor_error(
        proto, fmt::format("data type {} is not supported", onnx_dtype_name(proto.data_type())));
  }
  if (proto.has_segment()) return tensor_error(proto, "segmented tensors are not supported");
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  int64_t count = 0;
  if (!dims_are_allocatable(*dtype, dims, &count)) {
    return tensor_error(proto,
                        fmt::format("dims [{}] are negative or too large", fmt::join(dims, ",")));
  }
  size_t num_bytes = packed_bytes(*dtype, count);
  // Sizes are checked before anything is allocated: a small file may claim huge dims.
  bool sub_byte = dtype_packed_bits(*dtype) < 8;
  const std::string* raw = nullptr;
  std::string external;
  if (proto.data_location() == P::EXTERNAL && !sub_byte) { // used or read where it stays
    WEFT_ASSIGN_OR_RETURN(std::optional<Tensor> mapped,
                          mapped_external(proto, base_dir, *dtype, dims, num_bytes));
    if (mapped) return std::move(*mapped);
    Tensor out = Tensor::uninitialized(*dtype, dims);
    WEFT_RETURN_IF_ERROR(read_external(proto, base_dir, num_bytes, out.data()));
    return out;
  }
  if (proto.data_location() == P::EXTERNAL) { // unpacked when first read, where mapped
    WEFT_ASSIGN_OR_RETURN(
        std::optional<Tensor> mapped,
        mapped_external(proto, base_dir, DType::kU8, {static_cast<int64_t>(num_bytes)}, num_bytes));
    if (mapped) return Tensor::over_packed(*dtype, dims, std::move(*mapped));
    external.resize(num_bytes);
    WEFT_RETURN_IF_ERROR(
        read_external(proto, base_dir, num_bytes, reinterpret_cast<std::byte*>(external.data())));
    raw = &external;
  } else if (proto.has_raw_data()) {
    raw = &proto.raw_data();
  }
  if (raw && raw->size() != num_bytes) {
    return tensor_error(
        proto, fmt::format("has {} bytes of data, its dims need {}", raw->size(), num_bytes));
  }
  std::string from_int32; // the packed bytes of a sub-byte type's int32_data
  if (!raw && sub_byte) {
    if (static_cast<size_t>(proto.int32_data_size()) != num_bytes) {
      return tensor_error(proto, fmt::format("holds {} packed bytes, its dims need {}",
                                             proto.int32_data_size(), num_bytes));
    }
    for (int32_t v : proto.int32_data())
      from_int32.push_back(static_cast<char>(v));
    raw = &from_int32;
  }
  if (!raw && typed_field_size(proto, *dtype) != count) {
    return tensor_error(proto, fmt::format("holds {} elements, its dims need {}",
                                           typed_field_size(proto, *dtype), count));
  }
  if (raw && !sub_byte) { // every byte is copied: no zero-filling first (a 154 MB weight)
    Tensor out = Tensor::uninitialized(*dtype, dims);
    std::memcpy(out.data(), raw->data(), raw->size());
    return out;
  }
  if (!raw) {
    Tensor out(*dtype, dims);
    WEFT_RETURN_IF_ERROR(read_typed_fields(proto, out));
    return out;
  }
  Tensor out = Tensor::uninitialized(*dtype, dims); // unpack writes every element
  unpack(reinterpret_cast<const uint8_t*>(raw->data()), out);
  return out;
}

P tensor_to_proto(const Tensor& tensor, const std::string& name) {
  P proto;
  proto.set_name(name);
  proto.set_data_type(dtype_to_onnx(tensor.dtype()));
  for (int64_t d : tensor.dims())
    proto.add_dims(d);
  if (dtype_packed_bits(tensor.dtype()) < 8)
    proto.set_raw_data(pack(tensor));
  else
    proto.set_raw_data(reinterpret_cast<const char*>(tensor.data()), tensor.num_bytes());
  return proto;
}

} // namespace weft
