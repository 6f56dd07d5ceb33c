#include "weft/onnx/tensor_proto.h"

#include <filesystem>
#include <fstream>

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

// The sub-byte elements of "packed" (lowest bits first), one a byte in "out" (in its low
// bits, as Weft keeps them).
template <int kBits> void unpack_bits(const uint8_t* packed, int64_t n, uint8_t* dst) {
  constexpr int kPerByte = 8 / kBits;
  constexpr unsigned kMask = (1u << kBits) - 1;
  int64_t whole = n / kPerByte;
  for (int64_t b = 0; b < whole; ++b) {
    unsigned byte = packed[b];
    for (int j = 0; j < kPerByte; ++j)
      dst[b * kPerByte + j] = static_cast<uint8_t>((byte >> (kBits * j)) & kMask);
  }
  for (int64_t i = whole * kPerByte; i < n; ++i)
    dst[i] = static_cast<uint8_t>((packed[whole] >> (kBits * (i - whole * kPerByte))) & kMask);
}

// Every element of "out" written (a byte each), from "packed", low bits first.
void unpack(const uint8_t* packed, Tensor& out) {
  auto* dst = reinterpret_cast<uint8_t*>(out.data());
  switch (dtype_packed_bits(out.dtype())) {
    case 2: return unpack_bits<2>(packed, out.num_elements(), dst);
    default: return unpack_bits<4>(packed, out.num_elements(), dst);
  }
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

// Reads the tensor's "expected" bytes of external data into "into".
Status read_external(const P& proto, const std::string& base_dir, size_t expected,
                     std::byte* into) {
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
  in.seekg(offset);
  in.read(reinterpret_cast<char*>(into), length);
  if (!in) return tensor_error(proto, "cannot read external data from " + path.string());
  return Status();
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
  if (proto.data_location() == P::EXTERNAL && !sub_byte) { // read where it stays
    Tensor out = Tensor::uninitialized(*dtype, dims);
    WEFT_RETURN_IF_ERROR(read_external(proto, base_dir, num_bytes, out.data()));
    return out;
  }
  if (proto.data_location() == P::EXTERNAL) {
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
