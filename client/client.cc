#include "client/client.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/job/spec_limits.h"
#include "runtime/net/key_discovery.h"
#include "runtime/net/zmq_socket.h"
#include "runtime/wire/codec.h"
#include "runtime/wire/control_messages.h"

namespace coupler::client {

Client::Client(std::string endpoint, std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)), timeout_(timeout), ctx_(1) {}

Result<std::unique_ptr<Client>> Client::Connect(const std::string& endpoint,
                                                std::chrono::milliseconds timeout,
                                                const ClientSecurity& security) {
  std::unique_ptr<Client> c(new Client(endpoint, timeout));
  // A client run right after `coupler coordinator ... &` waits for its keys as long as it
  // would wait for an answer.
  COUPLER_ASSIGN_OR_RETURN(c->keys_, net::AwaitPeerKeys(endpoint, net::KeyRole::kClient,
                                                        security.keys_dir, security.insecure,
                                                        timeout));
  COUPLER_RETURN_IF_ERROR(c->Open());
  return c;
}

::coupler::Status Client::Open() {
  // The monitor watches the new socket from before it connects, so a refused key is seen.
  socket_.close();
  monitor_ = net::HandshakeMonitor();
  COUPLER_ASSIGN_OR_RETURN(socket_, net::ConnectDealer(ctx_, endpoint_, keys_ ? &*keys_ : nullptr,
                                                       &monitor_,
                                                       "the coordinator at " + endpoint_));
  opened_ = std::chrono::steady_clock::now();
  return Status::Ok();
}

Result<wire::Message> Client::Call(const std::string& request, std::chrono::milliseconds extra) {
  COUPLER_RETURN_IF_ERROR(net::Send(socket_, request));
  std::optional<std::string> reply;
  const auto deadline = std::chrono::steady_clock::now() + timeout_ + extra;
  const auto connect_by = opened_ + std::min(timeout_, kConnectTimeout);
  while (!reply) {
    if (std::optional<::coupler::Status> refused = monitor_.Poll()) {
      COUPLER_RETURN_IF_ERROR(Open());  // nothing sent on the refused socket may linger
      return *refused;
    }
    if (!monitor_.succeeded() && std::chrono::steady_clock::now() >= connect_by) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::min(timeout_, kConnectTimeout));
      const int cut = monitor_.cut_short();
      (void)Open();  // the request must not reach a coordinator that comes up later
      if (cut > 0) {
        // Something listens there and ends every handshake: not a coordinator that is down.
        return Unavailable("the security handshake with the coordinator at " + endpoint_ +
                           " was cut short " + std::to_string(cut) + " time(s) in " +
                           std::to_string(waited.count() / 1000) +
                           " s: it does not run with the same --insecure setting, or it is "
                           "not the coordinator whose coordinator.pub this key set holds");
      }
      return Unavailable("no coordinator answered at " + endpoint_ + " within " +
                         std::to_string(waited.count() / 1000) + " s; is it running?");
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    Result<std::optional<std::string>> got =
        net::RecvFor(socket_, std::min(left, std::chrono::milliseconds(50)));
    if (!got.ok()) {
      (void)Open();  // the failed socket is of no more use; the next call gets a fresh one
      return got.status();
    }
    reply = std::move(*got);
  }
  if (!reply) {
    // A late reply must not answer the next request: start over on a fresh socket.
    (void)Open();
    return DeadlineExceeded("no answer from the coordinator at " + endpoint_ + " within " +
                            std::to_string(timeout_.count() / 1000) +
                            " s (is `coupler coordinator` running there?)");
  }
  COUPLER_ASSIGN_OR_RETURN(wire::Message msg, wire::Decode(*reply));
  if (const auto* err = std::get_if<wire::Error>(&msg)) return wire::StatusFromError(*err);
  return msg;
}

Result<std::string> Client::Submit(const std::string& spec_path, int priority, bool reuse,
                                   const std::string& submission_id, bool* existing) {
  std::ifstream in(spec_path, std::ios::binary);
  if (!in) return NotFound("cannot read the spec file " + spec_path);
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(spec_path, ec); !ec) {
    COUPLER_RETURN_IF_ERROR(job::CheckSpecSize(size));  // past the wire cap it would vanish
  }
  std::ostringstream text;
  text << in.rdbuf();
  wire::SubmitJob req;
  req.spec_text = text.str();
  req.spec_path = std::filesystem::absolute(spec_path, ec).lexically_normal().string();
  req.priority = priority;
  req.reuse = reuse;
  req.client_id = "cli-" + std::to_string(getpid());
  req.cwd = std::filesystem::current_path(ec).string();
  req.submission_id = submission_id;
  COUPLER_ASSIGN_OR_RETURN(wire::Message msg, Call(wire::Encode(req)));
  const auto* reply = std::get_if<wire::SubmitReply>(&msg);
  if (reply == nullptr) return Internal("unexpected reply to submit");
  if (!reply->ok) return InvalidArgument(reply->error);
  if (existing != nullptr) *existing = reply->existing;
  return reply->job_id;
}

Result<wire::StatusReply> Client::Status(const std::string& job_id,
                                         std::chrono::milliseconds wait) {
  wire::StatusRequest req;
  req.job_id = job_id;
  req.wait_ms = static_cast<uint32_t>(wait.count());
  return AskStatus(req, wait);
}

Result<wire::StatusReply> Client::Jobs(std::optional<job::JobPhase> state, uint32_t limit) {
  wire::StatusRequest req;
  if (state) req.states.push_back(*state);
  req.limit = limit;
  return AskStatus(req, std::chrono::milliseconds(0));
}

Result<wire::StatusReply> Client::AskStatus(const wire::StatusRequest& req,
                                            std::chrono::milliseconds wait) {
  COUPLER_ASSIGN_OR_RETURN(wire::Message msg, Call(wire::Encode(req), wait));
  auto* reply = std::get_if<wire::StatusReply>(&msg);
  if (reply == nullptr) return Internal("unexpected reply to status");
  return std::move(*reply);
}

Result<std::string> Client::Cancel(const std::string& job_id) {
  COUPLER_ASSIGN_OR_RETURN(wire::Message msg, Call(wire::Encode(wire::CancelJob{job_id})));
  const auto* ack = std::get_if<wire::Ack>(&msg);
  if (ack == nullptr) return Internal("unexpected reply to cancel");
  return ack->message;
}

Result<std::string> Client::Retry(const std::string& job_id) {
  COUPLER_ASSIGN_OR_RETURN(wire::Message msg, Call(wire::Encode(wire::RetryJob{job_id})));
  const auto* ack = std::get_if<wire::Ack>(&msg);
  if (ack == nullptr) return Internal("unexpected reply to retry");
  return ack->message;
}

Result<std::vector<wire::WorkerStatus>> Client::Workers() {
  COUPLER_ASSIGN_OR_RETURN(wire::Message msg, Call(wire::Encode(wire::WorkersRequest{})));
  auto* reply = std::get_if<wire::WorkersReply>(&msg);
  if (reply == nullptr) return Internal("unexpected reply to workers");
  return std::move(reply->workers);
}

Result<std::string> Client::Drain(const std::string& worker_id) {
  COUPLER_ASSIGN_OR_RETURN(wire::Message msg, Call(wire::Encode(wire::DrainWorker{worker_id})));
  const auto* ack = std::get_if<wire::Ack>(&msg);
  if (ack == nullptr) return Internal("unexpected reply to drain");
  return ack->message;
}

Result<std::string> Client::Ban(const std::string& worker_id, const std::string& reason, bool ban) {
  COUPLER_ASSIGN_OR_RETURN(wire::Message msg,
                           Call(wire::Encode(wire::BanWorker{worker_id, reason, ban})));
  const auto* ack = std::get_if<wire::Ack>(&msg);
  if (ack == nullptr) return Internal(std::string("unexpected reply to ") + (ban ? "ban" : "unban"));
  return ack->message;
}

Result<std::string> Client::FenceGpu(const std::string& worker_id, const std::vector<uint32_t>& gpus,
                                     const std::string& reason, bool fence) {
  COUPLER_ASSIGN_OR_RETURN(wire::Message msg,
                           Call(wire::Encode(wire::FenceGpu{worker_id, gpus, reason, fence})));
  const auto* ack = std::get_if<wire::Ack>(&msg);
  if (ack == nullptr) {
    return Internal(std::string("unexpected reply to ") + (fence ? "fence-gpu" : "clear-gpu"));
  }
  return ack->message;
}

}  // namespace coupler::client
