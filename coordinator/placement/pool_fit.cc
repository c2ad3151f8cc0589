#include "coordinator/placement/pool_fit.h"

#include <set>

#include <fmt/format.h>

#include "coordinator/placement/placement.h"
#include "coordinator/placement/rank_packing.h"
#include "runtime/pool/gpu_share_ledger.h"
#include "runtime/util/byte_size.h"

namespace coupler::coordinator {
namespace {

using Workers = std::vector<const wire::WorkerStatus*>;

bool HasGpus(const wire::WorkerStatus& w) { return !w.gpus.empty(); }

const char* Plural(size_t n) { return n == 1 ? "" : "s"; }

// "80 GiB" rather than "80.0 GiB": GPU sizes and shares are mostly round numbers.
std::string Bytes(uint64_t bytes) {
  std::string text = util::FormatBytes(bytes);
  const size_t dot = text.find(".0 ");
  if (dot != std::string::npos) text.erase(dot, 2);
  return text;
}

Workers Filter(const Workers& in, bool (*keep)(const wire::WorkerStatus&)) {
  Workers out;
  for (const wire::WorkerStatus* w : in) {
    if (keep(*w)) out.push_back(w);
  }
  return out;
}

// The worker's room for one GPU share, as the coordinator's ledger sizes it.
uint64_t ShareRoom(const wire::GpuInfo& g) { return pool::ShareCapacity(g.free_memory); }

// Loose tasks asking for a GPU share: only GPUs with room for it. Empty `reason` when some fit.
Workers FitShare(const Workers& gpu_workers, uint64_t bytes, const std::string& with,
                 std::string* reason) {
  Workers out;
  const wire::WorkerStatus* best_worker = nullptr;
  const wire::GpuInfo* best = nullptr;
  for (const wire::WorkerStatus* w : gpu_workers) {
    bool fits = false;
    for (const wire::GpuInfo& g : w->gpus) {
      fits |= ShareRoom(g) >= bytes;
      if (best == nullptr || ShareRoom(g) > ShareRoom(*best)) {
        best = &g;
        best_worker = w;
      }
    }
    if (fits) out.push_back(w);
  }
  if (out.empty() && best != nullptr) {
    // A share under the device's size can still miss the margin kept for CUDA contexts.
    const std::string margin = bytes <= best->total_memory
                                   ? fmt::format(", {} of it for shares", Bytes(ShareRoom(*best)))
                                   : std::string();
    *reason = fmt::format("gpu_memory {} exceeds every GPU{} (largest {} on {}{})", Bytes(bytes),
                          with, Bytes(best->total_memory), best_worker->id, margin);
  }
  return out;
}

void FitGang(const NodeDemand& node, const Workers& admitted, NodeFit& fit) {
  const bool admitted_gpu = !Filter(admitted, HasGpus).empty();
  // As the gang reservations decide: GPUs among the workers the labels admit when there are
  // any, else the ranks run on the CPUs rather than wait forever.
  const bool gpu_only = node.wants_gpus && admitted_gpu;
  if (node.wants_gpus && !admitted_gpu) {
    fit.note = "no matching worker has a GPU: the ranks run on CPUs";
  }
  const Workers chosen = gpu_only ? Filter(admitted, HasGpus) : admitted;
  // As the gang reservations count: the slots a gang may use (GangSlots), one Slurm job per node.
  std::vector<GangSeat> seats;
  for (const wire::WorkerStatus* w : chosen) {
    seats.push_back({w->id, w->address, SlurmJobOf(w->labels), GangSlots(w->slots, w->labels)});
  }
  const std::set<std::string> usable = OneAllocationPerHost(seats);
  uint64_t capacity = 0;
  std::string each;
  std::string set_aside;
  std::vector<RankCandidate> rooms;
  for (size_t i = 0; i < seats.size(); ++i) {
    const GangSeat& seat = seats[i];
    const wire::WorkerStatus* w = chosen[i];  // seats were made in this order
    if (usable.count(seat.id) == 0) {
      set_aside += fmt::format("{}{}", set_aside.empty() ? "" : ", ", seat.id);
      continue;
    }
    capacity += seat.slots;
    each += fmt::format("{}{}: {}", each.empty() ? "" : ", ", seat.id, seat.slots);
    rooms.push_back({seat.id, seat.address, seat.slots, 0, FastInterconnect(w->labels)});
  }
  if (node.ranks > capacity) {
    fit.reason = fmt::format("needs {} ranks; matching {}workers have {} slot{} in all ({})",
                             node.ranks, gpu_only ? "GPU " : "", capacity, Plural(capacity), each);
    if (!set_aside.empty()) {
      fit.reason += "; not " + set_aside + ": on a node shared by several Slurm jobs a gang runs "
                    "in one of them";
    }
    return;
  }
  fit.workers = PackRanks(std::move(rooms), node.ranks);
  fit.slots = node.ranks;
  fit.placeable = true;
}

void FitLoose(const NodeDemand& node, const Workers& alive, const Workers& admitted,
              NodeFit& fit) {
  const std::string with =
      node.required.empty() ? std::string() : " with " + DescribeLabels(node.required);
  const bool pool_gpu = !Filter(alive, HasGpus).empty();
  const bool share = node.gpu_memory_bytes > 0;
  // As the scheduler decides: whole GPUs only on GPU workers; a share on a GPU while the pool
  // has any, else on the CPU.
  Workers chosen = admitted;
  if (node.wants_gpus || (share && pool_gpu)) {
    chosen = Filter(admitted, HasGpus);
    if (chosen.empty()) {
      fit.reason = node.required.empty()
                       ? fmt::format("needs a GPU worker; {} alive worker{}, none has a GPU",
                                     alive.size(), Plural(alive.size()))
                       : fmt::format("needs a GPU worker{}; {} alive worker{} match{}, none "
                                     "has a GPU",
                                     with, admitted.size(), Plural(admitted.size()),
                                     admitted.size() == 1 ? "es" : "");
      return;
    }
    if (share) {
      chosen = FitShare(chosen, node.gpu_memory_bytes, with, &fit.reason);
      if (chosen.empty()) return;
    }
  } else if (share) {
    fit.note = "no GPU in the pool: its tasks run on the CPU";
  }
  for (const wire::WorkerStatus* w : chosen) {
    fit.workers.emplace_back(w->id, w->slots);
    fit.slots += w->slots;
  }
  fit.placeable = true;
}

}  // namespace

NodeDemand DemandOf(const plan::PlanNode& node, const job::NodeSpec& spec) {
  NodeDemand d;
  d.id = node.id;
  d.tight = node.coupling == job::Coupling::kTight;
  d.ranks = d.tight ? static_cast<uint32_t>(node.ranks) : 1;
  // As JobState::wants_gpus: a gang of a GPU op prefers GPUs without asking.
  d.wants_gpus = spec.resources.gpus > 0 ||
                 (d.tight && node.hardware != ops::HardwareClass::kCpu);
  d.gpu_memory_bytes = spec.resources.gpu_memory;
  d.required = spec.required_labels;
  return d;
}

NodeFit FitNode(const NodeDemand& node, const std::vector<wire::WorkerStatus>& workers) {
  NodeFit fit;
  fit.id = node.id;
  fit.tight = node.tight;
  Workers alive;
  size_t draining = 0;
  for (const wire::WorkerStatus& w : workers) {
    if (w.state == pool::WorkerState::kAlive) alive.push_back(&w);
    draining += w.state == pool::WorkerState::kDraining ? 1 : 0;
  }
  if (alive.empty()) {
    fit.reason = draining == 0 ? std::string("no alive workers")
                               : fmt::format("no alive workers ({} draining)", draining);
    return fit;
  }
  Workers admitted;
  for (const wire::WorkerStatus* w : alive) {
    if (LabelsMatch(node.required, w->labels)) admitted.push_back(w);
  }
  if (admitted.empty()) {
    fit.reason = fmt::format("needs a worker with {} ({} alive worker{}, none match)",
                             DescribeLabels(node.required), alive.size(), Plural(alive.size()));
    return fit;
  }
  if (node.tight) {
    FitGang(node, admitted, fit);
  } else {
    FitLoose(node, alive, admitted, fit);
  }
  return fit;
}

std::vector<NodeFit> FitPool(const std::vector<NodeDemand>& nodes,
                             const std::vector<wire::WorkerStatus>& workers) {
  std::vector<NodeFit> out;
  out.reserve(nodes.size());
  for (const NodeDemand& n : nodes) out.push_back(FitNode(n, workers));
  return out;
}

std::string DescribeFit(const NodeFit& fit) {
  std::string out;
  if (!fit.placeable) {
    out = "cannot place: " + fit.reason;
  } else if (fit.tight) {
    for (const auto& [id, ranks] : fit.workers) {
      out += fmt::format("{}{} x{}", out.empty() ? "" : ", ", id, ranks);
    }
  } else {
    for (const auto& [id, slots] : fit.workers) out += (out.empty() ? "" : ", ") + id;
    out += fmt::format(" ({} slot{})", fit.slots, Plural(fit.slots));
  }
  if (!fit.note.empty()) out += "; " + fit.note;
  return out;
}

}  // namespace coupler::coordinator
