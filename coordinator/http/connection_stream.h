// One HTTP connection's bytes as cpp-httplib reads and writes them, with the bounds its own
// socket stream (0.11) lacks: the whole request header within a deadline and a byte cap (its
// read timeout restarts at every byte, so a header trickled a byte at a time held a thread
// for ever), and a cap on the body's bytes that holds for a chunked body too (0.11 checks
// only a Content-Length). Plain TCP or TLS underneath (ConnectionTransport).
#pragma once

#include <httplib.h>
#include <openssl/ssl.h>

#include <chrono>
#include <memory>
#include <string>

namespace coupler::coordinator::http {

using Deadline = std::chrono::steady_clock::time_point;

// The socket's bytes, plain or through TLS; every call waits at most until its deadline.
// The socket is non-blocking and owned by the caller.
class ConnectionTransport {
 public:
  virtual ~ConnectionTransport() = default;
  // The TLS handshake; nothing for plain TCP.
  virtual bool Handshake(Deadline deadline) = 0;
  // >0 bytes, 0 at the end of the stream, -1 on an error or at the deadline.
  virtual ssize_t Read(char* buf, size_t size, Deadline deadline) = 0;
  virtual ssize_t Write(const char* buf, size_t size, Deadline deadline) = 0;
  // Bytes already decrypted, readable without waiting for the socket.
  virtual bool HasBuffered() const = 0;
  // A TLS close_notify; nothing for plain TCP.
  virtual void Goodbye() = 0;
};

std::unique_ptr<ConnectionTransport> PlainTransport(int fd);
// nullptr when OpenSSL cannot make a session from `ctx`.
std::unique_ptr<ConnectionTransport> TlsTransport(int fd, SSL_CTX* ctx);

// Waits until `fd` is readable (POLLIN) or writable (POLLOUT), or the deadline passes.
bool WaitFor(int fd, short events, Deadline deadline);

struct StreamLimits {
  std::chrono::milliseconds header_timeout;  // from a request's first byte to its blank line
  std::chrono::milliseconds io_timeout;      // one read of the body, one write
  size_t max_header_bytes;                   // request line and headers
  size_t max_body_bytes;                     // the body as sent (chunk sizes included)
};

class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, ConnectionTransport& transport, const StreamLimits& limits)
      : fd_(fd), transport_(transport), limits_(limits) {}

  // Waits, at most until `deadline`, for the first byte of the next request; false when the
  // peer closed, was shut down, or sent nothing. Then starts that request's header clock.
  bool NextRequest(Deadline deadline);

  // The reply said "Connection: close", or the request broke a limit: serve no more on it.
  bool must_close() const { return must_close_; }

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

 private:
  // Moves `n` buffered bytes to `ptr`, tracking where the header ends.
  ssize_t Deliver(char* ptr, size_t n);
  // The body passed its cap: a 413 written here, since cpp-httplib reports a chunked body
  // that failed to read as a plain 400; its own reply then finds the stream closed.
  ssize_t RefuseBody();

  const int fd_;
  ConnectionTransport& transport_;
  const StreamLimits limits_;
  char buf_[16 * 1024];
  size_t begin_ = 0;
  size_t end_ = 0;
  // The request being read.
  Deadline header_deadline_{};
  bool in_header_ = true;
  int header_match_ = 0;  // how much of "\r\n\r\n" the last bytes matched
  size_t header_bytes_ = 0;
  size_t body_bytes_ = 0;
  bool reply_started_ = false;
  bool must_close_ = false;
  bool writes_closed_ = false;
};

}  // namespace coupler::coordinator::http
