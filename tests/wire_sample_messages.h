// One message of every type with every field set to a non-default value. For tests and for the
// fuzzer's seed corpus (tests/fuzz/make_decode_corpus.cc), not for production code: a round
// trip of these proves each field is on the wire, and their encodings pin the wire format.
#pragma once

#include <cctype>
#include <string>
#include <vector>

#include "runtime/wire/messages.h"

namespace coupler::wire {

inline std::vector<Message> SampleMessages() {
  const GpuInfo gpu{1, "H100", 80ull << 30, 79ull << 30, "GPU-5fd1c7b2-3a4e-9d60-8b7f-2c1e0a9d4f63"};
  GpuUsage usage{1, 87, 12ull << 30, 80ull << 30};
  usage.readings = kGpuTemperature | kGpuPower | kGpuPowerLimit | kGpuThrottle | kGpuEcc | kGpuXid;
  usage.temperature_c = 71;
  usage.power_mw = 612'345;
  usage.power_limit_mw = 700'000;
  usage.throttle_reasons = kThrottlePowerCap | kThrottleSwThermal;
  usage.ecc_uncorrected = 2;
  usage.xid_errors = 3;
  usage.last_xid = 79;

  RegisterWorker reg;
  reg.worker_id = "w-1";
  reg.host = "node7";
  reg.address = "10.0.0.7";
  reg.pid = 4242;
  reg.slots = 8;
  reg.prefetch = 4;
  reg.cpus = 32;
  reg.memory_bytes = 256ull << 30;
  reg.gpus = {gpu};
  reg.labels = {{"interconnect", "nvlink"}};
  reg.protocol_version = 1;
  reg.holding = {HeldAttempt{TaskAttempt{"j-000001", 3, 0}, true},
                 HeldAttempt{TaskAttempt{"j-000001", 4, 1}, false}};

  Heartbeat beat;
  beat.sender_id = "w-1";
  beat.sequence = 17;
  beat.running_tasks = 3;
  beat.timestamp_ms = 1700000000123;
  beat.gpus = {usage};
  beat.draining = true;
  beat.running = {TaskAttempt{"j-000001", 7, 1}};
  beat.gpu_sampling = "nvml";
  beat.fenced_gpus = {1, 3};

  TaskSpec task;
  task.job_id = "j-9";
  task.task_id = 1ull << 40;
  task.node_id = "norm";
  task.op = "standardize";
  task.attempt = 2;
  task.shard_index = 5;
  task.input_paths = {"/d/a.npy", "/d/b.npy"};
  task.output_path = "/o/5.npy";
  task.shards = 8;
  task.params = {{"columns", std::vector<std::string>{"x", "y"}},
                 {"eps", 1.5},
                 {"header", true},
                 {"mode", std::string("z")},
                 {"tasks", int64_t{3}},
                 {"types", job::ParamMap{{"x", "float64"}, {"city", "string"}}}};
  task.timeout_ms = 60000;
  task.gpu_memory_bytes = 4ull << 30;
  FusedStep step;
  step.task_id = (1ull << 40) + 8;
  step.node_id = "keep";
  step.op = "filter";
  step.params = {{"where", std::string("x > 0")}};
  step.input_paths = {"/o/5.npy"};
  step.output_path = "/o/keep/5.npz";
  step.timeout_ms = 1000;
  task.fused = {step};
  task.in_memory_outputs = {"/o/5.npy"};
  TaskSpec gang;
  gang.job_id = "j-9";
  gang.task_id = 12;
  gang.node_id = "train";
  gang.op = "train";
  gang.kind = TaskKind::kGang;
  gang.ranks = 3;
  gang.output_path = "/o/train";
  gang.gpus = 1;
  gang.gang_hosts = {"10.0.0.1", "10.0.0.2"};
  gang.gang_ranks = {2, 1};
  gang.gang_token = "0123456789abcdef0123456789abcdef";
  gang.workdir = "/shared/work";
  gang.workdir_token = "fedcba9876543210fedcba9876543210";
  TaskAssignment assign;
  assign.tasks = {task, gang};

  TaskOutcome outcome;
  outcome.job_id = "j-9";
  outcome.task_id = 1ull << 40;
  outcome.attempt = 2;
  outcome.ok = true;
  outcome.error = "warn";
  outcome.output_paths = {"/o/5.npy"};
  outcome.rows_in = 1000;
  outcome.rows_out = 990;
  outcome.device = "cuda:1";
  outcome.gpu_requested_but_cpu = true;
  outcome.kernel_ms = 1.25;
  outcome.bytes_processed = 123456;
  outcome.host_refused = true;
  outcome.wall_ms = 3.5;
  outcome.error_code = 10;  // StatusCode::kInvalidData
  outcome.fused_node = "more";
  outcome.lost_inputs = {0, 7};
  TaskResult result;
  result.worker_id = "w-1";
  result.outcomes = {outcome};
  result.prefetch = 48;

  SubmitJob submit{"name: t\nnodes: []\n", "t.yaml", -3, "cli-1", "/home/u", "airflow-run-7", true};
  SubmitReply submit_reply{"j-9", true, "none", true};
  StatusRequest status_request{"j-9", 250, {job::JobPhase::kFailed}, 20};

  JobStatus job;
  job.id = "j-9";
  job.name = "t";
  job.state = job::JobPhase::kRunning;
  job.tasks_total = 10;
  job.tasks_queued = 4;
  job.tasks_running = 3;
  job.tasks_done = 2;
  job.tasks_failed = 1;
  job.attempts = 12;
  job.nodes = {NodeStatus{"norm", job::NodePhase::kFailed, 10, 2, 5, "boom", 0, "", {}, 3, 4, "standardize", 1,
                          {"raw"}, true, "/w/runs/j-000003"},
               NodeStatus{"train", job::NodePhase::kReady, 1, 0, 0, "", 4, "waiting for 1 more free slot",
                          {"10.0.0.1", "10.0.0.2"}, 0, 0, "train", 2, {"norm", "raw"}, false, ""}};
  job.error = "node 'norm': boom";
  job.submitted_ms = 1'700'000'000'000;
  job.finished_ms = 1'700'000'000'123;
  job.devices = {{"cpu", 7}, {"cuda:0", 3}};
  job.gpu_fallbacks = 1;
  job.submitted_by = "alice";
  job.refused_hosts = {HostRefusal{"w-3", "10.0.0.3", "workdir /w not visible on host 10.0.0.3"}};
  job.tasks_prefetched = 5;
  job.workdir = "/shared/work";
  job.submission_id = "airflow-run-7";
  StatusReply status_reply;
  status_reply.jobs = {job};
  status_reply.coordinator =
      CoordinatorStats{100, 3, 2, 4567, 12, 4, 8, 5, 1500, 6, 1, 9, true, "disk full", 2,
                       3, 5, {"worker w-1: GPUs under 5% busy for 60 s"}};

  WorkerStatus worker;
  worker.id = "w-1";
  worker.host = "node7";
  worker.address = "10.0.0.7";
  worker.slots = 8;
  worker.running = 3;
  worker.state = pool::WorkerState::kDraining;
  worker.gpus = {gpu};
  worker.labels = {{"zone", "a"}};
  worker.cpus = 16;
  worker.memory_bytes = 64ull << 30;
  worker.prefetched = 5;
  worker.tasks_done = 1234;
  worker.gpu_usage = {usage};
  worker.gpu_sampling = "nvml";
  worker.warning = "GPUs idle";
  worker.heard_ms_ago = 420;
  worker.protocol_version = 15;
  worker.gpu_fences = {GpuFence{1, "XID 79 (GPU has fallen off the bus)", 1700000000456}};
  WorkersReply workers_reply;
  workers_reply.workers = {worker};

  const TaskAttempt gang_attempt{"j-9", 12, 1};
  LaunchRequest launch_request{gang_attempt, "0123456789abcdef0123456789abcdef", "10.0.0.2",
                               " orted -mca ess \"env\""};
  LaunchDaemon launch_daemon{7, gang_attempt, " orted -mca ess \"env\""};
  LaunchOutput launch_output{7, 2, "orted: ready\n", true, 3};
  LaunchStop launch_stop{gang_attempt};
  Registered registered{"w-1", {TaskAttempt{"j-000001", 4, 1}}};
  ResultAck result_ack{{TaskAttempt{"j-000001", 3, 0}, gang_attempt}};
  RegisterAgain register_again{"unknown worker: the coordinator restarted"};
  Reclaim reclaim{{TaskAttempt{"j-000001", 5, 0}, TaskAttempt{"j-000001", 6, 2}}};
  Reclaimed reclaimed{{TaskAttempt{"j-000001", 6, 2}}};

  return {
      reg,
      beat,
      assign,
      result,
      launch_request,
      launch_daemon,
      launch_output,
      launch_stop,
      registered,
      result_ack,
      register_again,
      reclaim,
      reclaimed,
      submit,
      submit_reply,
      status_request,
      status_reply,
      CancelJob{"j-9"},
      DrainWorker{"w-1"},
      WorkersRequest{"w-1"},
      workers_reply,
      RetryJob{"j-9"},
      BanWorker{"w-2", "bad DIMM; ticket 42", true},
      FenceGpu{"w-2", {0, 2}, "fan noise; ticket 43", true},
      Ack{static_cast<uint16_t>(MessageType::kDrainWorker), "draining"},
      Error{static_cast<uint16_t>(MessageType::kSubmitJob), 1, "bad spec"},
  };
}

// "register_worker.bin" for kRegisterWorker: the seed file holding that sample's encoding.
inline std::string SeedFileName(MessageType type) {
  std::string name;
  for (char c : MessageTypeName(type)) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (!name.empty()) name += '_';
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      name += c;
    }
  }
  return name + ".bin";
}

}  // namespace coupler::wire
