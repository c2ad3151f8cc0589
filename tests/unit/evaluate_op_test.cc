// The evaluate op on a model small enough to score by hand: maps count correct predictions per
// shard (all rows, or only the held-out ones of the training dataset), the reduce sums them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <numeric>

#include "runtime/io/shard_file.h"
#include "runtime/io/npy_writer.h"
#include "worker/ops/op_table.h"
#include "train/data/dataset.h"

namespace coupler::worker {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class EvaluateOpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/coupler-evaluate-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ / "data");
    fs::create_directories(dir_ / "model");
    // Identity weights, zero biases: the prediction is the larger of the two features.
    ASSERT_TRUE(io::WriteFloatArrayNpyAtomic((dir_ / "model" / "weights.npy").string(),
                                             std::vector<float>{1, 0, 0, 1, 0, 0})
                    .ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  void WriteModel(const std::string& data, double test_fraction) {
    std::ofstream(dir_ / "model" / "model.json")
        << R"({"layers":"2,2","label_column":"label","test_fraction":)" << test_fraction
        << R"(,"seed":"7","data":")" << data << "\"}\n";
  }

  // Shard s of the data: rows (x0, x1, label); odd rows are predicted wrong.
  std::string WriteShard(int s, int rows) {
    std::vector<float> x0, x1;
    std::vector<int32_t> label;
    for (int r = 0; r < rows; ++r) {
      x0.push_back(r % 2 == 0 ? 1.0f : 0.0f);
      x1.push_back(r % 2 == 0 ? 0.0f : 1.0f);
      label.push_back(r % 4 == 1 ? 0 : (r % 2 == 0 ? 0 : 1));  // r % 4 == 1: wrong
    }
    io::Table t;
    EXPECT_TRUE(t.AddColumn(io::Column::Float32("x0", x0)).ok());
    EXPECT_TRUE(t.AddColumn(io::Column::Float32("x1", x1)).ok());
    EXPECT_TRUE(t.AddColumn(io::Column::Int32("label", label)).ok());
    const std::string path = (dir_ / "data" / ("part-0000" + std::to_string(s) + ".npy")).string();
    EXPECT_TRUE(io::WriteNpyAtomic(path, t).ok());
    return path;
  }

  Status Run(std::vector<std::string> inputs, const std::string& output, const std::string& kind,
             int32_t shard) {
    wire::TaskSpec spec;
    spec.op = "evaluate";
    spec.input_paths = std::move(inputs);
    spec.output_path = output;
    spec.shard_index = shard;
    spec.kind = kind == "reduce" ? wire::TaskKind::kReduce : wire::TaskKind::kMap;
    const OpContext context{spec, nullptr, {}};
    OpReport report;
    return FindOp("evaluate")->run(context, report);
  }

  double Value(const std::string& path, const std::string& column) {
    auto t = io::ReadShardFile(path);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() && t->Find(column) != nullptr ? t->Find(column)->values<double>()[0] : -1;
  }

  fs::path dir_;
};

TEST_F(EvaluateOpTest, CountsEveryRowOfAnotherDatasetAndReducesToTheAccuracy) {
  WriteModel("/elsewhere", 0.2);
  const std::string a = WriteShard(0, 8);  // rows 1 and 5 wrong
  const std::string b = WriteShard(1, 4);  // row 1 wrong
  const std::string model = (dir_ / "model").string();
  const std::string pa = (dir_ / "partial-0.npy").string();
  const std::string pb = (dir_ / "partial-1.npy").string();
  ASSERT_TRUE(Run({a, model}, pa, "map", 0).ok());
  ASSERT_TRUE(Run({b, model}, pb, "map", 1).ok());
  EXPECT_EQ(Value(pa, "correct"), 6);
  EXPECT_EQ(Value(pa, "total"), 8);
  EXPECT_EQ(Value(pb, "correct"), 3);
  const std::string out = (dir_ / "part-00000.npy").string();
  ASSERT_TRUE(Run({pa, pb}, out, "reduce", -1).ok());
  EXPECT_EQ(Value(out, "correct"), 9);
  EXPECT_EQ(Value(out, "total"), 12);
  EXPECT_DOUBLE_EQ(Value(out, "accuracy"), 0.75);
  EXPECT_EQ(Value(out, "held_out"), 0);  // every row counted: not a held-out accuracy
}

TEST_F(EvaluateOpTest, OnTheTrainingDatasetCountsOnlyTheRowsTrainingHeldOut) {
  WriteModel((dir_ / "data").string(), 0.25);
  const std::string a = WriteShard(0, 8);
  const std::string b = WriteShard(1, 12);
  const std::string model = (dir_ / "model").string();
  ASSERT_TRUE(Run({a, model}, (dir_ / "p0.npy").string(), "map", 0).ok());
  ASSERT_TRUE(Run({b, model}, (dir_ / "p1.npy").string(), "map", 1).ok());
  // coupler train's split of the 20 rows (shard order), computed the way it computes it.
  train::Dataset index;
  index.rows = 20;
  index.y.resize(20);
  std::iota(index.y.begin(), index.y.end(), 0);
  const train::Split split = train::SplitDataset(index, 0.25, 7);
  ASSERT_EQ(split.test.rows, 5u);
  double wrong = 0;
  for (const int32_t row : split.test.y) {
    const int local = row < 8 ? row : row - 8;
    wrong += local % 4 == 1 ? 1 : 0;
  }
  EXPECT_EQ(Value((dir_ / "p0.npy").string(), "total") + Value((dir_ / "p1.npy").string(), "total"),
            5);
  EXPECT_EQ(Value((dir_ / "p0.npy").string(), "correct") +
                Value((dir_ / "p1.npy").string(), "correct"),
            5 - wrong);
  EXPECT_EQ(Value((dir_ / "p0.npy").string(), "held_out"), 1);
}

TEST_F(EvaluateOpTest, RefusesAModelThatDoesNotMatchTheShard) {
  std::ofstream(dir_ / "model" / "model.json")
      << R"({"layers":"3,2","label_column":"label","test_fraction":0,"seed":"7","data":"/x"})";
  const std::string a = WriteShard(0, 4);
  Status s = Run({a, (dir_ / "model").string()}, (dir_ / "p.npy").string(), "map", 0);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("weights.npy: expected 8 float32 values for layers 3...2, got 6 rows"));
}

}  // namespace
}  // namespace coupler::worker
