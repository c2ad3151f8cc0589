// The numbers that name each coupler wire message in the envelope header. They are part of the
// protocol: a number, once shipped, keeps its meaning; new messages take new numbers.
#pragma once

#include <cstdint>
#include <string_view>

namespace coupler::wire {

// Grouped by who talks: 1-15 worker <-> coordinator, 16-31 client <-> coordinator,
// 32-47 replies anyone may send. Gaps leave room to grow a group without renumbering.
enum class MessageType : uint16_t {
  kRegisterWorker = 1,
  kHeartbeat = 2,
  kTaskAssignment = 3,
  kTaskResult = 4,
  kLaunchRequest = 5,
  kLaunchDaemon = 6,
  kLaunchOutput = 7,
  kLaunchStop = 8,
  kRegistered = 9,
  kResultAck = 10,
  kRegisterAgain = 11,
  kReclaim = 12,
  kReclaimed = 13,

  kSubmitJob = 16,
  kSubmitReply = 17,
  kStatusRequest = 18,
  kStatusReply = 19,
  kCancelJob = 20,
  kDrainWorker = 21,
  kWorkersRequest = 22,
  kWorkersReply = 23,
  kRetryJob = 24,
  kBanWorker = 25,
  kFenceGpu = 26,

  kAck = 32,
  kError = 33,
};

inline constexpr MessageType kAllMessageTypes[] = {
    MessageType::kRegisterWorker, MessageType::kHeartbeat,     MessageType::kTaskAssignment,
    MessageType::kTaskResult,     MessageType::kLaunchRequest, MessageType::kLaunchDaemon,
    MessageType::kLaunchOutput,   MessageType::kLaunchStop,    MessageType::kRegistered,
    MessageType::kResultAck,      MessageType::kRegisterAgain, MessageType::kReclaim,
    MessageType::kReclaimed,      MessageType::kSubmitJob,     MessageType::kSubmitReply,
    MessageType::kStatusRequest,  MessageType::kStatusReply,   MessageType::kCancelJob,
    MessageType::kDrainWorker,    MessageType::kWorkersRequest, MessageType::kWorkersReply,
    MessageType::kRetryJob,       MessageType::kBanWorker,     MessageType::kFenceGpu,
    MessageType::kAck,            MessageType::kError,
};

// "RegisterWorker", ...; "Unknown" for a number outside the enum (e.g. read off the wire).
constexpr std::string_view MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kRegisterWorker: return "RegisterWorker";
    case MessageType::kHeartbeat: return "Heartbeat";
    case MessageType::kTaskAssignment: return "TaskAssignment";
    case MessageType::kTaskResult: return "TaskResult";
    case MessageType::kLaunchRequest: return "LaunchRequest";
    case MessageType::kLaunchDaemon: return "LaunchDaemon";
    case MessageType::kLaunchOutput: return "LaunchOutput";
    case MessageType::kLaunchStop: return "LaunchStop";
    case MessageType::kRegistered: return "Registered";
    case MessageType::kResultAck: return "ResultAck";
    case MessageType::kRegisterAgain: return "RegisterAgain";
    case MessageType::kReclaim: return "Reclaim";
    case MessageType::kReclaimed: return "Reclaimed";
    case MessageType::kSubmitJob: return "SubmitJob";
    case MessageType::kSubmitReply: return "SubmitReply";
    case MessageType::kStatusRequest: return "StatusRequest";
    case MessageType::kStatusReply: return "StatusReply";
    case MessageType::kCancelJob: return "CancelJob";
    case MessageType::kDrainWorker: return "DrainWorker";
    case MessageType::kWorkersRequest: return "WorkersRequest";
    case MessageType::kWorkersReply: return "WorkersReply";
    case MessageType::kRetryJob: return "RetryJob";
    case MessageType::kBanWorker: return "BanWorker";
    case MessageType::kFenceGpu: return "FenceGpu";
    case MessageType::kAck: return "Ack";
    case MessageType::kError: return "Error";
  }
  return "Unknown";
}

// True when `raw` (a type number read off the wire) names a message this build understands.
constexpr bool IsKnownMessageType(uint16_t raw) {
  for (MessageType type : kAllMessageTypes) {
    if (static_cast<uint16_t>(type) == raw) return true;
  }
  return false;
}

}  // namespace coupler::wire
