// A coupler deployment on loopback for one test: a coordinator on a free port pair, workers,
// the CLI as a user runs it, and status JSON read into plain structs. Everything it starts is
// killed when it goes out of scope; every process logs at info level into its scratch folder,
// and Logs() gathers those logs for a failure message.
#pragma once

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "runtime/io/output_layout.h"
#include "runtime/job/job_phase.h"
#include "tests/integration/process_harness.h"

namespace coupler::itest {

inline const std::string kCoupler = COUPLER_BINARY;
inline const fs::path kSourceDir = COUPLER_SOURCE_DIR;

struct NodeView {
  std::string state;
  uint64_t tasks = 0;
  uint64_t done = 0;
  uint64_t attempts = 0;
  std::string error;
  uint64_t ranks = 0;  // tight nodes: the gang size
  std::string reason;  // why a ready node waits
  std::vector<std::string> hosts;  // tight nodes: the gang's addresses, leader first
  uint64_t running = 0, prefetched = 0;
};

// `coupler status JOB --json`, parsed.
struct JobView {
  std::string id, name, state, error, submitted_by;
  // running: started in a worker's slot; prefetched: sent, waiting in a worker's queue.
  uint64_t total = 0, queued = 0, running = 0, done = 0, failed = 0, attempts = 0, prefetched = 0;
  int64_t submitted_ms = 0, finished_ms = 0;
  std::map<std::string, NodeView> nodes;
  // Workers no longer sent the job's tasks: worker id -> the reason.
  std::map<std::string, std::string> refused_hosts;
  // As the CLI's wait for a job decides: any state but queued and running (an unknown one too) is an end.
  bool finished() const {
    const std::optional<job::JobPhase> phase = job::ParseJobPhase(state);
    return !phase || job::IsFinished(*phase);
  }
  // The node's status; an empty one (state "") when the job has no such node.
  NodeView node(const std::string& node_id) const {
    auto it = nodes.find(node_id);
    return it == nodes.end() ? NodeView{} : it->second;
  }
};

// `coupler status --json`: the coordinator's counters.
struct CoordinatorView {
  uint64_t messages_received = 0;
  uint64_t messages_dropped = 0;
  uint64_t workers_alive = 0;
  uint64_t queued_cpu_tasks = 0, queued_gpu_tasks = 0, queued_gang_ranks = 0;
  uint64_t recommended_workers = 0;
  uint64_t longest_partial_hold_ms = 0;
  bool encrypted = false;
  uint64_t handshakes_refused = 0, registrations_refused = 0, stale_outcomes_dropped = 0;
  uint64_t replies_dropped = 0;
  uint64_t running_tasks = 0, prefetched_tasks = 0;
};

// `coupler workers --json`, one worker.
struct WorkerStatusView {
  std::string state;
  uint64_t slots = 0, running = 0, prefetched = 0, tasks_done = 0;
};

inline uint64_t U64(const rapidjson::Value& v, const char* key) {
  return v.HasMember(key) && v[key].IsUint64() ? v[key].GetUint64() : 0;
}
inline int64_t I64(const rapidjson::Value& v, const char* key) {
  return v.HasMember(key) && v[key].IsInt64() ? v[key].GetInt64() : 0;
}
inline std::string Str(const rapidjson::Value& v, const char* key) {
  return v.HasMember(key) && v[key].IsString() ? v[key].GetString() : "";
}

inline std::optional<JobView> ParseJob(const rapidjson::Value& j) {
  if (!j.IsObject() || !j.HasMember("tasks") || !j["tasks"].IsObject()) return std::nullopt;
  JobView v;
  v.id = Str(j, "id");
  v.name = Str(j, "name");
  v.state = Str(j, "state");
  v.error = Str(j, "error");
  v.submitted_by = Str(j, "submitted_by");
  const auto& t = j["tasks"];
  v.total = U64(t, "total");
  v.queued = U64(t, "queued");
  v.running = U64(t, "running");
  v.prefetched = U64(t, "prefetched");
  v.done = U64(t, "done");
  v.failed = U64(t, "failed");
  v.attempts = U64(j, "attempts");
  v.submitted_ms = I64(j, "submitted_ms");
  v.finished_ms = I64(j, "finished_ms");
  if (j.HasMember("refused_hosts") && j["refused_hosts"].IsArray()) {
    for (const auto& r : j["refused_hosts"].GetArray()) v.refused_hosts[Str(r, "worker")] = Str(r, "reason");
  }
  if (j.HasMember("nodes") && j["nodes"].IsArray()) {
    for (const auto& n : j["nodes"].GetArray()) {
      NodeView nv{Str(n, "state"), U64(n, "tasks"),    U64(n, "done"), U64(n, "attempts"),
                  Str(n, "error"), U64(n, "ranks"),    Str(n, "reason"), {},
                  U64(n, "running"), U64(n, "prefetched")};
      if (n.HasMember("hosts") && n["hosts"].IsArray()) {
        for (const auto& h : n["hosts"].GetArray()) {
          if (h.IsString()) nv.hosts.push_back(h.GetString());
        }
      }
      v.nodes[Str(n, "id")] = nv;
    }
  }
  return v;
}

// Polls `job` (a status query) until the job has finished; its last status (nullopt if it never
// answered).
inline std::optional<JobView> PollUntilFinished(const std::function<std::optional<JobView>()>& job,
                                                std::chrono::milliseconds timeout) {
  std::optional<JobView> last;
  WaitUntil(
      [&] {
        if (auto v = job()) last = v;
        return last && last->finished();
      },
      timeout, 100ms);
  return last;
}

// The tail of every process's stderr kept in `logs` (<name>.err), for a failure message.
inline std::string StderrTails(const fs::path& logs) {
  std::string out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(logs, ec)) {
    if (e.path().extension() != ".err") continue;
    std::string text = ReadFile(e.path());
    if (text.size() > 3000) text = "..." + text.substr(text.size() - 3000);
    out += "---- " + e.path().filename().string() + "\n" + text;
  }
  return out;
}

// `coupler coordinator` as the clusters start it: info logs, a ready file, the timeouts.
inline std::vector<std::string> CoordinatorArgv(const std::string& endpoint, const fs::path& state,
                                                const fs::path& ready, int heartbeat_ms,
                                                int dead_after_ms,
                                                const std::vector<std::string>& extra) {
  std::vector<std::string> argv{kCoupler,       "--log-level",    "info",
                                "coordinator",  "--listen",       endpoint,
                                "--state",      state.string(),   "--ready-file",
                                ready.string(), "--heartbeat-ms", std::to_string(heartbeat_ms),
                                "--dead-after-ms", std::to_string(dead_after_ms)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// Declared here for Cluster, defined below.
inline void WriteSyntheticCsv(const fs::path& path, int rows, int cols, unsigned seed = 7);

class Cluster {
 public:
  struct Options {
    int heartbeat_ms = 300;
    int dead_after_ms = 3000;
    std::vector<std::string> coordinator_args;  // e.g. {"--gang-hold-timeout-ms", "1500"}

    // How fast a silent worker is declared dead: what a failure test is about.
    static Options Timeouts(int heartbeat_ms, int dead_after_ms) {
      Options o;
      o.heartbeat_ms = heartbeat_ms;
      o.dead_after_ms = dead_after_ms;
      return o;
    }
  };

  Cluster() : Cluster(Options{}) {}
  explicit Cluster(Options options) : options_(options) {
    fs::create_directories(logs());
  }
  ~Cluster() {
    for (auto& [id, w] : workers_) w.Kill();
    coordinator_.Kill();
  }

  const fs::path& dir() const { return dir_.path(); }
  fs::path logs() const { return dir_ / "logs"; }
  fs::path state() const { return dir_ / "state"; }
  // The key set the coordinator made in its state at first start (local-worker/, local-client/).
  fs::path keys() const { return state() / "keys"; }
  const std::string& endpoint() const { return endpoint_; }
  Process& coordinator() { return coordinator_; }
  Process& worker(const std::string& id) { return workers_.at(id); }

  // Starts the coordinator on a fresh free port pair (retrying when another process takes the
  // port first) and waits until it is listening. False (with Logs() telling why) otherwise.
  bool StartCoordinator() {
    for (int attempt = 0; attempt < 5; ++attempt) {
      port_ = FreePortPair();
      endpoint_ = "tcp://127.0.0.1:" + std::to_string(port_);
      if (port_ > 0 && LaunchCoordinator()) return true;
    }
    return false;
  }

  // Starts a coordinator again on the same port and state (after a crash).
  bool RestartCoordinator() { return LaunchCoordinator(); }

  Process& StartWorker(const std::string& id, int slots, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv{kCoupler,       "--log-level",  "info",    "worker",
                                  "--coordinator", endpoint_,     "--slots", std::to_string(slots),
                                  "--id",          id,            "--heartbeat-ms",
                                  std::to_string(options_.heartbeat_ms)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    Process::Options o;
    o.deadline = 240s;
    o.output = logs();
    o.name = "worker-" + id + "-" + std::to_string(++launches_);
    workers_.erase(id);
    return workers_.emplace(id, Process::Spawn(argv, o)).first->second;
  }

  // `coupler ARGS --coordinator ENDPOINT`, run to its end.
  CommandResult Cli(std::vector<std::string> args, std::chrono::seconds timeout = 60s) {
    std::vector<std::string> argv{kCoupler};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--coordinator");
    argv.push_back(endpoint_);
    return RunToEnd(argv, logs(), timeout);
  }

  // `coupler submit SPEC`: the job id, or "" (with the reason in *error).
  std::string Submit(const fs::path& spec, std::string* error = nullptr) {
    CommandResult r = Cli({"submit", spec.string()});
    std::string id = r.out;
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    if (r.exit_code != 0 || id.empty() || id.find('\n') != std::string::npos) {
      if (error != nullptr) *error = "exit " + std::to_string(r.exit_code) + ": " + r.err + r.out;
      return "";
    }
    return id;
  }

  // Submits `name`: a 1-shard import of a small CSV, then an exec node `hold` whose command
  // waits for the file `go` before copying its input; returns once `hold` is running, so a test
  // can do its harm (a restart, a takeover) while an attempt is out. The job id, or "".
  std::string SubmitHeldJob(const std::string& name, const fs::path& go,
                            const std::string& hold_fields = "") {
    WriteSyntheticCsv(dir() / "held.csv", 20, 2);
    const fs::path spec = dir() / (name + ".yaml");
    WriteFile(spec, "name: " + name + "\nworkdir: work\nnodes:\n"
                    "  - {id: import, op: import_csv, inputs: [held.csv], params: {shards: 1}}\n"
                    "  - id: hold\n    op: exec\n    inputs: [import]\n" + hold_fields +
                    "    params:\n      command: \"while [ ! -f " + go.string() +
                    " ]; do sleep 0.05; done; cp {input} {output}\"\n");
    const std::string job = Submit(spec);
    if (job.empty()) return "";
    const bool running = WaitUntil(
        [&] {
          const auto j = Job(job);
          return j && j->nodes.count("hold") && j->nodes.at("hold").running == 1;
        },
        60s);
    return running ? job : "";
  }

  std::optional<JobView> Job(const std::string& id) {
    CommandResult r = Cli({"status", id, "--json"});
    if (r.exit_code != 0) return std::nullopt;
    rapidjson::Document d;
    if (d.Parse(r.out.c_str()).HasParseError()) return std::nullopt;
    return ParseJob(d);
  }

  std::optional<CoordinatorView> Coordinator() {
    CommandResult r = Cli({"status", "--json"});
    if (r.exit_code != 0) return std::nullopt;
    rapidjson::Document d;
    if (d.Parse(r.out.c_str()).HasParseError() || !d.IsObject() || !d.HasMember("coordinator")) {
      return std::nullopt;
    }
    const auto& c = d["coordinator"];
    CoordinatorView v{U64(c, "messages_received"), U64(c, "messages_dropped"),
                      U64(c, "workers_alive")};
    if (c.HasMember("queued") && c["queued"].IsObject()) {
      v.queued_cpu_tasks = U64(c["queued"], "cpu_tasks");
      v.queued_gpu_tasks = U64(c["queued"], "gpu_tasks");
      v.queued_gang_ranks = U64(c["queued"], "gang_ranks");
    }
    v.recommended_workers = U64(c, "recommended_workers");
    v.longest_partial_hold_ms = U64(c, "longest_partial_hold_ms");
    v.encrypted = c.HasMember("encrypted") && c["encrypted"].IsBool() && c["encrypted"].GetBool();
    v.handshakes_refused = U64(c, "handshakes_refused");
    v.registrations_refused = U64(c, "registrations_refused");
    v.stale_outcomes_dropped = U64(c, "stale_outcomes_dropped");
    v.replies_dropped = U64(c, "replies_dropped");
    v.running_tasks = U64(c, "running_tasks");
    v.prefetched_tasks = U64(c, "prefetched_tasks");
    return v;
  }

  // `coupler workers --json`: id → what it shows.
  std::map<std::string, WorkerStatusView> WorkerViews() {
    std::map<std::string, WorkerStatusView> out;
    CommandResult r = Cli({"workers", "--json"});
    rapidjson::Document d;
    if (r.exit_code != 0 || d.Parse(r.out.c_str()).HasParseError() || !d.IsArray()) return out;
    for (const auto& w : d.GetArray()) {
      out[Str(w, "id")] = {Str(w, "state"), U64(w, "slots"), U64(w, "running"),
                           U64(w, "prefetched"), U64(w, "tasks_done")};
    }
    return out;
  }

  // `coupler workers --json`: id → (state, tasks it holds: running + prefetched).
  std::map<std::string, std::pair<std::string, uint64_t>> Workers() {
    std::map<std::string, std::pair<std::string, uint64_t>> out;
    for (const auto& [id, w] : WorkerViews()) out[id] = {w.state, w.running + w.prefetched};
    return out;
  }

  bool WaitWorkersAlive(size_t n, std::chrono::milliseconds timeout = 60s) {
    return WaitUntil(
        [&] {
          size_t alive = 0;
          for (const auto& [id, w] : Workers()) alive += w.first == "alive" ? 1 : 0;
          return alive >= n;
        },
        timeout, 100ms);
  }

  // Polls until the job has finished; its last status (nullopt if it never answered).
  std::optional<JobView> WaitJobFinished(const std::string& id,
                                         std::chrono::milliseconds timeout = 90s) {
    return PollUntilFinished([&] { return Job(id); }, timeout);
  }

  // Every process's stderr (the tail), for a failure message.
  std::string Logs() const { return StderrTails(logs()); }

  // Where the coordinator serves HTTP ("http://127.0.0.1:PORT", from its ready file), or ""
  // when HTTP is off. Tests that need it start the coordinator with --http 127.0.0.1:0.
  std::string HttpUrl() const {
    const std::string ready = ReadFile(dir_ / "ready");
    const size_t at = ready.find("http=");
    if (at == std::string::npos) return "";
    const size_t end = ready.find('\n', at);
    return ready.substr(at + 5, end == std::string::npos ? std::string::npos : end - at - 5);
  }
  // The HTTP API's bearer token, made in the state at first start.
  fs::path ApiTokenFile() const { return state() / "http-token"; }
  std::string ApiToken() const {
    std::string t = ReadFile(ApiTokenFile());
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    return t;
  }

 private:
  bool LaunchCoordinator() {
    const fs::path ready = dir_ / "ready";
    std::error_code ec;
    fs::remove(ready, ec);
    std::vector<std::string> argv =
        CoordinatorArgv(endpoint_, state(), ready, options_.heartbeat_ms, options_.dead_after_ms,
                        options_.coordinator_args);
    Process::Options o;
    o.deadline = 240s;
    o.output = logs();
    o.name = "coordinator-" + std::to_string(++launches_);
    coordinator_ = Process::Spawn(argv, o);
    return WaitUntil(
        [&] {
          return ReadFile(ready).find("clients=") != std::string::npos || !coordinator_.running();
        },
        60s, 20ms) &&
           coordinator_.running();
  }

  Options options_;
  TempDir dir_;
  int port_ = -1;
  std::string endpoint_;
  int launches_ = 0;
  Process coordinator_;
  std::map<std::string, Process> workers_;
};

// A CSV of `rows` x `cols` float columns c0..c{cols-1} (values with a fractional part, so the
// parse is exercised) plus an integer label, with a header line.
inline void WriteSyntheticCsv(const fs::path& path, int rows, int cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> v(-5000, 5000);
  std::ofstream out(path);
  for (int c = 0; c < cols; ++c) out << "c" << c << ",";
  out << "label\n";
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) out << v(rng) / 100.0 << ",";
    out << r % 10 << "\n";
  }
}

// The files in a directory, by name (not its folders: a node's logs/ is no stray output).
inline std::vector<std::string> ListDir(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_directory(ec)) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A shard's file name as coupler's ops write it: part-00004.npz ...
inline std::string PartName(int shard) { return io::ShardFileName(shard); }
// ... and as an exec node's command writes it (its {output}): part-00004.npy.
inline std::string CommandPartName(int shard) {
  return io::ShardFileName(shard, io::ShardKind::kPart, io::ShardFormat::kRecords);
}

// The shards a task log names, one per line, in the order they were written.
inline std::vector<int> LoggedShards(const fs::path& log) {
  std::vector<int> shards;
  std::stringstream in(ReadFile(log));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) shards.push_back(std::stoi(line));
  }
  return shards;
}

}  // namespace coupler::itest
