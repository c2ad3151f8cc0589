#include "coordinator/outbox.h"

#include "runtime/wire/codec.h"
#include "runtime/wire/control_messages.h"

namespace coupler::coordinator {

void Outbox::Error(const ClientRef& to, const Status& status, wire::MessageType about) {
  Reply(to, wire::Encode(wire::ErrorFromStatus(status, about)));
}

}  // namespace coupler::coordinator
