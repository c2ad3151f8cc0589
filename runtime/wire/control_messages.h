// Generic replies: Ack when a request needs no other answer, Error when any request failed.
// Error carries a coupler::StatusCode so the far side can rebuild the Status and branch on it.
#pragma once

#include <cstdint>
#include <string>

#include <cereal/types/string.hpp>

#include "runtime/status.h"
#include "runtime/wire/message_type.h"

namespace coupler::wire {

struct Ack {
  static constexpr MessageType kType = MessageType::kAck;

  uint16_t request_type = 0;  // the MessageType acknowledged
  std::string message;        // optional detail for people, e.g. "registered as w-3"

  template <class Archive>
  void serialize(Archive& ar) {
    ar(request_type, message);
  }
  friend bool operator==(const Ack&, const Ack&) = default;
};

struct Error {
  static constexpr MessageType kType = MessageType::kError;

  uint16_t request_type = 0;  // the MessageType that failed
  uint16_t code = 0;          // a coupler::StatusCode value, never kOk
  std::string message;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(request_type, code, message);
  }
  friend bool operator==(const Error&, const Error&) = default;
};

// The Error reply for a failed `request`; `status` must not be OK.
Error ErrorFromStatus(const Status& status, MessageType request);

// The Status an Error stands for. A code this build does not know (a newer peer) or kOk (a
// buggy one) becomes Internal, keeping the text, so an Error never reads as success.
Status StatusFromError(const Error& error);

}  // namespace coupler::wire
