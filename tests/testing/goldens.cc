#include "tests/testing/goldens.h"

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "weft/kernel/kernel_text.h"

namespace weft::testing {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

bool updating_goldens() {
  const char* update = std::getenv("WEFT_UPDATE_GOLDENS");
  return update && std::string(update) == "1";
}

std::optional<std::string> golden_mismatch(const std::string& file, const std::string& actual,
                                           const std::string& golden) {
  if (actual == golden) return std::nullopt;
  std::vector<std::string> a = lines_of(actual), g = lines_of(golden);
  size_t n = 0;
  while (n < a.size() && n < g.size() && a[n] == g[n])
    ++n;
  static const std::regex kernel_name(R"((weft_)?(k|gemm|dnnl)[0-9]+_[A-Za-z0-9_]+)");
  std::string kernel = "(before the first kernel)";
  for (size_t i = std::min(n + 1, a.size()); i-- > 0;) {
    std::smatch m;
    if (std::regex_search(a[i], m, kernel_name)) {
      kernel = m.str();
      break;
    }
  }
  return fmt::format("{} line {}, in {}:\n  golden: {}\n  now:    {}", file, n + 1, kernel,
                     n < g.size() ? g[n] : "(end of file)", n < a.size() ? a[n] : "(end of file)");
}

void check_golden(const fs::path& golden, const std::string& text) {
  if (updating_goldens()) {
    write_file(golden, text);
    return;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden << " is missing: run scripts/update-goldens.sh";
  std::optional<std::string> diff = golden_mismatch(
      (golden.parent_path().filename() / golden.filename()).string(), text, read_file(golden));
  EXPECT_FALSE(diff) << *diff << "\n(if the change is intended: scripts/update-goldens.sh)";
}

std::vector<std::string> kernel_texts(const std::string& text) {
  std::vector<std::string> kernels;
  for (const std::string& line : lines_of(text)) {
    if (line.starts_with("kernel ")) kernels.emplace_back();
    bool comment = line.find_first_not_of(' ') == std::string::npos ||
                   line[line.find_first_not_of(' ')] == '#';
    if (!kernels.empty() && !comment) kernels.back() += line + "\n";
  }
  return kernels;
}

void expect_kernels_round_trip(const std::string& file, const std::string& text) {
  for (const std::string& k : kernel_texts(text)) {
    Result<kernel::Kernel> parsed = kernel::parse_kernel(k);
    ASSERT_TRUE(parsed.ok()) << file << ": " << parsed.status().message() << "\n" << k;
    EXPECT_EQ(kernel::print_kernel(*parsed), k) << file;
  }
}

} // namespace weft::testing
