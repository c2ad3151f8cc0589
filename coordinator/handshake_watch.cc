#include "coordinator/handshake_watch.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <vector>

#include <zmq_addon.hpp>

#include "runtime/logging.h"

namespace coupler::coordinator {

Status HandshakeWatch::Attach(zmq::context_t& ctx, zmq::socket_t& socket, std::string what) {
  static std::atomic<uint64_t> next{0};
  const std::string ep = "inproc://coupler-server-handshakes-" + std::to_string(::getpid()) + "-" +
                         std::to_string(next.fetch_add(1));
  what_ = std::move(what);
  if (zmq_socket_monitor(socket.handle(), ep.c_str(), ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) != 0) {
    return Internal(std::string("zmq_socket_monitor: ") + zmq_strerror(zmq_errno()));
  }
  try {
    pair_ = zmq::socket_t(ctx, zmq::socket_type::pair);
    pair_.set(zmq::sockopt::linger, 0);
    pair_.connect(ep);
  } catch (const zmq::error_t& e) {
    return Internal(std::string("handshake watch: ") + e.what());
  }
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
