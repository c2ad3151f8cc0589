// Client: the request/reply API that `coupler submit|status|cancel|workers|drain` and
// embedders use to talk to a coordinator's client port. One request at a time, each with a
// deadline, so a dead coordinator is an error message, never a hang.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "runtime/status.h"
#include "runtime/wire/messages.h"

namespace coupler::coordinator {

class Client {
 public:
  static Result<std::unique_ptr<Client>> Connect(const std::string& endpoint,
                                                 std::chrono::milliseconds timeout =
                                                     std::chrono::seconds(10));

  // Submits the spec at `spec_path` (read here; relative inputs resolve against its folder).
  Result<std::string> Submit(const std::string& spec_path, int priority = 0);
  // With `wait` > 0 (and a job id), the reply comes when the job finishes or `wait` passes.
  Result<wire::StatusReply> Status(const std::string& job_id = "",
                                   std::chrono::milliseconds wait = std::chrono::milliseconds(0));
  Result<std::string> Cancel(const std::string& job_id);
  Result<std::vector<wire::WorkerStatus>> Workers();
  Result<std::string> Drain(const std::string& worker_id);

  const std::string& endpoint() const { return endpoint_; }

 private:
  Client(std::string endpoint, std::chrono::milliseconds timeout);
  // `extra`: how long the coordinator may hold the reply on purpose (long poll).
  Result<wire::Message> Call(const std::string& request,
                             std::chrono::milliseconds extra = std::chrono::milliseconds(0));

  std::string endpoint_;
  std::chrono::milliseconds timeout_;
  zmq::context_t ctx_;
  zmq::socket_t socket_;
};

}  // namespace coupler::coordinator
