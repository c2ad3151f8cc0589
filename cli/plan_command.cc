// `coupler plan JOB.yaml [--json] [--workers [--coordinator ENDPOINT]]`: validate a job spec
// and show how it would run; with --workers, also where each node would run on the pool a
// running coordinator has now.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "client/client.h"
#include "coordinator/coordinator.h"
#include "coordinator/placement/pool_fit.h"
#include "runtime/job/job_loader.h"
#include "runtime/logging.h"
#include "runtime/net/endpoint.h"
#include "runtime/plan/broadcast_choice.h"
#include "runtime/plan/fusion.h"
#include "runtime/plan/plan_format.h"
#include "runtime/plan/planner.h"
#include "runtime/util/json_writer.h"

namespace coupler::cli {
namespace {

struct PlanArgs {
  std::string spec;
  bool json = false;
  bool workers = false;
  std::string coordinator = "tcp://127.0.0.1:7100";
};

// A plan is answered offline; only the pool needs the coordinator, and a user waiting on a
// preview should hear soon that none is there.
constexpr std::chrono::seconds kPoolTimeout{5};

size_t AliveCount(const std::vector<wire::WorkerStatus>& workers) {
  return static_cast<size_t>(std::count_if(workers.begin(), workers.end(), [](const auto& w) {
    return w.state == pool::WorkerState::kAlive;
  }));
}

std::string PlacementText(const std::vector<coordinator::NodeFit>& fits,
                          const std::vector<wire::WorkerStatus>& workers,
                          const std::string& endpoint) {
  const size_t alive = AliveCount(workers);
  std::string out = fmt::format("\nplacement on {} alive worker{} (coordinator {}):\n", alive,
                                alive == 1 ? "" : "s", endpoint);
  size_t id_w = 4;
  for (const auto& f : fits) id_w = std::max(id_w, f.id.size());
  out += fmt::format("  {:<{}}  {}\n", "NODE", id_w, "RUNS ON");
  for (const auto& f : fits) {
    out += fmt::format("  {:<{}}  {}\n", f.id, id_w, coordinator::DescribeFit(f));
  }
  return out;
}

// The plan's JSON object with "pool" and "placement" added, so a script reading `plan --json`
// reads the same fields with or without --workers.
std::string PlacementJson(const std::string& plan_json,
                          const std::vector<coordinator::NodeFit>& fits,
                          const std::vector<wire::WorkerStatus>& workers,
                          const std::string& endpoint) {
  json::Writer w;
  w.BeginObject();
  w.BeginObject("pool");
  w.Field("coordinator", endpoint);
  w.Field("workers", static_cast<uint64_t>(workers.size()));
  w.Field("alive", static_cast<uint64_t>(AliveCount(workers)));
  w.EndObject();
  w.BeginArray("placement");
  for (const auto& f : fits) {
    w.BeginObject();
    w.Field("id", f.id);
    w.Field("placeable", f.placeable);
    w.BeginArray("workers");
    for (const auto& [id, n] : f.workers) {
      w.BeginObject();
      w.Field("id", id);
      w.Field(f.tight ? "ranks" : "slots", n);
      w.EndObject();
    }
    w.EndArray();
    w.Field(f.tight ? "ranks" : "slots", f.slots);
    w.Field("note", f.note);
    w.Field("reason", f.reason);
    w.Field("text", coordinator::DescribeFit(f));
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  const std::string extra = w.Finish();
  const size_t plan_end = plan_json.rfind('}');
  const size_t extra_start = extra.find('{');
  return plan_json.substr(0, plan_end) + "," + extra.substr(extra_start + 1);
}

double MillisSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

int RunPlan(const PlanArgs& args) {
  auto log = Logger("planner");
  const auto start = std::chrono::steady_clock::now();
  job::LoadedJob loaded = job::LoadJobFile(args.spec);
  if (!loaded.ok()) {
    std::fputs(loaded.diags.ToString().c_str(), stderr);
    return kExitBadInput;
  }
  const double load_ms = MillisSince(start);
  const auto plan_start = std::chrono::steady_clock::now();
  // As admission decides them, from the sizes of the files here.
  const std::vector<plan::BroadcastChoice> broadcasts = plan::ChooseBroadcasts(*loaded.graph);
  Result<plan::Plan> plan = plan::PlanJob(*loaded.graph);
  if (!plan.ok()) {
    std::fprintf(stderr, "%s: error: %s\n", args.spec.c_str(), plan.status().message().c_str());
    return kExitBadInput;
  }
  // As admission will fuse them, save for nodes an earlier run may provide (--reuse), which a
  // plan made without the coordinator cannot know.
  plan::FuseChains(*loaded.graph, *plan);
  log->debug("{}: {} nodes read and validated in {:.1f} ms, planned in {:.2f} ms", args.spec,
             loaded.graph->nodes.size(), load_ms, MillisSince(plan_start));
  std::string text = args.json ? plan::FormatPlanJson(*plan) : plan::FormatPlanTable(*plan);
  if (!args.json && !broadcasts.empty()) {
    text += "\njoins with broadcast: auto (decided at admission from the files' sizes):\n";
    for (const plan::BroadcastChoice& c : broadcasts) {
      text += "  " + c.node + ": " + (c.broadcast ? "broadcast" : "shuffle") + " (" + c.why + ")\n";
    }
  }
  if (args.workers) {
    auto client = client::Client::Connect(net::ClientEndpointFor(args.coordinator),
                                               kPoolTimeout);
    Result<std::vector<wire::WorkerStatus>> workers =
        client.ok() ? (*client)->Workers() : Result<std::vector<wire::WorkerStatus>>(client.status());
    if (!workers.ok()) {
      std::fprintf(stderr, "coupler: %s\n", workers.status().message().c_str());
      return kExitFailure;
    }
    std::vector<coordinator::NodeDemand> demands;
    for (const plan::PlanNode& n : plan->nodes) {
      demands.push_back(coordinator::DemandOf(n, loaded.graph->nodes[n.node_index]));
    }
    const std::vector<coordinator::NodeFit> fits = coordinator::FitPool(demands, *workers);
    text = args.json ? PlacementJson(text, fits, *workers, args.coordinator)
                     : text + PlacementText(fits, *workers, args.coordinator);
  }
  std::fputs(text.c_str(), stdout);
  return kExitOk;
}

}  // namespace

void AddPlanCommand(CLI::App& app, CommandBody* run) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "Validate a job spec and show each node's coupling, tasks, ranks, hardware and stage");
  cmd->add_option("job", args->spec, "job spec (YAML or JSON)")->required();
  cmd->add_flag("--json", args->json, "print the plan as JSON");
  CLI::Option* workers = cmd->add_flag(
      "--workers", args->workers,
      "ask the running coordinator for its workers and show where each node would run on them");
  cmd->add_option("--coordinator", args->coordinator,
                  "with --workers: the coordinator (its worker endpoint; clients use the port + 1)")
      ->capture_default_str()
      ->needs(workers);
  cmd->callback([args, run] { *run = [args] { return RunPlan(*args); }; });
}

}  // namespace coupler::cli
