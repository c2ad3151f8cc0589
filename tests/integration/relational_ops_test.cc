// group_by, dedup, join and sort through a real shuffle, checked against pandas: `coupler run` on two workers imports
// a generated table (a string key one user holds 30% of, an integer key with gaps, values with
// gaps, ints past 2^53) into 4 shards, groups it by a string and an integer key into 3 partitions
// and by a two-valued flag into 8 (most of them empty), and by the integer key alone keeping the
// rows whose key is missing; write_csv writes each partition and pandas' groupby(...).agg(...)
// must give the same groups and values (tests/relational/pandas_check.py); dedup by a string
// pair and by the skewed key alone must keep the rows drop_duplicates keeps; join of every kind
// with a dimension table must give merge's rows; sort must give sort_values' order across the
// part files, with partitions from sampled quantiles near even. Group_by, sort, dedup and join
// again past a 1 MiB reduce budget: their partitions spilled as sorted runs and merged, the same
// answers (a join's part file byte for byte the in-memory one's).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <string>
#include <tuple>

#include "tests/integration/coupler_cluster.h"
#include "tests/integration/relational_tables.h"

namespace coupler::itest {
namespace {

const fs::path kCheck = kPandasCheck;

TEST(RelationalOpsTest, GroupByDedupJoinAndSortMatchPandasOnSkewedKeysGapsAndEmptyPartitions) {
  TempDir scratch;
  REQUIRE_PANDAS(scratch.path());
  const fs::path csv = scratch.path() / "events.csv";
  const CommandResult made =
      RunToEnd({kPython, kCheck.string(), "make", csv.string(), "20000", "7"}, scratch.path(), 120s);
  ASSERT_EQ(made.exit_code, 0) << made.out << made.err;
  const fs::path users = scratch.path() / "users.csv";
  const CommandResult made_users =
      RunToEnd({kPython, kCheck.string(), "make-dim", users.string(), "3"}, scratch.path(), 120s);
  ASSERT_EQ(made_users.exit_code, 0) << made_users.out << made_users.err;

  const std::string aggregates =
      "n=size();cnt=count(amount);total=sum(amount);avg=mean(amount);lo=min(amount);"
      "hi=max(amount);sd=std(amount);q=sum(qty);qmax=max(qty);qfirst=first(qty);tags=nunique(tag);"
      "first_tag=first(tag);last_tag=last(tag);last_amount=last(amount);v=var(qty)";
  WriteFile(scratch.path() / "groups.yaml", R"(name: groups
workdir: out
nodes:
  - id: import
    op: import_csv
    inputs: [events.csv]
    params: {shards: 4, dtypes: {amount: float64, user: string, tag: string}}
  - id: by_user_region
    op: group_by
    inputs: [import]
    params:
      keys: [user, region]
      partitions: 3
      aggregates:
        n: size()
        cnt: count(amount)
        total: sum(amount)
        avg: mean(amount)
        lo: min(amount)
        hi: max(amount)
        sd: std(amount)
        q: sum(qty)
        qmax: max(qty)
        qfirst: first(qty)
        tags: nunique(tag)
        first_tag: first(tag)
        last_tag: last(tag)
        last_amount: last(amount)
        v: var(qty)
  - {id: by_user_region_csv, op: write_csv, inputs: [by_user_region]}
  - id: folded
    op: group_by
    inputs: [import]
    params:
      keys: [user, region]
      partitions: 3
      aggregates:
        n: size()
        cnt: count(amount)
        total: sum(amount)
        avg: mean(amount)
        lo: min(amount)
        hi: max(amount)
        sd: std(amount)
        q: sum(qty)
        qmax: max(qty)
        qfirst: first(qty)
        first_tag: first(tag)
        last_tag: last(tag)
        last_amount: last(amount)
        v: var(qty)
  - {id: folded_csv, op: write_csv, inputs: [folded]}
  - id: by_flag
    op: group_by
    inputs: [import]
    params: {keys: [flag], partitions: 8, aggregates: {n: size(), total: sum(amount), users: nunique(user)}}
  - {id: by_flag_csv, op: write_csv, inputs: [by_flag]}
  - id: by_region
    op: group_by
    inputs: [import]
    params: {keys: [region], dropna: false, aggregates: {n: size(), q: sum(qty), avg: mean(amount)}}
  - {id: by_region_csv, op: write_csv, inputs: [by_region]}
  - {id: dd_first, op: dedup, inputs: [import], params: {keys: [user, tag], partitions: 3}}
  - {id: dd_first_csv, op: write_csv, inputs: [dd_first]}
  - {id: dd_last, op: dedup, inputs: [import], params: {keys: [user], keep: last}}
  - {id: dd_last_csv, op: write_csv, inputs: [dd_last]}
  - id: users
    op: import_csv
    inputs: [users.csv]
    params: {shards: 2, dtypes: {user: string, tier: string}}
  - {id: inner, op: join, inputs: [import, users], params: {on: [user], partitions: 3}}
  - {id: inner_csv, op: write_csv, inputs: [inner]}
  - {id: left, op: join, inputs: [import, users], params: {on: [user], how: left}}
  - {id: left_csv, op: write_csv, inputs: [left]}
  - {id: right, op: join, inputs: [import, users], params: {on: [user], how: right, partitions: 2}}
  - {id: right_csv, op: write_csv, inputs: [right]}
  - {id: outer, op: join, inputs: [import, users], params: {on: [user, region], how: outer, partitions: 5}}
  - {id: outer_csv, op: write_csv, inputs: [outer]}
  - {id: semi, op: join, inputs: [import, users], params: {on: [user], how: semi}}
  - {id: semi_csv, op: write_csv, inputs: [semi]}
  - {id: anti, op: join, inputs: [import, users], params: {on: [user], how: anti}}
  - {id: anti_csv, op: write_csv, inputs: [anti]}
  - {id: bleft, op: join, inputs: [import, users], params: {on: [user], how: left, broadcast: true}}
  - {id: bleft_csv, op: write_csv, inputs: [bleft]}
  - {id: bsemi, op: join, inputs: [import, users], params: {on: [user], how: semi, broadcast: true}}
  - {id: bsemi_csv, op: write_csv, inputs: [bsemi]}
  - {id: by_amount, op: sort, inputs: [import], params: {by: [amount], partitions: 3}}
  - {id: by_amount_csv, op: write_csv, inputs: [by_amount]}
  - id: by_user_qty
    op: sort
    inputs: [import]
    params: {by: [user, qty], descending: [qty], na_position: first, partitions: 5}
  - {id: by_user_qty_csv, op: write_csv, inputs: [by_user_qty]}
  - {id: by_user, op: sort, inputs: [import], params: {by: [user]}}
  - {id: by_user_csv, op: write_csv, inputs: [by_user]}
  - id: spilled_rows
    op: group_by
    inputs: [import]
    params:
      keys: [user, region]
      partitions: 1
      reduce_memory_mib: 1
      aggregates: {n: size(), total: sum(amount), sd: std(amount), q: sum(qty), qfirst: first(qty), tags: nunique(tag), first_tag: first(tag), last_tag: last(tag)}
  - {id: spilled_rows_csv, op: write_csv, inputs: [spilled_rows]}
  - id: spilled_states
    op: group_by
    inputs: [import]
    params:
      keys: [user, region]
      partitions: 2
      reduce_memory_mib: 1
      aggregates: {n: size(), cnt: count(amount), avg: mean(amount), lo: min(amount), sd: std(amount), q: sum(qty), qfirst: first(qty), last_tag: last(tag), v: var(qty)}
  - {id: spilled_states_csv, op: write_csv, inputs: [spilled_states]}
  - id: spilled_region
    op: group_by
    inputs: [import]
    params: {keys: [region], dropna: false, partitions: 1, reduce_memory_mib: 1, aggregates: {n: size(), q: sum(qty), tags: nunique(tag)}}
  - {id: spilled_region_csv, op: write_csv, inputs: [spilled_region]}
  - id: spilled_sort
    op: sort
    inputs: [import]
    params: {by: [user, qty], descending: [qty], na_position: first, partitions: 2, reduce_memory_mib: 1}
  - {id: spilled_sort_csv, op: write_csv, inputs: [spilled_sort]}
  - {id: spilled_dd_first, op: dedup, inputs: [import], params: {keys: [user, tag], partitions: 1, reduce_memory_mib: 1}}
  - {id: spilled_dd_first_csv, op: write_csv, inputs: [spilled_dd_first]}
  - {id: spilled_dd_last, op: dedup, inputs: [import], params: {keys: [region, qty], keep: last, partitions: 1, reduce_memory_mib: 1}}
  - {id: spilled_dd_last_csv, op: write_csv, inputs: [spilled_dd_last]}
  - {id: inner_one, op: join, inputs: [import, users], params: {on: [user], how: inner, partitions: 1, broadcast: false, reduce_memory_mib: 1024}}
  - {id: inner_one_csv, op: write_csv, inputs: [inner_one]}
  - {id: inner_spilled, op: join, inputs: [import, users], params: {on: [user], how: inner, partitions: 1, broadcast: false, reduce_memory_mib: 1}}
  - {id: inner_spilled_csv, op: write_csv, inputs: [inner_spilled]}
  - {id: right_one, op: join, inputs: [import, users], params: {on: [user], how: right, partitions: 1, broadcast: false, reduce_memory_mib: 1024}}
  - {id: right_one_csv, op: write_csv, inputs: [right_one]}
  - {id: right_spilled, op: join, inputs: [import, users], params: {on: [user], how: right, partitions: 1, broadcast: false, reduce_memory_mib: 1}}
  - {id: right_spilled_csv, op: write_csv, inputs: [right_spilled]}
  - {id: outer_one, op: join, inputs: [import, users], params: {on: [user, region], how: outer, partitions: 1, broadcast: false, reduce_memory_mib: 1024}}
  - {id: outer_one_csv, op: write_csv, inputs: [outer_one]}
  - {id: outer_spilled, op: join, inputs: [import, users], params: {on: [user, region], how: outer, partitions: 1, broadcast: false, reduce_memory_mib: 1}}
  - {id: outer_spilled_csv, op: write_csv, inputs: [outer_spilled]}
  - {id: anti_one, op: join, inputs: [import, users], params: {on: [user], how: anti, partitions: 1, broadcast: false, reduce_memory_mib: 1024}}
  - {id: anti_one_csv, op: write_csv, inputs: [anti_one]}
  - {id: anti_spilled, op: join, inputs: [import, users], params: {on: [user], how: anti, partitions: 1, broadcast: false, reduce_memory_mib: 1}}
  - {id: anti_spilled_csv, op: write_csv, inputs: [anti_spilled]}
)");
  const CommandResult r = RunToEnd({kCoupler, "run", "groups.yaml", "--workers", "2"},
                                   scratch.path(), 300s, scratch.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  // The folder of a node's part files, and how many there are.
  auto node_dir = [&](const std::string& node) {
    fs::path dir;
    for (const auto& e : fs::recursive_directory_iterator(scratch.path() / "out")) {
      if (e.is_directory() && e.path().filename() == node) dir = e.path();
    }
    return dir;
  };
  auto csv_files = [](const fs::path& dir) {
    int parts = 0;
    for (const auto& e : fs::directory_iterator(dir)) parts += e.path().extension() == ".csv";
    return parts;
  };
  struct Case {
    std::string node, keys, aggregates, dropna;
    int parts;
  };
  const Case cases[] = {
      {"by_user_region_csv", "user,region", aggregates, "true", 3},
      // Without nunique the maps fold their rows into partial states first (the combiner).
      {"folded_csv", "user,region",
       "n=size();cnt=count(amount);total=sum(amount);avg=mean(amount);lo=min(amount);"
       "hi=max(amount);sd=std(amount);q=sum(qty);qmax=max(qty);qfirst=first(qty);"
       "first_tag=first(tag);last_tag=last(tag);last_amount=last(amount);v=var(qty)",
       "true", 3},
      {"by_flag_csv", "flag", "n=size();total=sum(amount);users=nunique(user)", "true", 8},
      // "auto": as many partitions as the input has shards.
      {"by_region_csv", "region", "n=size();q=sum(qty);avg=mean(amount)", "false", 4},
      // Past a 1 MiB budget: sorted runs spilled and merged (rows, partial states, missing keys).
      {"spilled_rows_csv", "user,region",
       "n=size();total=sum(amount);sd=std(amount);q=sum(qty);qfirst=first(qty);tags=nunique(tag);"
       "first_tag=first(tag);last_tag=last(tag)",
       "true", 1},
      {"spilled_states_csv", "user,region",
       "n=size();cnt=count(amount);avg=mean(amount);lo=min(amount);sd=std(amount);q=sum(qty);"
       "qfirst=first(qty);last_tag=last(tag);v=var(qty)",
       "true", 2},
      {"spilled_region_csv", "region", "n=size();q=sum(qty);tags=nunique(tag)", "false", 1},
  };
  for (const Case& c : cases) {
    const fs::path dir = node_dir(c.node);
    ASSERT_FALSE(dir.empty()) << "no folder for " << c.node;
    EXPECT_EQ(csv_files(dir), c.parts) << c.node;
    const CommandResult check = RunToEnd(
        {kPython, kCheck.string(), "group_by", csv.string(), dir.string(), c.keys, c.aggregates,
         c.dropna},
        scratch.path(), 120s);
    EXPECT_EQ(check.exit_code, 0) << c.node << ":\n" << check.out << check.err;
  }
  // dedup: pandas' drop_duplicates, each part file in input order.
  for (const auto& [node, keys, keep, parts] :
       {std::tuple<std::string, std::string, std::string, int>{"dd_first_csv", "user,tag", "first", 3},
        {"dd_last_csv", "user", "last", 4},
        // Past a 1 MiB budget: by key in sorted runs, the kept rows back in input order.
        {"spilled_dd_first_csv", "user,tag", "first", 1},
        {"spilled_dd_last_csv", "region,qty", "last", 1}}) {
    const fs::path dir = node_dir(node);
    ASSERT_FALSE(dir.empty()) << "no folder for " << node;
    EXPECT_EQ(csv_files(dir), parts) << node;
    const CommandResult check =
        RunToEnd({kPython, kCheck.string(), "dedup", csv.string(), dir.string(), keys, keep},
                 scratch.path(), 120s);
    EXPECT_EQ(check.exit_code, 0) << node << ":\n" << check.out << check.err;
  }
  // join: pandas' merge (semi/anti: isin), a string key with gaps and users on one side only,
  // one key twice on the right (many-to-many), and a string + integer pair of keys.
  for (const auto& [node, keys, how, parts] :
       {std::tuple<std::string, std::string, std::string, int>{"inner_csv", "user", "inner", 3},
        {"left_csv", "user", "left", 4},
        {"right_csv", "user", "right", 2},
        {"outer_csv", "user,region", "outer", 5},
        {"semi_csv", "user", "semi", 4},
        {"anti_csv", "user", "anti", 4},
        // Broadcast: one task per shard of the left input, each reading all of the right.
        {"bleft_csv", "user", "left", 4},
        {"bsemi_csv", "user", "semi", 4}}) {
    const fs::path dir = node_dir(node);
    ASSERT_FALSE(dir.empty()) << "no folder for " << node;
    EXPECT_EQ(csv_files(dir), parts) << node;
    const CommandResult check = RunToEnd({kPython, kCheck.string(), "join", csv.string(),
                                          users.string(), dir.string(), keys, how},
                                         scratch.path(), 120s);
    EXPECT_EQ(check.exit_code, 0) << node << ":\n" << check.out << check.err;
  }
  // sort: sort_values(kind="stable") across the part files read in order, each partition within
  // twice an even split (the skewed user alone can hold no less than its 30%).
  for (const auto& [node, by, descending, na, parts] :
       {std::tuple<std::string, std::string, std::string, std::string, int>{
            "by_amount_csv", "amount", "-", "last", 3},
        {"by_user_qty_csv", "user,qty", "qty", "first", 5},
        {"by_user_csv", "user", "-", "last", 4},
        {"spilled_sort_csv", "user,qty", "qty", "first", 2}}) {
    const fs::path dir = node_dir(node);
    ASSERT_FALSE(dir.empty()) << "no folder for " << node;
    EXPECT_EQ(csv_files(dir), parts) << node;
    const CommandResult check = RunToEnd(
        {kPython, kCheck.string(), "sort", csv.string(), dir.string(), by, descending, na},
        scratch.path(), 120s);
    EXPECT_EQ(check.exit_code, 0) << node << ":\n" << check.out << check.err;
  }
  // A join past a 1 MiB budget (both sides in sorted runs, merged in step) writes the part file
  // the in-memory join writes, byte for byte: the same rows in the same order.
  for (const std::string how : {"inner", "right", "outer", "anti"}) {
    const fs::path one = node_dir(how + "_one_csv") / "part-00000.csv";
    const fs::path spilled = node_dir(how + "_spilled_csv") / "part-00000.csv";
    const std::string in_memory = ReadFile(one);
    EXPECT_GT(in_memory.size(), 1000u) << one;
    EXPECT_TRUE(in_memory == ReadFile(spilled)) << how << ": " << one << " and " << spilled << " differ";
  }
  // The spilled nodes did spill: each reduce's log says how it merged.
  for (const std::string node : {"spilled_rows", "spilled_states", "spilled_region", "spilled_sort",
                                  "spilled_dd_first", "spilled_dd_last", "inner_spilled",
                                  "right_spilled", "outer_spilled", "anti_spilled"}) {
    int merged = 0;
    for (const auto& e : fs::directory_iterator(node_dir(node) / "logs")) {
      merged += ReadFile(e.path()).find("budget: merged") != std::string::npos;
    }
    EXPECT_EQ(merged, node == "spilled_states" || node == "spilled_sort" ? 2 : 1) << node;
  }
}

}  // namespace
}  // namespace coupler::itest

namespace coupler::itest {
namespace {

// The worker running a task of the job now (its only slot busy), or "" if none is.
std::string BusyWorker(Cluster& cluster) {
  for (const auto& [id, w] : cluster.WorkerViews()) {
    if (w.state == "alive" && w.running > 0) return id;
  }
  return "";
}

// kill -9 of a worker in the middle of a shuffle's map side, then of another in the middle of its
// reduce side, made deterministic with named pipes: a map task whose input shard is a FIFO, and
// later a reduce task whose shuffle file is one, block in open() until their worker is killed;
// the real file is then put back. The job succeeds, every partition's part file is there once,
// the output is still pandas' answer, and exactly the two killed attempts ran again.
TEST(ShuffleFailureTest, WorkersKilledOnTheMapSideAndOnTheReduceSide) {
  Cluster cluster(Cluster::Options::Timeouts(300, 1500));
  REQUIRE_PANDAS(cluster.dir());
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  // The table as a folder of 6 shards, the input of the shuffle.
  constexpr int kShards = 6, kPartitions = 4;
  const fs::path csv = cluster.dir() / "events.csv";
  const fs::path imported = ImportGeneratedTable(cluster, csv, 30000, 11, kShards);
  ASSERT_FALSE(imported.empty());
  const fs::path data = cluster.dir() / "data";
  CopyShards(imported, data, kShards);

  WriteFile(cluster.dir() / "kill.yaml",
            "name: shuffle-kill\nworkdir: work\nnodes:\n"
            "  - id: grouped\n    op: group_by\n    inputs: [data]\n"
            "    params: {keys: [user, region], partitions: " + std::to_string(kPartitions) +
            ", aggregates: {n: size(), total: sum(amount), q: sum(qty), tags: nunique(tag), "
            "ft: first(tag)}}\n"
            "  - {id: grouped_csv, op: write_csv, inputs: [grouped]}\n");
  std::string why;
  const std::string job = cluster.Submit(cluster.dir() / "kill.yaml", &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  // Admitted with its shards as they were (admission refuses anything but files); with no
  // worker to run it yet, shard 3 becomes a FIFO: its map task blocks until the file is back.
  const fs::path fifo_shard = data / PartName(3);
  fs::rename(fifo_shard, cluster.dir() / "shard-3.npz");
  ASSERT_EQ(::mkfifo(fifo_shard.c_str(), 0600), 0);
  cluster.StartWorker("w1", 1, {"--prefetch", "0"});
  cluster.StartWorker("w2", 1, {"--prefetch", "0"});

  // The map side: every other map task done, one worker held by shard 3.
  std::string victim;
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto st = cluster.Job(job);
        if (!st || st->node("grouped").done != kShards - 1) return false;
        victim = BusyWorker(cluster);
        return !victim.empty();
      },
      60s, 20ms))
      << "the map task of the FIFO shard never held a worker\n" << cluster.Logs();
  cluster.worker(victim).Kill();
  fs::remove(fifo_shard);
  fs::rename(cluster.dir() / "shard-3.npz", fifo_shard);

  // The reduce side: partition 2's file from map task 0 becomes a FIFO before the last map task
  // (re-run by the survivor) lets the reduces start.
  const fs::path shuffle = cluster.dir() / "work" / "latest" / "grouped" / "shuffle";
  const fs::path fifo_file = shuffle / "map-00000.p00002.npz";
  ASSERT_TRUE(fs::exists(fifo_file)) << "no shuffle file " << fifo_file;
  fs::rename(fifo_file, cluster.dir() / "map-00000.p00002.npz");
  ASSERT_EQ(::mkfifo(fifo_file.c_str(), 0600), 0);
  // A third worker, so the other partitions go on while one worker is held by partition 2.
  cluster.StartWorker("w3", 1, {"--prefetch", "0"});
  std::string reducer;
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto st = cluster.Job(job);
        if (!st || st->node("grouped").done != kShards + kPartitions - 1) return false;
        reducer = BusyWorker(cluster);
        return !reducer.empty();
      },
      60s, 20ms))
      << "the reduce of partition 2 never held a worker\n" << cluster.Logs();
  cluster.worker(reducer).Kill();
  fs::remove(fifo_file);
  fs::rename(cluster.dir() / "map-00000.p00002.npz", fifo_file);

  const auto final_status = cluster.WaitJobFinished(job, 120s);
  ASSERT_TRUE(final_status) << cluster.Logs();
  ASSERT_EQ(final_status->state, "succeeded") << final_status->error << "\n" << cluster.Logs();
  const NodeView grouped = final_status->node("grouped");
  EXPECT_EQ(grouped.done, static_cast<uint64_t>(kShards + kPartitions));
  // Exactly the two attempts that were running on the killed workers ran again.
  EXPECT_EQ(grouped.attempts, grouped.done + 2) << "a finished task ran again, or one was not re-run";
  EXPECT_EQ(cluster.Workers()[victim].first, "lost");
  EXPECT_EQ(cluster.Workers()[reducer].first, "lost");

  std::vector<std::string> parts;
  for (int p = 0; p < kPartitions; ++p) parts.push_back(PartName(p));
  std::vector<std::string> listed;
  for (const std::string& name : ListDir(shuffle.parent_path())) {
    if (name != "shuffle") listed.push_back(name);
  }
  EXPECT_EQ(listed, parts) << "a partition missing, twice, or a stray file";
  const CommandResult check = RunToEnd(
      {kPython, kCheck.string(), "group_by", csv.string(),
       (cluster.dir() / "work" / "latest" / "grouped_csv").string(), "user,region",
       "n=size();total=sum(amount);q=sum(qty);tags=nunique(tag);ft=first(tag)", "true"},
      cluster.dir(), 120s);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

// Lineage: a shuffle file lost after its map task committed (deleted here, as a lost disk or a
// cleaned scratch folder would) makes the reduce that needs it fail saying so, the coordinator
// runs that one map task again (its commit revoked, the rebuild not charged) and the reduce's
// retry, held until then, succeeds. Only those two tasks, and the map task of the worker killed
// to hold the map side open, run twice; the output is pandas'.
TEST(ShuffleLineageTest, AReduceMissingAMapsFileRunsThatMapTaskAgainOnly) {
  Cluster cluster(Cluster::Options::Timeouts(300, 1500));
  REQUIRE_PANDAS(cluster.dir());
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  constexpr int kShards = 5, kPartitions = 3;
  const fs::path csv = cluster.dir() / "events.csv";
  const fs::path imported = ImportGeneratedTable(cluster, csv, 30000, 13, kShards);
  ASSERT_FALSE(imported.empty());
  const fs::path data = cluster.dir() / "data";
  CopyShards(imported, data, kShards);

  WriteFile(cluster.dir() / "lineage.yaml",
            "name: lineage\nworkdir: work\nnodes:\n"
            "  - id: grouped\n    op: group_by\n    inputs: [data]\n"
            "    params: {keys: [user, region], partitions: " + std::to_string(kPartitions) +
            ", aggregates: {n: size(), total: sum(amount), tags: nunique(tag), ft: first(tag)}}\n"
            "  - {id: grouped_csv, op: write_csv, inputs: [grouped]}\n");
  std::string why;
  const std::string job = cluster.Submit(cluster.dir() / "lineage.yaml", &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  // The last shard is a FIFO: its map task holds a worker until that worker is killed.
  const fs::path fifo_shard = data / PartName(kShards - 1);
  fs::rename(fifo_shard, cluster.dir() / "held.npz");
  ASSERT_EQ(::mkfifo(fifo_shard.c_str(), 0600), 0);
  cluster.StartWorker("w1", 1, {"--prefetch", "0"});
  cluster.StartWorker("w2", 1, {"--prefetch", "0"});
  std::string victim;
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto st = cluster.Job(job);
        if (!st || st->node("grouped").done != kShards - 1) return false;
        victim = BusyWorker(cluster);
        return !victim.empty();
      },
      60s, 20ms))
      << "the map task of the FIFO shard never held a worker\n" << cluster.Logs();
  // Map task 1's file for partition 2 is lost after map task 1 committed.
  const fs::path shuffle = cluster.dir() / "work" / "latest" / "grouped" / "shuffle";
  const fs::path lost = shuffle / "map-00001.p00002.npz";
  ASSERT_TRUE(fs::remove(lost)) << "no shuffle file " << lost;
  cluster.worker(victim).Kill();
  fs::remove(fifo_shard);
  fs::rename(cluster.dir() / "held.npz", fifo_shard);

  const auto final_status = cluster.WaitJobFinished(job, 120s);
  ASSERT_TRUE(final_status) << cluster.Logs();
  ASSERT_EQ(final_status->state, "succeeded") << final_status->error << "\n" << cluster.Logs();
  const NodeView grouped = final_status->node("grouped");
  EXPECT_EQ(grouped.done, static_cast<uint64_t>(kShards + kPartitions));
  // The killed worker's map task, map task 1 rebuilt, and partition 2's reduce: three more.
  EXPECT_EQ(grouped.attempts, grouped.done + 3) << cluster.Logs();
  EXPECT_TRUE(fs::exists(lost)) << "map task 1 did not write its file again";
  const std::string events = ReadFile(cluster.state() / "events.jsonl");
  size_t rebuilt = 0;
  for (size_t at = events.find("\"cause\":\"output_lost\""); at != std::string::npos;
       at = events.find("\"cause\":\"output_lost\"", at + 1)) {
    ++rebuilt;
  }
  EXPECT_EQ(rebuilt, 1u) << events;
  EXPECT_NE(events.find("\"task\":1,"), std::string::npos) << events;

  std::vector<std::string> parts;
  for (int p = 0; p < kPartitions; ++p) parts.push_back(PartName(p));
  std::vector<std::string> listed;
  for (const std::string& name : ListDir(shuffle.parent_path())) {
    if (name != "shuffle") listed.push_back(name);
  }
  EXPECT_EQ(listed, parts) << "a partition missing, twice, or a stray file";
  const CommandResult check = RunToEnd(
      {kPython, kCheck.string(), "group_by", csv.string(),
       (cluster.dir() / "work" / "latest" / "grouped_csv").string(), "user,region",
       "n=size();total=sum(amount);tags=nunique(tag);ft=first(tag)", "true"},
      cluster.dir(), 120s);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

}  // namespace
}  // namespace coupler::itest

namespace coupler::itest {
namespace {

// The shipped example as a user runs it: join, filter, group_by and sort on the CSV example's
// data, then its own check against pandas doing the same steps.
TEST(RelationalOpsTest, TheRelationalExampleMatchesPandas) {
  TempDir scratch;
  REQUIRE_PANDAS(scratch.path());
  const fs::path data = kSourceDir / "data" / "measurements.csv";
  ASSERT_TRUE(fs::exists(data)) << data << " is missing: scripts/test.sh makes it";
  const CommandResult r =
      RunToEnd({kCoupler, "run", "examples/relational-pipeline.yaml", "--workers", "2"},
               scratch.path(), 300s, kSourceDir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const CommandResult check = RunToEnd(
      {kPython, (kSourceDir / "examples" / "csv" / "check_relational.py").string(), data.string(),
       (kSourceDir / "examples" / "csv" / "cities.csv").string(),
       (kSourceDir / "coupler-work" / "relational-pipeline" / "latest" / "ranked_csv").string()},
      scratch.path(), 120s);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

}  // namespace
}  // namespace coupler::itest
