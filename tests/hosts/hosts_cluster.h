// A coupler deployment across the hosts of a TestBed, set up as an operator would across
// machines: the coordinator on one host listening on that host's address, each worker host
// with a key set made by `coupler keygen` and authorized by copying .pub files, and the CLI run
// as a client inside a host. Everything it starts dies with it (declare it after the bed).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "tests/hosts/test_bed.h"
#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {

// One entry of `coupler workers --json`.
struct WorkerView {
  // "alive", "draining", "drained" (left after a drain), "lost" (given up on); "silent": past
  // --dead-after-ms but not given up on, as no worker at all is heard (the coordinator's own
  // link is down)
  std::string state;
  std::string host;   // the hostname it registered with: the same on every host of a bed
  uint64_t slots = 0;
  uint64_t running = 0;
};

class HostsCluster {
 public:
  struct Options {
    int heartbeat_ms = 300;
    int dead_after_ms = 3000;
    // Workers dial PORT, clients PORT + 1. Each host has a port space of its own, so a fixed
    // port is free there whatever else runs on the machine.
    int port = 7100;
    std::vector<std::string> coordinator_args;
  };

  explicit HostsCluster(TestBed& bed) : HostsCluster(bed, Options{}) {}
  HostsCluster(TestBed& bed, Options options) : bed_(bed), options_(std::move(options)) {
    fs::create_directories(logs());
  }
  ~HostsCluster() {
    for (auto& [id, w] : workers_) w.Kill();
    coordinator_.Kill();
  }
  HostsCluster(const HostsCluster&) = delete;
  HostsCluster& operator=(const HostsCluster&) = delete;

  const fs::path& dir() const { return dir_.path(); }
  fs::path logs() const { return dir_ / "logs"; }
  fs::path state() const { return dir_ / "state"; }
  // The coordinator's key set, made at its first start (docs/security.md).
  fs::path keys() const { return state() / "keys"; }
  const std::string& endpoint() const { return endpoint_; }  // tcp://ADDR:PORT, for workers
  const Host& coordinator_host() const { return *coordinator_host_; }
  Process& coordinator() { return coordinator_; }
  Process& worker(const std::string& id) { return workers_.at(id); }
  // Where Cli() runs: the coordinator's host unless set.
  void set_client_host(const Host& host) { client_host_ = &host; }

  // Starts the coordinator on `host`, bound to the host's address, and waits until it listens.
  bool StartCoordinator(const Host& host) {
    coordinator_host_ = &host;
    if (client_host_ == nullptr) client_host_ = &host;
    endpoint_ = "tcp://" + host.address() + ":" + std::to_string(options_.port);
    return LaunchCoordinator();
  }
  // Starts it again on the same host, port and state (after a crash or a Kill()).
  bool RestartCoordinator() { return LaunchCoordinator(); }

  // The worker key set of `host` (DIR/HOST.key + coordinator.pub), made the first time as an
  // operator makes one: `coupler keygen DIR --role worker --name HOST`, DIR/HOST.pub copied
  // into the coordinator's authorized/workers/, its coordinator.pub copied into DIR. Needs the
  // coordinator's keys (StartCoordinator first). "" with the reason in Logs() on failure.
  fs::path WorkerKeys(const Host& host) {
    const fs::path dir = dir_ / "worker-keys" / host.name();
    if (fs::exists(dir / (host.name() + ".key"))) return dir;
    const CommandResult r = RunToEnd(
        {kCoupler, "keygen", dir.string(), "--role", "worker", "--name", host.name()}, logs());
    if (r.exit_code != 0) return Note("keygen for " + host.name() + " failed: " + r.err);
    // Copied under a temporary name, then renamed: the coordinator re-reads its allow-list when
    // the folder changes and must never find half a key file.
    const fs::path authorized = keys() / "authorized" / "workers";
    if (!CopyAtomically(dir / (host.name() + ".pub"), authorized / (host.name() + ".pub")) ||
        !CopyAtomically(keys() / "coordinator.pub", dir / "coordinator.pub")) {
      return Note("cannot hand out the keys of " + host.name());
    }
    return dir;
  }

  // `coupler worker` on `host` with its WorkerKeys(host). Ids must differ (every host's
  // workers would otherwise all default to HOSTNAME-PID, and pids repeat across hosts).
  // `env`: e.g. bed.MpiEnv() for a worker whose gangs span hosts.
  Process& StartWorker(const Host& host, const std::string& id, int slots,
                       std::vector<std::string> extra = {},
                       std::map<std::string, std::string> env = {}) {
    return LaunchWorker(host, nullptr, id, slots, std::move(extra), std::move(env));
  }
  // As StartWorker, on a host that does not see the shared filesystem at `hidden` (an empty
  // private tmpfs there: TestBed::WrapPrivateMount). The worker's keys must lie elsewhere.
  Process& StartWorkerWithout(const Host& host, const fs::path& hidden, const std::string& id,
                              int slots, std::vector<std::string> extra = {},
                              std::map<std::string, std::string> env = {}) {
    return LaunchWorker(host, &hidden, id, slots, std::move(extra), std::move(env));
  }

  // `coupler ARGS --coordinator ENDPOINT --keys STATE/keys/local-client` on the client host.
  CommandResult Cli(std::vector<std::string> args, std::chrono::seconds timeout = 60s) {
    return CliOn(*client_host_, std::move(args), timeout);
  }
  CommandResult CliOn(const Host& host, std::vector<std::string> args,
                      std::chrono::seconds timeout = 60s) {
    std::vector<std::string> argv{kCoupler};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(),
                {"--coordinator", endpoint_, "--keys", (keys() / "local-client").string()});
    return RunToEnd(bed_.Wrap(host, WithEnv({{"COUPLER_HOME", Home().string()}}, argv)), logs(),
                    timeout);
  }

  // `coupler submit SPEC`: the job id, or "" (with the reason in *error).
  std::string Submit(const fs::path& spec, std::string* error = nullptr) {
    const CommandResult r = Cli({"submit", spec.string()});
    std::string id = r.out;
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    if (r.exit_code != 0 || id.empty() || id.find('\n') != std::string::npos) {
      if (error != nullptr) *error = "exit " + std::to_string(r.exit_code) + ": " + r.err + r.out;
      return "";
    }
    return id;
  }

  // `coupler status JOB --json`, parsed by the loopback harness's ParseJob.
  std::optional<JobView> Job(const std::string& id) {
    const CommandResult r = Cli({"status", id, "--json"});
    rapidjson::Document d;
    if (r.exit_code != 0 || d.Parse(r.out.c_str()).HasParseError()) return std::nullopt;
    return ParseJob(d);
  }

  // `coupler status --json`'s coordinator object: its counters (nullopt if it did not answer).
  std::optional<CoordinatorView> Coordinator() {
    const CommandResult r = Cli({"status", "--json"});
    rapidjson::Document d;
    if (r.exit_code != 0 || d.Parse(r.out.c_str()).HasParseError() || !d.IsObject() ||
        !d.HasMember("coordinator") || !d["coordinator"].IsObject()) {
      return std::nullopt;
    }
    const auto& c = d["coordinator"];
    CoordinatorView v;
    v.messages_received = U64(c, "messages_received");
    v.messages_dropped = U64(c, "messages_dropped");
    v.workers_alive = U64(c, "workers_alive");
    v.encrypted = c.HasMember("encrypted") && c["encrypted"].IsBool() && c["encrypted"].GetBool();
    v.handshakes_refused = U64(c, "handshakes_refused");
    v.registrations_refused = U64(c, "registrations_refused");
    v.stale_outcomes_dropped = U64(c, "stale_outcomes_dropped");
    v.replies_dropped = U64(c, "replies_dropped");
    return v;
  }

  // `coupler workers --json`: id -> what the coordinator knows of it; empty when it did not
  // answer.
  std::map<std::string, WorkerView> Workers() {
    std::map<std::string, WorkerView> out;
    const CommandResult r = Cli({"workers", "--json"});
    rapidjson::Document d;
    if (r.exit_code != 0 || d.Parse(r.out.c_str()).HasParseError() || !d.IsArray()) return out;
    for (const auto& w : d.GetArray()) {
      out[Str(w, "id")] = {Str(w, "state"), Str(w, "host"), U64(w, "slots"), U64(w, "running")};
    }
    return out;
  }

  // Polls until worker `id` is listed in `state`; its last view (state "" if never listed).
  WorkerView WaitWorkerState(const std::string& id, const std::string& state,
                             std::chrono::milliseconds timeout = 60s) {
    WorkerView last;
    WaitUntil(
        [&] {
          auto workers = Workers();
          if (auto it = workers.find(id); it != workers.end()) last = it->second;
          return last.state == state;
        },
        timeout, 100ms);
    return last;
  }

  bool WaitWorkersAlive(size_t n, std::chrono::milliseconds timeout = 60s) {
    return WaitUntil(
        [&] {
          size_t alive = 0;
          for (const auto& [id, w] : Workers()) alive += w.state == "alive" ? 1 : 0;
          return alive >= n;
        },
        timeout, 100ms);
  }

  // Polls until the job has finished; its last status (nullopt if it never answered).
  std::optional<JobView> WaitJobFinished(const std::string& id,
                                         std::chrono::milliseconds timeout = 90s) {
    return PollUntilFinished([&] { return Job(id); }, timeout);
  }

  // Every process's stderr (the tail), the harness's own notes and the bed's failed commands.
  std::string Logs() const {
    return notes_ + bed_.Logs() + StderrTails(logs());
  }

 private:
  // The coordinators' notes (~/.coupler/coordinators/tcp-PORT) stay in the cluster's folder:
  // every bed uses the same port, and the user's own home is none of a test's business.
  fs::path Home() const { return dir_ / "home"; }

  fs::path Note(const std::string& what) {
    notes_ += what + "\n";
    return {};
  }

  static bool CopyAtomically(const fs::path& from, const fs::path& to) {
    std::error_code ec;
    const fs::path tmp = to.string() + ".tmp";
    fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::rename(tmp, to, ec);
    return !ec;
  }

  Process& LaunchWorker(const Host& host, const fs::path* hidden, const std::string& id,
                        int slots, std::vector<std::string> extra,
                        std::map<std::string, std::string> env) {
    const fs::path keys_dir = WorkerKeys(host);
    std::vector<std::string> argv{kCoupler, "--log-level", "info", "worker",
                                  "--coordinator", endpoint_,
                                  "--slots", std::to_string(slots),
                                  "--id", id,
                                  "--heartbeat-ms", std::to_string(options_.heartbeat_ms),
                                  "--keys", keys_dir.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    env["COUPLER_HOME"] = Home().string();
    Process::Options o;
    o.deadline = 280s;
    o.output = logs();
    o.name = "worker-" + id + "-" + std::to_string(++launches_);
    workers_.erase(id);
    argv = WithEnv(env, std::move(argv));
    return workers_
        .emplace(id, Process::Spawn(hidden == nullptr ? bed_.Wrap(host, std::move(argv))
                                                      : bed_.WrapPrivateMount(host, *hidden,
                                                                              std::move(argv)),
                                    o))
        .first->second;
  }

  bool LaunchCoordinator() {
    const fs::path ready = dir_ / "ready";
    std::error_code ec;
    fs::remove(ready, ec);
    std::vector<std::string> argv =
        CoordinatorArgv(endpoint_, state(), ready, options_.heartbeat_ms, options_.dead_after_ms,
                        options_.coordinator_args);
    Process::Options o;
    o.deadline = 280s;
    o.output = logs();
    o.name = "coordinator-" + std::to_string(++launches_);
    coordinator_ = Process::Spawn(
        bed_.Wrap(*coordinator_host_, WithEnv({{"COUPLER_HOME", Home().string()}}, argv)), o);
    return WaitUntil(
               [&] {
                 return ReadFile(ready).find("clients=") != std::string::npos ||
                        !coordinator_.running();
               },
               60s, 20ms) &&
           coordinator_.running();
  }

  TestBed& bed_;
  Options options_;
  TempDir dir_;
  const Host* coordinator_host_ = nullptr;
  const Host* client_host_ = nullptr;
  std::string endpoint_;
  int launches_ = 0;
  Process coordinator_;
  std::map<std::string, Process> workers_;
  std::string notes_;
};

}  // namespace coupler::itest
