// Placement by labels across real processes: a node requiring zone=b waits, with its reason in
// `coupler status --json`, while only a zone=a worker is up, and runs once a zone=b one joins;
// `coupler plan --workers` previews the same placement before a job is submitted.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

TEST(PlacementTest, NodeWaitsForAWorkerWithItsLabelsThenRuns) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("wa", 2, {"--labels", "zone=a,interconnect=nvlink"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();

  const fs::path spec = cluster.dir() / "pinned.yaml";
  WriteFile(spec, "name: it-pinned\n"
                  "workdir: work-pinned\n"
                  "nodes:\n"
                  "  - id: free\n"
                  "    op: noop\n"
                  "    params: {tasks: 2}\n"
                  "  - id: pinned\n"
                  "    op: noop\n"
                  "    params: {tasks: 3}\n"
                  "    requires: {zone: b}\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  // The unconstrained node runs on the zone=a worker; the pinned one waits and says why.
  std::optional<JobView> last;
  const bool waiting = WaitUntil(
      [&] {
        last = cluster.Job(job);
        return last && last->node("free").state == "done" &&
               last->node("pinned").reason ==
                   "waiting for a worker with zone=b (1 alive worker, none match)";
      },
      60s, 100ms);
  ASSERT_TRUE(waiting) << (last ? last->node("pinned").reason : "no status") << cluster.Logs();
  EXPECT_EQ(last->state, "running");
  EXPECT_EQ(last->node("pinned").done, 0u);
  EXPECT_EQ(last->node("pinned").attempts, 0u);
  // The waiting tasks are what a scaling script sees: 3 CPU tasks, and 2 workers of the
  // current 2 slots each would run them.
  std::optional<CoordinatorView> pool = cluster.Coordinator();
  ASSERT_TRUE(pool) << cluster.Logs();
  EXPECT_EQ(pool->queued_cpu_tasks, 3u);
  EXPECT_EQ(pool->queued_gpu_tasks, 0u);
  EXPECT_EQ(pool->queued_gang_ranks, 0u);
  EXPECT_EQ(pool->recommended_workers, 2u);

  cluster.StartWorker("wb", 1, {"--labels", "zone=b"});
  std::optional<JobView> end = cluster.WaitJobFinished(job);
  ASSERT_TRUE(end) << cluster.Logs();
  EXPECT_EQ(end->state, "succeeded") << end->error << cluster.Logs();
  EXPECT_EQ(end->node("pinned").done, 3u);
  EXPECT_EQ(end->node("pinned").reason, "");
}

// `coupler plan --workers` against a live pool: a loose node lists the workers it may use, a
// 2-rank gang is packed onto one worker, a node no worker matches says why, and the JSON
// carries the same placement.
TEST(PlacementTest, PlanWithWorkersShowsWhereEachNodeWouldRun) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("wa", 2, {"--labels", "zone=a"});
  cluster.StartWorker("wb", 1, {"--labels", "zone=b"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();

  const fs::path spec = cluster.dir() / "preview.yaml";
  WriteFile(spec, "name: it-preview\n"
                  "nodes:\n"
                  "  - id: prep\n"
                  "    op: noop\n"
                  "    params: {tasks: 4}\n"
                  "  - id: solve\n"
                  "    op: mpi_exec\n"
                  "    inputs: [prep]\n"
                  "    ranks: 2\n"
                  "    params: {command: 'mpirun -np {ranks} --hostfile {hostfile} true'}\n"
                  "  - id: pinned\n"
                  "    op: noop\n"
                  "    params: {tasks: 1}\n"
                  "    requires: {zone: c}\n");
  CommandResult r = cluster.Cli({"plan", spec.string(), "--workers"});
  ASSERT_EQ(r.exit_code, 0) << r.err << cluster.Logs();
  EXPECT_NE(r.out.find("job it-preview: 3 nodes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("placement on 2 alive workers"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  prep\s+wa, wb \(3 slots\)\n)"))) << r.out;
  // mpi_exec is a GPU op: on this CPU-only pool its ranks run on CPUs, and the preview says so.
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(\n  solve\s+wa x2; no matching worker has a GPU: the ranks run on CPUs\n)")))
      << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(\n  pinned\s+cannot place: needs a worker with zone=c \(2 alive workers, none match\)\n)")))
      << r.out;

  CommandResult j = cluster.Cli({"plan", spec.string(), "--workers", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(j.out.c_str()).HasParseError()) << j.out;
  ASSERT_TRUE(d.IsObject() && d.HasMember("placement") && d["placement"].IsArray()) << j.out;
  EXPECT_EQ(Str(d, "job"), "it-preview");
  EXPECT_EQ(U64(d["pool"], "alive"), 2u);
  std::map<std::string, std::string> text;
  for (const auto& n : d["placement"].GetArray()) text[Str(n, "id")] = Str(n, "text");
  EXPECT_EQ(text["solve"], "wa x2; no matching worker has a GPU: the ranks run on CPUs");
  EXPECT_EQ(text["pinned"], "cannot place: needs a worker with zone=c (2 alive workers, none match)");

  // A pool that cannot hold the gang says so; the preview changes with the pool.
  cluster.worker("wa").Kill();
  ASSERT_TRUE(WaitUntil(
      [&] {
        const auto workers = cluster.Workers();
        auto it = workers.find("wa");
        return it != workers.end() && it->second.first == "lost";
      },
      60s, 100ms))
      << cluster.Logs();
  r = cluster.Cli({"plan", spec.string(), "--workers"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cannot place: needs 2 ranks; matching workers have 1 slot in all (wb: 1)"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace coupler::itest
