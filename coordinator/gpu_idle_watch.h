// The idle-GPU rule: a worker that runs GPU tasks while every GPU it samples stays nearly idle
// for a minute is probably running them on the CPU (a CPU-only build, a task that ignores its
// device). Heartbeats feed it, status and metrics read it; the rule itself is pure logic with
// the clock passed in, so it is tested without waiting a minute.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/wire/client_messages.h"
#include "runtime/wire/worker_messages.h"

namespace coupler::coordinator {

class Scheduler;
struct WorkerEntry;
class WorkerRegistry;

// Under this utilization a GPU counts as idle: a GPU kernel workload keeps NVML's figure far
// above it, while the driver's own work and a sample taken between two kernels stay below.
inline constexpr uint32_t kIdleBusyPercent = 5;
// How long every GPU must stay idle before the warning: longer than a task's start (CUDA
// context, cuBLAS, reading its shards) and a training rank's data loading.
inline constexpr int64_t kIdleWindowMs = 60'000;

// What the coordinator keeps of one worker's GPUs (WorkerEntry::gpu).
struct GpuActivity {
  std::vector<wire::GpuUsage> samples;  // its last heartbeat's; empty: none (see `sampling`)
  std::string sampling;                 // "nvml", or why there are no samples
  uint32_t gpu_tasks = 0;               // GPU tasks it ran at that heartbeat
  // Since when it has run GPU tasks with every GPU under kIdleBusyPercent; unset while not.
  std::optional<int64_t> idle_since_ms;
  std::string warning;  // the warning while it stands, else ""
};

enum class GpuWarningChange { kNone, kRaised, kCleared };

// One heartbeat at `now_ms`: its samples (empty when it has none, with `sampling` saying why)
// and the GPU tasks the worker runs then. A heartbeat without samples neither starts nor keeps
// the idle clock: a missing sample is never taken for an idle GPU.
GpuWarningChange ObserveGpus(GpuActivity& activity, const std::string& worker_id,
                             std::vector<wire::GpuUsage> samples, std::string sampling,
                             uint32_t gpu_tasks, int64_t now_ms);

// The GPU tasks `worker` runs now: its loose tasks reported started, and its ranks of running
// gangs, whose node asks for whole GPUs or a GPU share (resources.gpus, resources.gpu_memory).
uint32_t GpuTasksRunning(const Scheduler& scheduler, const std::string& worker_id,
                         const WorkerEntry& worker);

// The heartbeat hook: records the beat's samples and logs once when the warning starts and
// once when it ends.
void OnGpuHeartbeat(Scheduler& scheduler, const std::string& worker_id,
                    const wire::Heartbeat& beat, int64_t now_ms);

// `coupler workers`: the worker's last samples, their source and its warning.
void ReportGpus(const WorkerEntry& worker, wire::WorkerStatus& status);

// Every standing warning of a live worker, for CoordinatorStats.warnings.
void AppendGpuWarnings(const WorkerRegistry& registry, std::vector<std::string>& warnings);

// Per worker, for metrics: its last samples and whether its GPUs are flagged idle.
struct GpuIdleState {
  std::string worker_id;
  std::vector<wire::GpuUsage> samples;  // empty: no samples (see `sampling`)
  std::string sampling;
  uint32_t gpu_tasks = 0;
  bool idle_warning = false;
};
std::vector<GpuIdleState> GpuIdleStates(const WorkerRegistry& registry);

}  // namespace coupler::coordinator
