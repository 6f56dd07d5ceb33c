#include "weft/support/status.h"

#include <fmt/format.h>

namespace weft {

std::string Location::to_string() const {
  std::string out = file;
  if (!node.empty() || !op_type.empty()) {
    if (!out.empty()) out += ": ";
    out += fmt::format("node '{}'", node);
    if (!op_type.empty()) {
      out += opset > 0 ? fmt::format(" ({}, opset {})", op_type, opset)
                       : fmt::format(" ({})", op_type);
    }
  }
  return out;
}

Status::Status(std::string message) {
  std::string out;
  out.reserve(message.size());
  for (char c : message) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  message_ = std::move(out);
}

Status Status::error(const Location& where, const std::string& message) {
  std::string prefix = where.to_string();
  return Status(prefix.empty() ? message : prefix + ": " + message);
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return message_ ? *message_ : kEmpty;
}

std::string Status::to_string() const { return ok() ? "ok" : "error: " + *message_; }

Status Status::with_location(const Location& where) const {
  if (ok()) return *this;
  std::string prefix = where.to_string();
  if (prefix.empty() || message_->starts_with(prefix)) return *this;
  return error(prefix + ": " + *message_, code_);
}

} // namespace weft
