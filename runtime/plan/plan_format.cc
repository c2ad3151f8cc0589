#include "runtime/plan/plan_format.h"

#include <algorithm>

#include <fmt/format.h>

#include "runtime/ops/op_registry.h"
#include "runtime/plan/fusion.h"
#include "runtime/util/json_writer.h"

namespace coupler::plan {
namespace {

// A column's type as a user reads it: a categorical column is "string" (int32 codes into its
// dictionary are how it is stored, not what it holds).
std::string_view TypeName(const io::ColumnSchema& c) {
  return c.categorical ? "string" : ElementTypeName(c.dtype);
}

bool SameKind(const io::ColumnSchema& a, const io::ColumnSchema& b) {
  return a.dtype == b.dtype && a.categorical == b.categorical;
}

// One block per node whose columns are known, one line per column; a run of three or more
// neighbours of one kind (64 pixel columns) is one line, "p0 .. p63 (64)", so a wide table
// stays readable (--json lists every column).
std::string FormatSchemas(const Plan& plan) {
  std::string out;
  for (const auto& n : plan.nodes) {
    if (!n.schema) continue;
    const std::vector<io::ColumnSchema>& columns = n.schema->columns;
    std::vector<std::pair<std::string, const io::ColumnSchema*>> lines;
    for (size_t i = 0; i < columns.size();) {
      size_t j = i + 1;
      while (j < columns.size() && SameKind(columns[j], columns[i])) ++j;
      if (j - i >= 3) {
        lines.emplace_back(fmt::format("{} .. {} ({})", columns[i].name, columns[j - 1].name,
                                       j - i),
                           &columns[i]);
      } else {
        for (size_t k = i; k < j; ++k) lines.emplace_back(columns[k].name, &columns[k]);
      }
      i = j;
    }
    size_t name_w = 6, type_w = 4;
    for (const auto& [name, c] : lines) {
      name_w = std::max(name_w, name.size());
      type_w = std::max(type_w, TypeName(*c).size());
    }
    out += fmt::format("\ncolumns of {} ({}):\n", n.id, columns.size());
    out += fmt::format("  {:<{}}  {:<{}}  {:<8}  {}\n", "COLUMN", name_w, "TYPE", type_w,
                       "NULLABLE", "DICTIONARY");
    for (const auto& [name, c] : lines) {
      out += fmt::format("  {:<{}}  {:<{}}  {:<8}  {}\n", name, name_w, TypeName(*c), type_w,
                         c->nullable() ? "yes" : "no", c->categorical ? "yes" : "no");
    }
  }
  return out;
}

}  // namespace

std::string FormatPlanTable(const Plan& plan) {
  size_t id_w = 4, op_w = 2;
  for (const auto& n : plan.nodes) {
    id_w = std::max(id_w, n.id.size());
    op_w = std::max(op_w, n.op.size());
  }
  std::string out = fmt::format("job {}: {} nodes, {} stages, {} tasks\n", plan.job,
                                plan.nodes.size(), plan.stages, plan.total_tasks);
  out += fmt::format("{:<5}  {:<{}}  {:<{}}  {:<8}  {:>8}  {:>5}  {:<21}  {}\n", "STAGE", "NODE",
                     id_w, "OP", op_w, "COUPLING", "TASKS", "RANKS", "HARDWARE", "DEPENDS ON");
  for (const auto& n : plan.nodes) {
    std::string deps;
    for (const auto& d : n.deps) deps += (deps.empty() ? "" : ", ") + d;
    std::string tasks = std::to_string(n.tasks);
    if (n.has_reduce) tasks = fmt::format("{}+{}", n.map_tasks, n.reduce_tasks());
    out += fmt::format("{:<5}  {:<{}}  {:<{}}  {:<8}  {:>8}  {:>5}  {:<21}  {}\n", n.stage, n.id,
                       id_w, n.op, op_w, job::CouplingName(n.coupling), tasks, n.ranks,
                       ops::HardwareClassName(n.hardware), deps.empty() ? "-" : deps);
  }
  // A shuffle is a stage boundary: no part file of its output exists until every map task ran.
  std::string shuffles;
  for (const auto& n : plan.nodes) {
    const ops::OpDef* op = ops::OpRegistry::Builtin().Find(n.op);
    if (op == nullptr || op->expansion != ops::Expansion::kShuffle || !n.has_reduce) continue;
    shuffles += fmt::format("  {}: {} map task{} -> {} partition{} (by {} of the keys)\n", n.id,
                            n.map_tasks, n.map_tasks == 1 ? "" : "s", n.reduce_tasks(),
                            n.reduce_tasks() == 1 ? "" : "s",
                            op->range_partitioned ? "ranges" : "hash");
  }
  if (!shuffles.empty()) {
    out += "\nshuffles (a stage boundary: each reduce task reads its partition from every map task):\n" +
           shuffles;
  }
  const std::vector<std::vector<std::string>> chains = FusedChains(plan);
  if (!chains.empty()) {
    out += "\nfused (one task per shard runs each chain; \"(memory)\": its shards are not written):\n";
    for (const auto& chain : chains) {
      std::string line;
      for (const std::string& id : chain) {
        const auto it = std::find_if(plan.nodes.begin(), plan.nodes.end(),
                                     [&](const PlanNode& n) { return n.id == id; });
        line += (line.empty() ? "  " : " -> ") + id;
        if (it != plan.nodes.end() && it->output_in_memory) line += " (memory)";
      }
      out += line + "\n";
    }
  }
  return out + FormatSchemas(plan);
}

std::string FormatPlanJson(const Plan& plan) {
  json::Writer w;
  w.BeginObject();
  w.Field("job", plan.job);
  w.Field("stages", plan.stages);
  w.Field("total_tasks", plan.total_tasks);
  w.BeginArray("nodes");
  for (const auto& n : plan.nodes) {
    w.BeginObject();
    w.Field("id", n.id);
    w.Field("op", n.op);
    w.Field("coupling", job::CouplingName(n.coupling));
    w.Field("tasks", n.tasks);
    w.Field("map_tasks", n.map_tasks);
    w.Field("reduce", n.has_reduce);
    w.Field("reduce_tasks", n.reduce_tasks());
    w.Field("ranks", n.ranks);
    w.Field("hardware", ops::HardwareClassName(n.hardware));
    w.Field("stage", n.stage);
    w.BeginArray("deps");
    for (const auto& d : n.deps) w.String(d);
    w.EndArray();
    w.Field("output_shards", n.output_shards);
    if (n.fused_after.empty()) {
      w.Null("fused_after");
    } else {
      w.Field("fused_after", n.fused_after);
    }
    w.Field("output_in_memory", n.output_in_memory);
    if (n.schema) {
      w.BeginArray("columns");
      for (const io::ColumnSchema& c : n.schema->columns) {
        w.BeginObject();
        w.Field("name", c.name);
        w.Field("type", TypeName(c));
        w.Field("nullable", c.nullable());
        w.Field("dictionary", c.categorical);
        w.EndObject();
      }
      w.EndArray();
    } else {
      w.Null("columns");
    }
    w.EndObject();
  }
  w.EndArray();
  w.BeginArray("fused_chains");
  for (const auto& chain : FusedChains(plan)) {
    w.BeginArray();
    for (const std::string& id : chain) w.String(id);
    w.EndArray();
  }
  w.EndArray();
  w.EndObject();
  return w.Finish();
}

}  // namespace coupler::plan
