// Watches a connecting socket's security handshakes, so a key the coordinator refuses is one
// clear error at once, not silence until a timeout (libzmq keeps retrying a refused
// connection quietly).
#pragma once

#include <optional>
#include <string>

#include <zmq.hpp>

#include "runtime/status.h"

namespace coupler::net {

// A PAIR socket on which `socket`'s events in the mask `events` arrive (zmq_socket_monitor over
// an inproc endpoint of its own), read with recv_multipart: frame 0 holds the event (u16) and
// its value (u32).
Result<zmq::socket_t> OpenSocketMonitor(zmq::context_t& ctx, zmq::socket_t& socket, int events);

class HandshakeMonitor {
 public:
  HandshakeMonitor() = default;
  HandshakeMonitor(HandshakeMonitor&&) noexcept = default;
  HandshakeMonitor& operator=(HandshakeMonitor&&) noexcept = default;

  // Starts watching `socket`; call before it connects, so no event is missed.
  Status Attach(zmq::context_t& ctx, zmq::socket_t& socket, std::string peer);

  // Reads the events that arrived. A failed handshake is returned as PermissionDenied (the
  // peer refused our key) or Unavailable (the peer is not the server our keys name, or does
  // not speak CURVE); nullopt while none failed. A handshake cut short by a lost connection is
  // not a failure: libzmq reconnects by itself.
  std::optional<Status> Poll();
  // True once a handshake has succeeded.
  bool succeeded() const { return succeeded_; }
  // Handshakes the peer cut short. One is a restart; every attempt cut, and none succeeding,
  // is a peer that ends each handshake, as a CURVE server does with a plaintext client when
  // libzmq sees the close before the mismatch (which one it sees is a race).
  int cut_short() const { return cut_short_; }
  // Of those, the ones since the last handshake that succeeded: a long run of them, none
  // succeeding, is a peer that no longer accepts these keys (its key set was remade).
  int cut_short_since_success() const { return cut_since_success_; }
  zmq::socket_t* socket() { return attached_ ? &pair_ : nullptr; }

 private:
  zmq::socket_t pair_;
  std::string peer_;
  bool attached_ = false;
  bool succeeded_ = false;
  int cut_short_ = 0;
  int cut_since_success_ = 0;
};

}  // namespace coupler::net
