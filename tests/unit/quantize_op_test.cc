// quantize and evaluate at three precisions, as a pipeline runs them: quantize calibrates each
// layer's input on the rows training trained on (never the held-out ones evaluate scores), and
// evaluate scores fp32, bf16 and int8 side by side — one result row each, in the order asked —
// with int8 within a point of fp32, a quarter of its weight bytes, and a calibration of other
// weights, or int8 without one, refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

#include "runtime/io/npy_writer.h"
#include "runtime/io/shard_file.h"
#include "train/data/dataset.h"
#include "worker/ops/op_table.h"

namespace coupler::worker {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr uint64_t kSeed = 7;
constexpr double kTestFraction = 0.25;

class QuantizeOpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/coupler-quantize-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ / "data");
    fs::create_directories(dir_ / "model");
    // 2 -> 4 -> 2: the hidden layer holds relu(x0), relu(x1), relu(-x0), relu(-x1) and the
    // logits are x0 and x1, so the prediction is the larger feature.
    WriteWeights({1, 0, 0, 1, -1, 0, 0, -1, 0, 0, 0, 0, 1, 0, -1, 0, 0, 1, 0, -1, 0, 0});
    std::ofstream(dir_ / "model" / "model.json")
        << R"({"layers":"2,4,2","label_column":"label","test_fraction":)" << kTestFraction
        << R"(,"seed":")" << kSeed << R"(","data":")" << (dir_ / "data").string() << "\"}\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  void WriteWeights(const std::vector<float>& w) {
    ASSERT_TRUE(
        io::WriteFloatArrayNpyAtomic((dir_ / "model" / "weights.npy").string(), w).ok());
  }

  // Shard s of `rows` rows: normal features, the label is the larger; the rows listed in
  // `outliers` (global row numbers, shards of `rows` each) get x0 = 1000.
  std::string WriteShard(int s, int rows, const std::vector<int32_t>& outliers = {}) {
    std::mt19937 rng(100 + s);
    std::normal_distribution<float> normal;
    std::vector<float> x0, x1;
    std::vector<int32_t> label;
    for (int r = 0; r < rows; ++r) {
      float a = normal(rng), b = normal(rng);
      if (std::find(outliers.begin(), outliers.end(), s * rows + r) != outliers.end()) a = 1000;
      x0.push_back(a);
      x1.push_back(b);
      label.push_back(a > b ? 0 : 1);
    }
    io::Table t;
    EXPECT_TRUE(t.AddColumn(io::Column::Float32("x0", x0)).ok());
    EXPECT_TRUE(t.AddColumn(io::Column::Float32("x1", x1)).ok());
    EXPECT_TRUE(t.AddColumn(io::Column::Int32("label", label)).ok());
    const std::string path = (dir_ / "data" / ("part-0000" + std::to_string(s) + ".npy")).string();
    EXPECT_TRUE(io::WriteNpyAtomic(path, t).ok());
    return path;
  }

  Status Run(const std::string& op, std::vector<std::string> inputs, const std::string& output,
             bool reduce, const std::vector<std::string>& precisions = {}) {
    wire::TaskSpec spec;
    spec.op = op;
    spec.input_paths = std::move(inputs);
    spec.output_path = output;
    spec.shard_index = reduce ? -1 : 0;
    spec.kind = reduce ? wire::TaskKind::kReduce : wire::TaskKind::kMap;
    if (op == "quantize") {
      spec.params.Set("percentile", job::ParamValue(100.0));
      spec.params.Set("calibration_rows", job::ParamValue(int64_t{100000}));
    }
    if (!precisions.empty()) spec.params.Set("precisions", job::ParamValue(precisions));
    const OpContext context{spec, nullptr, {}};
    OpReport report;
    return FindOp(op)->run(context, report);
  }

  // quantize over `shards`: its calibration file.
  std::string Quantize(const std::vector<std::string>& shards) {
    std::vector<std::string> partials;
    for (size_t s = 0; s < shards.size(); ++s) {
      partials.push_back((dir_ / ("q-" + std::to_string(s) + ".npy")).string());
      const Status status = Run("quantize", {shards[s], Model()}, partials.back(), false);
      EXPECT_TRUE(status.ok()) << status.ToString();
    }
    const std::string out = (dir_ / "calibration.npy").string();
    const Status status = Run("quantize", partials, out, true);
    EXPECT_TRUE(status.ok()) << status.ToString();
    return out;
  }

  // evaluate over `shards` with `calibration`: its result table.
  Result<io::Table> Evaluate(const std::vector<std::string>& shards,
                             const std::string& calibration,
                             const std::vector<std::string>& precisions = {}) {
    std::vector<std::string> partials;
    for (size_t s = 0; s < shards.size(); ++s) {
      partials.push_back((dir_ / ("e-" + std::to_string(s) + ".npy")).string());
      std::vector<std::string> inputs = {shards[s], Model()};
      if (!calibration.empty()) inputs.push_back(calibration);
      COUPLER_RETURN_IF_ERROR(Run("evaluate", inputs, partials.back(), false, precisions));
    }
    const std::string out = (dir_ / "accuracy.npy").string();
    COUPLER_RETURN_IF_ERROR(Run("evaluate", partials, out, true));
    return io::ReadShardFile(out);
  }

  std::string Model() const { return (dir_ / "model").string(); }

  static std::vector<std::string> Names(const io::Table& t) {
    std::vector<std::string> out;
    const io::Column* p = t.Find("precision");
    for (size_t r = 0; r < t.rows(); ++r) out.push_back((*p->dictionary())[p->values<int32_t>()[r]]);
    return out;
  }
  static double At(const io::Table& t, const char* column, size_t row) {
    return t.Find(column)->values<double>()[row];
  }

  fs::path dir_;
};

TEST_F(QuantizeOpTest, EvaluatesFp32Bf16AndInt8SideBySide) {
  const std::vector<std::string> shards = {WriteShard(0, 400), WriteShard(1, 400)};
  const std::string calibration = Quantize(shards);
  Result<io::Table> table = Evaluate(shards, calibration);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(Names(*table), (std::vector<std::string>{"fp32", "bf16", "int8"}));
  EXPECT_EQ(At(*table, "accuracy", 0), 1.0);  // the model is exact in fp32
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(At(*table, "total", r), 200);  // a quarter of 800 rows held out
    EXPECT_EQ(At(*table, "held_out", r), 1);
    EXPECT_GT(At(*table, "samples_per_s", r), 0);
    EXPECT_GE(At(*table, "accuracy", r), 0.99) << Names(*table)[r];
  }
  // 22 weights + biases: fp32 4 bytes each; bf16 halves the matrices; int8 quarters them and
  // adds a float scale per output row.
  EXPECT_EQ(At(*table, "weight_bytes", 0), 22 * 4);
  EXPECT_EQ(At(*table, "weight_bytes", 1), 16 * 2 + 6 * 4);
  EXPECT_EQ(At(*table, "weight_bytes", 2), 16 * 1 + 6 * 4 + 6 * 4);
}

TEST_F(QuantizeOpTest, PrecisionsAreScoredInTheOrderAsked) {
  const std::vector<std::string> shards = {WriteShard(0, 100)};
  const std::string calibration = Quantize(shards);
  Result<io::Table> table = Evaluate(shards, calibration, {"int8", "fp32"});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(Names(*table), (std::vector<std::string>{"int8", "fp32"}));
  // Without a calibration, fp32 alone by default; int8 asked for is refused, naming the fix.
  table = Evaluate(shards, "");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(Names(*table), (std::vector<std::string>{"fp32"}));
  table = Evaluate(shards, "", {"fp32", "int8"});
  ASSERT_FALSE(table.ok());
  EXPECT_THAT(std::string(table.status().message()), HasSubstr("quantize node"));
}

TEST_F(QuantizeOpTest, CalibratesOnTrainingRowsOnly) {
  // Outliers in the held-out rows only: a calibration that looked at them would clip layer 0
  // at 1000 and leave the normal features a handful of levels.
  train::Dataset index;
  index.rows = 400;
  index.y.resize(400);
  std::iota(index.y.begin(), index.y.end(), 0);
  const train::Split split = train::SplitDataset(index, kTestFraction, kSeed);
  const std::vector<std::string> shards = {WriteShard(0, 200, split.test.y),
                                           WriteShard(1, 200, split.test.y)};
  const std::string calibration = Quantize(shards);
  Result<io::Table> table = io::ReadShardFile(calibration);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(table->rows(), 2u);  // one row per layer
  EXPECT_LT(table->Find("clip")->values<double>()[0], 10.0);
  EXPECT_EQ(table->Find("signed")->values<int32_t>()[0], 1);  // features go below zero
  EXPECT_EQ(table->Find("signed")->values<int32_t>()[1], 0);  // a ReLU's output never does
  EXPECT_EQ(table->Find("calibration_rows")->values<double>()[0], 300);
  // The same data as another dataset (not the model's): every row counts, outliers included.
  fs::rename(dir_ / "data", dir_ / "other");
  std::vector<std::string> moved;
  for (const std::string& s : shards) moved.push_back((dir_ / "other" / fs::path(s).filename()).string());
  table = io::ReadShardFile(Quantize(moved));
  ASSERT_TRUE(table.ok());
  EXPECT_GE(table->Find("clip")->values<double>()[0], 1000.0);
  EXPECT_EQ(table->Find("calibration_rows")->values<double>()[0], 400);
}

TEST_F(QuantizeOpTest, RefusesACalibrationOfOtherWeights) {
  const std::vector<std::string> shards = {WriteShard(0, 100)};
  const std::string calibration = Quantize(shards);
  // Retrained since: same widths, other weights.
  WriteWeights({2, 0, 0, 1, -1, 0, 0, -1, 0, 0, 0, 0, 1, 0, -1, 0, 0, 1, 0, -1, 0, 0});
  Result<io::Table> table = Evaluate(shards, calibration);
  ASSERT_FALSE(table.ok());
  EXPECT_THAT(std::string(table.status().message()), HasSubstr("measured on other weights"));
  // Not a calibration at all.
  table = Evaluate(shards, shards[0]);
  ASSERT_FALSE(table.ok());
  EXPECT_THAT(std::string(table.status().message()), HasSubstr("not a quantize calibration"));
}

}  // namespace
}  // namespace coupler::worker
