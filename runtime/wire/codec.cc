#include "runtime/wire/codec.h"

#include <bit>
#include <cstdint>
#include <exception>
#include <limits>
#include <new>
#include <utility>

#include <cereal/archives/binary.hpp>

#include "runtime/wire/bounded_archive.h"
#include "runtime/wire/payload_version.h"
#include "runtime/wire/string_archive.h"

namespace coupler::wire {
namespace {

// cereal's binary archives write numbers in host byte order; the header is explicit
// little-endian, and so is the payload as long as every host is. A big-endian port needs a
// portable payload archive and a version bump.
static_assert(std::endian::native == std::endian::little,
              "the wire payload is little-endian; see docs/protocol.md");

template <WireMessage T>
Result<Message> DecodePayload(std::string_view payload) {
  T message;
  BoundedInputArchive archive(payload);
  try {
    archive(message);
  } catch (const std::bad_alloc&) {
    // Allocation is bounded by the payload, so this is the process's memory, not the message.
    return ResourceExhausted("out of memory decoding " + std::string(MessageTypeName(T::kType)));
  } catch (const std::exception& e) {
    return InvalidArgument("malformed " + std::string(MessageTypeName(T::kType)) +
                           " payload: " + e.what());
  } catch (...) {
    return InvalidArgument("malformed " + std::string(MessageTypeName(T::kType)) + " payload");
  }
  if (archive.remaining() != 0) {
    return InvalidArgument(std::string(MessageTypeName(T::kType)) + " payload has " +
                           std::to_string(archive.remaining()) +
                           " trailing bytes after the message");
  }
  return Message(std::move(message));
}

template <size_t I = 0>
Result<Message> DecodePayloadOfType(MessageType type, std::string_view payload) {
  if constexpr (I < std::variant_size_v<Message>) {
    using T = std::variant_alternative_t<I, Message>;
    if (T::kType == type) return DecodePayload<T>(payload);
    return DecodePayloadOfType<I + 1>(type, payload);
  } else {
    // ReadHeader admits only known types and messages.h checks each has an alternative.
    return Internal("no decoder for message type " +
                    std::to_string(static_cast<uint16_t>(type)));
  }
}

}  // namespace

template <WireMessage T>
std::string Encode(const T& message) {
  return EncodeAs(message, kProtocolVersion);
}

template <WireMessage T>
std::string EncodeAs(const T& message, uint16_t version) {
  std::string out(kHeaderSize, '\0');
  {
    PayloadVersionScope scope(version);
    StringOutputArchive archive(&out);
    archive(message);
  }
  const size_t payload_size = out.size() - kHeaderSize;
  COUPLER_CHECK(payload_size <= std::numeric_limits<uint32_t>::max())
      << MessageTypeName(T::kType) << " payload of " << payload_size
      << " bytes cannot be framed; send smaller batches";
  WriteHeader({version, T::kType, static_cast<uint32_t>(payload_size), 0}, out.data());
  return out;
}

// One per Message alternative; a missing line is a link error, not a silent gap.
template std::string Encode(const RegisterWorker&);
template std::string Encode(const Heartbeat&);
template std::string Encode(const TaskAssignment&);
template std::string Encode(const TaskResult&);
template std::string Encode(const LaunchRequest&);
template std::string Encode(const LaunchDaemon&);
template std::string Encode(const LaunchOutput&);
template std::string Encode(const LaunchStop&);
template std::string Encode(const Registered&);
template std::string Encode(const ResultAck&);
template std::string Encode(const RegisterAgain&);
template std::string Encode(const Reclaim&);
template std::string Encode(const Reclaimed&);
template std::string Encode(const SubmitJob&);
template std::string Encode(const SubmitReply&);
template std::string Encode(const StatusRequest&);
template std::string Encode(const StatusReply&);
template std::string Encode(const CancelJob&);
template std::string Encode(const RetryJob&);
template std::string Encode(const DrainWorker&);
template std::string Encode(const BanWorker&);
template std::string Encode(const FenceGpu&);
template std::string Encode(const WorkersRequest&);
template std::string Encode(const WorkersReply&);
template std::string Encode(const Ack&);
template std::string Encode(const Error&);
template std::string EncodeAs(const RegisterWorker&, uint16_t);
template std::string EncodeAs(const Heartbeat&, uint16_t);
template std::string EncodeAs(const TaskAssignment&, uint16_t);
template std::string EncodeAs(const TaskResult&, uint16_t);
template std::string EncodeAs(const LaunchRequest&, uint16_t);
template std::string EncodeAs(const LaunchDaemon&, uint16_t);
template std::string EncodeAs(const LaunchOutput&, uint16_t);
template std::string EncodeAs(const LaunchStop&, uint16_t);
template std::string EncodeAs(const Registered&, uint16_t);
template std::string EncodeAs(const ResultAck&, uint16_t);
template std::string EncodeAs(const RegisterAgain&, uint16_t);
template std::string EncodeAs(const Reclaim&, uint16_t);
template std::string EncodeAs(const Reclaimed&, uint16_t);
template std::string EncodeAs(const SubmitJob&, uint16_t);
template std::string EncodeAs(const SubmitReply&, uint16_t);
template std::string EncodeAs(const StatusRequest&, uint16_t);
template std::string EncodeAs(const StatusReply&, uint16_t);
template std::string EncodeAs(const CancelJob&, uint16_t);
template std::string EncodeAs(const RetryJob&, uint16_t);
template std::string EncodeAs(const DrainWorker&, uint16_t);
template std::string EncodeAs(const BanWorker&, uint16_t);
template std::string EncodeAs(const FenceGpu&, uint16_t);
template std::string EncodeAs(const WorkersRequest&, uint16_t);
template std::string EncodeAs(const WorkersReply&, uint16_t);
template std::string EncodeAs(const Ack&, uint16_t);
template std::string EncodeAs(const Error&, uint16_t);

std::string Encode(const Message& message) {
  return std::visit([](const auto& m) { return Encode(m); }, message);
}

Result<Message> Decode(std::string_view bytes, const DecodeLimits& limits) {
  COUPLER_ASSIGN_OR_RETURN(const Header header, ReadHeader(bytes));
  const std::string type_name(MessageTypeName(header.type));
  if (header.payload_size > limits.max_payload_bytes) {
    return InvalidArgument(type_name + " payload of " + std::to_string(header.payload_size) +
                           " bytes exceeds the limit of " +
                           std::to_string(limits.max_payload_bytes) + " bytes");
  }
  const size_t present = bytes.size() - kHeaderSize;
  if (header.payload_size != present) {
    return InvalidArgument(type_name + " length field says " +
                           std::to_string(header.payload_size) + " payload bytes but " +
                           std::to_string(present) + " follow the header (" +
                           (present < header.payload_size ? "truncated" : "trailing bytes") + ")");
  }
  PayloadVersionScope scope(header.version);
  return DecodePayloadOfType(header.type, bytes.substr(kHeaderSize));
}

Result<std::string> Reencode(std::string_view bytes, uint16_t version) {
  if (version < kMinSupportedVersion || version > kProtocolVersion) {
    return InvalidArgument("cannot write protocol version " + std::to_string(version) +
                           " (this build writes " + std::to_string(kMinSupportedVersion) + " to " +
                           std::to_string(kProtocolVersion) + ")");
  }
  COUPLER_ASSIGN_OR_RETURN(const Header header, ReadHeader(bytes));
  if (header.version == version) return std::string(bytes);
  COUPLER_ASSIGN_OR_RETURN(const Message message, Decode(bytes));
  std::string out = std::visit([version](const auto& m) { return EncodeAs(m, version); }, message);
  StampEpoch(out, header.epoch);
  return out;
}

uint16_t PeekVersion(std::string_view bytes) {
  Result<Header> header = ReadHeader(bytes);
  return header.ok() ? header->version : 0;
}

Result<MessageType> PeekType(std::string_view bytes) {
  COUPLER_ASSIGN_OR_RETURN(const Header header, ReadHeader(bytes));
  return header.type;
}

}  // namespace coupler::wire
