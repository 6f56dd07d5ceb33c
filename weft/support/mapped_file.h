// Files mapped into memory: ONNX external data, whose constants are used where they lie in
// the file instead of being read into memory of their own.
//
// A mapped constant's pages are read from the page cache when first touched, and can be let
// go again (release()): a kernel that keeps its own packed form of a weight (oneDNN's blocked
// layout, Winograd's transform) then no longer holds the original as well. Read later, the
// pages come back from the file. ONNX Runtime maps external data the same way.
//
// The mapping reads the file as it is at the time of the read: a file rewritten in place
// while a model compiled from it lives gives that model the new bytes, and one cut shorter
// ends the process (SIGBUS). WEFT_MAP_EXTERNAL_DATA=0 reads external data into memory
// instead (docs/knobs.md).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "weft/support/status.h"

namespace weft {

class MappedFile {
public:
  // The whole file at "path", mapped read-only; opens of the same unchanged file (same
  // inode, size and modification time) share one mapping while it lives. Thread-safe.
  static Result<std::shared_ptr<const MappedFile>> open(const std::string& path);
  // Whether external data is mapped (the knob above, read once).
  static bool enabled();

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }

  // Lets the system take back the resident pages that lie wholly inside [p, p + n), a range
  // of this file's bytes; they are read again from the file when next touched.
  void release(const std::byte* p, size_t n) const;

private:
  MappedFile(std::byte* data, size_t size) : data_(data), size_(size) {}
  std::byte* data_;
  size_t size_;
};

// The bytes [offset, offset + size) of a mapped file, shared by the tensors that lie there:
// their pages are let go when the last of those is gone (the file's mapping, which other
// tensors may hold, would otherwise keep every page once read resident).
class MappedRange {
public:
  // Requires the range inside the file.
  MappedRange(std::shared_ptr<const MappedFile> file, size_t offset, size_t size);
  MappedRange(const MappedRange&) = delete;
  MappedRange& operator=(const MappedRange&) = delete;
  ~MappedRange() { release(); }

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  // MappedFile::release of the range.
  void release() const { file_->release(data_, size_); }

private:
  std::shared_ptr<const MappedFile> file_;
  const std::byte* data_;
  size_t size_;
};

} // namespace weft
