// The pool's GPU health, decided: which worker GPUs placement avoids and why, and how much it
// prefers one worker's GPUs over another's. A GPU is fenced when its worker reports a new XID
// that points at the GPU (runtime/pool/gpu_health.h) or a new uncorrectable ECC error, or when an
// admin fences it (`coupler worker fence-gpu`); it stays fenced, across restarts of the worker
// and of the coordinator, until an admin clears it (`coupler worker clear-gpu`). Errors are new
// when they pass the counts recorded as seen, which follow every sample, so clearing a fence
// takes the counts as they are as the new baseline. Pure bookkeeping over records the caller
// writes to the state (store/gpu_health_rows.h) and restores from there.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/store/gpu_health_rows.h"
#include "runtime/status.h"
#include "runtime/wire/client_messages.h"
#include "runtime/wire/worker_messages.h"

namespace coupler::coordinator {

// How much placement avoids a worker's GPUs when others are free: the worst of its unfenced
// GPUs, as its tasks go to all of them in turn. Lower is better.
enum class GpuPreference : uint8_t {
  kCool = 0,       // or not sampled: nothing known against it
  kWarm = 1,       // at or above kHotCelsius, or clocks held down to stay within power
  kThrottled = 2,  // clocks slowed for heat (or a hardware slowdown)
};
inline constexpr uint32_t kHotCelsius = 85;

GpuPreference RankGpus(const std::vector<wire::GpuUsage>& samples,
                       const std::vector<uint32_t>& fenced);

class GpuFences {
 public:
  using Record = store::GpuHealthRecord;

  void Restore(const std::vector<Record>& records);

  // A heartbeat's samples from `worker_id` (`gpus`: what it registered, for the boards' ids).
  // Returns the records that changed (to write to the state), and the GPUs newly fenced, in
  // words, for the log. Not applied yet: Apply does, after the write.
  struct Observed {
    std::vector<Record> changed;
    std::vector<std::string> fenced;
  };
  Observed Observe(const std::string& worker_id, const std::vector<wire::GpuInfo>& gpus,
                   const std::vector<wire::GpuUsage>& samples, int64_t now_ms) const;

  // An admin's FenceGpu by key `by`, on a worker that registered `gpus` (empty: not connected,
  // only the GPUs already recorded are known). The records to write and apply; InvalidArgument
  // for a GPU the worker does not have or a fence without a reason, NotFound for a clear that
  // clears nothing.
  Result<std::vector<Record>> Decide(const wire::FenceGpu& req, const std::string& by,
                                     const std::vector<wire::GpuInfo>& gpus, int64_t now_ms) const;

  void Apply(const std::vector<Record>& records);

  // The CUDA ordinals of `worker_id`'s fenced GPUs, ascending.
  std::vector<uint32_t> Fenced(const std::string& worker_id) const;
  // The fences of `worker_id`'s GPUs, by GPU.
  std::vector<wire::GpuFence> Of(const std::string& worker_id) const;
  // Adds each listed worker's fences to its status.
  void Mark(std::vector<wire::WorkerStatus>& workers) const;

 private:
  const Record* Find(const std::string& worker_id, uint32_t gpu) const;

  std::map<std::pair<std::string, uint32_t>, Record> records_;
};

}  // namespace coupler::coordinator
