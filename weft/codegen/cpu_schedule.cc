#include "weft/codegen/cpu_schedule.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <unistd.h>

namespace weft::codegen {

int64_t machine_stream_min_bytes() {
  static const int64_t bytes = [] {
    // $WEFT_LLC_BYTES stands in for the probe: the same code on every machine (goldens).
    if (const char* env = std::getenv("WEFT_LLC_BYTES")) {
      char* end = nullptr;
      int64_t v = std::strtoll(env, &end, 10);
      if (*end == '\0' && v > 0) return v / 4 * 3;
    }
    int64_t llc = 0;
    for (int index = 0; index < 8; ++index) {
      std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", index);
      std::ifstream level(dir + "level"), size(dir + "size");
      int l = 0;
      std::string text;
      if (!(level >> l) || !(size >> text) || l != 3) continue;
      char* end = nullptr;
      int64_t v = std::strtoll(text.c_str(), &end, 10);
      if (*end == 'K') v *= 1024;
      if (*end == 'M') v *= 1024 * 1024;
      llc = std::max(llc, v);
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (llc <= 0) llc = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    return llc > 0 ? llc / 4 * 3 : kNoStreaming;
  }();
  return bytes;
}

int64_t default_max_row_variant() {
  static const int64_t extent = [] {
    const char* env = std::getenv("WEFT_MAX_ROW_VARIANT");
    char* end = nullptr;
    int64_t v = env && *env ? std::strtoll(env, &end, 10) : -1;
    return v >= 0 && *end == '\0' ? v : int64_t{1024}; // unset, empty or not a count: 1024
  }();
  return extent;
}

bool default_half_blocks() {
  static const bool on = [] {
    const char* env = std::getenv("WEFT_HALF_BLOCKS");
    return !env || std::string(env) != "0";
  }();
  return on;
}

std::vector<int64_t> row_variants(int64_t max_row_variant) {
  std::vector<int64_t> extents;
  for (int64_t e = 64; e <= max_row_variant && e <= (int64_t{1} << 20); e *= 2)
    extents.push_back(e);
  return extents;
}

std::string CpuSchedule::to_string() const {
  return fmt::format("lanes={} column_width={} column_rows={} min_per_thread={} "
                     "min_parallel_work={} stream_min_bytes={} max_row_variant={}{}",
                     lanes, column_width, column_rows, min_per_thread, min_parallel_work,
                     stream_min_bytes, max_row_variant, half_blocks ? "" : " half_blocks=0");
}

std::optional<CpuSchedule> CpuSchedule::parse(const std::string& text) {
  CpuSchedule s;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    size_t eq = word.find('=');
    if (eq == std::string::npos) return std::nullopt;
    std::string key = word.substr(0, eq);
    char* end = nullptr;
    long long v = std::strtoll(word.c_str() + eq + 1, &end, 10);
    if (*end != '\0' || v < 0) return std::nullopt;
    if (key == "lanes")
      s.lanes = v;
    else if (key == "column_width")
      s.column_width = v;
    else if (key == "column_rows")
      s.column_rows = v;
    else if (key == "min_per_thread")
      s.min_per_thread = v;
    else if (key == "min_parallel_work")
      s.min_parallel_work = v;
    else if (key == "stream_min_bytes")
      s.stream_min_bytes = v;
    else if (key == "max_row_variant")
      s.max_row_variant = v;
    else if (key == "half_blocks" && v <= 1)
      s.half_blocks = v == 1;
    else
      return std::nullopt;
  }
  bool pow2 = s.lanes >= 8 && s.lanes <= 128 && (s.lanes & (s.lanes - 1)) == 0;
  if (!pow2 || s.column_width < 16 || s.column_width > 8192 || s.column_rows < 1 ||
      s.min_per_thread < 1)
    return std::nullopt;
  return s;
}

} // namespace weft::codegen
