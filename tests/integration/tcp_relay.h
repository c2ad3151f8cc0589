// A TCP relay a test puts between a worker and a coordinator: it listens on a port of its own
// and forwards each connection to the coordinator it currently points at, byte for byte (the
// CURVE handshake passes through untouched). Pointing it elsewhere cuts every open connection,
// so the worker's socket reconnects, now to the other coordinator: what a moved address (a
// virtual IP, a Kubernetes Service, DNS) does to a worker when its coordinator is replaced.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace coupler::itest {

class TcpRelay {
 public:
  // Listens on 127.0.0.1 (an ephemeral port: port()) and forwards to 127.0.0.1:`target_port`.
  explicit TcpRelay(int target_port) : target_port_(target_port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listener_, 16) != 0) {
      ::close(listener_);
      listener_ = -1;
      return;
    }
    socklen_t len = sizeof(addr);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~TcpRelay() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (const Pair& p : pairs_) CloseFds(p);
    if (listener_ >= 0) ::close(listener_);
  }
  TcpRelay(const TcpRelay&) = delete;
  TcpRelay& operator=(const TcpRelay&) = delete;

  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  std::string endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port_); }

  // New connections go to `target_port`; the open ones are cut now.
  void Redirect(int target_port) {
    std::lock_guard<std::mutex> lock(mu_);
    target_port_ = target_port;
    cut_ = true;
  }

 private:
  struct Pair {
    int client = -1;
    int server = -1;
  };

  static void CloseFds(const Pair& p) {
    if (p.client >= 0) ::close(p.client);
    if (p.server >= 0) ::close(p.server);
  }

  int ConnectTarget() {
    int port;
    {
      std::lock_guard<std::mutex> lock(mu_);
      port = target_port_;
    }
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd);
      return -1;  // nothing listens there (a dead coordinator): the client is refused too
    }
    return fd;
  }

  // Copies what is readable on `from` to `to`; false when either side closed.
  static bool Pump(int from, int to) {
    char buf[65536];
    const ssize_t n = ::read(from, buf, sizeof(buf));
    if (n <= 0) return false;
    for (ssize_t off = 0; off < n;) {
      const ssize_t w = ::write(to, buf + off, static_cast<size_t>(n - off));
      if (w <= 0) return false;
      off += w;
    }
    return true;
  }

  void Run() {
    while (!stop_) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (cut_) {
          for (const Pair& p : pairs_) CloseFds(p);
          pairs_.clear();
          cut_ = false;
        }
      }
      std::vector<pollfd> fds{{listener_, POLLIN, 0}};
      for (const Pair& p : pairs_) {
        fds.push_back({p.client, POLLIN, 0});
        fds.push_back({p.server, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      std::vector<bool> closed(pairs_.size(), false);
      for (size_t i = 0; i < pairs_.size(); ++i) {
        const pollfd& c = fds[1 + 2 * i];
        const pollfd& s = fds[2 + 2 * i];
        if ((c.revents & (POLLIN | POLLHUP | POLLERR)) && !Pump(pairs_[i].client, pairs_[i].server)) {
          closed[i] = true;
        } else if ((s.revents & (POLLIN | POLLHUP | POLLERR)) &&
                   !Pump(pairs_[i].server, pairs_[i].client)) {
          closed[i] = true;
        }
      }
      std::vector<Pair> open;
      for (size_t i = 0; i < pairs_.size(); ++i) {
        if (closed[i]) {
          CloseFds(pairs_[i]);
        } else {
          open.push_back(pairs_[i]);
        }
      }
      pairs_ = std::move(open);
      if (fds[0].revents & POLLIN) {
        const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client < 0) continue;
        const int server = ConnectTarget();
        if (server < 0) {
          ::close(client);
        } else {
          pairs_.push_back({client, server});
        }
      }
    }
  }

  std::mutex mu_;
  int target_port_;
  bool cut_ = false;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<Pair> pairs_;  // the relay thread's alone
  std::thread thread_;
};

}  // namespace coupler::itest
