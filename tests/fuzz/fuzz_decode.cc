// libFuzzer target for the wire decoder, the one place coupler parses bytes from the network.
// Any input must be rejected cleanly or decode to a message that survives a re-encode.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "runtime/wire/codec.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_decode: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using coupler::Result;
  using namespace coupler::wire;  // NOLINT: a fuzz entry point, not a header
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  Result<Message> first = Decode(bytes);
  Result<MessageType> peeked = PeekType(bytes);
  if (!first.ok()) {
    if (first.status().message().empty()) Fail("rejection without a reason", "");
    return 0;
  }
  if (!peeked.ok() || *peeked != TypeOf(*first)) Fail("PeekType disagrees with Decode", "");

  const std::string once = Encode(*first);
  Result<Message> second = Decode(once);
  if (!second.ok()) Fail("re-encoded message does not decode", second.status().ToString());
  // Equality as bytes, not operator==: a double that decoded to NaN is unequal to itself but
  // must still travel unchanged.
  if (Encode(*second) != once) Fail("re-encode changed the message", "");
  return 0;
}
