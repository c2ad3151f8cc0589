// Messages between the coordinator and its workers: registration, heartbeats (both ways), and
// the batched task traffic. Assignments and results travel many per message because one task
// per round trip caps the pipe at ~10k tasks/s (see DESIGN.md, "Limits measured").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include "runtime/wire/message_type.h"
#include "runtime/wire/payload_version.h"
#include "runtime/wire/task_kind.h"
#include "runtime/wire/task_params.h"

namespace coupler::wire {

// One GPU as a worker sees it when it registers (and as `coupler workers` shows it).
struct GpuInfo {
  uint32_t index = 0;  // CUDA device ordinal on that host
  std::string name;    // e.g. "NVIDIA H100 80GB HBM3"
  uint64_t total_memory = 0;
  uint64_t free_memory = 0;
  // New in 16: NVML's id of the board ("GPU-" and 32 hex digits), the `UUID` label
  // dcgm-exporter puts on its series; empty without NVML.
  std::string uuid;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(index, name, total_memory, free_memory);
    if (PayloadVersion() >= 16) ar(uuid);
  }
  friend bool operator==(const GpuInfo&, const GpuInfo&) = default;
};

// One attempt of one task: what a heartbeat reports running, what a gang's launch names, what
// a registration holds and what an acknowledgement covers.
struct TaskAttempt {
  std::string job_id;
  uint64_t task_id = 0;
  uint32_t attempt = 0;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(job_id, task_id, attempt);
  }
  friend bool operator==(const TaskAttempt&, const TaskAttempt&) = default;
};

// An attempt a worker holds when it registers: queued, running, or finished with its result
// not acknowledged yet (see ResultAck). A restarted coordinator adopts the ones it had sent.
struct HeldAttempt {
  TaskAttempt attempt;
  bool started = false;  // running or finished: losing it now would cost the task an attempt

  template <class Archive>
  void serialize(Archive& ar) {
    ar(attempt, started);
  }
  friend bool operator==(const HeldAttempt&, const HeldAttempt&) = default;
};

// A worker's announcement of itself; the coordinator answers with Registered or Error.
struct RegisterWorker {
  static constexpr MessageType kType = MessageType::kRegisterWorker;

  std::string worker_id;
  std::string host;     // its hostname, for people: several hosts may share one
  // The address its peers reach it at (--advertise; default: the local address of its
  // connection to the coordinator). Hosts are told apart by it: gang hostfiles name it, and
  // workers on one address are one host.
  std::string address;
  uint32_t pid = 0;
  uint32_t slots = 0;     // tasks it runs at once
  uint32_t prefetch = 0;  // extra tasks it may hold queued, so its pipe never runs dry
  uint32_t cpus = 0;
  uint64_t memory_bytes = 0;
  std::vector<GpuInfo> gpus;
  std::map<std::string, std::string> labels;  // e.g. interconnect=nvlink
  // The newest version the worker speaks; the envelope carries the one this message uses.
  uint16_t protocol_version = 0;
  // What it holds from before (a coordinator restart, or a cut long enough to be forgotten):
  // empty at its first registration.
  std::vector<HeldAttempt> holding;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(worker_id, host, address, pid, slots, prefetch, cpus, memory_bytes, gpus, labels,
       protocol_version, holding);
  }
  friend bool operator==(const RegisterWorker&, const RegisterWorker&) = default;
};

// Coordinator -> worker: the answer to RegisterWorker. `release`: the attempts it reported
// holding that are no longer its to run (not adopted: the task ended, moved on to another
// attempt, or was never recorded as sent); it drops them, stops the running ones and forgets
// their results. Everything else it reported holding was adopted and runs on. The coordinator's
// epoch travels in the header (Header::epoch), as on everything it sends.
struct Registered {
  static constexpr MessageType kType = MessageType::kRegistered;

  std::string worker_id;
  std::vector<TaskAttempt> release;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(worker_id, release);
  }
  friend bool operator==(const Registered&, const Registered&) = default;
};

// Coordinator -> worker: it does not know the worker (it restarted, or gave the worker up after
// silence): register again, reporting what you hold. The answer to any message from a
// connection with no registration.
struct RegisterAgain {
  static constexpr MessageType kType = MessageType::kRegisterAgain;

  std::string reason;  // for people: why the coordinator does not know the worker

  template <class Archive>
  void serialize(Archive& ar) {
    ar(reason);
  }
  friend bool operator==(const RegisterAgain&, const RegisterAgain&) = default;
};

// Coordinator -> worker: the outcomes of these attempts are on the coordinator's disk (or were
// of no use to it): the worker stops keeping them. Until then it keeps each sent outcome and
// sends it again after a registration, so a coordinator that crashed before its commit reached
// the disk still gets it.
struct ResultAck {
  static constexpr MessageType kType = MessageType::kResultAck;

  std::vector<TaskAttempt> attempts;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(attempts);
  }
  friend bool operator==(const ResultAck&, const ResultAck&) = default;
};

// Coordinator -> worker: give these attempts back if they have not started (another worker
// sits idle while they wait here). The worker answers with Reclaimed.
struct Reclaim {
  static constexpr MessageType kType = MessageType::kReclaim;

  std::vector<TaskAttempt> attempts;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(attempts);
  }
  friend bool operator==(const Reclaim&, const Reclaim&) = default;
};

// Worker -> coordinator: of a Reclaim's attempts, those it dropped without starting them (the
// rest run here); also sent unasked by a worker that starts to drain, with everything it had
// queued, and for any assignment that reaches it while it drains. The coordinator deals the
// dropped ones again, under the same attempt numbers: they never ran, so they cost no attempt.
struct Reclaimed {
  static constexpr MessageType kType = MessageType::kReclaimed;

  std::vector<TaskAttempt> released;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(released);
  }
  friend bool operator==(const Reclaimed&, const Reclaimed&) = default;
};

// Which health readings of a GpuUsage NVML gave: a board or driver may not support some (no
// ECC on most consumer boards, no power reading on some), and a missing reading must not read
// as a cool, unthrottled, error-free GPU. Bit values are part of the protocol.
enum GpuReading : uint32_t {
  kGpuTemperature = 1,
  kGpuPower = 2,        // power_mw
  kGpuPowerLimit = 4,   // power_limit_mw
  kGpuThrottle = 8,     // throttle_reasons
  kGpuEcc = 16,         // ecc_uncorrected
  kGpuXid = 32,         // xid_errors, last_xid (the worker watches the GPU's XID events)
};

// NVML's clock-throttle-reason bits (nvml.h, nvmlClocksThrottleReason*), carried as NVML
// reports them; the ones that mean the GPU is slowed for heat or power.
inline constexpr uint64_t kThrottlePowerCap = 0x4;          // SwPowerCap
inline constexpr uint64_t kThrottleHwSlowdown = 0x8;        // HwSlowdown
inline constexpr uint64_t kThrottleSwThermal = 0x20;        // SwThermalSlowdown
inline constexpr uint64_t kThrottleHwThermal = 0x40;        // HwThermalSlowdown
inline constexpr uint64_t kThrottleHwPowerBrake = 0x80;     // HwPowerBrakeSlowdown
inline constexpr uint64_t kThrottleThermal =
    kThrottleHwSlowdown | kThrottleSwThermal | kThrottleHwThermal | kThrottleHwPowerBrake;

// Live load and health of one GPU, reported in every worker heartbeat.
struct GpuUsage {
  uint32_t index = 0;
  uint32_t utilization_percent = 0;  // integer, as NVML reports it
  uint64_t used_memory = 0;
  uint64_t total_memory = 0;
  // New in 16: health, each reading valid only where its GpuReading bit is in `readings`.
  uint32_t readings = 0;
  uint32_t temperature_c = 0;
  uint32_t power_mw = 0;
  uint32_t power_limit_mw = 0;   // the enforced limit
  uint64_t throttle_reasons = 0;  // NVML's bits, above
  uint64_t ecc_uncorrected = 0;   // volatile: since the driver loaded
  // XID events that point at the GPU, not at a program (runtime/pool/gpu_health.h), since the
  // worker started watching it; and the newest XID of any kind, e.g. 79 (fallen off the bus).
  uint64_t xid_errors = 0;
  uint32_t last_xid = 0;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(index, utilization_percent, used_memory, total_memory);
    if (PayloadVersion() >= 16) {
      ar(readings, temperature_c, power_mw, power_limit_mw, throttle_reasons, ecc_uncorrected,
         xid_errors, last_xid);
    }
  }
  bool has(GpuReading r) const { return (readings & r) != 0; }
  friend bool operator==(const GpuUsage&, const GpuUsage&) = default;
};

// Sent both ways; a peer silent for the timeout is presumed dead.
struct Heartbeat {
  static constexpr MessageType kType = MessageType::kHeartbeat;

  std::string sender_id;  // worker id, or "coordinator"
  uint64_t sequence = 0;  // per sender, +1 each beat: gaps show lost beats
  uint32_t running_tasks = 0;
  uint64_t timestamp_ms = 0;  // sender's wall clock, Unix epoch
  std::vector<GpuUsage> gpus;
  bool draining = false;  // the worker takes no new tasks and leaves when idle
  // What its slots run now. Only these (and gangs) are charged an attempt when the worker is
  // lost; what it only held queued goes back uncharged. A worker beats early after a start,
  // so a task that kills it is seen started first.
  std::vector<TaskAttempt> running;
  // "nvml" when `gpus` holds live NVML samples; otherwise why there are none, for people
  // ("no NVML: libnvidia-ml.so.1 not found"), so a missing sample never reads as an idle GPU.
  std::string gpu_sampling;
  // New in 16, coordinator -> worker: the CUDA ordinals of its GPUs fenced off (an XID or an
  // uncorrectable ECC error, or an operator): it starts no task on them until they leave
  // this list. Always empty from a worker.
  std::vector<uint32_t> fenced_gpus;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(sender_id, sequence, running_tasks, timestamp_ms, gpus, draining, running, gpu_sampling);
    if (PayloadVersion() >= 16) ar(fenced_gpus);
  }
  friend bool operator==(const Heartbeat&, const Heartbeat&) = default;
};

// One unit of work: a loose task, or a whole gang for its leader. What the coordinator
// decided travels in typed fields (kind, shards, ranks, the reservation); the node's own
// params as the validator typed them, defaults filled in.
// One more node of a fused per-shard chain (runtime/plan/fusion.h): the worker runs it right
// after the task's own op, in the same process, on the same shard. Its own task id, node and
// paths, so its logs, outputs and errors are its node's.
struct FusedStep {
  uint64_t task_id = 0;
  std::string node_id;
  std::string op;
  TaskParams params;
  std::vector<std::string> input_paths;
  std::string output_path;
  uint64_t timeout_ms = 0;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(task_id, node_id, op, params, input_paths, output_path, timeout_ms);
  }
  friend bool operator==(const FusedStep&, const FusedStep&) = default;
};

struct TaskSpec {
  std::string job_id;
  uint64_t task_id = 0;
  std::string node_id;
  std::string op;
  uint32_t attempt = 0;  // 0 first; +1 on each re-queue
  TaskKind kind = TaskKind::kMap;
  int32_t shard_index = -1;  // -1: not a per-shard task (e.g. a reduce)
  // The node's map task count: N of "task i of N" (import_csv writes shard i of N); for a
  // reduce, how many partials it gathers.
  uint32_t shards = 0;
  // A gang's declared rank count (the reservation, gang_hosts / gang_ranks, says where they
  // run); 0 for other tasks.
  uint32_t ranks = 0;
  std::vector<std::string> input_paths;
  std::string output_path;
  TaskParams params;
  uint64_t timeout_ms = 0;        // 0: no limit
  uint64_t gpu_memory_bytes = 0;  // 0: no GPU asked; else the slice of one device it needs
  uint32_t gpus = 0;              // whole GPUs the node asked for (resources.gpus)
  // A gang task (a tight node) goes to one leader worker, which launches all its ranks: the
  // hosts of the workers the coordinator reserved, leader first, and how many ranks each runs.
  // Empty for loose tasks.
  std::vector<std::string> gang_hosts;  // addresses
  std::vector<uint32_t> gang_ranks;
  // The secret that lets the leader's launcher ask the other reserved workers to start the
  // gang's MPI daemons (see LaunchRequest); fresh for every attempt, sent to the leader only.
  std::string gang_token;
  // The job's workdir and the token of the marker the coordinator wrote there at admission
  // (runtime/job/workdir_marker.h): a worker that cannot read it does not share the filesystem.
  std::string workdir;
  std::string workdir_token;
  // A fused chain's first task carries the chain's other nodes, run after its own op in
  // order; the attempt's outcome is theirs too. `in_memory_outputs`: output paths (its own or
  // a step's) that are handed to the next step as a table and never written.
  std::vector<FusedStep> fused;
  std::vector<std::string> in_memory_outputs;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(job_id, task_id, node_id, op, attempt, kind, shard_index, shards, ranks, input_paths,
       output_path, params, timeout_ms, gpu_memory_bytes, gpus, gang_hosts, gang_ranks,
       gang_token, workdir, workdir_token, fused, in_memory_outputs);
  }
  friend bool operator==(const TaskSpec&, const TaskSpec&) = default;
};

// Coordinator -> worker: a batch of tasks, within the worker's slots + prefetch credit.
struct TaskAssignment {
  static constexpr MessageType kType = MessageType::kTaskAssignment;

  std::vector<TaskSpec> tasks;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(tasks);
  }
  friend bool operator==(const TaskAssignment&, const TaskAssignment&) = default;
};

// How one attempt of one task ended, with what it ran on, so an idle GPU shows up.
struct TaskOutcome {
  std::string job_id;
  uint64_t task_id = 0;
  uint32_t attempt = 0;
  bool ok = false;
  std::string error;  // one line: what failed and why; empty when ok
  std::vector<std::string> output_paths;
  uint64_t rows_in = 0;
  uint64_t rows_out = 0;
  std::string device;  // where it actually ran: "cpu", "cuda:0", ...
  bool gpu_requested_but_cpu = false;  // asked for a GPU, ran on the CPU fallback
  double kernel_ms = 0;
  uint64_t bytes_processed = 0;
  // Not the task's failure: this worker cannot run any task of the job (it cannot see the
  // job's workdir). The task goes back uncharged and the job is sent no more tasks there.
  bool host_refused = false;
  // The attempt's wall time in its slot, start to outcome (kernel_ms is compute time only):
  // what the coordinator's task-duration histogram measures.
  double wall_ms = 0;
  // The failure's StatusCode (runtime/status.h); 0 when ok. kInvalidData: the task's input or
  // params are wrong and a retry would fail the same way, so the coordinator does not retry it.
  // Any other code (or 0 on a failure) may be transient: retried with back-off, elsewhere.
  uint16_t error_code = 0;
  // A fused chain's attempt that failed in one of its `fused` steps: that step's node, whose
  // failure it is. Empty: the task's own op failed (or none did).
  std::string fused_node;
  // A reduce task that failed because inputs were missing (NotFound): their indexes in the
  // spec's input_paths. The coordinator runs again the map tasks that wrote them (lineage)
  // before the reduce's retry. Empty otherwise.
  std::vector<uint32_t> lost_inputs;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(job_id, task_id, attempt, ok, error, output_paths, rows_in, rows_out, device,
       gpu_requested_but_cpu, kernel_ms, bytes_processed, host_refused, wall_ms, error_code,
       fused_node);
    if (PayloadVersion() >= 17) ar(lost_inputs);
  }
  friend bool operator==(const TaskOutcome&, const TaskOutcome&) = default;
};

// Worker -> coordinator: a batch of finished attempts; each returns one credit.
struct TaskResult {
  static constexpr MessageType kType = MessageType::kTaskResult;

  std::string worker_id;
  std::vector<TaskOutcome> outcomes;
  // The worker's current wish for tasks held beyond its slots, adapted to how long its tasks
  // take (0 = unchanged): short tasks need a deep pipe, long ones must not be hoarded.
  uint32_t prefetch = 0;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(worker_id, outcomes, prefetch);
  }
  friend bool operator==(const TaskResult&, const TaskResult&) = default;
};

// The remote launch of a gang's MPI daemons. The leader's mpirun starts `coupler gang-agent
// HOST COMMAND` where ssh would run; the agent sends a LaunchRequest, the coordinator checks it
// and passes a LaunchDaemon to the worker reserved for the gang at that address, which runs the
// command and streams LaunchOutput back, relayed to the agent. No ssh between hosts.

// Agent -> coordinator (on the worker socket, with a worker key).
struct LaunchRequest {
  static constexpr MessageType kType = MessageType::kLaunchRequest;

  TaskAttempt gang;        // the gang task's attempt
  std::string gang_token;  // TaskSpec::gang_token of that attempt
  std::string host;        // the address mpirun asks for, as the hostfile names it
  std::string command;     // what ssh would be given: one shell line

  template <class Archive>
  void serialize(Archive& ar) {
    ar(gang, gang_token, host, command);
  }
  friend bool operator==(const LaunchRequest&, const LaunchRequest&) = default;
};

// Coordinator -> the worker reserved for the gang at the requested address.
struct LaunchDaemon {
  static constexpr MessageType kType = MessageType::kLaunchDaemon;

  uint64_t launch_id = 0;  // the coordinator's, names the relay
  TaskAttempt gang;
  std::string command;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(launch_id, gang, command);
  }
  friend bool operator==(const LaunchDaemon&, const LaunchDaemon&) = default;
};

// Worker -> coordinator -> agent: what the daemon wrote, and at the end how it exited. An
// empty chunk is a keepalive: an agent that hears nothing for long treats the host as lost.
struct LaunchOutput {
  static constexpr MessageType kType = MessageType::kLaunchOutput;

  uint64_t launch_id = 0;
  uint8_t stream = 1;  // 1 stdout, 2 stderr
  std::string data;
  bool exited = false;
  int32_t exit_code = 0;  // when exited: the daemon's status, 255 when it could not run

  template <class Archive>
  void serialize(Archive& ar) {
    ar(launch_id, stream, data, exited, exit_code);
  }
  friend bool operator==(const LaunchOutput&, const LaunchOutput&) = default;
};

// Coordinator -> worker: the gang's attempt ended (outcome, lost leader, cancel); stop every
// daemon started for it.
struct LaunchStop {
  static constexpr MessageType kType = MessageType::kLaunchStop;

  TaskAttempt gang;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(gang);
  }
  friend bool operator==(const LaunchStop&, const LaunchStop&) = default;
};

}  // namespace coupler::wire
