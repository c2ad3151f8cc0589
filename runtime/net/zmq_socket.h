// ZeroMQ plumbing shared by coordinator, workers and clients: socket setup with the options
// coupler relies on, and framed send/receive of wire envelopes that turn ZeroMQ's exceptions
// into Status values (EAGAIN and EINTR are an ordinary "nothing yet", not an error; a real
// failure of the socket is a Status the caller sees).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <zmq.hpp>

#include "runtime/net/curve_keys.h"
#include "runtime/net/handshake_monitor.h"
#include "runtime/status.h"

namespace coupler::net {

// One message from a ROUTER socket: who sent it and the last frame (the envelope). `reply_prefix`
// holds any delimiter frames between them (a REQ peer's empty frame), echoed on the reply.
struct RoutedMessage {
  std::string identity;
  std::string payload;
  bool has_empty_delimiter = false;
  size_t frames = 0;
  // Who the ZAP handler said the peer is (the name of its authorized key); empty on a
  // plaintext socket.
  std::string user_id;
  // The public key (Z85) the peer's handshake proved, as the ZAP handler attached it (its
  // "X-Key" property); empty on a plaintext socket.
  std::string peer_key;
};

// How a server socket authenticates its peers: CURVE with `keys`, each handshake checked by
// the ZAP handler under `zap_domain`. Null: plaintext (--insecure).
struct ServerSecurity {
  const ServerKeys* keys = nullptr;
  std::string zap_domain;
};

// A ROUTER bound to `endpoint` ("tcp://127.0.0.1:7100", "tcp://127.0.0.1:*" for any port).
// Routing ids are the socket's own, one per connection: a peer cannot choose one and so
// cannot take over another peer's route.
// `peer_queue`: replies held for one peer at most (0: the default, for 100,000s of tasks in
// flight); past it, SendRouted fails at once instead of queueing (a peer that does not read).
// `io_threads`: which of the context's I/O threads serve its connections (a bit mask, ZMQ_AFFINITY;
// 0: any), so one socket's handshakes can be kept off another's thread.
Result<zmq::socket_t> BindRouter(zmq::context_t& ctx, const std::string& endpoint,
                                 const ServerSecurity& security = {}, int peer_queue = 0,
                                 uint64_t io_threads = 0);
// A DEALER connected to `endpoint`; with `keys`, over CURVE as that key to that server. A
// `monitor` is attached before the connect, reporting failed handshakes with `peer`.
Result<zmq::socket_t> ConnectDealer(zmq::context_t& ctx, const std::string& endpoint,
                                    const PeerKeys* keys = nullptr,
                                    HandshakeMonitor* monitor = nullptr,
                                    const std::string& peer = "");
// The endpoint a socket is actually bound to (resolves "*" ports).
std::string LastEndpoint(zmq::socket_t& socket);

// Non-blocking receive; nullopt when nothing is waiting (EAGAIN, or a signal interrupted it).
// A failed receive is a Status: Aborted once the socket's context was shut down (the process
// is stopping: see IsContextShutDown), and only then; Unavailable for any other error.
Result<std::optional<RoutedMessage>> TryRecvRouted(zmq::socket_t& router);
Result<std::optional<std::string>> TryRecv(zmq::socket_t& dealer);
// Blocking receive with a deadline; nullopt on timeout, errors as TryRecv.
Result<std::optional<std::string>> RecvFor(zmq::socket_t& dealer,
                                           std::chrono::milliseconds timeout);
// True for the Status a receive gives once its context was shut down: an ordinary end at
// shutdown, not a failure to report.
bool IsContextShutDown(const Status& status);

// Never blocks: ResourceExhausted when the peer's queue is full (see BindRouter).
Status SendRouted(zmq::socket_t& router, std::string_view identity, std::string_view payload,
                  bool empty_delimiter = false);
// Unavailable instead of blocking when the message cannot be queued.
Status Send(zmq::socket_t& dealer, std::string_view payload);

// Waits until one of the sockets is readable or the timeout passes. Bit i of the result is
// set when socket i is readable; a socket not open (a default-constructed one) never is.
unsigned PollReadable(std::initializer_list<zmq::socket_t*> sockets,
                      std::chrono::milliseconds timeout);

}  // namespace coupler::net
