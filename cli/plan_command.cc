// `coupler plan JOB.yaml [--json]`: validate a job spec and show how it would run.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "runtime/job/job_loader.h"
#include "runtime/plan/plan_format.h"
#include "runtime/plan/planner.h"

namespace coupler::cli {
namespace {

struct PlanArgs {
  std::string spec;
  bool json = false;
};

int RunPlan(const PlanArgs& args) {
  job::LoadedJob loaded = job::LoadJobFile(args.spec);
  if (!loaded.ok()) {
    std::fputs(loaded.diags.ToString().c_str(), stderr);
    return kExitBadInput;
  }
  Result<plan::Plan> plan = plan::PlanJob(*loaded.graph);
  if (!plan.ok()) {
    std::fprintf(stderr, "%s: error: %s\n", args.spec.c_str(), plan.status().message().c_str());
    return kExitBadInput;
  }
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
