// `coupler gang-agent HOST COMMAND...`: Open MPI's remote launcher for gangs that span hosts,
// in ssh's place (OMPI_MCA_plm_rsh_agent, set by the gang's leader: worker/ops/gang_launch.h).
// mpirun runs it as it would run ssh — the host, then the daemon's command as words for a
// remote shell — and it asks the coordinator, over the leader worker's authenticated channel,
// to have the worker reserved for the gang at HOST run that command. It stays alive while the
// daemon runs, relays its output, and exits with its status; 255 (as ssh does) when the launch
// is refused or the host is lost, so mpirun ends the group instead of waiting.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "runtime/net/handshake_monitor.h"
#include "runtime/net/key_discovery.h"
#include "runtime/net/zmq_socket.h"
#include "runtime/wire/codec.h"
#include "runtime/wire/control_messages.h"

namespace coupler::cli {
namespace {

// ssh's status when the connection itself failed: mpirun reads it as "daemon failed to start".
constexpr int kLaunchFailed = 255;
// A host whose worker sends nothing (not even the keepalive it sends every heartbeat) for this
// long is lost; COUPLER_GANG_SILENCE_MS overrides it.
constexpr int64_t kDefaultSilenceMs = 20'000;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "coupler gang-agent: %s\n", message.c_str());
  return kLaunchFailed;
}

void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n <= 0) return;  // mpirun closed our pipe: nobody reads any more
    done += static_cast<size_t>(n);
  }
}

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int RunGangAgent(const std::vector<std::string>& args) {
  // ssh-style options mpirun may put before the host are skipped.
  size_t at = 0;
  while (at < args.size() && args[at].starts_with("-")) ++at;
  if (at + 1 >= args.size()) return Fail("usage: coupler gang-agent HOST COMMAND...");
  const std::string host = args[at];
  std::string command;
  for (size_t i = at + 1; i < args.size(); ++i) command += (command.empty() ? "" : " ") + args[i];

  // COUPLER_GANG=JOB:TASK:ATTEMPT and the rest are set by the gang's leader for its mpirun.
  const std::string gang = Env("COUPLER_GANG");
  const std::string coordinator = Env("COUPLER_COORDINATOR");
  wire::LaunchRequest req;
  const size_t c1 = gang.find(':');
  const size_t c2 = c1 == std::string::npos ? c1 : gang.find(':', c1 + 1);
  if (c2 == std::string::npos || coordinator.empty()) {
    return Fail("COUPLER_GANG and COUPLER_COORDINATOR are not set: this runs only as the remote "
                "launcher of a gang that a coupler worker started");
  }
  req.gang.job_id = gang.substr(0, c1);
  req.gang.task_id = std::strtoull(gang.c_str() + c1 + 1, nullptr, 10);
  req.gang.attempt = static_cast<uint32_t>(std::strtoul(gang.c_str() + c2 + 1, nullptr, 10));
  req.gang_token = Env("COUPLER_GANG_TOKEN");
  req.host = host;
  req.command = command;
  int64_t silence_ms = kDefaultSilenceMs;
  if (const std::string s = Env("COUPLER_GANG_SILENCE_MS"); !s.empty()) silence_ms = std::atoll(s.c_str());

  Result<std::optional<net::PeerKeys>> keys = net::FindPeerKeys(
      coordinator, net::KeyRole::kWorker, Env("COUPLER_KEYS"), Env("COUPLER_INSECURE") == "1");
  if (!keys.ok()) return Fail(std::string(keys.status().message()));
  zmq::context_t ctx(1);
  net::HandshakeMonitor monitor;
  Result<zmq::socket_t> dealer = net::ConnectDealer(ctx, coordinator, keys->has_value() ? &**keys : nullptr,
                                                    &monitor, "the coordinator at " + coordinator);
  if (!dealer.ok()) return Fail(std::string(dealer.status().message()));
  if (Status s = net::Send(*dealer, wire::Encode(req)); !s.ok()) return Fail(std::string(s.message()));

  int64_t last_heard = SteadyMs();
  for (;;) {
    if (std::optional<Status> failed = monitor.Poll()) return Fail(std::string(failed->message()));
    net::PollReadable({&*dealer}, std::chrono::milliseconds(200));
    for (;;) {
      Result<std::optional<std::string>> payload = net::TryRecv(*dealer);
      if (!payload.ok()) return Fail("lost " + host + ": " + payload.status().message());
      if (!payload->has_value()) break;
      Result<wire::Message> msg = wire::Decode(**payload);
      if (!msg.ok()) continue;
      last_heard = SteadyMs();
      if (const auto* out = std::get_if<wire::LaunchOutput>(&*msg)) {
        if (!out->data.empty()) WriteAll(out->stream == 2 ? 2 : 1, out->data);
        if (out->exited) return out->exit_code;
      } else if (const auto* err = std::get_if<wire::Error>(&*msg)) {
        return Fail("the coordinator refused the launch on " + host + ": " + err->message);
      }
    }
    if (SteadyMs() - last_heard > silence_ms) {
      return Fail("lost " + host + ": no word from its worker for " + std::to_string(silence_ms) +
                  " ms (link cut, or the worker died)");
    }
  }
}

}  // namespace

void AddGangAgentCommand(CLI::App& app, CommandBody* run) {
  auto args = std::make_shared<std::vector<std::string>>();
  CLI::App* a = app.add_subcommand(
      "gang-agent", "Open MPI's remote launcher for gangs across hosts (set by the worker, not by hand)");
  a->prefix_command();
  a->group("");  // internal: hidden from --help
  a->callback([a, args, run] {
    *args = a->remaining();
    *run = [args] { return RunGangAgent(*args); };
  });
}

}  // namespace coupler::cli
