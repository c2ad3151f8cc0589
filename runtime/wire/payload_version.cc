#include "runtime/wire/payload_version.h"

#include "runtime/wire/envelope.h"

namespace coupler::wire {
namespace {

thread_local uint16_t current_version = kProtocolVersion;

}  // namespace

uint16_t PayloadVersion() { return current_version; }

PayloadVersionScope::PayloadVersionScope(uint16_t version) : previous_(current_version) {
  current_version = version;
}

PayloadVersionScope::~PayloadVersionScope() { current_version = previous_; }

}  // namespace coupler::wire
