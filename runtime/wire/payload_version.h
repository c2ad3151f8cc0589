// The protocol version of the payload being encoded or decoded on this thread, so a serialize
// function writes and reads only the fields that version has: a field new in version N is
// guarded by `if (PayloadVersion() >= N)`. That is what lets a coordinator of version N read
// and answer peers of N-1 (a rolling upgrade), and a worker speak N-1 to a coordinator not yet
// upgraded. Set by the codec (codec.h) around each payload; outside one it is kProtocolVersion.
#pragma once

#include <cstdint>

namespace coupler::wire {

uint16_t PayloadVersion();

// Sets the version for the current thread for its lifetime, restoring the previous one after.
class PayloadVersionScope {
 public:
  explicit PayloadVersionScope(uint16_t version);
  ~PayloadVersionScope();
  PayloadVersionScope(const PayloadVersionScope&) = delete;
  PayloadVersionScope& operator=(const PayloadVersionScope&) = delete;

 private:
  uint16_t previous_;
};

}  // namespace coupler::wire
