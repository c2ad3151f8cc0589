// `coupler plan JOB.yaml [--json]`: validate a job spec and show how it would run.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "runtime/job/job_loader.h"
#include "runtime/logging.h"
#include "runtime/plan/plan_format.h"
#include "runtime/plan/planner.h"

namespace coupler::cli {
namespace {

struct PlanArgs {
  std::string spec;
  bool json = false;
};

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
  Result<plan::Plan> plan = plan::PlanJob(*loaded.graph);
  if (!plan.ok()) {
    std::fprintf(stderr, "%s: error: %s\n", args.spec.c_str(), plan.status().message().c_str());
    return kExitBadInput;
  }
  log->debug("{}: {} nodes read and validated in {:.1f} ms, planned in {:.2f} ms", args.spec,
             loaded.graph->nodes.size(), load_ms, MillisSince(plan_start));
  const std::string text = args.json ? plan::FormatPlanJson(*plan) : plan::FormatPlanTable(*plan);
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
  cmd->callback([args, run] { *run = [args] { return RunPlan(*args); }; });
}

}  // namespace coupler::cli
