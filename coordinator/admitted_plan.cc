#include "coordinator/admitted_plan.h"

#include <algorithm>
#include <exception>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <cereal/archives/binary.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include "runtime/wire/bounded_archive.h"

// The record's layout, field by field. Enums travel as numbers pinned here, never as their
// position in the C++ enum: reordering an enum must not change what a stored job means. A
// number this build does not know makes the record unreadable (Pin*/Unpin* throw).
namespace coupler {
namespace {

[[noreturn]] void Unknown(const char* what, unsigned value) {
  throw cereal::Exception(std::string("unknown ") + what + " number " + std::to_string(value));
}

// Coupling: 0 auto, 1 loose, 2 tight.
uint8_t Pin(job::Coupling c) {
  switch (c) {
    case job::Coupling::kAuto: return 0;
    case job::Coupling::kLoose: return 1;
    case job::Coupling::kTight: return 2;
  }
  Unknown("coupling", static_cast<unsigned>(c));
}
job::Coupling UnpinCoupling(uint8_t v) {
  switch (v) {
    case 0: return job::Coupling::kAuto;
    case 1: return job::Coupling::kLoose;
    case 2: return job::Coupling::kTight;
  }
  Unknown("coupling", v);
}

// InputRef::Kind: 0 node, 1 file, 2 directory.
uint8_t Pin(job::InputRef::Kind k) {
  switch (k) {
    case job::InputRef::Kind::kNode: return 0;
    case job::InputRef::Kind::kFile: return 1;
    case job::InputRef::Kind::kDirectory: return 2;
  }
  Unknown("input kind", static_cast<unsigned>(k));
}
job::InputRef::Kind UnpinInputKind(uint8_t v) {
  switch (v) {
    case 0: return job::InputRef::Kind::kNode;
    case 1: return job::InputRef::Kind::kFile;
    case 2: return job::InputRef::Kind::kDirectory;
  }
  Unknown("input kind", v);
}

// HardwareClass: 0 cpu, 1 gpu, 2 gpu with a fast interconnect.
uint8_t Pin(ops::HardwareClass h) {
  switch (h) {
    case ops::HardwareClass::kCpu: return 0;
    case ops::HardwareClass::kGpu: return 1;
    case ops::HardwareClass::kGpuFastInterconnect: return 2;
  }
  Unknown("hardware class", static_cast<unsigned>(h));
}
ops::HardwareClass UnpinHardware(uint8_t v) {
  switch (v) {
    case 0: return ops::HardwareClass::kCpu;
    case 1: return ops::HardwareClass::kGpu;
    case 2: return ops::HardwareClass::kGpuFastInterconnect;
  }
  Unknown("hardware class", v);
}

// ShardFormat: 0 columns (.npz), 1 records (.npy).
uint8_t Pin(io::ShardFormat f) {
  switch (f) {
    case io::ShardFormat::kColumns: return 0;
    case io::ShardFormat::kRecords: return 1;
  }
  Unknown("shard format", static_cast<unsigned>(f));
}
io::ShardFormat UnpinFormat(uint8_t v) {
  switch (v) {
    case 0: return io::ShardFormat::kColumns;
    case 1: return io::ShardFormat::kRecords;
  }
  Unknown("shard format", v);
}

// ElementType's numbers are pinned by its own declaration (runtime/precision/element_type.h).
ElementType UnpinElementType(uint8_t v) {
  if (v > static_cast<uint8_t>(ElementType::kDatetime64)) Unknown("element type", v);
  return static_cast<ElementType>(v);
}

// Reads or writes `value` through its pinned number: `pin` gives the number to write, `unpin`
// turns the number read back into the value (and checks it).
template <class Archive, class T, class Unpin>
void Pinned(Archive& ar, T& value, Unpin unpin) {
  uint8_t number = Pin(value);
  ar(number);
  value = unpin(number);
}

}  // namespace

namespace io {
template <class Archive>
void serialize(Archive& ar, ColumnSchema& c) {
  uint8_t dtype = static_cast<uint8_t>(c.dtype);
  ar(c.name, dtype, c.categorical);
  c.dtype = UnpinElementType(dtype);
}
template <class Archive>
void serialize(Archive& ar, TableSchema& t) {
  ar(t.columns);
}
}  // namespace io

namespace job {
template <class Archive>
void serialize(Archive& ar, Resources& r) {
  ar(r.cpus, r.gpus, r.gpu_memory, r.memory);
}
template <class Archive>
void serialize(Archive& ar, InputRef& in) {
  uint64_t node_index = in.node_index;
  int32_t shards = in.shards;
  ar(in.name, in.path, node_index, shards);
  in.node_index = static_cast<size_t>(node_index);
  in.shards = shards;
  Pinned(ar, in.kind, UnpinInputKind);
}
template <class Archive>
void serialize(Archive& ar, NodeSpec& n) {
  int32_t ranks = n.ranks, retries = n.retries, priority = n.priority;
  ar(n.id, n.op, n.inputs, n.params, n.resolved_inputs, n.resources, ranks, n.ranks_given,
     retries, priority, n.reuse, n.required_labels, n.output_schema);
  n.ranks = ranks;
  n.retries = retries;
  n.priority = priority;
  Pinned(ar, n.coupling, UnpinCoupling);
}
template <class Archive>
void serialize(Archive& ar, JobGraph& g) {
  int32_t priority = g.priority;
  ar(g.name, g.description, g.workdir, g.workdir_root, g.run_dir, g.reuse, g.source_file,
     g.base_dir, priority, g.nodes);
  g.priority = priority;
}
}  // namespace job

namespace plan {
template <class Archive>
void serialize(Archive& ar, PlanNode& p) {
  int32_t ranks = p.ranks, stage = p.stage;
  uint64_t node_index = p.node_index;
  ar(p.id, p.op, p.tasks, p.map_tasks, p.has_reduce, ranks, stage, p.deps, p.output_shards,
     node_index, p.schema);
  p.ranks = ranks;
  p.stage = stage;
  p.node_index = static_cast<size_t>(node_index);
  Pinned(ar, p.coupling, UnpinCoupling);
  Pinned(ar, p.hardware, UnpinHardware);
  Pinned(ar, p.output_format, UnpinFormat);
}
template <class Archive>
void serialize(Archive& ar, Plan& p) {
  int32_t stages = p.stages;
  ar(p.job, p.nodes, stages, p.total_tasks);
  p.stages = stages;
}
}  // namespace plan

namespace coordinator {
namespace {

constexpr char kTag[4] = {'C', 'P', 'L', 'P'};

template <class Archive>
void Fields(Archive& ar, AdmittedPlan& a) {
  std::map<uint64_t, std::string> reused(a.reused.begin(), a.reused.end());
  ar(a.graph, a.plan, a.datasets, a.workdir_marker, a.node_keys, reused);
  a.reused = {reused.begin(), reused.end()};
}

// Version 2 appends, per plan node, its place in a fused chain and, per graph node, `keep`.
// A version-1 record decodes with no fusion: its job was admitted by a release without it.
template <class Archive>
void FusionFields(Archive& ar, AdmittedPlan& a) {
  std::vector<std::string> fused_after;
  std::vector<uint8_t> in_memory, keep;
  for (const plan::PlanNode& p : a.plan.nodes) {
    fused_after.push_back(p.fused_after);
    in_memory.push_back(p.output_in_memory ? 1 : 0);
  }
  for (const job::NodeSpec& n : a.graph.nodes) keep.push_back(n.keep ? 1 : 0);
  ar(fused_after, in_memory, keep);
  if (fused_after.size() != a.plan.nodes.size() || in_memory.size() != a.plan.nodes.size() ||
      keep.size() != a.graph.nodes.size()) {
    throw std::runtime_error("fusion fields for " + std::to_string(fused_after.size()) +
                             " plan nodes and " + std::to_string(keep.size()) + " graph nodes");
  }
  for (size_t p = 0; p < a.plan.nodes.size(); ++p) {
    a.plan.nodes[p].fused_after = fused_after[p];
    a.plan.nodes[p].output_in_memory = in_memory[p] != 0;
  }
  for (size_t i = 0; i < a.graph.nodes.size(); ++i) a.graph.nodes[i].keep = keep[i] != 0;
}

// What a decoded record must hold for JobState to trust its indexes.
Status CheckConsistent(const AdmittedPlan& a) {
  int64_t total = 0;
  for (const plan::PlanNode& p : a.plan.nodes) {
    if (p.node_index >= a.graph.nodes.size()) {
      return Internal("admitted plan: plan node '" + p.id + "' names graph node " +
                      std::to_string(p.node_index) + " of " +
                      std::to_string(a.graph.nodes.size()));
    }
    if (p.tasks < 0 || p.map_tasks < 0 || p.map_tasks > p.tasks || p.ranks < 1 ||
        (p.has_reduce && (p.tasks == p.map_tasks || p.output_shards != p.reduce_tasks()))) {
      return Internal("admitted plan: node '" + p.id + "' has impossible task counts");
    }
    total += p.tasks;
  }
  if (total != a.plan.total_tasks) {
    return Internal("admitted plan: its nodes' tasks add up to " + std::to_string(total) +
                    ", not the " + std::to_string(a.plan.total_tasks) + " it records");
  }
  if (!a.node_keys.empty() && a.node_keys.size() != a.plan.nodes.size()) {
    return Internal("admitted plan: " + std::to_string(a.node_keys.size()) + " node keys for " +
                    std::to_string(a.plan.nodes.size()) + " plan nodes");
  }
  for (const auto& [p, from] : a.reused) {
    if (p >= a.plan.nodes.size()) return Internal("admitted plan: reuse of an unknown node");
  }
  // A fused node runs with the same shard of the node before it (same map task count), and
  // only one node runs after each.
  std::set<std::string> fused_afters;
  for (const plan::PlanNode& p : a.plan.nodes) {
    if (p.fused_after.empty()) continue;
    if (!fused_afters.insert(p.fused_after).second) {
      return Internal("admitted plan: two nodes are fused after '" + p.fused_after + "'");
    }
    const auto before = std::find_if(a.plan.nodes.begin(), a.plan.nodes.end(),
                                     [&](const plan::PlanNode& q) { return q.id == p.fused_after; });
    if (before == a.plan.nodes.end() || before->map_tasks != p.map_tasks || p.has_reduce ||
        before->has_reduce || &*before == &p) {
      return Internal("admitted plan: node '" + p.id + "' is fused after '" + p.fused_after +
                      "', which is not a node it can run after");
    }
  }
  // Every chain starts at a node dispatched on its own: no loop of fused nodes.
  for (const plan::PlanNode& p : a.plan.nodes) {
    const plan::PlanNode* q = &p;
    for (size_t steps = 0; q != nullptr && !q->fused_after.empty(); ++steps) {
      if (steps > a.plan.nodes.size()) {
        return Internal("admitted plan: the fused chain of node '" + p.id + "' has no start");
      }
      const auto it = std::find_if(a.plan.nodes.begin(), a.plan.nodes.end(),
                                   [&](const plan::PlanNode& r) { return r.id == q->fused_after; });
      q = it == a.plan.nodes.end() ? nullptr : &*it;
    }
  }
  for (const job::NodeSpec& n : a.graph.nodes) {
    for (const job::InputRef& in : n.resolved_inputs) {
      if (in.kind == job::InputRef::Kind::kNode && in.node_index >= a.graph.nodes.size()) {
        return Internal("admitted plan: node '" + n.id + "' reads graph node " +
                        std::to_string(in.node_index) + ", which is not there");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

std::string EncodeAdmittedPlan(const AdmittedPlan& plan) {
  std::ostringstream out;
  out.write(kTag, sizeof(kTag));
  const uint16_t version = kAdmittedPlanVersion;
  out.put(static_cast<char>(version & 0xff));
  out.put(static_cast<char>(version >> 8));
  {
    cereal::BinaryOutputArchive ar(out);
    AdmittedPlan copy = plan;  // Fields takes a mutable record (one function reads and writes)
    Fields(ar, copy);
    FusionFields(ar, copy);
  }
  return out.str();
}

Result<AdmittedPlan> DecodeAdmittedPlan(std::string_view bytes) {
  if (bytes.size() < sizeof(kTag) + 2 || bytes.substr(0, sizeof(kTag)) != std::string_view(kTag, 4)) {
    return Internal("not an admitted-plan record (no CPLP tag)");
  }
  const uint16_t version = static_cast<uint16_t>(static_cast<uint8_t>(bytes[4]) |
                                                 (static_cast<uint8_t>(bytes[5]) << 8));
  if (version != 1 && version != kAdmittedPlanVersion) {
    return Internal("admitted-plan record of version " + std::to_string(version) +
                    "; this build reads versions 1 to " + std::to_string(kAdmittedPlanVersion));
  }
  AdmittedPlan plan;
  wire::BoundedInputArchive ar(bytes.substr(6));
  try {
    Fields(ar, plan);
    if (version >= 2) FusionFields(ar, plan);
  } catch (const std::exception& e) {
    return Internal(std::string("damaged admitted-plan record: ") + e.what());
  }
  if (ar.remaining() != 0) {
    return Internal("damaged admitted-plan record: " + std::to_string(ar.remaining()) +
                    " bytes after its last field");
  }
  COUPLER_RETURN_IF_ERROR(CheckConsistent(plan));
  return plan;
}

}  // namespace coordinator
}  // namespace coupler
