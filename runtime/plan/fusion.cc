#include "runtime/plan/fusion.h"

#include <cstdint>
#include <map>

namespace coupler::plan {
namespace {

using job::InputRef;
using job::NodeSpec;
using ops::Fusion;

bool PerShardLoose(const PlanNode& p) {
  return p.coupling == job::Coupling::kLoose && !p.has_reduce && p.map_tasks > 0 &&
         p.tasks == p.map_tasks && p.ranks == 1;
}

// A chain runs where its first node's task was placed and is retried as one task.
bool SamePlacement(const NodeSpec& a, const NodeSpec& b, const PlanNode& pa, const PlanNode& pb) {
  return a.resources.cpus == b.resources.cpus && a.resources.gpus == b.resources.gpus &&
         a.resources.gpu_memory == b.resources.gpu_memory &&
         a.resources.memory == b.resources.memory && a.required_labels == b.required_labels &&
         a.retries == b.retries && pa.hardware == pb.hardware;
}

}  // namespace

void FuseChains(const job::JobGraph& graph, Plan& plan, const std::set<size_t>& unfused,
                const ops::OpRegistry& registry) {
  const size_t n = plan.nodes.size();
  std::vector<size_t> plan_of(graph.nodes.size(), SIZE_MAX);
  for (size_t p = 0; p < n; ++p) {
    plan.nodes[p].fused_after.clear();
    plan.nodes[p].output_in_memory = false;
    if (plan.nodes[p].node_index < plan_of.size()) plan_of[plan.nodes[p].node_index] = p;
  }
  // Readers per graph node, counting a node that reads another twice once per input.
  std::vector<int> readers(graph.nodes.size(), 0);
  for (const NodeSpec& node : graph.nodes) {
    for (const InputRef& in : node.resolved_inputs) {
      if (in.kind == InputRef::Kind::kNode && in.node_index < readers.size()) {
        ++readers[in.node_index];
      }
    }
  }
  for (size_t p = 0; p < n; ++p) {
    PlanNode& reader = plan.nodes[p];
    if (reader.node_index >= graph.nodes.size() || unfused.count(p) != 0) continue;
    const NodeSpec& node = graph.nodes[reader.node_index];
    const ops::OpDef* op = registry.Find(node.op);
    if (op == nullptr || op->fusion == Fusion::kNone || !PerShardLoose(reader)) continue;
    if (node.resolved_inputs.empty() ||
        node.resolved_inputs.front().kind != InputRef::Kind::kNode) {
      continue;
    }
    size_t node_inputs = 0;
    for (const InputRef& in : node.resolved_inputs) {
      node_inputs += in.kind == InputRef::Kind::kNode ? 1 : 0;
    }
    if (node_inputs != 1) continue;
    const size_t from_node = node.resolved_inputs.front().node_index;
    if (from_node >= graph.nodes.size() || readers[from_node] != 1) continue;
    const size_t from = plan_of[from_node];
    if (from == SIZE_MAX || unfused.count(from) != 0) continue;
    PlanNode& writer = plan.nodes[from];
    const NodeSpec& writer_node = graph.nodes[from_node];
    const ops::OpDef* writer_op = registry.Find(writer_node.op);
    // Only a node that writes its shard as a table can hand it on.
    if (writer_op == nullptr || writer_op->fusion != Fusion::kLink || !PerShardLoose(writer) ||
        writer.output_format != io::ShardFormat::kColumns ||
        writer.output_shards != writer.map_tasks || reader.map_tasks != writer.map_tasks ||
        !SamePlacement(writer_node, node, writer, reader)) {
      continue;
    }
    reader.fused_after = writer.id;
    writer.output_in_memory = !writer_node.keep && op->fusion != Fusion::kEndOnDisk;
  }
}

std::vector<size_t> FusedNext(const Plan& plan) {
  std::map<std::string, size_t> by_id;
  for (size_t p = 0; p < plan.nodes.size(); ++p) by_id[plan.nodes[p].id] = p;
  std::vector<size_t> next(plan.nodes.size(), SIZE_MAX);
  for (size_t p = 0; p < plan.nodes.size(); ++p) {
    if (plan.nodes[p].fused_after.empty()) continue;
    auto it = by_id.find(plan.nodes[p].fused_after);
    if (it != by_id.end()) next[it->second] = p;
  }
  return next;
}

std::vector<std::vector<std::string>> FusedChains(const Plan& plan) {
  const std::vector<size_t> next = FusedNext(plan);
  std::vector<std::vector<std::string>> chains;
  for (size_t p = 0; p < plan.nodes.size(); ++p) {
    if (!plan.nodes[p].fused_after.empty() || next[p] == SIZE_MAX) continue;
    std::vector<std::string> chain;
    for (size_t q = p; q != SIZE_MAX && chain.size() <= plan.nodes.size(); q = next[q]) {
      chain.push_back(plan.nodes[q].id);
    }
    chains.push_back(std::move(chain));
  }
  return chains;
}

}  // namespace coupler::plan
