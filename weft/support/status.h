// User-facing diagnostics: Status and Result<T>.
//
// A Status carries one clear line for the user: the file, and where there is one the node name,
// op type and opset, then what was wrong. It is for bad *input*. Broken internal invariants use
// WEFT_CHECK (check.h) instead; the two are never mixed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace weft {

// Where a diagnostic points. Empty fields are left out of the message.
struct Location {
  std::string file;
  std::string node;    // node name
  std::string op_type; // e.g. "Conv"
  int opset = 0;       // opset of the node's domain; 0 when unknown

  // "FILE: node 'conv_3' (Conv, opset 13)".
  std::string to_string() const;
};

// The kind of bad input an error reports, for callers that act on kinds rather than read the
// message (weft::ErrorCode, and the Python module's ONNX Runtime exception classes). The sites
// that know set it; every other error is kFail.
enum class StatusCode : uint8_t {
  kFail,
  kNoSuchFile,      // the model or a tensor file is missing
  kInvalidModel,    // not a parseable ONNX model
  kNotImplemented,  // an op, domain, opset or IR version Weft does not support
  kInvalidArgument, // a run's inputs or outputs do not fit the model
};

class [[nodiscard]] Status {
public:
  Status() = default; // ok

  static Status error(std::string message, StatusCode code = StatusCode::kFail) {
    Status s(std::move(message));
    s.code_ = code;
    return s;
  }
  static Status error(const Location& where, const std::string& message);

  bool ok() const { return !message_.has_value(); }
  // The message without the "error: " prefix; empty when ok.
  const std::string& message() const;
  // "error: <message>", the line the CLI prints.
  std::string to_string() const;

  // kFail when ok.
  StatusCode code() const { return code_; }

  // Prefixes the message with the location, unless it is already there.
  Status with_location(const Location& where) const;

private:
  // Control characters (from names inside a model, say) are escaped as \xNN, so that a
  // diagnostic is always one line.
  explicit Status(std::string message);
  std::optional<std::string> message_;
  StatusCode code_ = StatusCode::kFail;
};

template <typename T> class [[nodiscard]] Result {
public:
  Result(T v) : state_(std::move(v)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : state_(std::move(status)) {} // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(state_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(state_);
  }
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

private:
  std::variant<T, Status> state_;
};

} // namespace weft

// Returns early from the enclosing function when "expr" yields a failed Status.
#define WEFT_RETURN_IF_ERROR(expr)                                                                 \
  do {                                                                                             \
    ::weft::Status weft_status_ = (expr);                                                          \
    if (!weft_status_.ok()) return weft_status_;                                                   \
  } while (0)

#define WEFT_CONCAT_INNER(a, b) a##b
#define WEFT_CONCAT(a, b) WEFT_CONCAT_INNER(a, b)
// Declares "lhs" from a Result, returning its Status early when it failed.
#define WEFT_ASSIGN_OR_RETURN(lhs, expr)                                                           \
  WEFT_ASSIGN_OR_RETURN_IMPL(WEFT_CONCAT(weft_result_, __LINE__), lhs, expr)
#define WEFT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)                                                 \
  auto tmp = (expr);                                                                               \
  if (!tmp.ok()) return tmp.status();                                                              \
  lhs = std::move(tmp).value()
