#include "runtime/plan/planner.h"

#include <algorithm>
#include <variant>

namespace coupler::plan {
namespace {

using job::Coupling;
using job::InputRef;
using job::JobGraph;
using job::NodeSpec;
using ops::Expansion;
using ops::HardwareClass;
using ops::OpDef;

int64_t IntParam(const NodeSpec& n, const std::string& name, int64_t fallback) {
  auto it = n.params.find(name);
  if (it == n.params.end()) return fallback;
  if (const auto* v = std::get_if<int64_t>(&it->second)) return *v;
  return fallback;
}

HardwareClass HardwareFor(const NodeSpec& n, const OpDef& op, Coupling coupling) {
  HardwareClass h = op.hardware;
  // A fast interconnect only matters when there is more than one rank to connect.
  if (h == HardwareClass::kGpuFastInterconnect && (coupling == Coupling::kLoose || n.ranks == 1)) {
    h = HardwareClass::kGpu;
  }
  if (h == HardwareClass::kCpu && (n.resources.gpus > 0 || n.resources.gpu_memory > 0)) {
    h = HardwareClass::kGpu;
  }
  return h;
}

}  // namespace

Result<Plan> PlanJob(const JobGraph& graph, const ops::OpRegistry& registry) {
  const size_t n = graph.nodes.size();
  std::vector<const OpDef*> defs(n);
  std::vector<std::vector<size_t>> readers(n);
  std::vector<size_t> pending(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const NodeSpec& node = graph.nodes[i];
    defs[i] = registry.Find(node.op);
    if (defs[i] == nullptr) return InvalidArgument("node '" + node.id + "': unknown op '" + node.op + "'");
    // An entry may stand for several files (a glob, a folder of CSVs), never for none.
    if (node.resolved_inputs.size() < node.inputs.size()) {
      return InvalidArgument("node '" + node.id + "': inputs not resolved (validate the job first)");
    }
    for (const InputRef& in : node.resolved_inputs) {
      if (in.kind != InputRef::Kind::kNode) continue;
      if (in.node_index >= n) return InvalidArgument("node '" + node.id + "': bad input index");
      readers[in.node_index].push_back(i);
      ++pending[i];
    }
  }

  // Kahn's algorithm; a node's stage is one past its deepest input.
  std::vector<int> stage(n, 0);
  std::vector<size_t> order;
  order.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) order.push_back(i);
  }
  for (size_t head = 0; head < order.size(); ++head) {
    size_t u = order[head];
    for (size_t r : readers[u]) {
      stage[r] = std::max(stage[r], stage[u] + 1);
      if (--pending[r] == 0) order.push_back(r);
    }
  }
  if (order.size() != n) return InvalidArgument("job '" + graph.name + "' has a cycle");

  Plan plan;
  plan.job = graph.name;
  std::vector<int64_t> out_shards(n, 0);
  std::vector<PlanNode> nodes(n);
  for (size_t i : order) {
    const NodeSpec& node = graph.nodes[i];
    const OpDef& op = *defs[i];
    PlanNode& p = nodes[i];
    p.id = node.id;
    p.op = node.op;
    p.node_index = i;
    p.schema = node.output_schema;
    p.stage = stage[i];
    p.coupling = node.coupling == Coupling::kAuto ? op.default_coupling : node.coupling;
    p.ranks = p.coupling == Coupling::kTight ? node.ranks : 1;
    p.hardware = HardwareFor(node, op, p.coupling);

    int64_t first_input_shards = 1, every_input_shards = 0;
    for (size_t k = 0; k < node.resolved_inputs.size(); ++k) {
      const InputRef& in = node.resolved_inputs[k];
      if (in.kind == InputRef::Kind::kNode) p.deps.push_back(graph.nodes[in.node_index].id);
      const int64_t shards = in.kind == InputRef::Kind::kNode        ? out_shards[in.node_index]
                             : in.kind == InputRef::Kind::kDirectory ? std::max(in.shards, 1)
                                                                     : 1;
      if (k == 0) first_input_shards = shards;
      every_input_shards += shards;
    }
    switch (op.expansion) {
      case Expansion::kFixed:
        p.map_tasks = IntParam(node, op.count_param, 1);
        break;
      case Expansion::kPerShard:
        p.map_tasks = node.resolved_inputs.empty() && !op.count_param.empty()
                          ? IntParam(node, op.count_param, 1)
                          : first_input_shards;
        break;
      case Expansion::kPerShardWithReduce:
        p.map_tasks = first_input_shards;
        p.has_reduce = true;
        break;
      case Expansion::kShuffle:
        if (ops::Broadcasts(op, node.params)) {  // one task per shard of the first input
          p.map_tasks = first_input_shards;
          break;
        }
        p.map_tasks = op.maps_every_input ? every_input_shards : first_input_shards;
        p.has_reduce = true;
        break;
      case Expansion::kGang:
        p.map_tasks = 0;
        break;
    }
    if (op.expansion == Expansion::kGang) {
      p.tasks = 1;
      p.output_shards = 1;
    } else if (op.expansion == Expansion::kShuffle && p.has_reduce) {
      // "auto" (or no value): as many partitions as the first input has shards.
      const int64_t partitions =
          std::max<int64_t>(1, IntParam(node, op.count_param, first_input_shards));
      p.tasks = p.map_tasks + partitions;
      p.output_shards = partitions;
    } else {
      p.tasks = p.map_tasks + (p.has_reduce ? 1 : 0);
      p.output_shards = op.output == ops::OutputShape::kSingle ? 1 : p.map_tasks;
    }
    p.output_format = op.output_format;
    out_shards[i] = p.output_shards;
    plan.total_tasks += p.tasks;
    plan.stages = std::max(plan.stages, p.stage + 1);
  }

  plan.nodes.reserve(n);
  std::vector<size_t> by_stage(n);
  for (size_t i = 0; i < n; ++i) by_stage[i] = i;
  std::stable_sort(by_stage.begin(), by_stage.end(),
                   [&](size_t a, size_t b) { return stage[a] < stage[b]; });
  for (size_t i : by_stage) plan.nodes.push_back(std::move(nodes[i]));
  return plan;
}

}  // namespace coupler::plan
