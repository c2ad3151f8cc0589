// The coordinator's HTTP side (`--http`, on by default on loopback): /metrics for Prometheus,
// the live page at /, the job API under /api/v1, /healthz. Served by cpp-httplib on threads
// of its own: reads come from the snapshots the event loop publishes (snapshot.h), changes go
// to the loop as wire requests (loop_channel.h), so a slow or flooding client never holds up
// dispatch. Every route but the probes (/healthz, /readyz) needs a bearer token (api_token.h),
// loopback included: any local user, and any web page a local browser opens, can reach a
// loopback port. /metrics also takes the read-only metrics token.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "coordinator/http/loop_channel.h"
#include "coordinator/http/snapshot.h"
#include "coordinator/http/token_file.h"
#include "runtime/status.h"

namespace httplib {
class Server;
}

namespace coupler::coordinator::http {

class ConnectionGate;

struct HttpOptions {
  std::string listen;    // "HOST:PORT" (PORT 0: any free port)
  std::string tls_cert;  // both set: HTTPS
  std::string tls_key;
  bool insecure = false;  // allows plaintext beyond loopback
};

// "127.0.0.1:7180" → {"127.0.0.1", 7180}; "[::1]:7180" → {"::1", 7180}. InvalidArgument
// naming the text otherwise.
Result<std::pair<std::string, int>> ParseHostPort(const std::string& text);

// Refuses plaintext HTTP on an address other hosts could reach, unless `insecure`.
Status CheckHttpAllowed(const HttpOptions& options);

struct HttpContext {
  SnapshotBoard* board = nullptr;
  LoopChannel* loop = nullptr;
  std::shared_ptr<const TokenFile> api_token;      // every route
  std::shared_ptr<const TokenFile> metrics_token;  // /metrics alone
  std::string version;
  const ConnectionGate* connections = nullptr;  // set by HttpServer: its counts for /metrics
};

class HttpServer {
 public:
  // Binds (failing at once if the address is taken) and starts serving.
  static Result<std::unique_ptr<HttpServer>> Start(const HttpOptions& options, HttpContext context);
  ~HttpServer();  // stops and joins its threads
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // "http://127.0.0.1:7180" (https with TLS), the bound port filled in.
  const std::string& url() const { return url_; }

 private:
  HttpServer(std::unique_ptr<ConnectionGate> gate, std::unique_ptr<httplib::Server> server,
             HttpContext context);
  void Routes();

  std::unique_ptr<ConnectionGate> gate_;  // first: outlives the server's threads
  std::unique_ptr<httplib::Server> server_;
  HttpContext context_;
  std::string url_;
  std::atomic<bool> listen_ended_{false};
  std::thread thread_;
};

}  // namespace coupler::coordinator::http
