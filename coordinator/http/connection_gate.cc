#include "coordinator/http/connection_gate.h"

#include <sys/ioctl.h>
#include <sys/socket.h>

namespace coupler::coordinator::http {
namespace {

// Bytes the peer sent that this side has not read yet: a request that has arrived and waits
// for its thread (threads admit in whatever order they start, so a connection admitted early
// may not have been read yet). Such a connection is no idle one.
bool HasUnreadBytes(int fd) {
  int n = 0;
  return ::ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

}  // namespace

ConnectionGate::Ticket::~Ticket() {
  if (gate_ != nullptr) gate_->Release(id_);
}

void ConnectionGate::Ticket::SetWaiting(bool waiting) { gate_->SetWaiting(id_, waiting); }

void ConnectionGate::Ticket::SetReading() { gate_->SetReading(id_); }

std::optional<ConnectionGate::Ticket> ConnectionGate::Admit(const std::string& peer, int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return std::nullopt;
  auto count = per_peer_.find(peer);
  if (count != per_peer_.end() && count->second >= max_per_peer_ && !EvictOldestWaiting(&peer)) {
    ++refused_;
    return std::nullopt;
  }
  if (open_.size() >= max_total_ && !EvictOldestWaiting(nullptr)) {
    ++refused_;
    return std::nullopt;
  }
  const uint64_t id = next_id_++;
  open_.emplace(id, Entry{peer, fd, true});
  ++per_peer_[peer];
  return Ticket(this, id);
}

bool ConnectionGate::EvictOldestWaiting(const std::string* peer) {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = open_.begin(); it != open_.end(); ++it) {
    if (!it->second.waiting || (peer != nullptr && it->second.peer != *peer)) continue;
    if (HasUnreadBytes(it->second.fd)) continue;
    const auto since = it->second.reading_since;
    if (since != std::chrono::steady_clock::time_point{} && now - since < reading_grace_) continue;
    // The owner's thread sees the end of the stream and closes the socket itself; the entry
    // goes now, so the place is free for the caller.
    ::shutdown(it->second.fd, SHUT_RDWR);
    Erase(it);
    ++evicted_;
    return true;
  }
  return false;
}

void ConnectionGate::Erase(Entries::iterator it) {
  auto count = per_peer_.find(it->second.peer);
  if (count != per_peer_.end() && --count->second == 0) per_peer_.erase(count);
  open_.erase(it);
}

void ConnectionGate::Release(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_.find(id);
  if (it != open_.end()) Erase(it);  // absent when it was evicted
}

void ConnectionGate::SetWaiting(uint64_t id, bool waiting) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_.find(id);
  if (it == open_.end()) return;
  it->second.waiting = waiting;
  it->second.reading_since = {};
}

void ConnectionGate::SetReading(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_.find(id);
  if (it != open_.end()) it->second.reading_since = std::chrono::steady_clock::now();
}

void ConnectionGate::ShutdownAll() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  for (auto& [id, entry] : open_) ::shutdown(entry.fd, SHUT_RDWR);
}

ConnectionCounts ConnectionGate::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {open_.size(), refused_, evicted_};
}

}  // namespace coupler::coordinator::http
