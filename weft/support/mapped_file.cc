#include "weft/support/mapped_file.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <tuple>

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace weft {

namespace {

// What identifies a file's contents for sharing its mapping.
using FileKey = std::tuple<std::string, dev_t, ino_t, off_t, int64_t, int64_t>;

FileKey key_of(const std::string& path, const struct stat& st) {
  return {path, st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
}

} // namespace

bool MappedFile::enabled() {
  static const bool on = [] {
    const char* env = std::getenv("WEFT_MAP_EXTERNAL_DATA");
    return !(env && std::string_view(env) == "0");
  }();
  return on;
}

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(fmt::format("cannot open {}", path));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(fmt::format("{} is not a regular file", path));
  }
  static std::mutex mutex;
  static std::map<FileKey, std::weak_ptr<const MappedFile>> open_files;
  std::lock_guard<std::mutex> lock(mutex);
  FileKey key = key_of(path, st);
  if (std::shared_ptr<const MappedFile> file = open_files[key].lock()) {
    ::close(fd);
    return file;
  }
  size_t size = static_cast<size_t>(st.st_size);
  void* p = nullptr;
  if (size > 0) {
    // Private and writable: a stray write would change this process's copy of a page, never
    // the file, and release() would put the file's bytes back.
    p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
  }
  ::close(fd);
  if (p == MAP_FAILED) return Status::error(fmt::format("cannot map {} into memory", path));
  std::shared_ptr<const MappedFile> file(new MappedFile(static_cast<std::byte*>(p), size));
  open_files[key] = file;
  for (auto it = open_files.begin(); it != open_files.end();) // forget those gone
    it = it->second.expired() ? open_files.erase(it) : std::next(it);
  return file;
}

MappedFile::~MappedFile() {
  if (size_ > 0) munmap(data_, size_);
}

MappedRange::MappedRange(std::shared_ptr<const MappedFile> file, size_t offset, size_t size)
    : file_(std::move(file)), data_(file_->data() + offset), size_(size) {}

void MappedFile::release(const std::byte* p, size_t n) const {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t begin = static_cast<size_t>(p - data_), end = begin + n;
  begin = (begin + page - 1) / page * page;
  end = end / page * page;
  if (begin < end && end <= size_) madvise(data_ + begin, end - begin, MADV_DONTNEED);
}

} // namespace weft
