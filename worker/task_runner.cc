#include "worker/task_runner.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "kernels/device_share.h"
#include "worker/ops/op_context.h"
#include "worker/ops/op_table.h"
#include "worker/ops/shard_stage.h"

namespace coupler::worker {
namespace {

// The outcome's error must be one line: control characters become spaces.
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return text;
}

// The outcome's code: what the coordinator's retry decision reads. An op says InvalidArgument
// when its input or params are wrong (a field that does not parse, a column the shard lacks or
// holds in another type, a param out of range): the next attempt would read the same bytes
// and fail the same way, so it travels as InvalidData, which is not retried. I/O errors keep
// their own codes (NotFound, Internal, ResourceExhausted...), a command's failure is Aborted
// or DeadlineExceeded: those may go away on a retry, on this worker or another.
StatusCode OutcomeCode(StatusCode code) {
  return code == StatusCode::kInvalidArgument ? StatusCode::kInvalidData : code;
}

Status RunGuarded(const OpEntry& op, const OpContext& context, OpReport& report) noexcept {
  // Ops report through Status; an exception here is a library throwing (bad_alloc from a huge
  // shard, a std::filesystem error) and must not take the worker down.
  try {
    return op.run(context, report);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("out of memory");
  } catch (const std::exception& e) {
    return Internal(std::string("unexpected exception: ") + e.what());
  } catch (...) {
    return Internal("unexpected exception");
  }
}

// The one line an in-process op's log holds.
std::string Summary(const wire::TaskSpec& spec, const wire::TaskOutcome& outcome) {
  char ms[32];
  std::snprintf(ms, sizeof(ms), "%.1f", outcome.kernel_ms);
  std::string line = spec.op + " task " + std::to_string(spec.task_id);
  if (spec.shard_index >= 0) line += " (shard " + std::to_string(spec.shard_index) + ")";
  line += " attempt " + std::to_string(spec.attempt) + ": rows in " +
          std::to_string(outcome.rows_in) + ", rows out " + std::to_string(outcome.rows_out) +
          ", device " + outcome.device + ", " + ms + " ms in kernels; ";
  return line + (outcome.ok ? "ok" : "error: " + outcome.error);
}

// A reduce reads what its node's map tasks wrote: those of its inputs that are not there now
// (their indexes), for the coordinator to run their map tasks again (lineage).
std::vector<uint32_t> LostInputs(const wire::TaskSpec& spec) {
  std::vector<uint32_t> lost;
  for (size_t i = 0; i < spec.input_paths.size(); ++i) {
    if (::access(spec.input_paths[i].c_str(), F_OK) != 0 && errno == ENOENT) {
      lost.push_back(static_cast<uint32_t>(i));
    }
  }
  return lost;
}

wire::TaskOutcome Run(const wire::TaskSpec& spec, const std::atomic<bool>* cancel,
                      TaskPlacement placement, const GangSetup* gang,
                      TaskAttemptLogs& logs, ShardStage* stage = nullptr) {
  wire::TaskOutcome outcome;
  try {
    outcome.job_id = spec.job_id;
    outcome.task_id = spec.task_id;
    outcome.attempt = spec.attempt;
    outcome.device = "cpu";
    outcome.gpu_requested_but_cpu = spec.gpus > 0 || spec.gpu_memory_bytes > 0;

    const OpEntry* op = FindOp(spec.op);
    if (op == nullptr) {
      // Retryable: a worker of an older build may lack an op that another worker has.
      outcome.error = OneLine("unknown op '" + spec.op + "'");
      outcome.error_code = static_cast<uint16_t>(StatusCode::kUnavailable);
      return outcome;
    }
    if (!op->has_cuda) placement = {};
    const OpContext context{spec, cancel, placement, gang, &logs};
    if (context.Cancelled()) {
      outcome.error = "cancelled";
      outcome.error_code = static_cast<uint16_t>(StatusCode::kCancelled);
      return outcome;
    }
    OpReport report;
    report.backend = placement.backend;
    report.stage = stage;
    // A task that asked for a share of a GPU holds no more of it than it asked for.
    const kernels::ScopedDeviceShare share(
        placement.backend == kernels::Backend::kCuda ? spec.gpu_memory_bytes : 0);
    const Status status = RunGuarded(*op, context, report);
    if (report.used_cuda) {
      outcome.device = DeviceLabel(placement);
      outcome.gpu_requested_but_cpu = false;
    }
    outcome.rows_in = report.rows_in;
    outcome.rows_out = report.rows_out;
    outcome.kernel_ms = report.kernel_ms;
    outcome.bytes_processed = report.bytes_read + report.bytes_written;
    if (status.ok()) {
      outcome.ok = true;
      outcome.output_paths = std::move(report.output_paths);
    } else if (status.code() == StatusCode::kCancelled) {
      outcome.error = "cancelled";
      outcome.error_code = static_cast<uint16_t>(StatusCode::kCancelled);
    } else {
      // "mpi_exec: mpi_exec (2 ranks) exited ...": the op's name once.
      const bool named = status.message().starts_with(spec.op + " ");
      outcome.error = OneLine(named ? status.message() : spec.op + ": " + status.message());
      outcome.error_code = static_cast<uint16_t>(OutcomeCode(status.code()));
      if (status.code() == StatusCode::kNotFound && spec.kind == wire::TaskKind::kReduce) {
        outcome.lost_inputs = LostInputs(spec);
      }
    }
  } catch (...) {  // only bad_alloc while copying strings can land here
    outcome.ok = false;
    outcome.output_paths.clear();
    outcome.error = "out of memory";
    outcome.error_code = static_cast<uint16_t>(StatusCode::kResourceExhausted);
  }
  return outcome;
}

// One op with its own attempt logs: a command's output, or the one line of an in-process op.
wire::TaskOutcome RunLogged(const wire::TaskSpec& spec, const std::atomic<bool>* cancel,
                            TaskPlacement placement, const GangSetup* gang, size_t log_bytes,
                            ShardStage* stage) {
  TaskAttemptLogs logs;
  try {
    logs = TaskAttemptLogs::Open(spec, log_bytes);
  } catch (...) {  // bad_alloc naming the files: the task runs without logs
  }
  wire::TaskOutcome outcome = Run(spec, cancel, placement, gang, logs, stage);
  try {
    // An in-process op's line, when it did something or failed: a task that wrote nothing
    // and succeeded (noop) leaves no file, so dispatch stays free of file creation. In a
    // fused chain every step's line is written: its node's logs show it ran.
    const bool worth_a_line = !outcome.ok || !outcome.output_paths.empty() ||
                              outcome.rows_in > 0 || stage != nullptr;
    if (!logs.ran_command() && worth_a_line) logs.Note(Summary(spec, outcome));
  } catch (...) {  // bad_alloc building the line: the outcome matters more than its log
  }
  return outcome;
}

// The task of a fused step: the chain's first task with the step's node, op and paths.
wire::TaskSpec StepSpec(const wire::TaskSpec& first, const wire::FusedStep& step) {
  wire::TaskSpec spec;
  spec.job_id = first.job_id;
  spec.task_id = step.task_id;
  spec.node_id = step.node_id;
  spec.op = step.op;
  spec.attempt = first.attempt;
  spec.kind = first.kind;
  spec.shard_index = first.shard_index;
  spec.shards = first.shards;
  spec.input_paths = step.input_paths;
  spec.output_path = step.output_path;
  spec.params = step.params;
  spec.timeout_ms = step.timeout_ms;
  spec.gpu_memory_bytes = first.gpu_memory_bytes;
  spec.gpus = first.gpus;
  spec.workdir = first.workdir;
  spec.workdir_token = first.workdir_token;
  return spec;
}

// A fused chain (runtime/plan/fusion.h): the task's own op, then each step, on one shard, the
// shards between them handed on in memory where the coordinator said so. One outcome for the
// whole chain — it commits the shard of every node in it — which names the node that failed
// (`fused_node`); each node keeps its own logs.
wire::TaskOutcome RunFused(const wire::TaskSpec& spec, const std::atomic<bool>* cancel,
                           TaskPlacement placement, size_t log_bytes) {
  wire::TaskOutcome total;
  total.job_id = spec.job_id;
  total.task_id = spec.task_id;
  total.attempt = spec.attempt;
  total.device = "cpu";
  total.gpu_requested_but_cpu = spec.gpus > 0 || spec.gpu_memory_bytes > 0;
  try {
    ShardStage stage(spec.in_memory_outputs);
    wire::TaskSpec first = spec;
    first.fused.clear();
    first.in_memory_outputs.clear();
    for (size_t i = 0; i <= spec.fused.size(); ++i) {
      const wire::TaskSpec member = i == 0 ? first : StepSpec(spec, spec.fused[i - 1]);
      if (i > 0 && cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
        total.error = "cancelled";
        total.error_code = static_cast<uint16_t>(StatusCode::kCancelled);
        return total;
      }
      wire::TaskOutcome one = RunLogged(member, cancel, placement, nullptr, log_bytes, &stage);
      if (i == 0) total.rows_in = one.rows_in;
      total.rows_out = one.rows_out;
      total.kernel_ms += one.kernel_ms;
      total.bytes_processed += one.bytes_processed;
      if (one.device != "cpu") {
        total.device = one.device;
        total.gpu_requested_but_cpu = false;
      }
      for (std::string& path : one.output_paths) total.output_paths.push_back(std::move(path));
      if (!one.ok) {
        total.output_paths.clear();
        total.error_code = one.error_code;
        const bool cancelled = one.error_code == static_cast<uint16_t>(StatusCode::kCancelled);
        // Which node of the chain failed: the outcome is the chain's first node's task, and
        // the coordinator shows the failure as that node's.
        total.error = one.error;
        if (i > 0 && !cancelled) total.fused_node = member.node_id;
        return total;
      }
    }
    total.ok = true;
  } catch (...) {  // bad_alloc copying a step's spec
    total.ok = false;
    total.output_paths.clear();
    total.error = "out of memory";
    total.error_code = static_cast<uint16_t>(StatusCode::kResourceExhausted);
  }
  return total;
}

}  // namespace

wire::TaskOutcome RunTask(const wire::TaskSpec& spec, const std::atomic<bool>* cancel,
                          TaskPlacement placement, const GangSetup* gang,
                          size_t log_bytes) {
  if (!spec.fused.empty()) return RunFused(spec, cancel, placement, log_bytes);
  return RunLogged(spec, cancel, placement, gang, log_bytes, nullptr);
}

}  // namespace coupler::worker
