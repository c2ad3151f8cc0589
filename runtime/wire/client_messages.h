// Messages between `coupler` client commands (submit, status, cancel, workers, drain) and the
// coordinator. Each request is answered by its reply type, or by Ack / Error.
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
#include "runtime/wire/phase_codec.h"
#include "runtime/wire/worker_messages.h"

namespace coupler::wire {

struct SubmitJob {
  static constexpr MessageType kType = MessageType::kSubmitJob;

  std::string spec_text;  // the job graph, YAML or JSON, as the user wrote it
  std::string spec_path;  // only for error messages ("job.yaml:12: ...")
  int32_t priority = 0;   // higher runs first
  std::string client_id;
  std::string cwd;        // the client's directory: the default workdir resolves against it
  // Optional, chosen by the client: a second submission with the same id (a retried POST)
  // returns the job the first one made instead of making another.
  std::string submission_id;
  // `--reuse`: nodes unchanged since a succeeded run keep its outputs instead of running
  // (a node's own `reuse:` in the spec still decides for it).
  bool reuse = false;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(spec_text, spec_path, priority, client_id, cwd, submission_id, reuse);
  }
  friend bool operator==(const SubmitJob&, const SubmitJob&) = default;
};

struct SubmitReply {
  static constexpr MessageType kType = MessageType::kSubmitReply;

  std::string job_id;  // empty when !ok
  bool ok = false;
  std::string error;  // why the job was refused (validation error with file:line or node id)
  bool existing = false;  // the submission_id named a job submitted before: that job's id

  template <class Archive>
  void serialize(Archive& ar) {
    ar(job_id, ok, error, existing);
  }
  friend bool operator==(const SubmitReply&, const SubmitReply&) = default;
};

struct StatusRequest {
  static constexpr MessageType kType = MessageType::kStatusRequest;

  std::string job_id;  // empty: all jobs
  // Long poll: with a job id, the reply waits until that job finishes or this many
  // milliseconds pass, so waiting clients neither spin nor lag. 0 answers at once.
  uint32_t wait_ms = 0;
  // Without a job id: only jobs in one of these states (none: any), newest first, at most
  // `limit` of them (0: all).
  std::vector<job::JobPhase> states;
  uint32_t limit = 0;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(job_id, wait_ms, states, limit);
  }
  friend bool operator==(const StatusRequest&, const StatusRequest&) = default;
};

struct NodeStatus {
  std::string id;
  job::NodePhase state = job::NodePhase::kPending;  // runtime/job/node_phase.h
  uint64_t tasks_total = 0;
  uint64_t tasks_done = 0;
  uint64_t attempts = 0;
  std::string error;  // the first task error, if the node failed
  uint32_t ranks = 0;  // tight nodes: the gang size (one task of `ranks` processes); 0 loose
  std::string reason;  // why a ready node is not running yet (a gang waiting for slots)
  // Tight nodes: the addresses of the hosts its gang runs on (or last ran on), leader first.
  std::vector<std::string> hosts;
  // Tasks its workers' slots run now, and tasks sent to workers that wait there unstarted.
  uint64_t tasks_running = 0;
  uint64_t tasks_prefetched = 0;
  // The graph, for a page to draw: the node's op, its topological level (0 reads only
  // datasets) and the nodes it reads.
  std::string op;
  uint32_t stage = 0;
  std::vector<std::string> deps;
  // Its outputs are an earlier succeeded run's (reuse): none of its tasks ran in this job.
  bool reused = false;
  std::string reused_from;  // that run's directory

  template <class Archive>
  void serialize(Archive& ar) {
    ar(id, state, tasks_total, tasks_done, attempts, error, ranks, reason, hosts, tasks_running,
       tasks_prefetched, op, stage, deps, reused, reused_from);
  }
  friend bool operator==(const NodeStatus&, const NodeStatus&) = default;
};

// A worker the job's tasks are no longer sent to, and why (it cannot see the job's workdir).
struct HostRefusal {
  std::string worker_id;
  std::string address;
  std::string reason;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(worker_id, address, reason);
  }
  friend bool operator==(const HostRefusal&, const HostRefusal&) = default;
};

// States travel as their pinned numbers (runtime/wire/phase_codec.h); a peer of another
// protocol version is refused by the header before it could misread one.
struct JobStatus {
  std::string id;
  std::string name;
  job::JobPhase state = job::JobPhase::kQueued;
  uint64_t tasks_total = 0;
  uint64_t tasks_queued = 0;
  uint64_t tasks_running = 0;
  uint64_t tasks_done = 0;
  uint64_t tasks_failed = 0;
  uint64_t attempts = 0;
  std::vector<NodeStatus> nodes;
  std::string error;  // why the job failed, with the failing task's error; empty otherwise
  int64_t submitted_ms = 0;
  int64_t finished_ms = 0;  // 0 while running
  std::map<std::string, uint64_t> devices;  // committed tasks per device: "cpu", "cuda:0"
  uint64_t gpu_fallbacks = 0;  // tasks that asked for a GPU and ran on the CPU
  std::string submitted_by;    // the name of the client key that submitted it
  std::vector<HostRefusal> refused_hosts;
  // Three counts, never mixed: queued (ready, not sent), prefetched (sent, waiting on a
  // worker), running (started in a slot).
  uint64_t tasks_prefetched = 0;
  std::string workdir;        // where its nodes' folders (and their logs/) are
  std::string submission_id;  // the client's, when it gave one

  template <class Archive>
  void serialize(Archive& ar) {
    ar(id, name, state, tasks_total, tasks_queued, tasks_running, tasks_done, tasks_failed,
       attempts, nodes, error, submitted_ms, finished_ms, devices, gpu_fallbacks, submitted_by,
       refused_hosts, tasks_prefetched, workdir, submission_id);
  }
  friend bool operator==(const JobStatus&, const JobStatus&) = default;
};

// The coordinator's own health, sent with every status reply.
struct CoordinatorStats {
  uint64_t messages_received = 0;
  uint64_t messages_dropped = 0;  // malformed, wrong version, oversize, unexpected type
  uint32_t workers_alive = 0;
  uint64_t uptime_ms = 0;
  // Ready work not running yet, by the hardware it needs, and the pool size that would run it
  // (coordinator/placement/pool_advice.h): what an autoscaling script reads.
  uint64_t queued_cpu_tasks = 0;
  uint64_t queued_gpu_tasks = 0;
  uint64_t queued_gang_ranks = 0;
  uint32_t recommended_workers = 0;
  // The longest a gang has held part of its slots (given back at the hold timeout, or
  // completed): how close partial holds come to the timeout.
  uint64_t longest_partial_hold_ms = 0;
  // Trust: handshakes the ZAP handler refused (keys not on an allow-list), registrations
  // refused (a worker id bound to another key), and task outcomes dropped because they were
  // not from the live attempt (late, from an attempt given up, or from a worker not holding
  // the task).
  uint64_t handshakes_refused = 0;
  uint64_t registrations_refused = 0;
  uint64_t stale_outcomes_dropped = 0;
  bool encrypted = false;  // CURVE on both sockets (false only under --insecure)
  // Why the state cannot be written (a full disk), while it cannot: no task is dispatched and
  // no job is reported finished meanwhile. Empty when the store writes.
  std::string store_error;
  uint64_t replies_dropped = 0;  // to clients that sent requests and never read the replies
  // Loose tasks across the pool: started in a slot, and sent but waiting on a worker.
  uint64_t running_tasks = 0;
  uint64_t prefetched_tasks = 0;
  // For the operator, one line each: e.g. a GPU worker holding GPU tasks whose GPUs stayed
  // under 5% busy for a minute (the tasks probably run on the CPU).
  std::vector<std::string> warnings;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(messages_received, messages_dropped, workers_alive, uptime_ms, queued_cpu_tasks,
       queued_gpu_tasks, queued_gang_ranks, recommended_workers, longest_partial_hold_ms,
       handshakes_refused, registrations_refused, stale_outcomes_dropped, encrypted, store_error,
       replies_dropped, running_tasks, prefetched_tasks, warnings);
  }
  friend bool operator==(const CoordinatorStats&, const CoordinatorStats&) = default;
};

struct StatusReply {
  static constexpr MessageType kType = MessageType::kStatusReply;

  std::vector<JobStatus> jobs;
  CoordinatorStats coordinator;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(jobs, coordinator);
  }
  friend bool operator==(const StatusReply&, const StatusReply&) = default;
};

// Client -> coordinator, and coordinator -> workers holding the job's tasks.
struct CancelJob {
  static constexpr MessageType kType = MessageType::kCancelJob;

  std::string job_id;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(job_id);
  }
  friend bool operator==(const CancelJob&, const CancelJob&) = default;
};

// Client -> coordinator: run a failed or cancelled job's unfinished tasks again, in place
// (same job id, same run directory), answered by Ack or Error.
struct RetryJob {
  static constexpr MessageType kType = MessageType::kRetryJob;

  std::string job_id;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(job_id);
  }
  friend bool operator==(const RetryJob&, const RetryJob&) = default;
};

// Client -> coordinator, then coordinator -> that worker: finish running tasks, take no more.
struct DrainWorker {
  static constexpr MessageType kType = MessageType::kDrainWorker;

  std::string worker_id;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(worker_id);
  }
  friend bool operator==(const DrainWorker&, const DrainWorker&) = default;
};

// Client (an admin) -> coordinator, answered by Ack: `ban` true refuses worker `worker_id` from
// now on, across restarts, until a BanWorker with `ban` false lifts it; a connected one is
// dropped at once (its tasks run elsewhere) and told why. `reason` is shown in `coupler workers`.
struct BanWorker {
  static constexpr MessageType kType = MessageType::kBanWorker;

  std::string worker_id;
  std::string reason;
  bool ban = true;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(worker_id, reason, ban);
  }
  friend bool operator==(const BanWorker&, const BanWorker&) = default;
};

// Client (an admin) -> coordinator, answered by Ack (new in 16): `fence` true stops work going
// to GPUs `gpus` of worker `worker_id` (empty: all of its GPUs) with `reason`; false clears the
// fences on them, whoever set them (an XID, an uncorrectable ECC error or an operator), and
// takes the error counts they had as the new baseline, so only errors after it fence again.
struct FenceGpu {
  static constexpr MessageType kType = MessageType::kFenceGpu;

  std::string worker_id;
  std::vector<uint32_t> gpus;
  std::string reason;
  bool fence = true;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(worker_id, gpus, reason, fence);
  }
  friend bool operator==(const FenceGpu&, const FenceGpu&) = default;
};

// One GPU placement avoids: why, and since when (Unix ms).
struct GpuFence {
  uint32_t index = 0;
  std::string reason;  // e.g. "XID 79 (GPU has fallen off the bus)", "operator: bad fan"
  uint64_t since_ms = 0;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(index, reason, since_ms);
  }
  friend bool operator==(const GpuFence&, const GpuFence&) = default;
};

struct WorkersRequest {
  static constexpr MessageType kType = MessageType::kWorkersRequest;

  std::string worker_id;  // empty: all workers

  template <class Archive>
  void serialize(Archive& ar) {
    ar(worker_id);
  }
  friend bool operator==(const WorkersRequest&, const WorkersRequest&) = default;
};

struct WorkerStatus {
  std::string id;
  std::string host;
  std::string address;  // the address it advertised: what tells hosts apart
  uint32_t slots = 0;
  uint32_t running = 0;  // tasks its slots run now (loose tasks started, gang ranks)
  pool::WorkerState state = pool::WorkerState::kAlive;  // runtime/pool/worker_state.h
  std::vector<GpuInfo> gpus;
  // What the worker registered with: a client can tell where a node would run without
  // asking each worker (`coupler plan --workers`).
  std::map<std::string, std::string> labels;
  uint32_t cpus = 0;
  uint64_t memory_bytes = 0;
  uint32_t prefetched = 0;  // loose tasks sent to it, waiting unstarted
  uint64_t tasks_done = 0;
  std::vector<GpuUsage> gpu_usage;  // its last heartbeat's samples
  std::string gpu_sampling;         // "nvml", or why `gpu_usage` is empty (see Heartbeat)
  std::string warning;              // e.g. its GPUs idle while it holds GPU tasks
  uint64_t heard_ms_ago = 0;
  // State banned's why and by whom, and the protocol version the worker registered with (an
  // upgrade shows who still speaks the older one).
  std::string ban_reason;
  uint16_t protocol_version = 0;
  // New in 16: its GPUs that placement avoids, and why.
  std::vector<GpuFence> gpu_fences;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(id, host, address, slots, running, state, gpus, labels, cpus, memory_bytes, prefetched,
       tasks_done, gpu_usage, gpu_sampling, warning, heard_ms_ago, ban_reason, protocol_version);
    if (PayloadVersion() >= 16) ar(gpu_fences);
  }
  friend bool operator==(const WorkerStatus&, const WorkerStatus&) = default;
};

struct WorkersReply {
  static constexpr MessageType kType = MessageType::kWorkersReply;

  std::vector<WorkerStatus> workers;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(workers);
  }
  friend bool operator==(const WorkersReply&, const WorkersReply&) = default;
};

}  // namespace coupler::wire
