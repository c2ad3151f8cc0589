#include "coordinator/http/http_server.h"

#include <httplib.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <functional>

#include "coordinator/http/api_routes.h"
#include "coordinator/http/connection_gate.h"
#include "coordinator/http/connection_threads.h"
#include "coordinator/http/limited_server.h"
#include "runtime/logging.h"
#include "runtime/net/endpoint.h"

namespace coupler::coordinator::http {
namespace {

// A spec is at most 16 MiB on the wire; a little more for the JSON around it. Enforced on
// the bytes as sent, chunked bodies included (ConnectionStream): 413 past it.
constexpr size_t kMaxBodyBytes = (16u << 20) + (64u << 10);
// One read of a body, one write of a reply.
constexpr time_t kIoTimeoutS = 10;
// A request's line and headers: all of them within 10 s of its first byte, at most 64 KiB.
constexpr std::chrono::seconds kHeaderTimeout{10};
constexpr size_t kMaxHeaderBytes = 64u << 10;
// A connection that sends no request (first, or next on keep-alive) for 5 s is closed.
constexpr std::chrono::seconds kIdleTimeout{5};
constexpr size_t kMaxRequestsPerConnection = 100;
// Connections open at once, in all and from one address. Every connection has a thread of
// its own (ConnectionThreads), so these bound the threads too; past a cap, the oldest
// connection only waiting for a request is closed to make room (ConnectionGate), and the new
// one is closed at once only when every connection in the way is serving a request. Serving
// takes milliseconds (replies are copies out of a snapshot), and only a token holder's request
// reads a body, so no number of idle connections keeps /healthz from an answer.
constexpr size_t kMaxConnections = 256;
constexpr size_t kMaxConnectionsPerPeer = 32;
// Connections the kernel holds before they are accepted.
constexpr int kListenBacklog = 512;
// Threads beyond the cap, so that a connection over it always gets a thread to be closed on.
constexpr size_t kSpareThreads = 16;

}  // namespace

Result<std::pair<std::string, int>> ParseHostPort(const std::string& text) {
  std::string host;
  std::string port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return InvalidArgument("--http " + text + ": expected HOST:PORT, e.g. 127.0.0.1:7180 or [::1]:7180");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0 || text.find(':') != colon) {
      return InvalidArgument("--http " + text + ": expected HOST:PORT, e.g. 127.0.0.1:7180");
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  int value = -1;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value < 0 || value > 65535) {
    return InvalidArgument("--http " + text + ": the port must be a number from 0 to 65535");
  }
  return std::make_pair(host, value);
}

Status CheckHttpAllowed(const HttpOptions& options) {
  COUPLER_ASSIGN_OR_RETURN(auto host_port, ParseHostPort(options.listen));
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return InvalidArgument("--http-tls needs both a certificate and its key");
  }
  const bool loopback = net::IsLoopback("tcp://" + (host_port.first.find(':') != std::string::npos
                                                        ? "[" + host_port.first + "]"
                                                        : host_port.first) +
                                        ":1");
  if (!loopback && options.tls_cert.empty() && !options.insecure) {
    return InvalidArgument("refusing plaintext HTTP on " + options.listen +
                           ": other hosts could read the API token on the wire; give "
                           "--http-tls CERT KEY, or --insecure on a network you trust");
  }
  return Status::Ok();
}

HttpServer::HttpServer(std::unique_ptr<ConnectionGate> gate, std::unique_ptr<httplib::Server> server,
                       HttpContext context)
    : gate_(std::move(gate)), server_(std::move(server)), context_(std::move(context)) {
  context_.connections = gate_.get();
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpOptions& options,
                                                       HttpContext context) {
  COUPLER_RETURN_IF_ERROR(CheckHttpAllowed(options));
  COUPLER_ASSIGN_OR_RETURN(auto host_port, ParseHostPort(options.listen));
  auto gate = std::make_unique<ConnectionGate>(kMaxConnections, kMaxConnectionsPerPeer);
  const ConnectionLimits limits{
      StreamLimits{kHeaderTimeout, std::chrono::seconds(kIoTimeoutS), kMaxHeaderBytes, kMaxBodyBytes},
      kIdleTimeout, kMaxRequestsPerConnection};
  std::unique_ptr<httplib::Server> server;
  std::function<bool()> widen_backlog;
  if (!options.tls_cert.empty()) {
    auto tls = std::make_unique<LimitedServer<httplib::SSLServer>>(
        *gate, limits, options.tls_cert.c_str(), options.tls_key.c_str());
    if (!tls->is_valid()) {
      return InvalidArgument("--http-tls: cannot load the certificate " + options.tls_cert +
                             " with the key " + options.tls_key);
    }
    widen_backlog = [raw = tls.get()] { return raw->WidenBacklog(kListenBacklog); };
    server = std::move(tls);
  } else {
    auto plain = std::make_unique<LimitedServer<httplib::Server>>(*gate, limits);
    widen_backlog = [raw = plain.get()] { return raw->WidenBacklog(kListenBacklog); };
    server = std::move(plain);
  }
  ConnectionGate* g = gate.get();
  server->new_task_queue = [g] { return new ConnectionThreads(kMaxConnections + kSpareThreads, *g); };
  // cpp-httplib's own check on a Content-Length (413); ConnectionStream's holds for any body.
  server->set_payload_max_length(kMaxBodyBytes);
  server->set_read_timeout(kIoTimeoutS, 0);
  server->set_write_timeout(kIoTimeoutS, 0);
  server->set_keep_alive_max_count(kMaxRequestsPerConnection);
  // Small replies on kept-alive connections: without it, Nagle and delayed ACKs hold each one
  // back tens of milliseconds.
  server->set_tcp_nodelay(true);
  int port = host_port.second;
  if (port == 0) {
    port = server->bind_to_any_port(host_port.first);
  } else if (!server->bind_to_port(host_port.first, port)) {
    port = -1;
  }
  if (port < 0) {
    return Unavailable("cannot listen for HTTP on " + options.listen +
                       " (the port is taken, or the address is not this host's)");
  }
  if (!widen_backlog()) Logger("coordinator")->warn("HTTP: cannot widen the listen backlog: {}", std::strerror(errno));
  std::unique_ptr<HttpServer> s(new HttpServer(std::move(gate), std::move(server), std::move(context)));
  const std::string host = host_port.first.find(':') != std::string::npos
                               ? "[" + host_port.first + "]"
                               : host_port.first;
  s->url_ = (options.tls_cert.empty() ? "http://" : "https://") + host + ":" + std::to_string(port);
  s->Routes();
  httplib::Server* raw = s->server_.get();
  std::atomic<bool>* done = &s->listen_ended_;
  s->thread_ = std::thread([raw, done] {
    raw->listen_after_bind();
    done->store(true);
  });
  return s;
}

HttpServer::~HttpServer() {
  // stop() acts only on a server already listening: wait for that (or for its end).
  while (!server_->is_running() && !listen_ended_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

void HttpServer::Routes() { AddApiRoutes(*server_, context_); }

}  // namespace coupler::coordinator::http
