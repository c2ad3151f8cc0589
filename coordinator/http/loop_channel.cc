#include "coordinator/http/loop_channel.h"

#include <algorithm>

#include "runtime/net/zmq_socket.h"
#include "runtime/wire/codec.h"
#include "runtime/wire/control_messages.h"

namespace coupler::coordinator::http {

Result<wire::Message> LoopChannel::Call(const std::string& request,
                                        std::chrono::milliseconds timeout) {
  // A socket per call: HTTP requests come on several threads, and a ZeroMQ socket must stay
  // on one; an inproc connect costs microseconds.
  const Status stopping = Unavailable("the coordinator is stopping");
  if (stopped_.load()) return stopping;
  COUPLER_ASSIGN_OR_RETURN(zmq::socket_t socket, net::ConnectDealer(ctx_, endpoint_));
  COUPLER_RETURN_IF_ERROR(net::Send(socket, request));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::optional<std::string> bytes;
  while (!bytes) {
    if (stopped_.load()) return stopping;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return Unavailable("the coordinator did not answer within " +
                         std::to_string(timeout.count() / 1000) + " s");
    }
    COUPLER_ASSIGN_OR_RETURN(bytes, net::RecvFor(socket, std::min(left, std::chrono::milliseconds(100))));
  }
  COUPLER_ASSIGN_OR_RETURN(wire::Message msg, wire::Decode(*bytes));
  if (const auto* error = std::get_if<wire::Error>(&msg)) return wire::StatusFromError(*error);
  return msg;
}

}  // namespace coupler::coordinator::http
