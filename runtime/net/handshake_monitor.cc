#include "runtime/net/handshake_monitor.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <vector>

#include <zmq_addon.hpp>

namespace coupler::net {

Result<zmq::socket_t> OpenSocketMonitor(zmq::context_t& ctx, zmq::socket_t& socket, int events) {
  static std::atomic<uint64_t> next{0};
  const std::string ep = "inproc://coupler-socket-events-" + std::to_string(::getpid()) + "-" +
                         std::to_string(next.fetch_add(1));
  if (zmq_socket_monitor(socket.handle(), ep.c_str(), events) != 0) {
    return Internal(std::string("zmq_socket_monitor: ") + zmq_strerror(zmq_errno()));
  }
  try {
    zmq::socket_t pair(ctx, zmq::socket_type::pair);
    pair.set(zmq::sockopt::linger, 0);
    pair.connect(ep);
    return pair;
  } catch (const zmq::error_t& e) {
    return Internal(std::string("socket monitor: ") + e.what());
  }
}

Status HandshakeMonitor::Attach(zmq::context_t& ctx, zmq::socket_t& socket, std::string peer) {
  peer_ = std::move(peer);
  COUPLER_ASSIGN_OR_RETURN(pair_, OpenSocketMonitor(ctx, socket,
                                                    ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
                                                        ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                                                        ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                                        ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL));
  attached_ = true;
  return Status::Ok();
}

std::optional<Status> HandshakeMonitor::Poll() {
  if (!attached_) return std::nullopt;
  for (;;) {
    std::vector<zmq::message_t> frames;
    try {
      if (!zmq::recv_multipart(pair_, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
        return std::nullopt;
      }
    } catch (const zmq::error_t&) {
      return std::nullopt;
    }
    if (frames.empty() || frames[0].size() < 6) continue;
    uint16_t event = 0;
    uint32_t value = 0;
    std::memcpy(&event, frames[0].data(), 2);
    std::memcpy(&value, static_cast<const char*>(frames[0].data()) + 2, 4);
    switch (event) {
      case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
        succeeded_ = true;
        cut_since_success_ = 0;
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
        return Status(StatusCode::kPermissionDenied,
                      peer_ + " refused this key (ZAP status " + std::to_string(value) +
                          "): ask its operator to add your NAME.pub to its allow-list "
                          "(docs/security.md)");
      case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
        // A connection cut mid-handshake (the coordinator restarting): libzmq retries, and so
        // do we. Only a refusal or a wrong key is final; the caller weighs the count.
        ++cut_short_;
        ++cut_since_success_;
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        return Unavailable("the security handshake with " + peer_ +
                           " failed: it is not the coordinator whose coordinator.pub this key "
                           "set holds, or it does not run with the same --insecure setting");
      default:
        break;
    }
  }
}

}  // namespace coupler::net
