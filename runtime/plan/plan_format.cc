#include "runtime/plan/plan_format.h"

#include <algorithm>

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace coupler::plan {

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
    if (n.has_reduce) tasks = fmt::format("{}+1", n.map_tasks);
    out += fmt::format("{:<5}  {:<{}}  {:<{}}  {:<8}  {:>8}  {:>5}  {:<21}  {}\n", n.stage, n.id,
                       id_w, n.op, op_w, job::CouplingName(n.coupling), tasks, n.ranks,
                       ops::HardwareClassName(n.hardware), deps.empty() ? "-" : deps);
  }
  return out;
}

std::string FormatPlanJson(const Plan& plan) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  auto str = [&](std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); };
  w.StartObject();
  w.Key("job");
  str(plan.job);
  w.Key("stages");
  w.Int(plan.stages);
  w.Key("total_tasks");
  w.Int64(plan.total_tasks);
  w.Key("nodes");
  w.StartArray();
  for (const auto& n : plan.nodes) {
    w.StartObject();
    w.Key("id");
    str(n.id);
    w.Key("op");
    str(n.op);
    w.Key("coupling");
    str(job::CouplingName(n.coupling));
    w.Key("tasks");
    w.Int64(n.tasks);
    w.Key("map_tasks");
    w.Int64(n.map_tasks);
    w.Key("reduce");
    w.Bool(n.has_reduce);
    w.Key("ranks");
    w.Int(n.ranks);
    w.Key("hardware");
    str(ops::HardwareClassName(n.hardware));
    w.Key("stage");
    w.Int(n.stage);
    w.Key("deps");
    w.StartArray();
    for (const auto& d : n.deps) str(d);
    w.EndArray();
    w.Key("output_shards");
    w.Int64(n.output_shards);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

}  // namespace coupler::plan
