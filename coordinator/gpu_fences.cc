#include "coordinator/gpu_fences.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "coordinator/operator_reason.h"
#include "runtime/pool/gpu_health.h"

namespace coupler::coordinator {
namespace {

std::string UuidOf(const std::vector<wire::GpuInfo>& gpus, uint32_t index) {
  for (const wire::GpuInfo& g : gpus) {
    if (g.index == index) return g.uuid;
  }
  return "";
}

std::string Plural(uint64_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

}  // namespace

GpuPreference RankGpus(const std::vector<wire::GpuUsage>& samples,
                       const std::vector<uint32_t>& fenced) {
  GpuPreference worst = GpuPreference::kCool;
  for (const wire::GpuUsage& g : samples) {
    if (std::find(fenced.begin(), fenced.end(), g.index) != fenced.end()) continue;
    GpuPreference p = GpuPreference::kCool;
    if (g.has(wire::kGpuThrottle) && (g.throttle_reasons & wire::kThrottleThermal) != 0) {
      p = GpuPreference::kThrottled;
    } else if ((g.has(wire::kGpuTemperature) && g.temperature_c >= kHotCelsius) ||
               (g.has(wire::kGpuThrottle) && (g.throttle_reasons & wire::kThrottlePowerCap) != 0)) {
      p = GpuPreference::kWarm;
    }
    worst = std::max(worst, p);
  }
  return worst;
}

void GpuFences::Restore(const std::vector<Record>& records) {
  records_.clear();
  Apply(records);
}

const GpuFences::Record* GpuFences::Find(const std::string& worker_id, uint32_t gpu) const {
  auto it = records_.find({worker_id, gpu});
  return it == records_.end() ? nullptr : &it->second;
}

GpuFences::Observed GpuFences::Observe(const std::string& worker_id,
                                       const std::vector<wire::GpuInfo>& gpus,
                                       const std::vector<wire::GpuUsage>& samples,
                                       int64_t now_ms) const {
  Observed out;
  for (const wire::GpuUsage& g : samples) {
    // Only the GPUs it registered: a sample for any other ordinal (a confused or hostile peer)
    // must not grow the state.
    if (std::none_of(gpus.begin(), gpus.end(), [&](const wire::GpuInfo& i) { return i.index == g.index; })) {
      continue;
    }
    const Record* known = Find(worker_id, g.index);
    Record r = known != nullptr ? *known : Record{worker_id, g.index, "", "", 0, 0, 0};
    const std::string uuid = UuidOf(gpus, g.index);
    if (!uuid.empty() && uuid != r.uuid) {
      // Another board under that ordinal (replaced, or the devices renumbered): what was
      // recorded is of the old one. A new one starts unfenced with its own counts.
      if (!r.uuid.empty()) r = Record{worker_id, g.index, "", "", 0, 0, 0};
      r.uuid = uuid;
    }
    std::string why;
    if (g.has(wire::kGpuXid)) {
      if (g.xid_errors > r.xid_seen) {
        const uint64_t n = g.xid_errors - r.xid_seen;
        why = n == 1 && pool::XidMeansFaultyGpu(g.last_xid)
                  ? pool::DescribeXid(g.last_xid)
                  : fmt::format("{} pointing at the GPU, the newest {}", Plural(n, "XID error"),
                                pool::DescribeXid(g.last_xid));
      }
      // Fewer than seen: the worker restarted and counts from 0 again.
      r.xid_seen = g.xid_errors;
    }
    if (g.has(wire::kGpuEcc)) {
      if (g.ecc_uncorrected > r.ecc_seen && why.empty()) {
        why = fmt::format("{} (volatile count {})",
                          Plural(g.ecc_uncorrected - r.ecc_seen, "uncorrectable ECC error"),
                          g.ecc_uncorrected);
      }
      // Fewer than seen: the driver reloaded or the GPU was reset, which zeroes the count.
      r.ecc_seen = g.ecc_uncorrected;
    }
    if (!why.empty() && r.fence.empty()) {
      r.fence = why;
      r.fenced_ms = now_ms;
      out.fenced.push_back(fmt::format("worker {} GPU {}{}: {}", worker_id, g.index,
                                       r.uuid.empty() ? "" : " (" + r.uuid + ")", why));
    }
    // Nothing to keep of a GPU never fenced and with no error counted: no row.
    const bool blank = r.fence.empty() && r.xid_seen == 0 && r.ecc_seen == 0;
    if (known == nullptr ? !blank : *known != r) out.changed.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<GpuFences::Record>> GpuFences::Decide(const wire::FenceGpu& req,
                                                         const std::string& by,
                                                         const std::vector<wire::GpuInfo>& gpus,
                                                         int64_t now_ms) const {
  if (req.worker_id.empty()) return InvalidArgument("no worker id");
  // The GPUs it has: as registered, else as recorded (a worker not connected now).
  std::set<uint32_t> has;
  for (const wire::GpuInfo& g : gpus) has.insert(g.index);
  if (gpus.empty()) {
    for (const auto& [key, r] : records_) {
      if (key.first == req.worker_id) has.insert(key.second);
    }
  }
  if (has.empty()) {
    return NotFound("worker " + req.worker_id + " has no GPUs known here (it never registered any)");
  }
  std::vector<uint32_t> chosen = req.gpus;
  if (chosen.empty()) chosen.assign(has.begin(), has.end());
  for (const uint32_t g : chosen) {
    if (has.count(g) == 0) {
      std::string list;
      for (const uint32_t h : has) list += (list.empty() ? "" : ", ") + std::to_string(h);
      return InvalidArgument(fmt::format("worker {} has no GPU {} (its GPUs: {})", req.worker_id,
                                         g, list));
    }
  }
  if (req.fence) COUPLER_RETURN_IF_ERROR(CheckOperatorReason(req.reason, "a fence"));
  std::vector<Record> out;
  for (const uint32_t g : chosen) {
    const Record* known = Find(req.worker_id, g);
    Record r = known != nullptr ? *known : Record{req.worker_id, g, UuidOf(gpus, g), "", 0, 0, 0};
    if (req.fence) {
      r.fence = fmt::format("by admin '{}': {}", by, req.reason);
      r.fenced_ms = now_ms;
    } else {
      if (r.fence.empty()) continue;
      r.fence.clear();
      r.fenced_ms = 0;
    }
    out.push_back(std::move(r));
  }
  if (out.empty()) {
    return NotFound(fmt::format("no fenced GPU to clear on worker {}", req.worker_id));
  }
  return out;
}

void GpuFences::Apply(const std::vector<Record>& records) {
  for (const Record& r : records) records_[{r.worker_id, r.gpu}] = r;
}

std::vector<uint32_t> GpuFences::Fenced(const std::string& worker_id) const {
  std::vector<uint32_t> out;
  for (const wire::GpuFence& f : Of(worker_id)) out.push_back(f.index);
  return out;
}

std::vector<wire::GpuFence> GpuFences::Of(const std::string& worker_id) const {
  std::vector<wire::GpuFence> out;
  for (auto it = records_.lower_bound({worker_id, 0});
       it != records_.end() && it->first.first == worker_id; ++it) {
    const Record& r = it->second;
    if (!r.fence.empty()) {
      out.push_back({r.gpu, r.fence, static_cast<uint64_t>(std::max<int64_t>(r.fenced_ms, 0))});
    }
  }
  return out;
}

void GpuFences::Mark(std::vector<wire::WorkerStatus>& workers) const {
  for (wire::WorkerStatus& w : workers) w.gpu_fences = Of(w.id);
}

}  // namespace coupler::coordinator
