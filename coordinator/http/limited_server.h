// cpp-httplib's Server (or SSLServer) with each connection served under the coordinator's
// limits: admitted by ConnectionGate, read through ConnectionStream (header deadline, header
// and body caps), closed when idle. Routing and replies stay cpp-httplib's.
#pragma once

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "coordinator/http/connection_gate.h"
#include "coordinator/http/connection_stream.h"

namespace coupler::coordinator::http {

struct ConnectionLimits {
  StreamLimits stream;
  std::chrono::milliseconds idle_timeout;  // for a request's first byte (also the TLS handshake)
  size_t max_requests;                     // on one kept-alive connection
};

// process_request of the server the connection belongs to.
using ServeRequest = std::function<bool(httplib::Stream& strm, bool last, bool& closed,
                                        const std::function<void(httplib::Request&)>& on_headers)>;

// Serves the accepted socket `fd` until its peer is done, a limit ends it, or `stopped()`, and
// closes it. `tls` null: plain HTTP.
void ServeConnection(int fd, ConnectionGate& gate, const ConnectionLimits& limits, SSL_CTX* tls,
                     const std::function<bool()>& stopped, const ServeRequest& serve);

// cpp-httplib 0.11.4 (Debian 12's) declares process_and_close_socket private virtual: a
// subclass may override it but not call the base's, so the whole connection is served here,
// through the protected process_request. The 0.11 SocketStream it would otherwise use has no
// header deadline and no cap on a chunked body, and is not reachable from outside either.
template <class Base>
class LimitedServer final : public Base {
 public:
  template <typename... Args>
  LimitedServer(ConnectionGate& gate, ConnectionLimits limits, Args&&... args)
      : Base(std::forward<Args>(args)...), gate_(gate), limits_(limits) {}

  // cpp-httplib 0.11 listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when the
  // library was built): a burst of connections fills it, and the kernel drops the next SYN,
  // the liveness probe's among them, which is sent again only a second later. Linux takes a
  // second listen() on a listening socket as its new backlog. After binding.
  bool WidenBacklog(int backlog) { return ::listen(this->svr_sock_, backlog) == 0; }

 private:
  bool process_and_close_socket(socket_t sock) override {
    SSL_CTX* tls = nullptr;
    if constexpr (std::is_base_of_v<httplib::SSLServer, Base>) tls = this->ssl_context();
    ServeConnection(
        sock, gate_, limits_, tls, [this] { return this->svr_sock_ == INVALID_SOCKET; },
        [this](httplib::Stream& strm, bool last, bool& closed,
               const std::function<void(httplib::Request&)>& on_headers) {
          return this->process_request(strm, last, closed, on_headers);
        });
    return true;
  }

  ConnectionGate& gate_;
  const ConnectionLimits limits_;
};

}  // namespace coupler::coordinator::http
