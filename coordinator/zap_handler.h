// ZapHandler: the coordinator's ZeroMQ authentication handler (ZAP, RFC 27). CURVE alone only
// proves the server to its peers; libzmq asks this handler about every peer's key, and it
// admits a key only if it is on the allow-list of the socket's domain ("workers" or
// "clients"). The name of the key's file is the peer's name from then on (User-Id), and the
// key itself travels with every message of the connection (the "X-Key" property), so the
// event loop can tell a connection whose key has since left its list (SessionCheck).
// Runs on its own thread, bound to inproc://zeromq.zap.01 of the coordinator's context
// before any server socket binds; stopped and joined by its destructor.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <zmq.hpp>

#include "runtime/net/curve_keys.h"
#include "runtime/status.h"

namespace coupler::coordinator {

inline constexpr const char* kWorkersDomain = "workers";
inline constexpr const char* kClientsDomain = "clients";
// The ZAP metadata property that carries the peer's public key (Z85) onto its messages.
inline constexpr const char* kKeyProperty = "X-Key";

// The allow-lists (authorized/{workers,clients,admins}/), re-read by content: a file added,
// removed, or replaced in place (same name, new key: the folder itself does not change) counts
// within kRefreshEvery. Files are read on the ZAP thread only (Find, Refresh); the event loop
// reads what they held from memory (Lookup, IsAdmin, generation).
class AllowLists {
 public:
  static constexpr std::chrono::milliseconds kRefreshEvery{250};

  // Reads every list once.
  explicit AllowLists(net::ServerKeys keys);

  // ZAP thread. The name of `public_z85` in the domain's list, or nullopt when it is not
  // listed; a list whose folder changed (a file added or removed) is re-read first, so a key
  // just added counts at its first handshake.
  std::optional<std::string> Find(const std::string& domain, const std::string& public_z85);
  // ZAP thread, every kRefreshEvery: re-reads each list whose files changed (inode, size,
  // modification or change time), or changed so recently that a rewrite of the same size
  // could share the timestamps of the last read.
  void Refresh();

  // Any thread, no file read: the name `public_z85` has now in the domain's list.
  std::optional<std::string> Lookup(const std::string& domain, const std::string& public_z85) const;
  // Any thread, no file read: does the domain's list hold a key under this name?
  bool HasName(const std::string& domain, const std::string& name) const;
  // Any thread, no file read: is this (client) key in authorized/admins/? By key, never by
  // name: an admins/ file replaced with another key takes the old key's rights away.
  bool IsAdmin(const std::string& public_z85) const;
  // Grows whenever a list's keys changed: a verdict cached under an older one is stale.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  enum List : int { kWorkers = 0, kClients = 1, kAdmins = 2, kListCount = 3 };
  struct Stamp {
    uint64_t inode = 0, size = 0;
    int64_t mtime_ns = 0, ctime_ns = 0;
    bool operator==(const Stamp&) const = default;
  };
  // What the ZAP thread knows of a list's files at its last read.
  struct Watch {
    std::string dir;
    int64_t dir_mtime_ns = -1;
    std::map<std::string, Stamp> stamps;  // file name -> stamp before the last read
    std::set<std::string> problems;       // reported already (each once while it lasts)
  };
  static int ListOf(const std::string& domain);
  // Re-reads list `l` when its files changed (`full`: every file's stamp; otherwise only the
  // folder's modification time).
  void Check(int l, bool full);

  net::ServerKeys keys_;
  Watch watch_[kListCount];  // ZAP thread only (and the constructor)
  mutable std::mutex mu_;
  std::map<std::string, std::string> keys_by_list_[kListCount];  // public -> name; under mu_
  std::atomic<uint64_t> generation_{1};
  std::chrono::steady_clock::time_point last_refresh_{};
};

// Whether a message on a connection opened earlier still comes from an allowed key: the key
// must still be listed in its domain, under the name its handshake gave. One verdict per key,
// kept until the lists change (AllowLists::generation), so a message costs a map lookup, never
// a file read. Event loop thread only.
class SessionCheck {
 public:
  explicit SessionCheck(std::shared_ptr<AllowLists> lists) : lists_(std::move(lists)) {}

  struct Verdict {
    bool allowed = false;
    bool first_refusal = false;  // the first refusal of this key since the lists changed
  };
  Verdict Check(const std::string& domain, const std::string& name, const std::string& public_z85);

 private:
  struct Known {
    std::optional<std::string> name;  // the key's name in the list now
    bool refusal_reported = false;
  };
  std::shared_ptr<AllowLists> lists_;
  uint64_t generation_ = 0;
  std::unordered_map<std::string, Known> workers_;  // by public key
  std::unordered_map<std::string, Known> clients_;
};

class ZapHandler {
 public:
  // Refused handshakes are logged one by one for the first few source addresses of an interval,
  // and the rest in one summary line at its end: a peer retrying, or a flood of fresh keys,
  // adds a few lines, not one per handshake.
  static constexpr std::chrono::seconds kRefusalInterval{10};
  static constexpr size_t kRefusalLinesPerInterval = 3;

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
  // Counts a refused handshake, and logs it when its address is among the interval's first.
  void NoteRefused(const std::string& domain, const std::string& address, const std::string& who);
  // Logs the interval's refusals not logged one by one, once the interval has passed.
  void ReportRefusals(bool force);

  std::shared_ptr<AllowLists> lists_;
  zmq::socket_t socket_;
  // The destructor's one message on waker_ ends the loop's poll of wake_ at once: a stopping
  // coordinator does not wait out a poll timeout (up to 100 ms on every shutdown).
  zmq::socket_t wake_;   // the loop thread's
  zmq::socket_t waker_;  // the destructor's
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> refused_{0};
  // This interval's refusals (loop thread only).
  struct Refusals {
    std::chrono::steady_clock::time_point since{};
    std::set<std::string> logged_addresses;  // logged one by one
    uint64_t unlogged = 0;                   // refused but not logged one by one
    std::set<std::string> addresses;         // of the unlogged ones, up to kMaxAddresses
    bool more_addresses = false;
    std::vector<std::string> sample;         // up to 3 key prefixes of the unlogged ones
  };
  Refusals refusals_;
  std::thread thread_;
};

}  // namespace coupler::coordinator
