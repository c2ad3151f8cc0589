#include "coordinator/http/connection_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace coupler::coordinator::http {
namespace {

using Clock = std::chrono::steady_clock;

int MillisUntil(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1'000'000));
}

class Plain final : public ConnectionTransport {
 public:
  explicit Plain(int fd) : fd_(fd) {}
  bool Handshake(Deadline) override { return true; }
  ssize_t Read(char* buf, size_t size, Deadline deadline) override {
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, size, 0);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if ((errno != EAGAIN && errno != EWOULDBLOCK) || !WaitFor(fd_, POLLIN, deadline)) return -1;
    }
  }
  ssize_t Write(const char* buf, size_t size, Deadline deadline) override {
    for (;;) {
      const ssize_t n = ::send(fd_, buf, size, MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if ((errno != EAGAIN && errno != EWOULDBLOCK) || !WaitFor(fd_, POLLOUT, deadline)) return -1;
    }
  }
  bool HasBuffered() const override { return false; }
  void Goodbye() override {}

 private:
  const int fd_;
};

// OpenSSL on a non-blocking socket: each call retried after the socket is ready for what the
// session asks (a read may need to write, during a renegotiation), until the deadline.
class Tls final : public ConnectionTransport {
 public:
  Tls(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) { SSL_set_fd(ssl_, fd_); }
  ~Tls() override { SSL_free(ssl_); }

  bool Handshake(Deadline deadline) override {
    return Retry([&] { return SSL_accept(ssl_); }, deadline) > 0;
  }
  ssize_t Read(char* buf, size_t size, Deadline deadline) override {
    const int n = Retry([&] { return SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(size, 1 << 30))); },
                        deadline);
    return n;
  }
  ssize_t Write(const char* buf, size_t size, Deadline deadline) override {
    return Retry([&] { return SSL_write(ssl_, buf, static_cast<int>(std::min<size_t>(size, 1 << 30))); },
                 deadline);
  }
  bool HasBuffered() const override { return SSL_pending(ssl_) > 0; }
  void Goodbye() override {
    if (!broken_) SSL_shutdown(ssl_);
  }

 private:
  // The call's positive result; 0 at a clean end of the stream; -1 otherwise.
  template <typename F>
  int Retry(F call, Deadline deadline) {
    for (;;) {
      ERR_clear_error();
      const int r = call();
      if (r > 0) return r;
      switch (SSL_get_error(ssl_, r)) {
        case SSL_ERROR_WANT_READ:
          if (WaitFor(fd_, POLLIN, deadline)) continue;
          return -1;
        case SSL_ERROR_WANT_WRITE:
          if (WaitFor(fd_, POLLOUT, deadline)) continue;
          return -1;
        case SSL_ERROR_ZERO_RETURN:
          return 0;
        default:
          // A fatal error: no close_notify may follow it.
          broken_ = true;
          return -1;
      }
    }
  }

  const int fd_;
  SSL* ssl_;
  bool broken_ = false;
};

void AddressOf(const sockaddr_storage& addr, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    inet_ntop(AF_INET, &a.sin_addr, text, sizeof(text));
    port = ntohs(a.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof(text));
    port = ntohs(a.sin6_port);
  }
  ip = text;
}

}  // namespace

std::unique_ptr<ConnectionTransport> PlainTransport(int fd) { return std::make_unique<Plain>(fd); }

std::unique_ptr<ConnectionTransport> TlsTransport(int fd, SSL_CTX* ctx) {
  SSL* ssl = SSL_new(ctx);
  if (ssl == nullptr) return nullptr;
  return std::make_unique<Tls>(fd, ssl);
}

bool WaitFor(int fd, short events, Deadline deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, MillisUntil(deadline));
    if (r > 0) return true;  // ready, or hung up / shut down: the next call says which
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

bool ConnectionStream::NextRequest(Deadline deadline) {
  if (begin_ == end_ && !transport_.HasBuffered()) {
    const ssize_t n = transport_.Read(buf_, sizeof(buf_), deadline);
    if (n <= 0) return false;
    begin_ = 0;
    end_ = static_cast<size_t>(n);
  }
  header_deadline_ = Clock::now() + limits_.header_timeout;
  in_header_ = true;
  header_match_ = 0;
  header_bytes_ = 0;
  body_bytes_ = 0;
  reply_started_ = false;
  return true;
}

bool ConnectionStream::is_readable() const {
  if (begin_ < end_ || transport_.HasBuffered()) return true;
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

bool ConnectionStream::is_writable() const {
  return !writes_closed_ && WaitFor(fd_, POLLOUT, Clock::now() + limits_.io_timeout);
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  if (size == 0) return 0;
  if (in_header_ && header_bytes_ >= limits_.max_header_bytes) {
    must_close_ = true;
    return -1;
  }
  if (!in_header_ && body_bytes_ >= limits_.max_body_bytes) return RefuseBody();
  if (begin_ == end_) {
    const Deadline io = Clock::now() + limits_.io_timeout;
    const ssize_t n = transport_.Read(buf_, sizeof(buf_), in_header_ ? std::min(io, header_deadline_) : io);
    if (n <= 0) {
      must_close_ = true;
      return n;
    }
    begin_ = 0;
    end_ = static_cast<size_t>(n);
  }
  size_t n = std::min(size, end_ - begin_);
  if (in_header_) {
    n = std::min(n, limits_.max_header_bytes - header_bytes_);
  } else {
    n = std::min(n, limits_.max_body_bytes - body_bytes_);
  }
  return Deliver(ptr, n);
}

ssize_t ConnectionStream::Deliver(char* ptr, size_t n) {
  std::memcpy(ptr, buf_ + begin_, n);
  begin_ += n;
  if (!in_header_) {
    body_bytes_ += n;
    return static_cast<ssize_t>(n);
  }
  // The header ends at its first blank line ("\r\n\r\n"); what follows is body. cpp-httplib
  // reads the header a byte at a time, so the body's first bytes rarely come in this call.
  static constexpr char kEnd[] = "\r\n\r\n";
  for (size_t i = 0; i < n; ++i) {
    if (!in_header_) {
      ++body_bytes_;
      continue;
    }
    ++header_bytes_;
    header_match_ = ptr[i] == kEnd[header_match_] ? header_match_ + 1 : (ptr[i] == '\r' ? 1 : 0);
    if (header_match_ == 4) in_header_ = false;
  }
  return static_cast<ssize_t>(n);
}

ssize_t ConnectionStream::RefuseBody() {
  must_close_ = true;
  if (!reply_started_ && !writes_closed_) {
    const std::string body = "{\"error\":\"the body is over the " + std::to_string(limits_.max_body_bytes) +
                             "-byte limit\"}\n";
    const std::string reply = "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\n"
                              "Connection: close\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
    write(reply.data(), reply.size());
  }
  writes_closed_ = true;
  return -1;
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  if (writes_closed_) return -1;
  const std::string_view head(ptr, size);
  // "100 Continue" comes before the reply proper, on its own.
  if (!reply_started_ && head.rfind("HTTP/1.1 100 ", 0) != 0) {
    // A reply's status line and headers come in one write: a server that says
    // "Connection: close" must close after the reply (RFC 9112 9.6), and a route that
    // answers before reading a body says so, since the unread body follows.
    reply_started_ = true;
    if (head.find("\r\nConnection: close\r\n") != std::string_view::npos) must_close_ = true;
  }
  size_t done = 0;
  while (done < size) {
    const ssize_t n = transport_.Write(ptr + done, size - done, Clock::now() + limits_.io_timeout);
    if (n <= 0) {
      must_close_ = true;
      writes_closed_ = true;
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(size);
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) AddressOf(addr, ip, port);
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) AddressOf(addr, ip, port);
}

}  // namespace coupler::coordinator::http
