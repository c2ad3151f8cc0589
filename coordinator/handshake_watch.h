// Security handshakes that fail on one of the coordinator's server sockets before any key is
// checked: a peer whose HELLO this coordinator cannot open holds another coordinator's public
// key (a stale coordinator.pub after the coordinator's key set was remade, or the wrong pool's),
// or speaks plaintext to a CURVE socket. The ZAP handler never sees such a peer, so without this
// the coordinator would count and say nothing while the peer retries for ever. Each is counted;
// the first of each interval is logged with the fix. Event loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <zmq.hpp>

#include "runtime/status.h"

namespace coupler::coordinator {

class HandshakeWatch {
 public:
  static constexpr std::chrono::seconds kLogEvery{10};

  // Watches `socket` (named `what`: "workers", "clients" in messages) from now on.
  Status Attach(zmq::context_t& ctx, zmq::socket_t& socket, std::string what);
  // Reads the events that arrived; cheap when there are none.
  void Poll();
  uint64_t failed() const { return failed_; }

 private:
  zmq::socket_t pair_;
  std::string what_;
  bool attached_ = false;
  uint64_t failed_ = 0;
  uint64_t unlogged_ = 0;
  std::chrono::steady_clock::time_point last_log_{};
};

}  // namespace coupler::coordinator
