// PoolFit: where each node of a job would run on the workers a coordinator has now, or why it
// could not — what `coupler plan --workers` shows before a job is submitted. Pure logic over
// the workers' reported state, applying the scheduler's rules: labels, GPUs, GPU shares and
// the packing of a gang's ranks.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/placement/placement.h"
#include "runtime/job/job_graph.h"
#include "runtime/plan/planner.h"
#include "runtime/wire/client_messages.h"

namespace coupler::coordinator {

// What one node asks of a worker.
struct NodeDemand {
  std::string id;
  bool tight = false;
  uint32_t ranks = 1;              // the gang size (tight nodes)
  bool wants_gpus = false;         // whole GPUs (resources.gpus, or a gang of a GPU op)
  uint64_t gpu_memory_bytes = 0;   // a share of one GPU (resources.gpu_memory)
  Labels required;                 // `requires`
};

// The node's demand as the scheduler sees it (JobState::wants_gpus, gpu_share, ranks).
NodeDemand DemandOf(const plan::PlanNode& node, const job::NodeSpec& spec);

struct NodeFit {
  std::string id;
  bool placeable = false;
  bool tight = false;
  // Loose: every worker that may take its tasks, with its slots. Tight: the ranks on each
  // worker, leader first.
  std::vector<std::pair<std::string, uint32_t>> workers;
  uint32_t slots = 0;  // loose: the slots of those workers in all; tight: the ranks
  std::string note;    // a placeable node's caveat, e.g. it runs on CPUs for want of a GPU
  std::string reason;  // why it cannot be placed; empty when placeable
};

// One fit per node, in order. Only alive workers count (draining and dead ones take no work);
// a gang is packed onto the pool's slots as if idle: a busy pool delays it, never moves it.
std::vector<NodeFit> FitPool(const std::vector<NodeDemand>& nodes,
                             const std::vector<wire::WorkerStatus>& workers);
NodeFit FitNode(const NodeDemand& node, const std::vector<wire::WorkerStatus>& workers);

// "w1, w2 (3 slots)", "w1 x2, w2 x1", or "cannot place: ..." — then "; NOTE" if any.
std::string DescribeFit(const NodeFit& fit);

}  // namespace coupler::coordinator
