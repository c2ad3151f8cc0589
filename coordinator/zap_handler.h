// ZapHandler: the coordinator's ZeroMQ authentication handler (ZAP, RFC 27). CURVE alone only
// proves the server to its peers; libzmq asks this handler about every peer's key, and it
// admits a key only if it is on the allow-list of the socket's domain ("workers" or
// "clients"). The name of the key's file is the peer's identity from then on (User-Id).
// Runs on its own thread, bound to inproc://zeromq.zap.01 of the coordinator's context
// before any server socket binds; stopped and joined by its destructor.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "runtime/net/curve_keys.h"
#include "runtime/status.h"

namespace coupler::coordinator {

inline constexpr const char* kWorkersDomain = "workers";
inline constexpr const char* kClientsDomain = "clients";

// The allow-lists, read from disk when they change (a key added or removed counts at the
// next handshake, without a restart).
class AllowLists {
 public:
  explicit AllowLists(net::ServerKeys keys) : keys_(std::move(keys)) {}
  // The name of `public_z85` in the domain's list, or nullopt when it is not listed.
  std::optional<std::string> Find(const std::string& domain, const std::string& public_z85);
  // Is the client named `name` (its key in authorized/clients/) also in authorized/admins/?
  bool IsAdmin(const std::string& name);

 private:
  struct Cached {
    std::filesystem::file_time_type mtime{};
    std::map<std::string, std::string> keys;  // public -> name
    bool loaded = false;
  };
  const std::map<std::string, std::string>& Load(const std::string& dir);

  net::ServerKeys keys_;
  std::mutex mu_;
  std::map<std::string, Cached> cache_;
};

class ZapHandler {
 public:
  static Result<std::unique_ptr<ZapHandler>> Start(zmq::context_t& ctx,
                                                   std::shared_ptr<AllowLists> lists);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // Handshakes refused so far (any domain).
  uint64_t refused() const { return refused_.load(); }

 private:
  ZapHandler(std::shared_ptr<AllowLists> lists, zmq::socket_t socket, zmq::socket_t wake,
             zmq::socket_t waker);
  void Loop();
  // Answers one request (a malformed one with status 500).
  void Answer(std::vector<zmq::message_t>& request);

  std::shared_ptr<AllowLists> lists_;
  zmq::socket_t socket_;
  // The destructor's one message on waker_ ends the loop's poll of wake_ at once: a stopping
  // coordinator does not wait out a poll timeout (up to 100 ms on every shutdown).
  zmq::socket_t wake_;   // the loop thread's
  zmq::socket_t waker_;  // the destructor's
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> refused_{0};
  std::set<std::string> logged_;  // keys already reported as refused (loop thread only)
  std::thread thread_;
};

}  // namespace coupler::coordinator
