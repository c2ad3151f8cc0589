// RunTask end to end in a temp dir: every op on real files (CSV -> shards -> stats ->
// standardize -> filter_map/clip/cast), the error paths users hit, and exec's process handling
// (output publishing, stderr tail, timeout, cancel, process-group cleanup).
#include "worker/task_runner.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/io/shard_file.h"
#include "worker/ops/shard_io.h"
#include "runtime/io/output_layout.h"
#include "runtime/io/temp_dir.h"
#include "runtime/job/task_logs.h"
#include "tests/unit/schema_defaults.h"

namespace coupler::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// A map task, with the schema's defaults for the params not given; `shards`: the node's task
// count.
wire::TaskSpec Spec(std::string op, std::vector<std::string> inputs, std::string output,
                    wire::TaskParams params = {}, int32_t shard = 0, uint32_t shards = 1) {
  wire::TaskSpec spec;
  spec.job_id = "job-1";
  spec.task_id = 42;
  spec.attempt = 1;
  spec.params = WithSchemaDefaults(op, std::move(params));
  spec.op = std::move(op);
  spec.input_paths = std::move(inputs);
  spec.output_path = std::move(output);
  spec.shard_index = shard;
  spec.shards = shards;
  return spec;
}

wire::TaskSpec Reduce(wire::TaskSpec spec) {
  spec.kind = wire::TaskKind::kReduce;
  spec.shard_index = -1;
  return spec;
}

// Polls `done` until it holds or a generous deadline passes (the machine may be loaded).
template <typename F>
bool WaitFor(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

class TaskRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = io::TempDir::Create("task-runner-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_.emplace(std::move(dir).value());
  }
  std::string Path(const std::string& name) const { return dir_->File(name); }

  wire::TaskOutcome Run(const wire::TaskSpec& spec, const std::atomic<bool>* cancel = nullptr) {
    wire::TaskOutcome outcome = RunTask(spec, cancel);
    EXPECT_EQ(outcome.job_id, "job-1");
    EXPECT_EQ(outcome.task_id, 42u);
    EXPECT_EQ(outcome.attempt, 1u);
    EXPECT_EQ(outcome.device, "cpu");
    EXPECT_EQ(outcome.error.find('\n'), std::string::npos) << "error must be one line";
    return outcome;
  }

  // Runs and expects success, returning the table written to `spec.output_path`.
  io::Table RunOk(const wire::TaskSpec& spec) {
    const wire::TaskOutcome outcome = Run(spec);
    EXPECT_TRUE(outcome.ok) << outcome.error;
    EXPECT_THAT(outcome.output_paths, ElementsAre(spec.output_path));
    EXPECT_GT(outcome.bytes_processed, 0u);
    auto table = io::ReadShardFile(spec.output_path);
    EXPECT_TRUE(table.ok()) << table.status().ToString();
    return table.ok() ? std::move(table).value() : io::Table();
  }

  std::optional<io::TempDir> dir_;
};

TEST_F(TaskRunnerTest, PipelineFromCsvThroughEveryShardOp) {
  // 1000 rows; p0 and p1 spread around different means, label in 0..9.
  constexpr int kRows = 1000;
  constexpr int kShards = 3;
  std::ofstream csv(Path("data.csv"));
  csv << "p0,p1,p2,label\n";
  std::vector<double> p0;
  for (int r = 0; r < kRows; ++r) {
    p0.push_back(100.0 + (r % 37) * 0.5);
    csv << p0.back() << "," << (r % 11) - 5 << "," << (r % 7) * 0.75 - 2 << "," << r % 10 << "\n";
  }
  csv.close();

  std::vector<std::string> shards;
  uint64_t rows = 0;
  for (int i = 0; i < kShards; ++i) {
    shards.push_back(Path("raw/part-" + std::to_string(i) + ".npy"));
    const auto spec = Spec("import_csv", {Path("data.csv")}, shards.back(),
                           {{"header", true}, {"label_column", std::string("label")}}, i,
                           kShards);
    const wire::TaskOutcome outcome = Run(spec);
    ASSERT_TRUE(outcome.ok) << outcome.error;
    EXPECT_EQ(outcome.rows_in, outcome.rows_out);
    rows += outcome.rows_out;
  }
  EXPECT_EQ(rows, static_cast<uint64_t>(kRows));

  std::vector<std::string> partials;
  for (int i = 0; i < kShards; ++i) {
    partials.push_back(Path("stats/partial-" + std::to_string(i) + ".npy"));
    const io::Table partial = RunOk(Spec("column_stats", {shards[static_cast<size_t>(i)]},
                                         partials.back(), {}, i, kShards));
    EXPECT_EQ(partial.rows(), 5u);
    EXPECT_EQ(partial.Describe(), "p0 (float64), p1 (float64), p2 (float64)");
  }
  const io::Table stats =
      RunOk(Reduce(Spec("column_stats", partials, Path("stats/stats.npy"), {}, -1, kShards)));
  const auto s0 = stats.column(0).values<double>();
  double mean = 0;
  for (double v : p0) mean += v;
  mean /= kRows;
  double m2 = 0;
  for (double v : p0) m2 += (v - mean) * (v - mean);
  EXPECT_EQ(s0[0], kRows);
  EXPECT_NEAR(s0[1], mean, 1e-9 * mean);
  EXPECT_NEAR(s0[2], m2, 1e-9 * m2);
  EXPECT_EQ(s0[3], 100.0);
  EXPECT_EQ(s0[4], 118.0);

  double sum = 0;
  double squares = 0;
  for (int i = 0; i < kShards; ++i) {
    const std::string out = Path("std/part-" + std::to_string(i) + ".npy");
    const io::Table standardized =
        RunOk(Spec("standardize", {shards[static_cast<size_t>(i)], Path("stats/stats.npy")}, out));
    EXPECT_EQ(standardized.Find("label")->dtype(), ElementType::kInt32);  // passes through
    for (float v : standardized.Find("p0")->values<float>()) {
      sum += v;
      squares += static_cast<double>(v) * v;
    }

    const io::Table filtered = RunOk(Spec("filter_map", {out}, Path("fm/part.npy"),
                                          {{"a", std::string("p0")}, {"b", std::string("p1")},
                                           {"threshold", 0.25}, {"out", std::string("v")}}));
    ASSERT_NE(filtered.Find("v"), nullptr);
    EXPECT_EQ(filtered.Find("label")->size(), filtered.rows());
    const auto a = filtered.Find("p0")->values<float>();
    const auto b = filtered.Find("p1")->values<float>();
    const auto v = filtered.Find("v")->values<float>();
    for (size_t r = 0; r < filtered.rows(); ++r) {
      ASSERT_GT(static_cast<double>(a[r] * b[r]), 0.25);
      ASSERT_EQ(v[r], std::sqrt(a[r] * b[r]));
    }

    const io::Table clipped = RunOk(Spec("clip", {out}, Path("clip/part.npy"),
                                         {{"min", -1.0}, {"max", 0.5},
                                          {"columns", std::vector<std::string>{"p0", "p2"}}}));
    for (float x : clipped.Find("p2")->values<float>()) ASSERT_TRUE(x >= -1 && x <= 0.5f);
    EXPECT_EQ(clipped.Find("p1")->values<float>()[0], standardized.Find("p1")->values<float>()[0]);

    const io::Table cast = RunOk(Spec("cast", {out}, Path("cast/part.npy"), {{"dtype", std::string("bfloat16")}}));
    EXPECT_EQ(cast.Describe(), "p0 (bfloat16), p1 (bfloat16), p2 (bfloat16), label (int32)");
  }
  EXPECT_NEAR(sum / kRows, 0.0, 1e-5);
  EXPECT_NEAR(std::sqrt(squares / kRows), 1.0, 1e-5);
}

TEST_F(TaskRunnerTest, ErrorsNameTheOpTheFileAndTheProblem) {
  std::ofstream(Path("bad.csv")) << "a,b\n1,2\n3\n";
  auto csv = Run(Spec("import_csv", {Path("bad.csv")}, Path("o.npy")));
  EXPECT_FALSE(csv.ok);
  EXPECT_THAT(csv.error, HasSubstr("import_csv: " + Path("bad.csv") + ": line 3: expected 2 fields"));
  EXPECT_THAT(csv.output_paths, IsEmpty());
  EXPECT_FALSE(std::filesystem::exists(Path("o.npy")));

  auto missing = Run(Spec("clip", {Path("nope.npy")}, Path("o.npy"), {{"min", 0.0}, {"max", 1.0}}));
  EXPECT_THAT(missing.error, HasSubstr("clip: input " + Path("nope.npy") + " is missing: open " +
                                       Path("nope.npy")));

  auto no_stats = Run(Spec("standardize", {Path("x.npy")}, Path("o.npy")));
  EXPECT_THAT(no_stats.error, HasSubstr("expected input_paths [data shard, stats file], got 1"));

  auto no_param = Run(Spec("filter_map", {Path("x.npy")}, Path("o.npy"), {{"b", std::string("y")}}));
  EXPECT_THAT(no_param.error, HasSubstr("filter_map: missing param 'a'"));

  // A data shard handed to the stats reduce, and an `out` that would overwrite a column.
  std::ofstream(Path("ok.csv")) << "a,b\n1,2\n";
  ASSERT_TRUE(Run(Spec("import_csv", {Path("ok.csv")}, Path("ok.npy"))).ok);
  auto not_stats = Run(Reduce(Spec("column_stats", {Path("ok.npy")}, Path("s.npy"))));
  EXPECT_THAT(not_stats.error, HasSubstr("column_stats: " + Path("ok.npy") +
                                         ": not a column_stats file: expected 5 rows"));
  auto clash = Run(Spec("filter_map", {Path("ok.npy")}, Path("f.npy"),
                        {{"a", std::string("a")}, {"b", std::string("b")}, {"out", std::string("b")}}));
  EXPECT_THAT(clash.error, HasSubstr("already has a column 'b'"));
  auto no_column = Run(Spec("clip", {Path("ok.npy")}, Path("c.npy"),
                            {{"min", 0.0}, {"max", 1.0}, {"columns", std::vector<std::string>{"z"}}}));
  EXPECT_THAT(no_column.error,
              HasSubstr("no column 'z' (the shard has a (int64), b (int64))"));

  auto evaluate = Run(Spec("evaluate", {Path("ok.npy")}, Path("e.npy")));
  EXPECT_FALSE(evaluate.ok);
  EXPECT_THAT(evaluate.error,
              HasSubstr("expected input_paths [data shard, model] or [data shard, model, calibration], got 1 path(s)"));

  auto unknown = Run(Spec("frobnicate", {}, ""));
  EXPECT_FALSE(unknown.ok);
  EXPECT_EQ(unknown.error, "unknown op 'frobnicate'");
}

uint16_t Code(StatusCode code) { return static_cast<uint16_t>(code); }

TEST_F(TaskRunnerTest, WrongDataIsReportedAsInvalidDataAndTransientFailuresKeepTheirCodes) {
  std::ofstream(Path("nan.csv")) << "a,b\n1,2\n3,abc\n";
  // b is forced numeric: left to inference, "abc" in the first lines makes it a string column.
  auto csv = Run(Spec("import_csv", {Path("nan.csv")}, Path("o.npy"),
                      {{"dtypes", job::ParamMap{{"b", "float32"}}}}));
  EXPECT_FALSE(csv.ok);
  EXPECT_THAT(csv.error, HasSubstr("import_csv: " + Path("nan.csv") + ": line 3"));
  EXPECT_EQ(csv.error_code, Code(StatusCode::kInvalidData)) << csv.error;

  std::ofstream(Path("ok.csv")) << "a,b\n1,2\n";
  ASSERT_TRUE(Run(Spec("import_csv", {Path("ok.csv")}, Path("ok.npy"))).ok);
  auto no_column = Run(Spec("clip", {Path("ok.npy")}, Path("c.npy"),
                            {{"min", 0.0}, {"max", 1.0}, {"columns", std::vector<std::string>{"z"}}}));
  EXPECT_EQ(no_column.error_code, Code(StatusCode::kInvalidData)) << no_column.error;
  auto bad_param = Run(Spec("cast", {Path("ok.npy")}, Path("h.npy"), {{"dtype", std::string("int7")}}));
  EXPECT_EQ(bad_param.error_code, Code(StatusCode::kInvalidData)) << bad_param.error;

  // A command's failure may be the program's flakiness: retryable, as is a missing file that
  // nothing explains and an op this worker lacks.
  auto exited = Run(Spec("exec", {}, "", {{"command", "exit 3"}}));
  EXPECT_EQ(exited.error_code, Code(StatusCode::kAborted)) << exited.error;
  auto slept = Run(Spec("exec", {}, "", {{"command", "sleep 30"}, {"timeout", 0.1}}));
  EXPECT_EQ(slept.error_code, Code(StatusCode::kDeadlineExceeded)) << slept.error;
  auto missing = Run(Spec("clip", {Path("nope.npy")}, Path("o.npy"), {{"min", 0.0}, {"max", 1.0}}));
  EXPECT_EQ(missing.error_code, Code(StatusCode::kNotFound)) << missing.error;
  auto unknown = Run(Spec("frobnicate", {}, ""));
  EXPECT_EQ(unknown.error_code, Code(StatusCode::kUnavailable));
  EXPECT_EQ(Run(Spec("noop", {}, "", {{"tasks", int64_t{1}}})).error_code, 0u);
}

TEST_F(TaskRunnerTest, AShardAnExecDidNotWriteIsNamedWithWhyByItsReaders) {
  std::ofstream(Path("ok.csv")) << "a,b\n1,2\n";
  ASSERT_TRUE(Run(Spec("import_csv", {Path("ok.csv")}, Path("ok.npy"))).ok);
  const std::string part = io::ShardPath(Path("work"), "clean", 1);
  // Exit 0 without writing {output}: the exec task succeeds and says what it did not write.
  wire::TaskSpec exec = Spec("exec", {Path("ok.npy")}, part,
                             {{"command", std::string("[ {shard} = 1 ] || cp {input} {output}")}}, 1, 2);
  exec.node_id = "clean";
  const wire::TaskOutcome nothing = Run(exec);
  ASSERT_TRUE(nothing.ok) << nothing.error;
  EXPECT_THAT(nothing.output_paths, IsEmpty());
  EXPECT_FALSE(std::filesystem::exists(part));

  const std::string expected = "input shard 1 of node 'clean' (" + part +
                               ") is missing: its exec task exited 0 without writing {output} "
                               "(command: [ {shard} = 1 ] || cp {input} {output})";
  auto clip = Run(Spec("clip", {part}, Path("c.npy"), {{"min", 0.0}, {"max", 1.0}}));
  EXPECT_FALSE(clip.ok);
  EXPECT_EQ(clip.error, "clip: " + expected);
  EXPECT_EQ(clip.error_code, Code(StatusCode::kInvalidData)) << "no retry can find it";
  // A command reading it fails with the note's why; one that expects gaps runs as it likes.
  auto downstream_exec = Run(Spec("exec", {part}, Path("d.npy"), {{"command", std::string("cp {input} {output}")}}));
  EXPECT_TRUE(Run(Spec("exec", {part}, Path("g.npy"),
                       {{"command", std::string("[ -e {input} ] || cp " + Path("ok.npy") + " {output}")}}))
                  .ok);
  EXPECT_THAT(downstream_exec.error, HasSubstr("exec: " + expected + " (then the command exited with status 1: "));
  EXPECT_EQ(downstream_exec.error_code, Code(StatusCode::kInvalidData));

  // A later attempt that writes it clears the note; a missing shard nothing explains still
  // names its node and shard, and stays retryable.
  exec.params = WithSchemaDefaults("exec", {{"command", std::string("cp {input} {output}")}});
  ASSERT_TRUE(Run(exec).ok);
  EXPECT_TRUE(std::filesystem::exists(part));
  EXPECT_TRUE(Run(Spec("clip", {part}, Path("c.npy"), {{"min", 0.0}, {"max", 1.0}})).ok);
  std::filesystem::remove(part);
  auto unexplained = Run(Spec("clip", {part}, Path("c.npy"), {{"min", 0.0}, {"max", 1.0}}));
  EXPECT_THAT(unexplained.error,
              HasSubstr("clip: input shard 1 of node 'clean' (" + part + ") is missing: open "));
  EXPECT_EQ(unexplained.error_code, Code(StatusCode::kNotFound));
}

// A fused chain (filter -> derive -> select) on one shard: the shards between the steps stay in
// memory (nothing written there), the last is written with the strings intact, each node's own
// task leaves its own log line, and the outcome is the whole chain's.
TEST_F(TaskRunnerTest, AFusedChainHandsShardsOnInMemoryAndWritesOnlyTheLast) {
  io::Table table;
  io::Column city = io::Column::Int32("city", {0, 1, 2, -1});
  city.set_dictionary(std::make_shared<io::Column::Dictionary>(
      io::Column::Dictionary{"Oslo", "Paris", "Rome"}));
  ASSERT_TRUE(table.AddColumn(std::move(city)).ok());
  ASSERT_TRUE(table.AddColumn(io::Column::Float32("x", {0.5f, 2, 3, 4})).ok());
  OpReport written;
  ASSERT_TRUE(WriteShard(Path("in.npz"), std::move(table), written).ok());

  wire::TaskSpec spec = Spec("filter", {Path("in.npz")}, Path("keep/part-00000.npz"),
                             wire::TaskParams{{"where", std::string("x > 1")}});
  spec.node_id = "keep";
  spec.workdir = Path("work");
  auto step = [](uint64_t task, std::string node, std::string op, std::string in,
                 std::string out, wire::TaskParams params) {
    wire::FusedStep s;
    s.task_id = task;
    s.node_id = std::move(node);
    s.params = WithSchemaDefaults(op, std::move(params));
    s.op = std::move(op);
    s.input_paths = {std::move(in)};
    s.output_path = std::move(out);
    return s;
  };
  spec.fused = {step(50, "more", "derive", Path("keep/part-00000.npz"), Path("more/part-00000.npz"),
                     wire::TaskParams{{"columns", job::ParamMap{{"z", "x * 2"}}}}),
                step(60, "out", "select", Path("more/part-00000.npz"), Path("out/part-00000.npz"),
                     wire::TaskParams{{"keep", std::vector<std::string>{"city", "z"}}})};
  spec.in_memory_outputs = {Path("keep/part-00000.npz"), Path("more/part-00000.npz")};

  const wire::TaskOutcome outcome = Run(spec);
  ASSERT_TRUE(outcome.ok) << outcome.error;
  EXPECT_THAT(outcome.output_paths, ElementsAre(Path("out/part-00000.npz")));
  EXPECT_EQ(outcome.rows_in, 4u);
  EXPECT_EQ(outcome.rows_out, 3u);
  EXPECT_FALSE(std::filesystem::exists(Path("keep"))) << "an in-memory shard was written";
  EXPECT_FALSE(std::filesystem::exists(Path("more")));
  auto out = io::ReadShardFile(Path("out/part-00000.npz"));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->Describe(), "city (int32), z (float32)");
  EXPECT_THAT(*out->Find("city")->dictionary(), ElementsAre("Paris", "Rome"));
  EXPECT_THAT(out->Find("city")->values<int32_t>(), ElementsAre(0, 1, -1));
  EXPECT_THAT(out->Find("z")->values<float>(), ElementsAre(4.0f, 6.0f, 8.0f));
  for (const auto& [node, task] : {std::pair<std::string, uint64_t>{"keep", 42}, {"more", 50},
                                   {"out", 60}}) {
    std::ifstream log(job::TaskLogPath(Path("work"), node, task, 1, job::kStdoutStream));
    const std::string text((std::istreambuf_iterator<char>(log)), {});
    EXPECT_THAT(text, HasSubstr("task " + std::to_string(task) + " (shard 0) attempt 1")) << node;
  }

  // A step that fails names its node; the chain's outcome carries its code and no outputs.
  spec.fused[0].params = WithSchemaDefaults("derive", wire::TaskParams{{"columns",
                                                    job::ParamMap{{"z", "nope * 2"}}}});
  const wire::TaskOutcome failed = Run(spec);
  EXPECT_FALSE(failed.ok);
  EXPECT_THAT(failed.error, HasSubstr("derive: "));
  EXPECT_THAT(failed.error, HasSubstr("nope"));
  EXPECT_EQ(failed.fused_node, "more");
  EXPECT_EQ(failed.error_code, Code(StatusCode::kInvalidData));
  EXPECT_THAT(failed.output_paths, IsEmpty());
}

// A filter keeps only the dictionary entries its kept rows use, in their old order, with the
// codes renumbered: the strings read back are the same, the sidecar is smaller.
TEST_F(TaskRunnerTest, FilterDropsDictionaryEntriesNoKeptRowUses) {
  io::Table table;
  io::Column city = io::Column::Int32("city", {0, 1, 2, 1, -1, 3});
  city.set_dictionary(std::make_shared<io::Column::Dictionary>(
      io::Column::Dictionary{"Oslo", "Paris", "Rome", "Lima"}));
  ASSERT_TRUE(table.AddColumn(std::move(city)).ok());
  ASSERT_TRUE(table.AddColumn(io::Column::Float32("x", {0, 5, 5, 5, 5, 0})).ok());
  OpReport written;
  ASSERT_TRUE(WriteShard(Path("in.npy"), std::move(table), written).ok());
  const wire::TaskSpec spec = Spec("filter", {Path("in.npy")}, Path("out.npy"),
                                   wire::TaskParams{{"where", std::string("x > 1")}});
  ASSERT_TRUE(Run(spec).ok);
  OpReport read;
  Result<io::Table> out = ReadShard(Path("out.npy"), read);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const io::Column& kept = *out->Find("city");
  EXPECT_THAT(*kept.dictionary(), ElementsAre("Paris", "Rome"));
  EXPECT_THAT(kept.values<int32_t>(), ElementsAre(0, 1, 0, -1));
}

// quoted_newlines: a file's line breaks inside quotes are data; the file is read whole by one
// of the node's tasks (the one whose byte range holds its start), the others write empty shards.
TEST_F(TaskRunnerTest, ImportWithQuotedNewlinesReadsEachFileWholeInOneTask) {
  std::ofstream(Path("notes.csv")) << "id,note\n1,\"first\nsecond\"\n2,x\n3,\"a\n\nb\"\n";
  size_t rows = 0;
  for (int32_t shard = 0; shard < 3; ++shard) {
    SCOPED_TRACE(shard);
    const std::string out = Path("notes-" + std::to_string(shard) + ".npy");
    const io::Table t = RunOk(Spec("import_csv", {Path("notes.csv")}, out,
                                   wire::TaskParams{{"quoted_newlines", true}}, shard, 3));
    EXPECT_EQ(t.rows(), shard == 0 ? 3u : 0u);
    rows += t.rows();
  }
  EXPECT_EQ(rows, 3u);
  const wire::TaskOutcome refused =
      Run(Spec("import_csv", {Path("notes.csv")}, Path("strict.npy"), {}, 0, 1));
  EXPECT_FALSE(refused.ok);
  EXPECT_THAT(refused.error, HasSubstr("set quoted_newlines: true"));
}

// write_csv: the header, quoted strings (a comma, a quote, blanks at an end), empty fields for
// every kind of missing value, shortest round-trip floats, ISO 8601 datetimes, True/False.
TEST_F(TaskRunnerTest, WriteCsvWritesWhatPandasReadsBack) {
  io::Table table;
  ASSERT_TRUE(table.AddColumn(io::Column::Int64("id", {16777217, io::kMissingInt64})).ok());
  ASSERT_TRUE(table.AddColumn(io::Column("ts", std::vector<int64_t>{1704067201123456000,
                                                                     io::kMissingInt64},
                                         ElementType::kDatetime64))
                  .ok());
  io::Column city = io::Column::Int32("city", {0, -1});
  city.set_dictionary(std::make_shared<io::Column::Dictionary>(
      io::Column::Dictionary{"The \"Hub\", Porto"}));
  ASSERT_TRUE(table.AddColumn(std::move(city)).ok());
  ASSERT_TRUE(table.AddColumn(io::Column::Float32("x", {0.1f, NAN})).ok());
  ASSERT_TRUE(table.AddColumn(io::Column("ok", std::vector<uint8_t>{1, 0}, ElementType::kBool)).ok());
  OpReport written;
  ASSERT_TRUE(WriteShard(Path("in.npy"), std::move(table), written).ok());  // with the dictionary beside
  const wire::TaskSpec spec = Spec("write_csv", {Path("in.npy")}, Path("out/part-00000.npy"));
  const wire::TaskOutcome outcome = Run(spec);
  ASSERT_TRUE(outcome.ok) << outcome.error;
  EXPECT_THAT(outcome.output_paths, ElementsAre(Path("out/part-00000.csv")));
  std::ifstream in(Path("out/part-00000.csv"));
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text,
            "id,ts,city,x,ok\n"
            "16777217,2024-01-01 00:00:01.123456,\"The \"\"Hub\"\", Porto\",0.1,True\n"
            ",,,,False\n");
}

TEST_F(TaskRunnerTest, NoopDoesNothingAndHonoursCancel) {
  auto quick = Run(Spec("noop", {}, "", {{"sleep_ms", int64_t{0}}, {"tasks", int64_t{5}}}));
  EXPECT_TRUE(quick.ok) << quick.error;
  EXPECT_THAT(quick.output_paths, IsEmpty());
  EXPECT_EQ(quick.bytes_processed, 0u);

  auto slept = Run(Spec("noop", {}, "", {{"sleep_ms", int64_t{5}}}));
  EXPECT_TRUE(slept.ok);

  std::atomic<bool> cancel{false};
  wire::TaskOutcome outcome;
  std::thread runner([&] { outcome = Run(Spec("noop", {}, "", {{"sleep_ms", int64_t{600000}}}), &cancel); });
  cancel = true;
  runner.join();  // returns within a sleep slice, not after ten minutes
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.error, "cancelled");
}

TEST_F(TaskRunnerTest, ExecPublishesItsOutputAtomically) {
  std::ofstream(Path("in put's.txt")) << "hello\n";
  const std::string output = Path("out/shard-7.npy");
  auto copy = Run(Spec("exec", {Path("in put's.txt")}, output,
                       {{"command", "cp {input} {output} && echo shard={shard}"}}, 7));
  ASSERT_TRUE(copy.ok) << copy.error;
  EXPECT_THAT(copy.output_paths, ElementsAre(output));
  std::ifstream in(output);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "hello\n");
  EXPECT_EQ(copy.bytes_processed, 12u);  // 6 read + 6 written

  auto nothing = Run(Spec("exec", {}, Path("out/none.npy"), {{"command", "true"}}));
  EXPECT_TRUE(nothing.ok) << nothing.error;
  EXPECT_THAT(nothing.output_paths, IsEmpty());
  EXPECT_FALSE(std::filesystem::exists(Path("out/none.npy")));
  std::filesystem::remove(Path("out/none.npy.missing"));  // its note (see the missing-shard test)

  // A command that writes its output and then fails publishes nothing, not even a temp file.
  auto half = Run(Spec("exec", {}, Path("out/half.npy"), {{"command", "echo x > {output}; exit 1"}}));
  EXPECT_FALSE(half.ok);
  EXPECT_FALSE(std::filesystem::exists(Path("out/half.npy")));
  size_t files = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(Path("out"))) ++files;
  EXPECT_EQ(files, 1u);  // shard-7.npy only
}

TEST_F(TaskRunnerTest, ExecFailureReportsStatusAndTheTailOfStderr) {
  auto failed = Run(Spec("exec", {}, "", {{"command", "echo to-stdout; echo oops >&2; exit 3"}}));
  EXPECT_FALSE(failed.ok);
  EXPECT_EQ(failed.error, "exec: command exited with status 3: oops");

  // 100 lines of stderr, more than the pipe buffer with the padding: the error carries the last
  // 3 (the task's log keeps it all).
  auto chatty = Run(Spec("exec", {}, "",
                         {{"command", "i=0; while [ $i -lt 100 ]; do i=$((i+1)); "
                                      "echo line$i >&2; done; head -c 200000 /dev/zero; exit 1"}}));
  EXPECT_FALSE(chatty.ok);
  EXPECT_THAT(chatty.error, HasSubstr("status 1: line98 | line99"));
  EXPECT_THAT(chatty.error, HasSubstr("| line100"));
  EXPECT_THAT(chatty.error, Not(HasSubstr("line97")));

  auto killed = Run(Spec("exec", {}, "", {{"command", "kill -9 $$"}}));
  EXPECT_THAT(killed.error, HasSubstr("exec: command killed by signal 9"));
}

TEST_F(TaskRunnerTest, ExecTimeoutKillsTheProcessGroup) {
  auto slept = Run(Spec("exec", {}, "", {{"command", "sleep 60"}, {"timeout", 0.2}}));
  EXPECT_FALSE(slept.ok);
  EXPECT_EQ(slept.error, "exec: timed out after 0.2 s");

  // Output without pause must not keep the runner from noticing its deadline.
  auto flood = Run(Spec("exec", {}, "", {{"command", "yes"}, {"timeout", 0.3}}));
  EXPECT_EQ(flood.error, "exec: timed out after 0.3 s");

  // SIGTERM ignored: SIGKILL follows after the grace period.
  auto stubborn = Run(Spec("exec", {}, "",
                           {{"command", "trap '' TERM; echo stubborn >&2; while :; do sleep 0.05; done"},
                            {"timeout", 0.2}}));
  EXPECT_EQ(stubborn.error, "exec: timed out after 0.2 s: stubborn");
}

// A process that left the command's process group (setsid, as daemons and mpirun's ranks do)
// is still the command's descendant: the timeout kills it too.
TEST_F(TaskRunnerTest, ExecTimeoutAlsoKillsWhatLeftTheCommandsProcessGroup) {
  const std::string pid_file = Path("escaped.pid");
  auto outcome = Run(Spec("exec", {}, "",
                          {{"command", "setsid sleep 60 & echo $! > " + pid_file + "; wait"},
                           {"timeout", 1.0}}));
  EXPECT_EQ(outcome.error, "exec: timed out after 1 s");

  int pid = 0;
  std::ifstream(pid_file) >> pid;
  ASSERT_GT(pid, 0);
  const auto running = [pid] {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_text, comm, state;
    return (stat >> pid_text >> comm >> state) && comm == "(sleep)" && state != "Z";
  };
  EXPECT_TRUE(WaitFor([&] { return !running(); })) << "the sleep outlived its command's timeout";
  if (running()) ::kill(pid, SIGKILL);
}

TEST_F(TaskRunnerTest, ExecCancelKillsEverythingItStarted) {
  std::atomic<bool> cancel{false};
  const std::string pid_file = Path("child.pid");
  wire::TaskOutcome outcome;
  std::thread runner([&] {
    outcome = Run(Spec("exec", {}, "",
                       {{"command", "sleep 60 & echo $! > " + pid_file + ".tmp; mv " + pid_file +
                                        ".tmp " + pid_file + "; wait"}}),
                  &cancel);
  });
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(pid_file); }));
  cancel = true;
  runner.join();
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.error, "cancelled");

  int pid = 0;
  std::ifstream(pid_file) >> pid;
  ASSERT_GT(pid, 0);
  // The background sleep was in the command's process group, so it is gone (or a zombie
  // waiting for its new parent to reap it) rather than running on.
  EXPECT_TRUE(WaitFor([pid] {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_text, comm, state;
    return !(stat >> pid_text >> comm >> state) || state == "Z";
  }));
}

}  // namespace
}  // namespace coupler::worker
