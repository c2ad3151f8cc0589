// Planner: a validated JobGraph → a Plan saying, per node, how it runs: loose tasks or a tight
// gang, how many, on what hardware, in which stage. Pure logic, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/job/job_graph.h"
#include "runtime/ops/op_registry.h"
#include "runtime/status.h"

namespace coupler::plan {

struct PlanNode {
  std::string id;
  std::string op;
  job::Coupling coupling = job::Coupling::kLoose;  // never kAuto in a plan
  int64_t tasks = 0;         // loose: map tasks + reduce; tight: 1 (the gang)
  int64_t map_tasks = 0;     // one per shard (loose); 0 for tight
  bool has_reduce = false;   // reduce tasks follow the map tasks: one, or one per partition
  int ranks = 1;             // processes per task: the gang size for tight nodes
  ops::HardwareClass hardware = ops::HardwareClass::kCpu;
  int stage = 0;             // topological level: 0 reads only datasets
  std::vector<std::string> deps;  // node ids this one reads
  int64_t output_shards = 0;
  io::ShardFormat output_format = io::ShardFormat::kColumns;  // the op's
  size_t node_index = 0;     // into JobGraph::nodes
  std::optional<io::TableSchema> schema;  // the node's output columns, where known
  // Fused per-shard chains (fusion.h), decided at admission and kept with the plan: the node
  // this one runs right after, in the same task and process (empty: its tasks are dispatched
  // on their own), and whether its shards go to the next node of its chain in memory only,
  // never written.
  std::string fused_after;
  bool output_in_memory = false;

  // Reduce tasks follow the node's map tasks (ids map_tasks .. tasks - 1 within the node):
  // column_stats' one, or a shuffle's one per output partition, each writing its part file.
  // Derived from the counts the state keeps, so a plan admitted before shuffles reads the same.
  int64_t reduce_tasks() const { return has_reduce ? tasks - map_tasks : 0; }
};

struct Plan {
  std::string job;
  std::vector<PlanNode> nodes;  // by stage, then in spec order
  int stages = 0;
  int64_t total_tasks = 0;
};

// The graph must have passed ValidateJob (inputs resolved, params typed); a graph that did
// not (a cycle, an unknown op) gets InvalidArgument.
Result<Plan> PlanJob(const job::JobGraph& graph,
                     const ops::OpRegistry& registry = ops::OpRegistry::Builtin());

}  // namespace coupler::plan
