#include "runtime/wire/control_messages.h"

namespace coupler::wire {

Error ErrorFromStatus(const Status& status, MessageType request) {
  COUPLER_CHECK(!status.ok()) << "an Error reply needs a failed Status";
  Error error;
  error.request_type = static_cast<uint16_t>(request);
  error.code = static_cast<uint16_t>(status.code());
  error.message = status.message();
  return error;
}

Status StatusFromError(const Error& error) {
  const auto code = static_cast<StatusCode>(error.code);
  switch (code) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kAborted:
    case StatusCode::kInternal:
    case StatusCode::kPermissionDenied:
    case StatusCode::kCancelled:
    case StatusCode::kInvalidData:
      return Status(code, error.message);
    case StatusCode::kOk:
      break;
  }
  return Internal("peer sent error code " + std::to_string(error.code) + ": " + error.message);
}

}  // namespace coupler::wire
