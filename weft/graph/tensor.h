// Tensor: a dense, row-major block of elements with a dtype and static dims. The graph IR
// uses it for constants (initializers, folded values); tensor files are read into it.
//
// Storage is little-endian in the natural layout of the dtype: f16 and bf16 as their 16-bit
// patterns, bool as one byte holding 0 or 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "weft/graph/dtype.h"
#include "weft/graph/shape.h"
#include "weft/support/host_memory.h"
#include "weft/support/mapped_file.h"

namespace weft {

// An allocator whose value-less construct leaves the element uninitialized, so that a vector
// can be sized without being written (std::allocator zero-fills bytes), and whose storage
// comes from allocate_host_memory: it starts on a cache line (malloc's large blocks start 16
// bytes past a page, and a kernel's 64-byte vectors then each straddle two lines: bias + GELU
// ran 20-40% slower, measured), and large tensors get huge pages.
template <typename T> struct UninitializedAllocator : std::allocator<T> {
  template <typename U> struct rebind { using other = UninitializedAllocator<U>; };
  UninitializedAllocator() = default;
  template <typename U> UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    void* p = allocate_host_memory(n * sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept { free_host_memory(p, n * sizeof(T)); }
  template <typename U> void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }
  template <typename U, typename... A> void construct(U* p, A&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(args)...);
  }
};

class Tensor {
public:
  Tensor() = default;
  // A zero-filled tensor. Requires non-negative dims whose product fits in memory.
  Tensor(DType dtype, std::vector<int64_t> dims);
  // The same, but its bytes are not written: for buffers that are filled whole next (run
  // outputs), where zero-filling would cost a pass over memory.
  static Tensor uninitialized(DType dtype, std::vector<int64_t> dims);

  template <typename T>
  static Tensor from_vector(DType dtype, std::vector<int64_t> dims, const std::vector<T>& values) {
    Tensor t(dtype, std::move(dims));
    for (size_t i = 0; i < values.size(); ++i)
      t.set_double(static_cast<int64_t>(i), values[i]);
    return t;
  }
  // A tensor whose bytes lie in "file" from "offset" (ONNX external data), used there rather
  // than copied. Copies share them; writing through data() first copies them into memory of
  // the tensor's own. Requires the bytes inside the file.
  static Tensor mapped(DType dtype, std::vector<int64_t> dims,
                       const std::shared_ptr<const MappedFile>& file, size_t offset);
  // A tensor of a sub-byte dtype (u4, i4, u2, ...) over "packed", a u8 tensor of its elements
  // as ONNX packs them (low bits first; mapped or not), unpacked into memory of its own (a
  // byte an element, as Weft holds them) only when data() is first asked for: a kernel that
  // reads the packing itself (packed()) leaves it packed. Requires packed's bytes to be
  // exactly those.
  static Tensor over_packed(DType dtype, std::vector<int64_t> dims, Tensor packed);
  static Tensor scalar_i64(int64_t v);
  static Tensor vector_i64(const std::vector<int64_t>& v);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t num_elements() const { return num_elements_; }
  size_t num_bytes() const {
    return unpacked_ ? static_cast<size_t>(num_elements_)
           : mapped_ ? mapped_->size()
                     : bytes_.size();
  }
  TensorType type() const { return {dtype_, shape_from_dims(dims_)}; }

  std::byte* data() {
    if (mapped_ || unpacked_) own_bytes();
    return bytes_.data();
  }
  const std::byte* data() const {
    return unpacked_ ? unpacked_data() : mapped_ ? mapped_->data() : bytes_.data();
  }
  // Whether its bytes lie in a mapped file (mapped()), or over_packed's packing does.
  bool is_mapped() const;
  // An over_packed tensor's packed bytes; null for others.
  const std::byte* packed() const;

  // Element access through a common type; integers wider than 2^53 round through double,
  // so integer code uses the int64 accessors.
  double get_double(int64_t i) const;
  int64_t get_int64(int64_t i) const;
  void set_double(int64_t i, double v);
  void set_int64(int64_t i, int64_t v);

  // All elements as int64, for shape-like tensors.
  std::vector<int64_t> to_int64_vector() const;
  // Same dtype, dims and bytes.
  bool equals(const Tensor& other) const;

  // "i64[3]{1, 2, 3}"; elements are listed only for tensors of at most "max_elements".
  std::string to_string(int64_t max_elements = 8) const;

  // A form of this tensor that a kernel lays out for itself (oneDNN's blocked weights, Weft's
  // quantized tiles), made by "make" the first time "form" is asked for and kept while the
  // tensor lives (a null result is not kept). A mapped tensor's pages are let go once a form
  // is made: the kernel reads its form, and a later read of the tensor faults them back. The
  // compiles of one model clone one graph and share its constants, and so these forms: one packed
  // copy of a weight for all of them, where each compile for a new shape held one more. Copies of
  // the tensor start without any. Thread-safe; for constants, which nothing writes.
  std::shared_ptr<const void>
  derived(const std::string& form, const std::function<std::shared_ptr<const void>()>& make) const;
  template <typename T, typename F>
  std::shared_ptr<const T> derived_as(const std::string& form, const F& make) const {
    return std::static_pointer_cast<const T>(
        derived(form, [&] { return std::shared_ptr<const void>(make()); }));
  }

private:
  void own_bytes();
  const std::byte* unpacked_data() const;

  DType dtype_ = DType::kF32;
  std::vector<int64_t> dims_;
  int64_t num_elements_ = 1;
  std::vector<std::byte, UninitializedAllocator<std::byte>> bytes_ =
      std::vector<std::byte, UninitializedAllocator<std::byte>>(4, std::byte{0});
  // A mapped tensor's bytes, or an over_packed one's packing and elements, in place of bytes_.
  std::shared_ptr<const MappedRange> mapped_;
  struct Unpacked;
  std::shared_ptr<Unpacked> unpacked_;
  // derived()'s forms; a copy of the tensor starts without them.
  struct Forms;
  struct FormsRef {
    std::shared_ptr<Forms> forms;
    FormsRef() = default;
    FormsRef(const FormsRef&) {}
    FormsRef(FormsRef&&) = default;
    FormsRef& operator=(const FormsRef&) {
      forms.reset();
      return *this;
    }
    FormsRef& operator=(FormsRef&&) = default;
  };
  mutable FormsRef forms_;
};

// "count" elements of sub-byte "dtype" packed as ONNX packs them (low bits first), into
// "dst", a byte each.
void unpack_elements(DType dtype, const uint8_t* packed, int64_t count, uint8_t* dst);

// Largest tensor Weft will allocate while importing a model or folding constants.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 34; // 16 GiB

// Is "dims" a valid tensor shape of "dtype" below kMaxTensorBytes? Sets "num_elements".
bool dims_are_allocatable(DType dtype, const std::vector<int64_t>& dims, int64_t* num_elements);

} // namespace weft
