// Which HTTP connections the coordinator keeps open: at most so many in all and so many per
// peer address, and, when a new one would pass a cap, the oldest connection that is only
// waiting (for a request, or for the rest of its header) is closed to make room. A client
// that sends nothing, or half a header, can therefore hold a place only until someone else
// needs it: no number of idle connections keeps a prompt request (the liveness probe's) out.
// A connection whose bytes have arrived but are not read yet (its thread has not started) is
// not idle: it is never the one closed; nor, for a grace period, is one whose request has begun
// to be read (its thread parsing the header: a prompt request is done long before; half a
// header sent slowly is closeable again once the grace has passed).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace coupler::coordinator::http {

struct ConnectionCounts {
  uint64_t open = 0;
  uint64_t refused = 0;  // closed at once: over a cap, and no waiting connection to close instead
  uint64_t evicted = 0;  // waiting connections closed to make room for a new one
};

class ConnectionGate {
 public:
  static constexpr std::chrono::milliseconds kReadingGrace{1000};

  ConnectionGate(size_t max_total, size_t max_per_peer,
                 std::chrono::milliseconds reading_grace = kReadingGrace)
      : max_total_(max_total), max_per_peer_(max_per_peer), reading_grace_(reading_grace) {}
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  // A place held by one open connection; released when destroyed, which must happen before
  // its socket is closed (an eviction shuts the socket down, so it must still be open).
  class Ticket {
   public:
    Ticket(Ticket&& o) noexcept : gate_(o.gate_), id_(o.id_) { o.gate_ = nullptr; }
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    Ticket& operator=(Ticket&&) = delete;
    ~Ticket();

    // Waiting (true: may be closed to make room) or serving a request (false: not evicted).
    void SetWaiting(bool waiting);
    // The first bytes of a request have been read: not closed to make room for the grace
    // period, while the rest of its header comes (until SetWaiting).
    void SetReading();

   private:
    friend class ConnectionGate;
    Ticket(ConnectionGate* gate, uint64_t id) : gate_(gate), id_(id) {}
    ConnectionGate* gate_;
    uint64_t id_;
  };

  // A place for the connection on socket `fd` from `peer`, counted as waiting; nullopt when it
  // is over a cap and every connection in the way is serving a request (the caller closes it).
  std::optional<Ticket> Admit(const std::string& peer, int fd);

  // Shuts every open connection's socket down and admits no more (the server stops): their
  // threads end at once.
  void ShutdownAll();

  ConnectionCounts counts() const;

 private:
  struct Entry {
    std::string peer;
    int fd = -1;
    bool waiting = true;
    std::chrono::steady_clock::time_point reading_since{};  // epoch: no request begun
  };
  using Entries = std::map<uint64_t, Entry>;  // by admission order: oldest first

  // The oldest waiting connection (of `peer`, or of anyone when empty) shut down and forgotten.
  bool EvictOldestWaiting(const std::string* peer);
  void Erase(Entries::iterator it);
  void Release(uint64_t id);
  void SetWaiting(uint64_t id, bool waiting);
  void SetReading(uint64_t id);

  const size_t max_total_;
  const size_t max_per_peer_;
  const std::chrono::milliseconds reading_grace_;
  mutable std::mutex mu_;
  Entries open_;
  std::unordered_map<std::string, size_t> per_peer_;
  uint64_t next_id_ = 0;
  uint64_t refused_ = 0;
  uint64_t evicted_ = 0;
  bool closed_ = false;
};

}  // namespace coupler::coordinator::http
