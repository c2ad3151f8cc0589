#include "coordinator/task_specs.h"

#include <algorithm>
#include <cmath>

#include "runtime/io/output_layout.h"
#include "runtime/ops/op_registry.h"
#include "runtime/plan/fusion.h"

namespace coupler::coordinator {

TaskSpecs::TaskSpecs(const job::JobGraph& graph, const plan::Plan& plan, DatasetListing datasets)
    : graph_(graph), plan_(plan), datasets_(std::move(datasets)) {
  plan_of_node_.resize(graph_.nodes.size());
  for (size_t p = 0; p < plan_.nodes.size(); ++p) plan_of_node_[plan_.nodes[p].node_index] = p;
  fused_next_ = plan::FusedNext(plan_);
  // Looked up once: MakeOne runs for every task dispatched.
  defs_.reserve(plan_.nodes.size());
  broadcast_.reserve(plan_.nodes.size());
  params_.reserve(plan_.nodes.size());
  for (const plan::PlanNode& pn : plan_.nodes) {
    const ops::OpDef* def = ops::OpRegistry::Builtin().Find(pn.op);
    defs_.push_back(def);
    params_.emplace_back(graph_.nodes[pn.node_index].params);
    broadcast_.push_back(!pn.has_reduce && def != nullptr &&
                                 ops::Broadcasts(*def, graph_.nodes[pn.node_index].params)
                             ? 1
                             : 0);
  }
}

std::string TaskSpecs::OutputPath(size_t p, int64_t shard, bool partial) const {
  return io::ShardPath(graph_.workdir, plan_.nodes[p].id, shard,
                       partial ? io::ShardKind::kPartial : io::ShardKind::kPart,
                       plan_.nodes[p].output_format);
}

int64_t TaskSpecs::InputShards(const job::InputRef& in) const {
  switch (in.kind) {
    case job::InputRef::Kind::kNode: return plan_.nodes[plan_of_node_[in.node_index]].output_shards;
    case job::InputRef::Kind::kDirectory: return std::max(in.shards, 1);
    case job::InputRef::Kind::kFile: return 1;
  }
  return 1;
}

std::string TaskSpecs::ShufflePrefix(size_t p, int64_t map_shard) const {
  return io::ShufflePrefix(graph_.workdir, plan_.nodes[p].id, map_shard);
}

bool TaskSpecs::Shuffles(size_t p) const {
  return plan_.nodes[p].has_reduce && defs_[p] != nullptr &&
         defs_[p]->expansion == ops::Expansion::kShuffle;
}

bool TaskSpecs::WholeNode(size_t p) const {
  // Gang ops forced loose with ranks: 1 still run once over whole datasets.
  const plan::PlanNode& pn = plan_.nodes[p];
  return pn.coupling == job::Coupling::kTight || (pn.map_tasks == 0 && !pn.has_reduce);
}

std::string TaskSpecs::NodeDir(size_t p) const {
  return io::NodeDir(graph_.workdir, plan_.nodes[p].id);
}

std::string TaskSpecs::InputShard(const job::InputRef& in, int64_t shard) const {
  switch (in.kind) {
    case job::InputRef::Kind::kFile:
      return in.path;
    case job::InputRef::Kind::kDirectory: {
      auto it = datasets_.find(in.path);
      if (it == datasets_.end() || it->second.empty()) return in.path;
      const auto& files = it->second;
      return files[static_cast<size_t>(shard) % files.size()];
    }
    case job::InputRef::Kind::kNode: {
      const size_t producer = plan_of_node_[in.node_index];
      // A gang's output is its node's directory (a model, checkpoints, metrics).
      if (WholeNode(producer)) return NodeDir(producer);
      const int64_t shards = plan_.nodes[producer].output_shards;
      return OutputPath(producer, shards <= 1 ? 0 : shard % shards, false);
    }
  }
  return in.path;
}

wire::TaskSpec TaskSpecs::Make(const TaskRef& ref) const {
  wire::TaskSpec spec = MakeOne(ref);
  if (ref.kind == TaskKind::kMap) AddFusedSteps(ref, spec);
  return spec;
}

wire::TaskSpec TaskSpecs::MakeOne(const TaskRef& ref) const {
  const plan::PlanNode& pn = plan_.nodes[ref.plan_node];
  const job::NodeSpec& node = graph_.nodes[pn.node_index];
  wire::TaskSpec spec;
  spec.node_id = node.id;
  spec.op = node.op;
  // A reduce of a shuffle is told its partition; a node's only reduce is no shard's.
  const bool shuffles = Shuffles(ref.plan_node);
  spec.shard_index = ref.kind == TaskKind::kMap || (ref.kind == TaskKind::kReduce && shuffles)
                         ? static_cast<int32_t>(ref.shard)
                         : -1;
  spec.kind = ref.kind;
  spec.shards = static_cast<uint32_t>(pn.map_tasks);
  spec.params = params_[ref.plan_node];
  spec.workdir = graph_.workdir;
  const ops::OpDef* def = defs_[ref.plan_node];
  if (ref.kind == TaskKind::kReduce && shuffles && def->range_partitioned) {
    // Every map task's sorted shard, in map order, then every map task's sample.
    for (int64_t i = 0; i < pn.map_tasks; ++i) {
      spec.input_paths.push_back(io::ShuffleSortedPath(ShufflePrefix(ref.plan_node, i)));
    }
    for (int64_t i = 0; i < pn.map_tasks; ++i) {
      spec.input_paths.push_back(io::ShuffleSamplePath(ShufflePrefix(ref.plan_node, i)));
    }
    spec.output_path = OutputPath(ref.plan_node, ref.shard, false);
  } else if (ref.kind == TaskKind::kReduce && shuffles) {
    // Partition r's shuffle file from every map task, in map order (so "first" means first in the input).
    for (int64_t i = 0; i < pn.map_tasks; ++i) {
      spec.input_paths.push_back(io::ShufflePartitionPath(ShufflePrefix(ref.plan_node, i), ref.shard));
    }
    spec.output_path = OutputPath(ref.plan_node, ref.shard, false);
  } else if (ref.kind == TaskKind::kReduce) {
    for (int64_t i = 0; i < pn.map_tasks; ++i) {
      spec.input_paths.push_back(OutputPath(ref.plan_node, i, true));
    }
    spec.output_path = OutputPath(ref.plan_node, 0, false);
  } else if (WholeNode(ref.plan_node)) {
    // The whole group reads whole datasets: a directory of shards, never one shard of it.
    for (const auto& in : node.resolved_inputs) {
      if (in.kind == job::InputRef::Kind::kNode) {
        spec.input_paths.push_back(NodeDir(plan_of_node_[in.node_index]));
      } else {
        spec.input_paths.push_back(in.path);
      }
    }
    spec.output_path = NodeDir(ref.plan_node);
    spec.ranks = static_cast<uint32_t>(pn.ranks);
  } else {
    if (broadcast_[ref.plan_node]) {
      // Shard `shard` of the first input, then every shard of the others (the broadcast side).
      spec.input_paths.push_back(InputShard(node.resolved_inputs.front(), ref.shard));
      for (size_t k = 1; k < node.resolved_inputs.size(); ++k) {
        const job::InputRef& in = node.resolved_inputs[k];
        for (int64_t s = 0; s < InputShards(in); ++s) spec.input_paths.push_back(InputShard(in, s));
      }
    } else if (shuffles && def->maps_every_input) {
      // Map task m reads one shard of one input: the first input's shards, then the next's.
      int64_t m = ref.shard;
      for (const auto& in : node.resolved_inputs) {
        const int64_t shards = InputShards(in);
        if (m < shards) {
          spec.input_paths.push_back(InputShard(in, m));
          break;
        }
        m -= shards;
      }
    } else {
      for (const auto& in : node.resolved_inputs) spec.input_paths.push_back(InputShard(in, ref.shard));
    }
    if (shuffles) {
      spec.output_path = ShufflePrefix(ref.plan_node, ref.shard);
    } else {
      spec.output_path = OutputPath(ref.plan_node, ref.shard, pn.has_reduce);
    }
  }
  // What "auto" resolved to at planning: every map task must cut the same partitions.
  if (shuffles) {
    spec.params.Set(std::string(ops::kPartitionsParam), int64_t{pn.reduce_tasks()});
    if (def->maps_every_input && !node.resolved_inputs.empty()) {
      spec.params.Set(std::string(ops::kLeftMapsParam), InputShards(node.resolved_inputs.front()));
    }
  }
  if (auto it = node.params.find("timeout"); it != node.params.end()) {
    if (const auto* secs = std::get_if<double>(&it->second)) {
      spec.timeout_ms = static_cast<uint64_t>(std::llround(*secs * 1000.0));
    }
  }
  spec.gpu_memory_bytes = node.resources.gpu_memory;
  spec.gpus = static_cast<uint32_t>(node.resources.gpus);
  return spec;
}

void TaskSpecs::AddFusedSteps(const TaskRef& ref, wire::TaskSpec& spec) const {
  size_t p = ref.plan_node;
  // Bounded by the node count: a chain visits each node once.
  for (size_t steps = 0; fused_next_[p] != SIZE_MAX && steps < plan_.nodes.size(); ++steps) {
    const std::string& handed_on = steps == 0 ? spec.output_path : spec.fused.back().output_path;
    if (plan_.nodes[p].output_in_memory) spec.in_memory_outputs.push_back(handed_on);
    p = fused_next_[p];
    wire::TaskSpec step = MakeOne(TaskRef{static_cast<uint32_t>(p), ref.kind, ref.shard});
    wire::FusedStep& s = spec.fused.emplace_back();
    s.node_id = std::move(step.node_id);
    s.op = std::move(step.op);
    s.params = std::move(step.params);
    s.input_paths = std::move(step.input_paths);
    s.output_path = std::move(step.output_path);
    s.timeout_ms = step.timeout_ms;
  }
}

}  // namespace coupler::coordinator
