// Client: the request/reply API that `coupler submit|status|cancel|workers|drain` and
// embedders use to talk to a coordinator's client port. One request at a time, each with a
// deadline, so a dead coordinator is an error message, never a hang.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "runtime/net/curve_keys.h"
#include "runtime/net/handshake_monitor.h"
#include "runtime/status.h"
#include "runtime/wire/messages.h"

namespace coupler::client {

// How a client proves who it is (see runtime/net/key_discovery.h for the defaults).
struct ClientSecurity {
  std::string keys_dir;   // --keys: a client key set; default $COUPLER_KEYS, then local keys
  bool insecure = false;  // plaintext, to a coordinator started --insecure
};

class Client {
 public:
  // A coordinator whose socket accepts no connection (or completes no handshake) within this
  // long is reported unreachable, sooner than the request timeout: a running one answers a
  // handshake in milliseconds, even when busy (libzmq's I/O thread does it).
  static constexpr std::chrono::milliseconds kConnectTimeout{3000};

  static Result<std::unique_ptr<Client>> Connect(const std::string& endpoint,
                                                 std::chrono::milliseconds timeout =
                                                     std::chrono::seconds(10),
                                                 const ClientSecurity& security = {});

  // Submits the spec at `spec_path` (read here; relative inputs resolve against its folder).
  // `reuse`: nodes unchanged since a succeeded run keep its outputs (`--reuse`).
  // `submission_id`: an idempotency key; a job the state holds under it is answered instead of
  // a new one (`*existing` then says so).
  Result<std::string> Submit(const std::string& spec_path, int priority = 0, bool reuse = false,
                             const std::string& submission_id = "", bool* existing = nullptr);
  // With `wait` > 0 (and a job id), the reply comes when the job finishes or `wait` passes.
  Result<wire::StatusReply> Status(const std::string& job_id = "",
                                   std::chrono::milliseconds wait = std::chrono::milliseconds(0));
  // Jobs newest first, only those in `state` (empty: any), at most `limit` (0: all); the
  // coordinator filters, so a long history does not travel.
  Result<wire::StatusReply> Jobs(std::optional<job::JobPhase> state, uint32_t limit);
  Result<std::string> Cancel(const std::string& job_id);
  // Runs a failed or cancelled job's failed tasks and what depends on them again, in place.
  Result<std::string> Retry(const std::string& job_id);
  Result<std::vector<wire::WorkerStatus>> Workers();
  Result<std::string> Drain(const std::string& worker_id);
  // Bans (`ban` true, with `reason`) or unbans a worker id: admin keys only.
  Result<std::string> Ban(const std::string& worker_id, const std::string& reason, bool ban);
  // Fences (`fence` true, with `reason`) or clears GPUs `gpus` of a worker (empty: all of its
  // GPUs): admin keys only.
  Result<std::string> FenceGpu(const std::string& worker_id, const std::vector<uint32_t>& gpus,
                               const std::string& reason, bool fence);

  const std::string& endpoint() const { return endpoint_; }

 private:
  Client(std::string endpoint, std::chrono::milliseconds timeout);
  ::coupler::Status Open();
  Result<wire::StatusReply> AskStatus(const wire::StatusRequest& req,
                                      std::chrono::milliseconds wait);
  // `extra`: how long the coordinator may hold the reply on purpose (long poll).
  Result<wire::Message> Call(const std::string& request,
                             std::chrono::milliseconds extra = std::chrono::milliseconds(0));

  std::string endpoint_;
  std::chrono::milliseconds timeout_;
  std::optional<net::PeerKeys> keys_;
  zmq::context_t ctx_;
  net::HandshakeMonitor monitor_;  // after ctx_, before socket_: destroyed before the socket
  zmq::socket_t socket_;
  std::chrono::steady_clock::time_point opened_;  // when socket_ began connecting
};

}  // namespace coupler::client
