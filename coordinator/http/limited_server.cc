#include "coordinator/http/limited_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>

namespace coupler::coordinator::http {
namespace {

using Clock = std::chrono::steady_clock;

// After a reply that closes the connection while the client may still be sending (a body
// refused unread, or over its cap), its bytes are read and dropped a little while: closing
// with unread bytes makes the kernel send a reset, which can destroy the reply before the
// client reads it.
constexpr std::chrono::milliseconds kLinger{1000};

std::string PeerAddress(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  char text[INET6_ADDRSTRLEN] = {};
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "";
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, text, sizeof(text));
  } else if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, text, sizeof(text));
  }
  return text;
}

void Linger(int fd) {
  ::shutdown(fd, SHUT_WR);
  const auto deadline = Clock::now() + kLinger;
  char buf[16 * 1024];
  while (WaitFor(fd, POLLIN, deadline)) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;
  }
}

}  // namespace

void ServeConnection(int fd, ConnectionGate& gate, const ConnectionLimits& limits, SSL_CTX* tls,
                     const std::function<bool()>& stopped, const ServeRequest& serve) {
  bool linger = false;
  {
    std::optional<ConnectionGate::Ticket> ticket = gate.Admit(PeerAddress(fd), fd);
    const int flags = ::fcntl(fd, F_GETFL);
    if (ticket && flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0) {
      std::unique_ptr<ConnectionTransport> transport = tls != nullptr ? TlsTransport(fd, tls) : PlainTransport(fd);
      if (transport && transport->Handshake(Clock::now() + limits.idle_timeout)) {
        ConnectionStream strm(fd, *transport, limits.stream);
        for (size_t served = 0; served < limits.max_requests && !stopped(); ++served) {
          ticket->SetWaiting(true);
          if (!strm.NextRequest(Clock::now() + limits.idle_timeout)) break;
          ticket->SetReading();  // its header is being read: not closed as idle meanwhile
          bool closed = false;
          // Once its headers are in, a request is being served: a new connection no longer
          // closes this one to make room.
          const bool ok = serve(strm, served + 1 == limits.max_requests, closed,
                                [&](httplib::Request&) { ticket->SetWaiting(false); });
          if (!ok || closed || strm.must_close()) {
            linger = strm.must_close();
            break;
          }
        }
        transport->Goodbye();
      }
    }
  }  // the ticket goes before the socket closes
  if (linger) Linger(fd);
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

}  // namespace coupler::coordinator::http
