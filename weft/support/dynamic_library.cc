#include "weft/support/dynamic_library.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace weft {

namespace fs = std::filesystem;

std::vector<std::string> wheel_library_dirs(const std::string& program) {
  std::error_code ec;
  fs::path prefix = fs::path(program).parent_path().parent_path(); // PREFIX/bin/PROGRAM
  std::vector<std::string> dirs;
  for (const auto& python : fs::directory_iterator(prefix / "lib", ec)) {
    std::string name = python.path().filename().string();
    fs::path nvidia = python.path() / "site-packages" / "nvidia";
    if (name.rfind("python3", 0) != 0 || !fs::is_directory(nvidia, ec)) continue;
    for (const auto& package : fs::directory_iterator(nvidia, ec)) {
      if (fs::is_directory(package.path() / "lib", ec))
        dirs.push_back((package.path() / "lib").string());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

void* open_first(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return handle;
  }
  static const std::vector<std::string> wheels = [] {
    std::error_code ec;
    fs::path program = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::vector<std::string>{} : wheel_library_dirs(program.string());
  }();
  for (const std::string& dir : wheels) {
    for (const char* name : names) {
      if (void* handle = dlopen((dir + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
    }
  }
  return nullptr;
}

} // namespace weft
