#include "runtime/wire/envelope.h"

#include <string>

namespace coupler::wire {
namespace {

void PutU16(uint16_t v, char* out) {
  out[0] = static_cast<char>(v & 0xff);
  out[1] = static_cast<char>(v >> 8);
}

void PutU32(uint32_t v, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

void PutU64(uint64_t v, char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint16_t GetU16(const char* in) {
  return static_cast<uint16_t>(static_cast<uint8_t>(in[0]) |
                               (static_cast<uint16_t>(static_cast<uint8_t>(in[1])) << 8));
}

uint32_t GetU32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  return v;
}

uint64_t GetU64(const char* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  return v;
}

}  // namespace

void WriteHeader(const Header& header, char* out) {
  for (size_t i = 0; i < sizeof(kMagic); ++i) out[i] = kMagic[i];
  PutU16(header.version, out + 4);
  PutU16(static_cast<uint16_t>(header.type), out + 6);
  PutU32(header.payload_size, out + 8);
  PutU64(header.epoch, out + 12);
}

void StampEpoch(std::string& message, uint64_t epoch) {
  if (message.size() >= kHeaderSize) PutU64(epoch, message.data() + 12);
}

Result<Header> ReadHeader(std::string_view bytes) {
  if (bytes.size() < kHeaderSize) {
    return InvalidArgument("truncated message: " + std::to_string(bytes.size()) +
                           " bytes, shorter than the " + std::to_string(kHeaderSize) +
                           "-byte header");
  }
  if (bytes.substr(0, sizeof(kMagic)) != std::string_view(kMagic, sizeof(kMagic))) {
    return InvalidArgument("bad magic: not a coupler message (expected \"CPLR\")");
  }
  Header header;
  header.version = GetU16(bytes.data() + 4);
  if (header.version < kMinSupportedVersion || header.version > kProtocolVersion) {
    return InvalidArgument("unsupported protocol version " + std::to_string(header.version) +
                           " (this build reads " + std::to_string(kMinSupportedVersion) + " to " +
                           std::to_string(kProtocolVersion) + ")");
  }
  const uint16_t raw_type = GetU16(bytes.data() + 6);
  if (!IsKnownMessageType(raw_type)) {
    return InvalidArgument("unknown message type " + std::to_string(raw_type));
  }
  header.type = static_cast<MessageType>(raw_type);
  header.payload_size = GetU32(bytes.data() + 8);
  header.epoch = GetU64(bytes.data() + 12);
  return header;
}

}  // namespace coupler::wire
