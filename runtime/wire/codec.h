// Turns messages into envelopes and back. Decode is the trust boundary: it takes any bytes from
// the network and returns either a whole, valid message or an InvalidArgument that says what was
// wrong. It never crashes, never throws, and allocates in proportion to the bytes it was given.
// It counts nothing: the caller (an event loop) counts the drops.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "runtime/status.h"
#include "runtime/wire/envelope.h"
#include "runtime/wire/messages.h"

namespace coupler::wire {

struct DecodeLimits {
  // A larger payload is refused before it is looked at. Senders keep batches well below it.
  size_t max_payload_bytes = kDefaultMaxPayloadBytes;
};

// Header + cereal binary payload, version kProtocolVersion. The typed form avoids building a
// variant (and copying a big batch into it) just to send one message. A payload over 4 GiB
// cannot be framed and is a bug in the sender (COUPLER_CHECK).
template <WireMessage T>
std::string Encode(const T& message);
std::string Encode(const Message& message);
// The same in an older layout, `version` in [kMinSupportedVersion, kProtocolVersion]: the fields
// that version lacks are left out (payload_version.h), for a peer that speaks it.
template <WireMessage T>
std::string EncodeAs(const T& message, uint16_t version);

// `bytes` (a whole message of any version this build reads) written again in `version`, its
// epoch kept; the bytes themselves when they are in that version already. For an answer to a
// peer of an older version.
Result<std::string> Reencode(std::string_view bytes, uint16_t version);

// The header's version, or 0 when the header is not one this build reads.
uint16_t PeekVersion(std::string_view bytes);

// The message in `bytes`, or InvalidArgument naming the fault: short header, bad magic,
// unsupported version, unknown type, payload over `limits`, length field != bytes present,
// a malformed payload, or payload bytes left over. ResourceExhausted only if the process
// itself ran out of memory.
Result<Message> Decode(std::string_view bytes, const DecodeLimits& limits = {});

// The message type, from the header alone (magic, version and type are checked; the payload
// is not), so a router can dispatch without decoding.
Result<MessageType> PeekType(std::string_view bytes);

}  // namespace coupler::wire
