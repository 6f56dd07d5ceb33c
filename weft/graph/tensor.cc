#include "weft/graph/tensor.h"

#include <cmath>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "weft/support/check.h"
#include "weft/support/float16.h"
#include "weft/support/minifloat.h"

namespace weft {

bool dims_are_allocatable(DType dtype, const std::vector<int64_t>& dims, int64_t* num_elements) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return false;
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, int64_t{dtype_size(dtype)}, &bytes) || bytes > kMaxTensorBytes) {
    return false;
  }
  *num_elements = n;
  return true;
}

Tensor::Tensor(DType dtype, std::vector<int64_t> dims) : dtype_(dtype), dims_(std::move(dims)) {
  WEFT_CHECK(dims_are_allocatable(dtype_, dims_, &num_elements_), "tensor dims too large");
  bytes_.assign(static_cast<size_t>(num_elements_ * dtype_size(dtype_)), std::byte{0});
}

Tensor Tensor::uninitialized(DType dtype, std::vector<int64_t> dims) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  WEFT_CHECK(dims_are_allocatable(t.dtype_, t.dims_, &t.num_elements_), "tensor dims too large");
  t.bytes_.resize(static_cast<size_t>(t.num_elements_ * dtype_size(t.dtype_)));
  return t;
}

Tensor Tensor::mapped(DType dtype, std::vector<int64_t> dims,
                      const std::shared_ptr<const MappedFile>& file, size_t offset) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  WEFT_CHECK(dims_are_allocatable(t.dtype_, t.dims_, &t.num_elements_), "tensor dims too large");
  auto bytes = static_cast<size_t>(t.num_elements_ * dtype_size(t.dtype_));
  WEFT_CHECK(offset <= file->size() && bytes <= file->size() - offset,
             "mapped tensor outside its file");
  t.mapped_ = std::make_shared<const MappedRange>(file, offset, bytes);
  return t;
}

void Tensor::own_bytes() {
  const Tensor& self = *this;
  bytes_.assign(self.data(), self.data() + self.num_bytes());
  mapped_.reset();
  unpacked_.reset();
}

struct Tensor::Unpacked {
  Tensor packed;
  std::once_flag once;
  std::vector<std::byte, UninitializedAllocator<std::byte>> bytes;
};

Tensor Tensor::over_packed(DType dtype, std::vector<int64_t> dims, Tensor packed) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  WEFT_CHECK(dims_are_allocatable(t.dtype_, t.dims_, &t.num_elements_), "tensor dims too large");
  int bits = dtype_packed_bits(dtype);
  WEFT_CHECK(bits < 8 && packed.dtype() == DType::kU8 &&
                 static_cast<int64_t>(packed.num_bytes()) == (t.num_elements_ * bits + 7) / 8,
             "over_packed needs a sub-byte dtype and its packed bytes");
  t.unpacked_ = std::make_shared<Unpacked>();
  t.unpacked_->packed = std::move(packed);
  return t;
}

const std::byte* Tensor::unpacked_data() const {
  Unpacked& u = *unpacked_;
  std::call_once(u.once, [&] {
    u.bytes.resize(static_cast<size_t>(num_elements_));
    const Tensor& packed = u.packed;
    unpack_elements(dtype_, reinterpret_cast<const uint8_t*>(packed.data()), num_elements_,
                    reinterpret_cast<uint8_t*>(u.bytes.data()));
  });
  return u.bytes.data();
}

bool Tensor::is_mapped() const {
  return mapped_ != nullptr || (unpacked_ && unpacked_->packed.is_mapped());
}

const std::byte* Tensor::packed() const {
  return unpacked_ ? std::as_const(unpacked_->packed).data() : nullptr;
}

namespace {
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
} // namespace

void unpack_elements(DType dtype, const uint8_t* packed, int64_t count, uint8_t* dst) {
  switch (dtype_packed_bits(dtype)) {
    case 2: return unpack_bits<2>(packed, count, dst);
    default: return unpack_bits<4>(packed, count, dst);
  }
}

Tensor Tensor::scalar_i64(int64_t v) {
  Tensor t(DType::kI64, {});
  t.set_int64(0, v);
  return t;
}

Tensor Tensor::vector_i64(const std::vector<int64_t>& v) {
  Tensor t(DType::kI64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i)
    t.set_int64(static_cast<int64_t>(i), v[i]);
  return t;
}

namespace {
template <typename T> T load(const std::byte* p, int64_t i) {
  T v;
  std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}
template <typename T> void store(std::byte* p, int64_t i, T v) {
  std::memcpy(p + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}
// Float to integer conversion that saturates instead of invoking undefined behaviour.
template <typename T> T saturate_cast(double v) {
  if (std::isnan(v)) return T{0};
  if (v <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}
// The low "bits" bits of "v", sign-extended when "is_signed": ONNX's int4, uint4, int2 and
// uint2 wrap as ml_dtypes (and so ONNX's reference) does.
int64_t wrap_bits(int64_t v, int bits, bool is_signed) {
  int64_t w = v & ((int64_t{1} << bits) - 1);
  return is_signed && w >= (int64_t{1} << (bits - 1)) ? w - (int64_t{1} << bits) : w;
}
} // namespace

double Tensor::get_double(int64_t i) const {
  const std::byte* p = data();
  switch (dtype_) {
    case DType::kF32: return load<float>(p, i);
    case DType::kF64: return load<double>(p, i);
    case DType::kF16: return half_to_float(load<uint16_t>(p, i));
    case DType::kBF16: return bf16_to_float(load<uint16_t>(p, i));
    case DType::kI8: return load<int8_t>(p, i);
    case DType::kI16: return load<int16_t>(p, i);
    case DType::kI32: return load<int32_t>(p, i);
    case DType::kI64: return static_cast<double>(load<int64_t>(p, i));
    case DType::kU8: return load<uint8_t>(p, i);
    case DType::kU16: return load<uint16_t>(p, i);
    case DType::kU32: return load<uint32_t>(p, i);
    case DType::kU64: return static_cast<double>(load<uint64_t>(p, i));
    case DType::kBool: return load<uint8_t>(p, i) != 0 ? 1.0 : 0.0;
    case DType::kF8E8M0: return e8m0_to_float(load<uint8_t>(p, i));
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ:
    case DType::kF4E2M1: return minifloat_to_float(load<uint8_t>(p, i), *dtype_minifloat(dtype_));
    case DType::kI4:
    case DType::kI2:
    case DType::kU4:
    case DType::kU2:
      return static_cast<double>(
          wrap_bits(load<uint8_t>(p, i), dtype_packed_bits(dtype_), dtype_is_signed_int(dtype_)));
  }
  return 0;
}

int64_t Tensor::get_int64(int64_t i) const {
  const std::byte* p = data();
  switch (dtype_) {
    case DType::kI64: return load<int64_t>(p, i);
    case DType::kU64: return static_cast<int64_t>(load<uint64_t>(p, i));
    case DType::kI32: return load<int32_t>(p, i);
    case DType::kU32: return load<uint32_t>(p, i);
    default: return saturate_cast<int64_t>(get_double(i));
  }
}

void Tensor::set_double(int64_t i, double v) {
  std::byte* p = data();
  switch (dtype_) {
    case DType::kF32: store<float>(p, i, static_cast<float>(v)); break;
    case DType::kF64: store<double>(p, i, v); break;
    case DType::kF16: store<uint16_t>(p, i, float_to_half(static_cast<float>(v))); break;
    case DType::kBF16: store<uint16_t>(p, i, float_to_bf16(static_cast<float>(v))); break;
    case DType::kI8: store<int8_t>(p, i, saturate_cast<int8_t>(v)); break;
    case DType::kI16: store<int16_t>(p, i, saturate_cast<int16_t>(v)); break;
    case DType::kI32: store<int32_t>(p, i, saturate_cast<int32_t>(v)); break;
    case DType::kI64: store<int64_t>(p, i, saturate_cast<int64_t>(v)); break;
    case DType::kU8: store<uint8_t>(p, i, saturate_cast<uint8_t>(v)); break;
    case DType::kU16: store<uint16_t>(p, i, saturate_cast<uint16_t>(v)); break;
    case DType::kU32: store<uint32_t>(p, i, saturate_cast<uint32_t>(v)); break;
    case DType::kU64: store<uint64_t>(p, i, saturate_cast<uint64_t>(v)); break;
    case DType::kBool: store<uint8_t>(p, i, v != 0 ? 1 : 0); break;
    case DType::kF8E8M0: store<uint8_t>(p, i, float_to_e8m0(static_cast<float>(v))); break;
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ:
    case DType::kF4E2M1:
      store<uint8_t>(p, i, float_to_minifloat(static_cast<float>(v), *dtype_minifloat(dtype_)));
      break;
    case DType::kI4:
    case DType::kI2:
    case DType::kU4:
    case DType::kU2:
      store<uint8_t>(p, i,
                     static_cast<uint8_t>(
                         wrap_bits(saturate_cast<int64_t>(v), dtype_packed_bits(dtype_), false)));
      break;
  }
}

void Tensor::set_int64(int64_t i, int64_t v) {
  std::byte* p = data();
  switch (dtype_) {
    case DType::kI64: store<int64_t>(p, i, v); break;
    case DType::kU64: store<uint64_t>(p, i, static_cast<uint64_t>(v)); break;
    case DType::kI32: store<int32_t>(p, i, static_cast<int32_t>(v)); break;
    case DType::kU32: store<uint32_t>(p, i, static_cast<uint32_t>(v)); break;
    default: set_double(i, static_cast<double>(v));
  }
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> out(static_cast<size_t>(num_elements_));
  for (int64_t i = 0; i < num_elements_; ++i)
    out[static_cast<size_t>(i)] = get_int64(i);
  return out;
}

struct Tensor::Forms {
  std::mutex mutex; // held while a form is made: others wait for it rather than make it twice
  std::map<std::string, std::shared_ptr<const void>> made;
};

std::shared_ptr<const void>
Tensor::derived(const std::string& form,
                const std::function<std::shared_ptr<const void>()>& make) const {
  static std::mutex forms_created;
  std::shared_ptr<Forms> forms;
  {
    std::lock_guard<std::mutex> lock(forms_created);
    if (!forms_.forms) forms_.forms = std::make_shared<Forms>();
    forms = forms_.forms;
  }
  std::lock_guard<std::mutex> lock(forms->mutex);
  auto it = forms->made.find(form);
  if (it != forms->made.end()) return it->second;
  std::shared_ptr<const void> made = make();
  if (made) forms->made.emplace(form, made);
  // The kernel reads its form: a mapped original's pages can go (read again if asked for).
  if (made && mapped_) mapped_->release();
  if (made && unpacked_ && unpacked_->packed.mapped_) unpacked_->packed.mapped_->release();
  return made;
}

bool Tensor::equals(const Tensor& other) const {
  return dtype_ == other.dtype_ && dims_ == other.dims_ && num_bytes() == other.num_bytes() &&
         std::memcmp(data(), other.data(), num_bytes()) == 0;
}

std::string Tensor::to_string(int64_t max_elements) const {
  std::string out = type().to_string();
  if (num_elements_ > max_elements) return out;
  out += "{";
  for (int64_t i = 0; i < num_elements_; ++i) {
    if (i > 0) out += ", ";
    if (dtype_ == DType::kF64) {
      out += fmt::format("{}", get_double(i));
    } else if (dtype_is_float(dtype_)) {
      out += fmt::format("{}", static_cast<float>(get_double(i))); // shortest f32 form
    } else if (dtype_ == DType::kBool) {
      out += get_int64(i) ? "true" : "false";
    } else if (dtype_ == DType::kU64) {
      out += fmt::format("{}", static_cast<uint64_t>(get_int64(i)));
    } else {
      out += fmt::format("{}", get_int64(i));
    }
  }
  return out + "}";
}

} // namespace weft
