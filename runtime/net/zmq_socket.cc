#include "runtime/net/zmq_socket.h"

#include <vector>

#include <zmq_addon.hpp>

namespace coupler::net {
namespace {

// Enough queued messages for 100,000s of tasks in flight; beyond it, sends block, never drop.
constexpr int kHighWaterMark = 200'000;
constexpr int kReconnectBaseMs = 100;
constexpr int kReconnectMaxMs = 5000;

Status ZmqError(const std::string& what, const zmq::error_t& e) {
  return Unavailable(what + ": " + e.what());
}

// A receive's exception as a result: EINTR is "nothing yet" (the caller's loop checks its stop
// flag and polls again), ETERM the end of the context, anything else the socket's failure.
Result<bool> RecvError(const zmq::error_t& e) {
  if (e.num() == EINTR || e.num() == EAGAIN) return false;
  if (e.num() == ETERM) return Aborted("receive: the ZeroMQ context was shut down");
  return ZmqError("receive", e);
}

// Every frame of the next message, if one is waiting: true when `frames` got one.
Result<bool> RecvFrames(zmq::socket_t& socket, std::vector<zmq::message_t>& frames) {
  // A closed socket would reach libzmq as a null handle.
  if (!socket.handle()) return Unavailable("receive: the socket is closed");
  try {
    return zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait)
        .has_value();
  } catch (const zmq::error_t& e) {
    return RecvError(e);
  }
}

}  // namespace

Result<zmq::socket_t> BindRouter(zmq::context_t& ctx, const std::string& endpoint,
                                 const ServerSecurity& security, int peer_queue,
                                 uint64_t io_threads) {
  try {
    zmq::socket_t s(ctx, zmq::socket_type::router);
    s.set(zmq::sockopt::linger, 0);
    if (io_threads != 0) s.set(zmq::sockopt::affinity, io_threads);
    s.set(zmq::sockopt::sndhwm, peer_queue > 0 ? peer_queue : kHighWaterMark);
    s.set(zmq::sockopt::rcvhwm, peer_queue > 0 ? peer_queue : kHighWaterMark);
    if (peer_queue > 0) {
      // Full queues and gone peers become errors the caller counts, not silent drops.
      s.set(zmq::sockopt::router_mandatory, 1);
    }
    if (security.keys != nullptr) {
      s.set(zmq::sockopt::curve_server, 1);
      s.set(zmq::sockopt::curve_secretkey, security.keys->own.secret_z85);
      // The domain names the allow-list; it also makes libzmq consult the ZAP handler.
      s.set(zmq::sockopt::zap_domain, security.zap_domain);
    }
    s.bind(endpoint);
    return s;
  } catch (const zmq::error_t& e) {
    return ZmqError("cannot listen on " + endpoint, e);
  }
}

Result<zmq::socket_t> ConnectDealer(zmq::context_t& ctx, const std::string& endpoint,
                                    const PeerKeys* keys, HandshakeMonitor* monitor,
                                    const std::string& peer) {
  try {
    zmq::socket_t s(ctx, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    // Reconnection backs off exponentially to kReconnectMaxMs, and libzmq adds a random jitter
    // of up to one base interval to each wait: a pool of hundreds coming back to a restarted
    // coordinator spreads out instead of arriving in one burst.
    s.set(zmq::sockopt::reconnect_ivl, kReconnectBaseMs);
    s.set(zmq::sockopt::reconnect_ivl_max, kReconnectMaxMs);
    s.set(zmq::sockopt::sndhwm, kHighWaterMark);
    s.set(zmq::sockopt::rcvhwm, kHighWaterMark);
    if (keys != nullptr) {
      s.set(zmq::sockopt::curve_serverkey, keys->server_public_z85);
      s.set(zmq::sockopt::curve_publickey, keys->own.public_z85);
      s.set(zmq::sockopt::curve_secretkey, keys->own.secret_z85);
    }
    if (monitor != nullptr) COUPLER_RETURN_IF_ERROR(monitor->Attach(ctx, s, peer));
    s.connect(endpoint);
    return s;
  } catch (const zmq::error_t& e) {
    return ZmqError("cannot connect to " + endpoint, e);
  }
}

std::string LastEndpoint(zmq::socket_t& socket) {
  try {
    return socket.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t&) {
    return {};
  }
}

Result<std::optional<RoutedMessage>> TryRecvRouted(zmq::socket_t& router) {
  std::vector<zmq::message_t> frames;
  COUPLER_ASSIGN_OR_RETURN(const bool got, RecvFrames(router, frames));
  if (!got) return std::optional<RoutedMessage>();
  RoutedMessage m;
  m.frames = frames.size();
  if (frames.empty()) return std::optional<RoutedMessage>(std::move(m));
  m.identity = frames.front().to_string();
  if (frames.size() >= 2) m.payload = frames.back().to_string();
  if (const char* user = zmq_msg_gets(frames.back().handle(), "User-Id")) m.user_id = user;
  if (const char* key = zmq_msg_gets(frames.back().handle(), "X-Key")) m.peer_key = key;
  m.has_empty_delimiter = frames.size() >= 3 && frames[1].size() == 0;
  return std::optional<RoutedMessage>(std::move(m));
}

Result<std::optional<std::string>> TryRecv(zmq::socket_t& dealer) {
  std::vector<zmq::message_t> frames;
  COUPLER_ASSIGN_OR_RETURN(const bool got, RecvFrames(dealer, frames));
  if (!got) return std::optional<std::string>();
  if (frames.empty()) return std::optional<std::string>(std::string());
  return std::optional<std::string>(frames.back().to_string());
}

Result<std::optional<std::string>> RecvFor(zmq::socket_t& dealer,
                                           std::chrono::milliseconds timeout) {
  // Received even when the poll saw nothing: a poll that failed (a closed socket, a context
  // shut down) then says why instead of passing for a timeout.
  if (dealer.handle()) PollReadable({&dealer}, timeout);
  return TryRecv(dealer);
}

bool IsContextShutDown(const Status& status) {
  return status.code() == StatusCode::kAborted;
}

Status SendRouted(zmq::socket_t& router, std::string_view identity, std::string_view payload,
                  bool empty_delimiter) {
  try {
    // The first frame decides: a full (or, with router_mandatory, a gone) peer refuses it,
    // and then nothing of the message is queued.
    if (!router.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
      return ResourceExhausted("send: the peer's queue is full (it does not read its replies)");
    }
    if (empty_delimiter) router.send(zmq::message_t(), zmq::send_flags::sndmore);
    router.send(zmq::buffer(payload), zmq::send_flags::none);
    return Status::Ok();
  } catch (const zmq::error_t& e) {
    return ZmqError("send", e);
  }
}

Status Send(zmq::socket_t& dealer, std::string_view payload) {
  try {
    // Never blocks: a DEALER with no pipe (its only peer refused the handshake) or a full one
    // would otherwise hang the caller's loop for good.
    if (!dealer.send(zmq::buffer(payload), zmq::send_flags::dontwait)) {
      return Unavailable("send: not connected, or the send queue is full");
    }
    return Status::Ok();
  } catch (const zmq::error_t& e) {
    return ZmqError("send", e);
  }
}

unsigned PollReadable(std::initializer_list<zmq::socket_t*> sockets,
                      std::chrono::milliseconds timeout) {
  std::vector<zmq::pollitem_t> items;
  std::vector<unsigned> bits;  // the caller's bit of each item
  unsigned bit = 1;
  for (zmq::socket_t* s : sockets) {
    // A socket never opened (a feature turned off) is skipped: a null handle in a poll item
    // would mean "file descriptor 0".
    if (s->handle() != nullptr) {
      items.push_back({s->handle(), 0, ZMQ_POLLIN, 0});
      bits.push_back(bit);
    }
    bit <<= 1;
  }
  try {
    zmq::poll(items, timeout);
  } catch (const zmq::error_t&) {
    return 0;  // EINTR: a signal arrived; the caller's loop checks its stop flag
  }
  unsigned mask = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].revents & ZMQ_POLLIN) mask |= bits[i];
  }
  return mask;
}

}  // namespace coupler::net
