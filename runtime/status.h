// Status and Result<T>: how every fallible call in coupler reports failure. A few codes only,
// so callers can branch on the kind (ResourceExhausted = out of memory, back off) and print the
// message for people.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "runtime/check.h"

namespace coupler {

// The numbers are pinned: they travel on the wire (Error.code, TaskOutcome.error_code; the
// table in docs/protocol.md), so a new code takes the next free number and none is ever reused.
enum class StatusCode : uint16_t {
  kOk = 0,
  kInvalidArgument = 1,
  kNotFound = 2,
  kUnavailable = 3,
  kResourceExhausted = 4,
  kDeadlineExceeded = 5,
  kAborted = 6,
  kInternal = 7,
  // Authenticated, but not allowed (a key not on an allow-list, a job that is not yours).
  kPermissionDenied = 8,
  // Stopped because someone asked (a cancelled job's task): an outcome of its own, neither a
  // failure to retry nor one to report.
  kCancelled = 9,
  // The task's own input or parameters are wrong and will be as wrong on the next attempt: a
  // CSV field that does not parse, a column the shard lacks or holds in another type, a param
  // value out of range, an input an upstream task explained it never wrote. The coordinator
  // fails such a task after its one attempt, whatever `retries:` says. Ops keep returning
  // InvalidArgument for these; the worker's task runner reports them as InvalidData
  // (worker/task_runner.cc). Everything else a task fails with (I/O errors, a full disk, a
  // timeout, a lost worker, a command exiting non-zero) may go away and is retried.
  kInvalidData = 10,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "InvalidArgument: <message>", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>", so a failure deep in a call chain
  // still says where it happened.
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
inline Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status PermissionDenied(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }
inline Status Cancelled(std::string m = "cancelled") { return {StatusCode::kCancelled, std::move(m)}; }
inline Status InvalidData(std::string m) { return {StatusCode::kInvalidData, std::move(m)}; }

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {  // NOLINT: implicit by design
    COUPLER_CHECK(!std::get<Status>(data_).ok()) << "Result built from an OK status";
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(data_);
  }

  T& value() & {
    COUPLER_CHECK(ok()) << "value() on failed Result: " << status().ToString();
    return std::get<T>(data_);
  }
  const T& value() const& {
    COUPLER_CHECK(ok()) << "value() on failed Result: " << status().ToString();
    return std::get<T>(data_);
  }
  T&& value() && {
    COUPLER_CHECK(ok()) << "value() on failed Result: " << status().ToString();
    return std::get<T>(std::move(data_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace coupler

#define COUPLER_STATUS_CONCAT_INNER(a, b) a##b
#define COUPLER_STATUS_CONCAT(a, b) COUPLER_STATUS_CONCAT_INNER(a, b)

#define COUPLER_RETURN_IF_ERROR(expr)             \
  do {                                            \
    ::coupler::Status coupler_status_ = (expr);   \
    if (!coupler_status_.ok()) return coupler_status_; \
  } while (0)

// COUPLER_ASSIGN_OR_RETURN(auto x, MaybeX()); — unwraps a Result or returns its Status.
#define COUPLER_ASSIGN_OR_RETURN(lhs, rexpr) \
  COUPLER_ASSIGN_OR_RETURN_IMPL(COUPLER_STATUS_CONCAT(coupler_result_, __LINE__), lhs, rexpr)
#define COUPLER_ASSIGN_OR_RETURN_IMPL(result, lhs, rexpr) \
  auto result = (rexpr);                                  \
  if (!result.ok()) return result.status();               \
  lhs = std::move(result).value()
