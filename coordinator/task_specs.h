// The wire form of a job's tasks: which op and typed params each runs, what part of its node it
// is (kind, shard, shard count, ranks), the files it reads and the one it publishes. Paths are
// computed from the plan and the dataset listing made at admission, never touched. JobState adds
// the task's identity and attempt, which are state; this is layout.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "coordinator/task_table.h"
#include "runtime/job/job_graph.h"
#include "runtime/ops/op_def.h"
#include "runtime/plan/planner.h"
#include "runtime/wire/worker_messages.h"

namespace coupler::coordinator {

// Dataset directories a job reads, listed once at submission (sorted shard files), so task
// inputs are known without touching the filesystem again.
using DatasetListing = std::map<std::string, std::vector<std::string>>;

class TaskSpecs {
 public:
  // Borrows `graph` and `plan`: they must outlive this (JobState owns all three).
  TaskSpecs(const job::JobGraph& graph, const plan::Plan& plan, DatasetListing datasets);

  // Everything but job_id, task_id, attempt and workdir_token. A gang task reads whole dataset
  // directories and writes into its node's directory (gang fields left empty: the scheduler
  // fills in the reserved hosts).
  // The first node of a fused chain (runtime/plan/fusion.h): its map tasks carry the chain's
  // other nodes as `fused` steps (task ids left 0: the job knows them) for the same shard.
  wire::TaskSpec Make(const TaskRef& ref) const;

 private:
  std::string OutputPath(size_t plan_node, int64_t shard, bool partial) const;
  std::string NodeDir(size_t plan_node) const;
  // A shuffle's map task `map_shard` writes its shuffle files under this prefix (io::ShufflePrefix).
  std::string ShufflePrefix(size_t plan_node, int64_t map_shard) const;
  // How many shards an input has, as the planner counted them (its map tasks, for a shuffle over
  // every input).
  int64_t InputShards(const job::InputRef& in) const;
  // A node whose op shuffles: its reduce tasks are one per output partition.
  bool Shuffles(size_t plan_node) const;
  // A node run as one task over whole datasets (a gang): reads and writes directories.
  bool WholeNode(size_t plan_node) const;
  std::string InputShard(const job::InputRef& in, int64_t shard) const;
  // One task's own spec, without the fused steps Make adds.
  wire::TaskSpec MakeOne(const TaskRef& ref) const;
  void AddFusedSteps(const TaskRef& ref, wire::TaskSpec& spec) const;

  const job::JobGraph& graph_;
  const plan::Plan& plan_;
  DatasetListing datasets_;
  std::vector<size_t> plan_of_node_;  // JobGraph node index -> plan node index
  std::vector<size_t> fused_next_;    // plan node -> the node fused after it; SIZE_MAX: none
  std::vector<const ops::OpDef*> defs_;  // plan node -> its op (null: unknown to this build)
  std::vector<uint8_t> broadcast_;    // plan node -> a join that broadcasts its right input
  // plan node -> its params in wire form: converted once, copied into each task's spec.
  std::vector<wire::TaskParams> params_;
};

}  // namespace coupler::coordinator
