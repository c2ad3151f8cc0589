// How an HTTP request that changes something (submit, cancel, drain) reaches the event loop:
// as the same wire request a `coupler` client sends, over an in-process socket the loop polls
// beside its client socket. The loop answers it with the same handlers, checks and replies,
// so the API and the CLI cannot drift apart; the HTTP thread only waits for the reply.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include <zmq.hpp>

#include "runtime/status.h"
#include "runtime/wire/messages.h"

namespace coupler::coordinator::http {

// What jobs submitted through the API record as their submitter. Only a label: requests from
// the API act as Principal::kHttpApi (coordinator/principal.h), never as a name a key file
// could claim, and '@' is outside the characters a key name may hold.
inline constexpr const char* kApiUser = "@http-api";

class LoopChannel {
 public:
  // `endpoint`: the inproc address the loop's socket is bound to, in `ctx`.
  LoopChannel(zmq::context_t& ctx, std::string endpoint) : ctx_(ctx), endpoint_(std::move(endpoint)) {}

  // Sends one request and waits for its reply. Unavailable when the loop does not answer in
  // `timeout` (it is stopping, or stuck); the loop's Error replies come back as that Status.
  Result<wire::Message> Call(const std::string& request, std::chrono::milliseconds timeout);

  // The loop has stopped: calls waiting for it give up at once (so the server can stop
  // without waiting out a submission's timeout), and new ones fail.
  void Stop() { stopped_.store(true); }

 private:
  zmq::context_t& ctx_;
  std::string endpoint_;
  std::atomic<bool> stopped_{false};
};

}  // namespace coupler::coordinator::http
