// Every coupler wire message, as one variant for the code that receives "any message" (the
// event loops) and a concept for the code that sends one particular kind.
#pragma once

#include <concepts>
#include <cstddef>
#include <iterator>
#include <type_traits>
#include <utility>
#include <variant>

#include "runtime/wire/client_messages.h"
#include "runtime/wire/control_messages.h"
#include "runtime/wire/message_type.h"
#include "runtime/wire/worker_messages.h"

namespace coupler::wire {

// Order is irrelevant to the wire (the header's type number selects the alternative).
using Message = std::variant<RegisterWorker, Heartbeat, TaskAssignment, TaskResult,
                             LaunchRequest, LaunchDaemon, LaunchOutput, LaunchStop, Registered,
                             ResultAck, RegisterAgain, Reclaim, Reclaimed,  //
                             SubmitJob, SubmitReply, StatusRequest, StatusReply, CancelJob,
                             DrainWorker, WorkersRequest, WorkersReply, RetryJob, BanWorker, FenceGpu,  //
                             Ack, Error>;

// A top-level message struct: it names its own type number.
template <typename T>
concept WireMessage = requires {
  { T::kType } -> std::convertible_to<MessageType>;
};

inline MessageType TypeOf(const Message& message) {
  return std::visit([](const auto& m) { return std::decay_t<decltype(m)>::kType; }, message);
}

namespace internal {

template <size_t... I>
constexpr bool EveryTypeHasOneAlternative(std::index_sequence<I...>) {
  for (MessageType type : kAllMessageTypes) {
    if (((std::variant_alternative_t<I, Message>::kType == type ? 1 : 0) + ...) != 1) {
      return false;
    }
  }
  return true;
}

}  // namespace internal

// Adding a MessageType without its struct (or the reverse) fails here, not on the wire.
static_assert(std::size(kAllMessageTypes) == std::variant_size_v<Message>);
static_assert(internal::EveryTypeHasOneAlternative(
    std::make_index_sequence<std::variant_size_v<Message>>{}));

}  // namespace coupler::wire
