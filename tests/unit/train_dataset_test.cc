// The training data: CSV and .npy shard directories load exactly, malformed input is an error
// that says where, and the split and epoch orders are the same permutations on every machine.
#include "runtime/ops/train_model.h"
#include "train/data/dataset.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/io/npy_writer.h"
#include "runtime/io/temp_dir.h"
#include "runtime/precision/half.h"

namespace coupler::train {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class TrainDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<io::TempDir> dir = io::TempDir::Create("train-dataset-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_.emplace(std::move(*dir));
  }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_->File(name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // The error LoadDataset gives for a CSV of `text`.
  std::string CsvError(const std::string& text, const std::string& label = "label") {
    Result<Dataset> data = LoadDataset(Write("bad.csv", text), label);
    if (data.ok()) return "(no error)";
    EXPECT_EQ(data.status().code(), StatusCode::kInvalidArgument);
    return data.status().message();
  }

  std::optional<io::TempDir> dir_;
};

TEST_F(TrainDatasetTest, TinyCsvLoadsExactly) {
  // The label in the middle, CRLF, an empty line, "3.0" as a label, no final newline.
  const std::string path = Write("tiny.csv", "a,label,b\n1,0,2.5\r\n-3,3.0,4e1\n\n5,1,6");
  Result<Dataset> data = LoadDataset(path, "label");
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->rows, 3u);
  EXPECT_EQ(data->features, 2u);
  EXPECT_EQ(data->num_classes, 4u);
  EXPECT_THAT(data->x, ElementsAre(1.0f, 2.5f, -3.0f, 40.0f, 5.0f, 6.0f));
  EXPECT_THAT(data->y, ElementsAre(0, 3, 1));
}

TEST_F(TrainDatasetTest, MalformedCsvNamesLineAndColumn) {
  const std::string file = dir_->File("bad.csv");
  EXPECT_EQ(CsvError("a,b,label\n1,2,0\n1,2\n"), file + ": line 3: expected 3 fields, found 2");
  EXPECT_EQ(CsvError("a,b,label\n1,2,0\n1,2,3,4\n"), file + ": line 3: expected 3 fields, found 4");
  EXPECT_EQ(CsvError("a,p3,label\n1,2,0\n\n1,x,1\n"),
            file + ": line 4, column 'p3' (field 2): 'x' is not a number");
  EXPECT_THAT(CsvError("a,b,c\n1,2,0\n"),
              HasSubstr(file + ": label_column 'label' is not a column (columns: a, b, c)"));
  EXPECT_EQ(CsvError("a,b,label\n1,2,0\n\n1,2,-1\n"),
            file + ": line 4, column 'label': -1 is not a class index (labels are integers >= 0)");
  EXPECT_EQ(CsvError("a,b,label\n1,2,2.5\n"),
            file + ": line 2, column 'label' (field 3): '2.5' is not an int32 label");
  EXPECT_EQ(CsvError("a,b,label\n"), file + ": the dataset has no rows");
  EXPECT_EQ(CsvError("label\n1\n"),
            file + ": no feature columns besides the label column 'label'");
  EXPECT_THAT(CsvError(""), HasSubstr(file + ": "));
}

TEST_F(TrainDatasetTest, MissingPathIsNotFound) {
  Result<Dataset> data = LoadDataset(dir_->File("absent.csv"), "label");
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(data.status().message(), HasSubstr("absent.csv"));
}

io::Table Shard(std::vector<float> f, std::vector<float> h, std::vector<int32_t> label) {
  std::vector<uint16_t> half;
  std::vector<double> wide;
  for (size_t i = 0; i < h.size(); ++i) {
    half.push_back(precision::FloatToHalfBits(h[i]));
    wide.push_back(f[i] * 10.0);
  }
  io::Table t;
  EXPECT_TRUE(t.AddColumn(io::Column::Float32("f", std::move(f))).ok());
  EXPECT_TRUE(t.AddColumn(io::Column::Int32("label", std::move(label))).ok());
  EXPECT_TRUE(t.AddColumn(io::Column("h", std::move(half), ElementType::kFloat16)).ok());
  EXPECT_TRUE(t.AddColumn(io::Column::Float64("d", std::move(wide))).ok());
  return t;
}

TEST_F(TrainDatasetTest, NpyShardsConcatenateInNameOrder) {
  const std::string shards = dir_->File("shards");
  // Written out of order; a temporary of an unfinished write and a hidden file are skipped.
  ASSERT_TRUE(io::WriteNpyAtomic(shards + "/part-00001.npy", Shard({3}, {0.5f}, {2})).ok());
  ASSERT_TRUE(io::WriteNpyAtomic(shards + "/part-00000.npy", Shard({1, 2}, {-1, 4}, {0, 1})).ok());
  ASSERT_TRUE(io::WriteNpyAtomic(shards + "/part-00002.npy.tmp.1.ab", Shard({9}, {9}, {9})).ok());
  ASSERT_TRUE(io::WriteNpyAtomic(shards + "/.hidden.npy", Shard({9}, {9}, {9})).ok());

  Result<Dataset> data = LoadDataset(shards, "label");
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->rows, 3u);
  EXPECT_EQ(data->features, 3u);  // f, h, d: the label column is not a feature
  EXPECT_EQ(data->num_classes, 3u);
  EXPECT_THAT(data->x, ElementsAre(1, -1, 10, 2, 4, 20, 3, 0.5f, 30));
  EXPECT_THAT(data->y, ElementsAre(0, 1, 2));
}

TEST_F(TrainDatasetTest, NpyShardErrors) {
  const std::string shards = dir_->File("shards");
  fs::create_directories(shards);
  Result<Dataset> data = LoadDataset(shards, "label");
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().message(), shards + ": no .npz or .npy shards in the directory");

  ASSERT_TRUE(io::WriteNpyAtomic(shards + "/a.npy", Shard({1}, {1}, {0})).ok());
  data = LoadDataset(shards, "digit");
  ASSERT_FALSE(data.ok());
  EXPECT_THAT(data.status().message(), HasSubstr("a.npy: label_column 'digit' is not a column"));

  io::Table other;
  ASSERT_TRUE(other.AddColumn(io::Column::Float32("f", {1})).ok());
  ASSERT_TRUE(other.AddColumn(io::Column::Int32("label", {0})).ok());
  ASSERT_TRUE(io::WriteNpyAtomic(shards + "/b.npy", other).ok());
  data = LoadDataset(shards, "label");
  ASSERT_FALSE(data.ok());
  EXPECT_THAT(data.status().message(), HasSubstr("b.npy: columns f (float32), label (int32) "
                                                 "differ from"));

  fs::remove(shards + "/b.npy");
  io::Table fractional;
  ASSERT_TRUE(fractional.AddColumn(io::Column::Float32("f", {1, 2})).ok());
  ASSERT_TRUE(fractional.AddColumn(io::Column::Float32("label", {1, 1.5f})).ok());
  ASSERT_TRUE(io::WriteNpyAtomic(dir_->File("frac/a.npy"), fractional).ok());
  data = LoadDataset(dir_->File("frac"), "label");
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(data.status().message(),
              HasSubstr("a.npy: row 1, column 'label': 1.5 is not a class index"));
}

// Row r holds features (r, -r) and label r % 7, so a row's identity survives any reordering.
Dataset Numbered(size_t rows) {
  Dataset data;
  data.rows = rows;
  data.features = 2;
  data.num_classes = 7;
  for (size_t r = 0; r < rows; ++r) {
    data.x.push_back(static_cast<float>(r));
    data.x.push_back(-static_cast<float>(r));
    data.y.push_back(static_cast<int32_t>(r % 7));
  }
  return data;
}

std::vector<uint32_t> RowIds(const Dataset& part) {
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < part.rows; ++i) {
    const auto r = static_cast<uint32_t>(part.x[i * 2]);
    EXPECT_EQ(part.x[i * 2 + 1], -part.x[i * 2]);
    EXPECT_EQ(part.y[i], static_cast<int32_t>(r % 7));
    ids.push_back(r);
  }
  return ids;
}

TEST(TrainSplitTest, SizesAndEveryRowOnce) {
  const Split split = SplitDataset(Numbered(100), 0.25, 7);
  EXPECT_EQ(split.train.rows, 75u);
  EXPECT_EQ(split.test.rows, 25u);
  EXPECT_EQ(split.test.features, 2u);
  EXPECT_EQ(split.train.num_classes, 7u);
  std::vector<uint32_t> all = RowIds(split.train);
  const std::vector<uint32_t> test = RowIds(split.test);
  all.insert(all.end(), test.begin(), test.end());
  std::vector<uint32_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  std::vector<uint32_t> expected(100);
  std::iota(expected.begin(), expected.end(), 0u);
  EXPECT_EQ(sorted, expected);
  EXPECT_NE(all, expected);  // shuffled, not just cut

  EXPECT_EQ(SplitDataset(Numbered(10), 0.25, 7).test.rows, 3u);  // round(2.5) = 3
  EXPECT_EQ(SplitDataset(Numbered(10), 0.0, 7).test.rows, 0u);
}

// The split evaluate reproduces: train is the permutation's first rows in its order, test the
// last ones — made in the loaded rows' own memory, so a rank holds its dataset once.
TEST(TrainSplitTest, InPlaceAndTheRowsEvaluateReproduces) {
  Dataset data = Numbered(1001);
  const float* loaded = data.x.data();
  const std::vector<uint32_t> order = ops::SeededPermutation(1001, 13);
  const Split split = SplitDataset(std::move(data), 0.2, 13);
  const size_t test_rows = ops::HeldOutCount(1001, 0.2);
  ASSERT_EQ(split.test.rows, test_rows);
  const std::vector<uint32_t> train_ids = RowIds(split.train);
  const std::vector<uint32_t> test_ids = RowIds(split.test);
  EXPECT_EQ(train_ids, std::vector<uint32_t>(order.begin(), order.end() - test_rows));
  EXPECT_EQ(test_ids, std::vector<uint32_t>(order.end() - test_rows, order.end()));
  EXPECT_EQ(split.train.x.data(), loaded);  // no second copy of the training rows
}

TEST(TrainSplitTest, SameSeedSameSplitOtherSeedOther) {
  const Dataset data = Numbered(200);
  const Split a = SplitDataset(data, 0.2, 42);
  const Split b = SplitDataset(data, 0.2, 42);
  const Split c = SplitDataset(data, 0.2, 43);
  EXPECT_EQ(RowIds(a.train), RowIds(b.train));
  EXPECT_EQ(RowIds(a.test), RowIds(b.test));
  EXPECT_NE(RowIds(a.test), RowIds(c.test));
}

bool IsPermutation(std::vector<uint32_t> order) {
  std::sort(order.begin(), order.end());
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] != i) return false;
  }
  return true;
}

TEST(TrainEpochOrderTest, PermutationsThatDifferPerEpochAndSeed) {
  const std::vector<uint32_t> e0 = EpochOrder(1000, 1234, 0);
  const std::vector<uint32_t> e1 = EpochOrder(1000, 1234, 1);
  ASSERT_EQ(e0.size(), 1000u);
  EXPECT_TRUE(IsPermutation(e0));
  EXPECT_TRUE(IsPermutation(e1));
  EXPECT_NE(e0, e1);
  EXPECT_NE(e0, EpochOrder(1000, 1235, 0));
  EXPECT_EQ(e0, EpochOrder(1000, 1234, 0));
  EXPECT_TRUE(EpochOrder(0, 1, 0).empty());
  EXPECT_THAT(EpochOrder(1, 1, 0), ElementsAre(0u));
}

// Pinned: these values define the batches every run with seed 1234 sees. A change here means
// the shuffling algorithm changed and old runs no longer reproduce; only update it on purpose.
TEST(TrainEpochOrderTest, GoldenValuesForSeed1234) {
  const std::vector<uint32_t> order = EpochOrder(1797, 1234, 0);
  EXPECT_THAT(std::vector<uint32_t>(order.begin(), order.begin() + 8),
              ElementsAre(1354u, 200u, 686u, 841u, 1496u, 1501u, 1738u, 380u));
  const std::vector<uint32_t> small = EpochOrder(10, 1234, 0);
  EXPECT_THAT(small, ElementsAre(4u, 2u, 3u, 1u, 9u, 5u, 6u, 8u, 0u, 7u));
}

TEST(TrainGatherTest, CopiesTheChosenRows) {
  const Dataset data = Numbered(5);
  const std::vector<uint32_t> rows = {4, 0, 4};
  std::vector<float> x(6);
  std::vector<int32_t> y(3);
  GatherRows(data, rows, x.data(), y.data());
  EXPECT_THAT(x, ElementsAre(4, -4, 0, 0, 4, -4));
  EXPECT_THAT(y, ElementsAre(4, 0, 4));
}

TEST(TrainDigitsTest, LoadsTheDigitsCsv) {
  const fs::path path = fs::path(COUPLER_SOURCE_DIR) / "data/digits.csv";
  if (!fs::exists(path)) GTEST_SKIP() << path << " absent (scripts/fetch-digits.sh writes it)";
  Result<Dataset> data = LoadDataset(path.string(), "label");
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->rows, 1797u);
  EXPECT_EQ(data->features, 64u);
  EXPECT_EQ(data->num_classes, 10u);
  // Pixels are intensities 0..16.
  EXPECT_EQ(*std::min_element(data->x.begin(), data->x.end()), 0.0f);
  EXPECT_EQ(*std::max_element(data->x.begin(), data->x.end()), 16.0f);
  EXPECT_EQ(data->y[0], 0);  // the file's first digit is a 0
}

}  // namespace
}  // namespace coupler::train
