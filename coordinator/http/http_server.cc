#include "coordinator/http/http_server.h"

#include <httplib.h>

#include <charconv>

#include "coordinator/http/api_routes.h"
#include "runtime/logging.h"
#include "runtime/net/endpoint.h"

namespace coupler::coordinator::http {
namespace {

// A spec is at most 16 MiB on the wire; a little more for the JSON around it.
constexpr size_t kMaxBodyBytes = (16u << 20) + (64u << 10);
// Requests served at once. Reads are copies out of a snapshot, so a few threads keep up with
// any scrape rate; more would only compete with the event loop for the cores.
constexpr size_t kThreads = 4;
constexpr time_t kIoTimeoutS = 10;

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

HttpServer::HttpServer(std::unique_ptr<httplib::Server> server, HttpContext context)
    : server_(std::move(server)), context_(std::move(context)) {}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpOptions& options,
                                                       HttpContext context) {
  COUPLER_RETURN_IF_ERROR(CheckHttpAllowed(options));
  COUPLER_ASSIGN_OR_RETURN(auto host_port, ParseHostPort(options.listen));
  std::unique_ptr<httplib::Server> server;
  if (!options.tls_cert.empty()) {
    auto tls = std::make_unique<httplib::SSLServer>(options.tls_cert.c_str(), options.tls_key.c_str());
    if (!tls->is_valid()) {
      return InvalidArgument("--http-tls: cannot load the certificate " + options.tls_cert +
                             " with the key " + options.tls_key);
    }
    server = std::move(tls);
  } else {
    server = std::make_unique<httplib::Server>();
  }
  server->new_task_queue = [] { return new httplib::ThreadPool(kThreads); };
  server->set_payload_max_length(kMaxBodyBytes);
  server->set_read_timeout(kIoTimeoutS, 0);
  server->set_write_timeout(kIoTimeoutS, 0);
  server->set_keep_alive_max_count(100);
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
  std::unique_ptr<HttpServer> s(new HttpServer(std::move(server), std::move(context)));
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
