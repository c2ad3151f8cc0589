#include "worker/task_runner.h"

#include <exception>
#include <new>
#include <string>

#include "kernels/device_share.h"
#include "worker/ops/op_context.h"
#include "worker/ops/op_table.h"

namespace coupler::worker {
namespace {

// The outcome's error must be one line: control characters become spaces.
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return text;
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

}  // namespace

wire::TaskOutcome RunTask(const wire::TaskSpec& spec, const std::atomic<bool>* cancel,
                          TaskPlacement placement, const std::vector<std::string>* launcher_env) {
  wire::TaskOutcome outcome;
  try {
    outcome.job_id = spec.job_id;
    outcome.task_id = spec.task_id;
    outcome.attempt = spec.attempt;
    outcome.device = "cpu";
    outcome.gpu_requested_but_cpu = spec.gpus > 0 || spec.gpu_memory_bytes > 0;

    const OpEntry* op = FindOp(spec.op);
    if (op == nullptr) {
      outcome.error = OneLine("unknown op '" + spec.op + "'");
      return outcome;
    }
    if (!op->has_cuda) placement = {};
    const OpContext context{spec, cancel, placement, launcher_env};
    if (context.Cancelled()) {
      outcome.error = "cancelled";
      return outcome;
    }
    OpReport report;
    report.backend = placement.backend;
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
    } else {
      outcome.error = OneLine(spec.op + ": " + status.message());
    }
  } catch (...) {  // only bad_alloc while copying strings can land here
    outcome.ok = false;
    outcome.output_paths.clear();
    outcome.error = "out of memory";
  }
  return outcome;
}

}  // namespace coupler::worker
