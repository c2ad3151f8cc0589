// Planning cost for large graphs: parse + validate, plan, format. Also writes the synthetic
// spec for timing `coupler plan` end to end:  bench_plan --write-spec 10000 /tmp/job.json
// (a .json path writes JSON, anything else YAML)
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <yaml-cpp/yaml.h>

#include "bench/spec_gen.h"
#include "runtime/job/job_loader.h"
#include "runtime/job/spec_readers.h"
#include "runtime/plan/plan_format.h"
#include "runtime/plan/planner.h"

namespace {

using namespace coupler;

job::LoadedJob LoadSynthetic(const std::string& text) {
  job::ValidationEnv env;
  env.probe = [](const std::string&) { return job::PathInfo{}; };  // no datasets involved
  return job::LoadJobText(text, "synthetic.yaml", "/tmp", env);
}

// range(0): nodes; range(1): 1 = JSON, 0 = YAML.
void BM_ParseAndValidate(benchmark::State& state) {
  const std::string text =
      bench::MakeSyntheticSpec(static_cast<int>(state.range(0)), 100, state.range(1) != 0);
  state.SetLabel(state.range(1) ? "json" : "yaml");
  for (auto _ : state) {
    job::LoadedJob j = LoadSynthetic(text);
    if (!j.ok()) state.SkipWithError(j.diags.ToString().c_str());
    benchmark::DoNotOptimize(j);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}

// Baseline: yaml-cpp's node API (YAML::Load), the obvious way to read a spec, on the same text.
void BM_YamlCppLoadBaseline(benchmark::State& state) {
  const std::string text = bench::MakeSyntheticSpec(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(YAML::Load(text));
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}

// Ours, reading only (no validation): the event reader for YAML, rapidjson for JSON.
void BM_ReadSpecText(benchmark::State& state) {
  const std::string text =
      bench::MakeSyntheticSpec(static_cast<int>(state.range(0)), 100, state.range(1) != 0);
  state.SetLabel(state.range(1) ? "json" : "yaml");
  for (auto _ : state) {
    job::Diagnostics diags("synthetic");
    benchmark::DoNotOptimize(job::ReadSpecText(text, diags));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}

void BM_Plan(benchmark::State& state) {
  job::LoadedJob j = LoadSynthetic(bench::MakeSyntheticSpec(static_cast<int>(state.range(0))));
  if (!j.ok()) state.SkipWithError("invalid synthetic spec");
  for (auto _ : state) {
    auto plan = plan::PlanJob(*j.graph);
    benchmark::DoNotOptimize(plan);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_FormatJson(benchmark::State& state) {
  job::LoadedJob j = LoadSynthetic(bench::MakeSyntheticSpec(static_cast<int>(state.range(0))));
  auto plan = plan::PlanJob(*j.graph);
  for (auto _ : state) benchmark::DoNotOptimize(plan::FormatPlanJson(*plan));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

BENCHMARK(BM_ParseAndValidate)
    ->Args({1000, 0})->Args({10000, 0})->Args({1000, 1})->Args({10000, 1})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_YamlCppLoadBaseline)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadSpecText)->Args({10000, 0})->Args({10000, 1})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Plan)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FormatJson)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--write-spec") == 0) {
    const std::string path = argv[3];
    const bool json = path.size() > 5 && path.substr(path.size() - 5) == ".json";
    std::ofstream(path) << coupler::bench::MakeSyntheticSpec(std::atoi(argv[2]), 100, json);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
