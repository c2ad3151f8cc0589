// A shuffle's reduce over three times its memory budget completes within it: a group_by whose
// rows travel (nunique does not fold), a sort, a dedup and a join of the table with itself, each
// into one partition of a 1.2M-row table with a skewed string key (38 to 108 MB of shuffle
// files), each run on a fresh
// worker once with the default budget (the whole partition in memory) and once with 12 MiB.
// The worker's peak resident memory (VmHWM) grows by more than three budgets in memory and by
// no more than the budget when spilling, map tasks included; the attempt logs say the reduces
// merged sorted runs, and the spilled outputs are pandas' (groupby(...).agg, sort_values
// stable, drop_duplicates keep="last"; the join's order and values are checked byte for byte
// against the in-memory join in RelationalOpsTest).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/integration/coupler_cluster.h"
#include "tests/integration/relational_tables.h"

namespace coupler::itest {
namespace {

const fs::path kCheck = kPandasCheck;

// Peak resident memory of a process (VmHWM in /proc/PID/status), in bytes.
uint64_t PeakRss(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(ReduceSpillTest, EveryShuffleReduceOverThreeTimesItsBudgetStaysWithinIt) {
  Cluster cluster(Cluster::Options::Timeouts(300, 1500));
  REQUIRE_PANDAS(cluster.dir());
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  // The table as 24 shards, imported by a worker that then leaves: each measured worker runs
  // only the shuffle (map tasks of 50k rows, then the reduce).
  const fs::path csv = cluster.dir() / "events.csv";
  ASSERT_FALSE(ImportGeneratedTable(cluster, csv, 1200000, 5, 24).empty());

  const std::string aggregates = "n=size();total=sum(amount);q=sum(qty);tags=nunique(tag);ft=first(tag)";
  constexpr int64_t kBudgetMib = 12;
  constexpr uint64_t kBudget = uint64_t{kBudgetMib} << 20;
  struct Op {
    std::string node, params, note;
  };
  const Op ops[] = {
      {"grouped",
       "op: group_by\n    params: {keys: [user, region], aggregates: {n: size(), total: sum(amount), "
       "q: sum(qty), tags: nunique(tag), ft: first(tag)}",
       "group_by: partition 0 reads"},
      {"sorted", "op: sort\n    params: {by: [user, qty], descending: [qty], na_position: first",
       "sorted runs of its map tasks"},
      {"deduped", "op: dedup\n    params: {keys: [user, region, tag], keep: last",
       "dedup: partition 0 reads"},
      // The table with itself on its row id: both sides whole, as many rows out, twice as wide.
      {"joined", "op: join\n    params: {on: [id], how: left, broadcast: false",
       "join: partition 0 reads"},
  };
  // Each reduce on a worker of its own (what one task leaves in the heap would blur the next
  // one's peak), with the default budget and with 12 MiB.
  for (const Op& op : ops) {
    for (const bool spilled : {false, true}) {
      const std::string tag = op.node + (spilled ? "-spilled" : "-in-memory");
      const std::string budget = spilled ? std::to_string(kBudgetMib) : "1024";
      WriteFile(cluster.dir() / (tag + ".yaml"),
                "name: " + tag + "\nworkdir: " + tag + "\nnodes:\n  - id: " + op.node +
                    "\n    inputs: [imported/latest/import" +
                    (op.node == "joined" ? ", imported/latest/import" : "") + "]\n    " + op.params +
                    ", partitions: 1, reduce_memory_mib: " + budget + "}\n");
      Process& worker = cluster.StartWorker("w-" + tag, 1, {"--prefetch", "0"});
      ASSERT_TRUE(WaitUntil([&] { return cluster.Workers()["w-" + tag].first == "alive"; }, 60s, 50ms))
          << cluster.Logs();
      const uint64_t before = PeakRss(worker.pid());
      ASSERT_GT(before, 0u);
      std::string why;
      const std::string job = cluster.Submit(cluster.dir() / (tag + ".yaml"), &why);
      ASSERT_FALSE(job.empty()) << why << cluster.Logs();
      const auto done = cluster.WaitJobFinished(job, 300s);
      ASSERT_TRUE(done) << cluster.Logs();
      ASSERT_EQ(done->state, "succeeded") << done->error << "\n" << cluster.Logs();
      const uint64_t grew = PeakRss(worker.pid()) - before;
      worker.Kill();
      std::printf("%s (reduce_memory_mib %s): the worker's peak RSS grew by %.1f MiB\n",
                  op.node.c_str(), budget.c_str(), static_cast<double>(grew) / (1 << 20));
      // In memory, the reduce holds more than three budgets (so the measure would catch one
      // that did not spill); spilling, the whole job stays within the budget.
      if (spilled) {
        EXPECT_LE(grew, kBudget) << op.node;
      } else {
        EXPECT_GT(grew, 3 * kBudget) << op.node;
      }
      // The log says which way the reduce went.
      std::string notes;
      for (const auto& e : fs::recursive_directory_iterator(cluster.dir() / tag)) {
        if (e.path().extension() == ".stdout") notes += Slurp(e.path());
      }
      EXPECT_EQ(notes.find(op.note) != std::string::npos, spilled) << notes;
    }
  }

  // The spilled outputs are pandas' answers (write_csv run by another worker, not measured).
  cluster.StartWorker("exporter", 1);
  WriteFile(cluster.dir() / "export.yaml",
            "name: export\nworkdir: exported\nnodes:\n"
            "  - {id: grouped_csv, op: write_csv, inputs: [grouped-spilled/latest/grouped]}\n"
            "  - {id: sorted_csv, op: write_csv, inputs: [sorted-spilled/latest/sorted]}\n"
            "  - {id: deduped_csv, op: write_csv, inputs: [deduped-spilled/latest/deduped]}\n");
  const std::string export_job = cluster.Submit(cluster.dir() / "export.yaml");
  ASSERT_FALSE(export_job.empty()) << cluster.Logs();
  const auto exported = cluster.WaitJobFinished(export_job, 300s);
  ASSERT_TRUE(exported && exported->state == "succeeded") << cluster.Logs();
  const CommandResult groups = RunToEnd(
      {kPython, kCheck.string(), "group_by", csv.string(),
       (cluster.dir() / "exported" / "latest" / "grouped_csv").string(), "user,region", aggregates, "true"},
      cluster.dir(), 300s);
  EXPECT_EQ(groups.exit_code, 0) << groups.out << groups.err;
  const CommandResult order = RunToEnd(
      {kPython, kCheck.string(), "sort", csv.string(),
       (cluster.dir() / "exported" / "latest" / "sorted_csv").string(), "user,qty", "qty", "first"},
      cluster.dir(), 300s);
  EXPECT_EQ(order.exit_code, 0) << order.out << order.err;
  const CommandResult kept = RunToEnd(
      {kPython, kCheck.string(), "dedup", csv.string(),
       (cluster.dir() / "exported" / "latest" / "deduped_csv").string(), "user,region,tag", "last"},
      cluster.dir(), 300s);
  EXPECT_EQ(kept.exit_code, 0) << kept.out << kept.err;
}

}  // namespace
}  // namespace coupler::itest
