#include "weft/runtime/cuda/restrict_check.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <sstream>

#include <fmt/format.h>

namespace weft::runtime::cuda {

namespace {

struct Use {
  bool load = false, store = false;
};

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Loads and stores of each parameter "bI" in "body".
std::map<std::string, Use> uses(const std::string& body) {
  std::map<std::string, Use> out;
  for (size_t i = 0; i + 1 < body.size(); ++i) {
    if (body[i] == '/' && body[i + 1] == '/') { // a comment names buffers without using them
      i = std::min(body.find('\n', i), body.size());
      continue;
    }
    if (body[i] != 'b' || (i > 0 && is_identifier_char(body[i - 1]))) continue;
    size_t j = i + 1;
    while (j < body.size() && std::isdigit(static_cast<unsigned char>(body[j])))
      ++j;
    if (j == i + 1 || j >= body.size() || body[j] != '[') continue;
    Use& u = out[body.substr(i, j - i)];
    size_t before = i;
    while (before > 0 && body[before - 1] == ' ')
      --before;
    if (before > 0 && body[before - 1] == '&' && (before < 2 || body[before - 2] != '&')) {
      // The address of a vector load or store, of an alignment check (neither), else of an
      // atomic (both).
      std::string_view head = std::string_view(body).substr(0, before - 1);
      if (head.ends_with("weft_aligned16(")) continue;
      bool read = head.ends_with("weft_load4(");
      bool write = head.ends_with("weft_store4(");
      u.load = u.load || !write;
      u.store = u.store || !read;
      continue;
    }
    int depth = 0;
    size_t k = j;
    for (; k < body.size(); ++k) {
      if (body[k] == '[') ++depth;
      if (body[k] == ']' && --depth == 0) break;
    }
    size_t next = k + 1;
    while (next < body.size() && body[next] == ' ')
      ++next;
    bool assign = next < body.size() && body[next] == '=' &&
                  (next + 1 >= body.size() || body[next + 1] != '=');
    bool compound = next + 1 < body.size() && body[next + 1] == '=' &&
                    std::string_view("+-*/%&|^").find(body[next]) != std::string_view::npos;
    if (assign) {
      u.store = true;
    } else if (compound) {
      u.load = u.store = true;
    } else {
      u.load = true;
    }
  }
  return out;
}

} // namespace

Status check_restrict(const std::string& source) {
  static const std::regex kSignature(R"(__launch_bounds__\([\d, ]+\)\s+(\w+)\((.*)\)\s*\{\s*$)");
  static const std::regex kRestrict(R"(__restrict__\s+(b\d+)\b)");
  std::istringstream in(source);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, kSignature)) continue;
    std::string function = m[1], params = m[2], body;
    while (std::getline(in, line) && line != "}")
      body += line + "\n";
    bool synchronizes = body.find("__syncthreads") != std::string::npos ||
                        body.find("__syncwarp") != std::string::npos ||
                        body.find("__threadfence") != std::string::npos;
    if (!synchronizes) continue;
    std::map<std::string, Use> used = uses(body);
    for (std::sregex_iterator it(params.begin(), params.end(), kRestrict), end; it != end; ++it) {
      std::string name = (*it)[1];
      auto u = used.find(name);
      if (u != used.end() && u->second.load && u->second.store) {
        return Status::error(fmt::format(
            "internal error: {} marks {} __restrict__ but its threads both store to it and load "
            "from it across a barrier; NVCC may then move loads above the barrier",
            function, name));
      }
    }
  }
  return Status();
}

} // namespace weft::runtime::cuda
