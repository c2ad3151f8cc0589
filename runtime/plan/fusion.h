// Fused per-shard chains: consecutive per-shard nodes (standardize → filter → derive → select,
// and a write_csv or exec at the end) run as one task per shard in one worker process, each
// node's shard passed to the next as a table in memory. A node's output is still written when
// something outside the chain reads it, when it ends the job (nothing reads it), when it is
// `keep: true`, or when the next node is a command that reads files (exec). Node states,
// commits, retries and logs stay per node: a chain's task completes the same shard of each of
// its nodes at once. Pure logic over a plan, no I/O.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "runtime/job/job_graph.h"
#include "runtime/ops/op_registry.h"
#include "runtime/plan/planner.h"

namespace coupler::plan {

// Sets fused_after and output_in_memory on the plan's nodes. A node joins the chain of the
// node it reads when:
// - both are loose per-shard nodes of ops that may fuse (OpDef::fusion), with one task per
//   shard and the same shard count, no reduce;
// - it reads that node as its first input and no other node (datasets and files are fine:
//   they are there before the chain starts), and that node has no other reader;
// - the two ask for the same resources, labels, retries and hardware (a chain runs where its
//   first node's task is placed, retried as one);
// - neither is in `unfused` (plan node indexes: nodes whose outputs an earlier run provides).
void FuseChains(const job::JobGraph& graph, Plan& plan, const std::set<size_t>& unfused = {},
                const ops::OpRegistry& registry = ops::OpRegistry::Builtin());

// The chains, each as its nodes' ids in run order (two or more); nodes that are not fused
// appear in none.
std::vector<std::vector<std::string>> FusedChains(const Plan& plan);

// Per plan node, the plan node that runs right after it in its chain; SIZE_MAX for none.
std::vector<size_t> FusedNext(const Plan& plan);

}  // namespace coupler::plan
