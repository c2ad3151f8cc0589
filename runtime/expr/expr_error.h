// ExprError: why an expression was refused and where: a byte offset into its text, which the
// plan's diagnostics turn into "at line:column" inside the param's string.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "runtime/status.h"

namespace coupler::expr {

struct ExprError {
  size_t offset = 0;
  std::string message;  // "unknown column 'x9'"
  std::string hint;     // "did you mean 'x0'?", or empty

  // 1-based "line:column" of `offset` in `text`.
  static std::string Where(std::string_view text, size_t offset);
  // "unknown column 'x9' at 1:12 (did you mean 'x0'?)".
  std::string Describe(std::string_view text) const;
  // InvalidArgument carrying Describe(text), for code that reports a Status.
  Status ToStatus(std::string_view text) const { return InvalidArgument(Describe(text)); }
};

// A value or the error that refused it.
template <typename T>
class ExprResult {
 public:
  ExprResult(T value) : v_(std::move(value)) {}           // NOLINT: implicit like Result
  ExprResult(ExprError error) : v_(std::move(error)) {}   // NOLINT
  bool ok() const { return v_.index() == 0; }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  const ExprError& error() const { return std::get<1>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, ExprError> v_;
};

}  // namespace coupler::expr
