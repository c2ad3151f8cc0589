#include "coordinator/handshake_watch.h"

#include <cstring>
#include <vector>

#include <zmq_addon.hpp>

#include "runtime/logging.h"
#include "runtime/net/handshake_monitor.h"

namespace coupler::coordinator {

Status HandshakeWatch::Attach(zmq::context_t& ctx, zmq::socket_t& socket, std::string what) {
  what_ = std::move(what);
  COUPLER_ASSIGN_OR_RETURN(pair_, net::OpenSocketMonitor(ctx, socket, ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL));
  attached_ = true;
  return Status::Ok();
}

void HandshakeWatch::Poll() {
  if (!attached_) return;
  for (;;) {
    std::vector<zmq::message_t> frames;
    try {
      if (!zmq::recv_multipart(pair_, std::back_inserter(frames), zmq::recv_flags::dontwait)) break;
    } catch (const zmq::error_t&) {
      break;
    }
    if (frames.empty() || frames[0].size() < 6) continue;
    uint16_t event = 0;
    std::memcpy(&event, frames[0].data(), 2);
    if (event != ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) continue;
    ++failed_;
    ++unlogged_;
  }
  const auto now = std::chrono::steady_clock::now();
  if (unlogged_ == 0 || now - last_log_ < kLogEvery) return;
  Logger("coordinator")->warn(
      "{} security handshake(s) failed on the {} socket before any key was checked: the peer "
      "holds another coordinator's public key (a stale coordinator.pub: give it this one's, "
      "KEYS/coordinator.pub) or speaks plaintext (--insecure) to this CURVE socket "
      "(docs/security.md)",
      unlogged_, what_);
  unlogged_ = 0;
  last_log_ = now;
}

}  // namespace coupler::coordinator
