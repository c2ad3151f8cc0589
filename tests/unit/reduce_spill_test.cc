// A reduce past its budget: shuffle files cut into chunks, each written as a sorted run, runs
// merged down in passes to a few, and those merged a window at a time must give the rows a
// stable sort of all of them gives — string
// keys compared by text across files with different dictionaries, missing keys last, equal keys
// in input order — whatever the window and batch sizes, down to one row.
#include "worker/ops/reduce_spill.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/io/npz_file.h"
#include "runtime/io/temp_dir.h"

namespace coupler::worker {
namespace {

namespace fs = std::filesystem;

io::Column Strings(std::string name, std::vector<int32_t> codes, io::Column::Dictionary dictionary) {
  io::Column c = io::Column::Int32(std::move(name), std::move(codes));
  c.set_dictionary(std::make_shared<const io::Column::Dictionary>(std::move(dictionary)));
  return c;
}

// A shuffle file: key (string), then `seq`, the row's place in the input.
io::Table File(std::vector<int32_t> codes, io::Column::Dictionary dictionary, int64_t first_seq) {
  io::Table t;
  std::vector<int64_t> seq(codes.size());
  for (size_t i = 0; i < seq.size(); ++i) seq[i] = first_seq + static_cast<int64_t>(i);
  EXPECT_TRUE(t.AddColumn(Strings("key", std::move(codes), std::move(dictionary))).ok());
  EXPECT_TRUE(t.AddColumn(io::Column::Int64("seq", std::move(seq))).ok());
  return t;
}

// (key text or "~" for missing, seq) of each row.
std::vector<std::pair<std::string, int64_t>> Rows(const io::Table& t) {
  std::vector<std::pair<std::string, int64_t>> rows;
  const io::Column& key = t.column(0);
  for (size_t r = 0; r < t.rows(); ++r) {
    const int32_t code = key.values<int32_t>()[r];
    rows.emplace_back(code < 0 ? "~" : (*key.dictionary())[static_cast<size_t>(code)],
                      t.column(1).values<int64_t>()[r]);
  }
  return rows;
}

class ReduceSpillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = io::TempDir::Create("reduce-spill-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_.emplace(std::move(dir).value());
    // Three map tasks' files of one partition, each with its own dictionary.
    files_ = {File({0, 1, 0, -1, 2, 1, 0}, {"pear", "apple", "fig"}, 0),
              File({1, 1, 0, -1}, {"fig", "apple"}, 100),
              File({0, 0, 1, 2, 0}, {"apple", "zucchini", "pear"}, 200)};
    for (size_t i = 0; i < files_.size(); ++i) {
      paths_.push_back(dir_->File("map-" + std::to_string(i) + ".p00000.npz"));
      ASSERT_TRUE(io::WriteNpzAtomic(paths_.back(), files_[i]).ok());
      for (const auto& row : Rows(files_[i])) expected_.push_back(row);
    }
    // What merging must give: a stable sort by key text, missing last.
    std::stable_sort(expected_.begin(), expected_.end(), [](const auto& a, const auto& b) {
      if (a.first == "~" || b.first == "~") return a.first != "~" && b.first == "~";
      return a.first < b.first;
    });
  }

  std::optional<io::TempDir> dir_;
  std::vector<io::Table> files_;
  std::vector<std::string> paths_;
  std::vector<std::pair<std::string, int64_t>> expected_;
};

TEST_F(ReduceSpillTest, ChunksSortedIntoRunsAndMergedGiveAStableSortAtAnyWindowSize) {
  wire::TaskSpec spec;
  spec.shard_index = 0;
  const OpContext context{spec, nullptr, {}, nullptr, nullptr};
  const std::vector<relational::SortKey> order(1);
  // chunk, window and batch sizes in bytes; a row here is 12 bytes.
  for (const auto& [chunk, window, batch] :
       {std::tuple<uint64_t, uint64_t, uint64_t>{1, 1, 1}, {24, 36, 12}, {36, 1000, 24}, {1 << 20, 1 << 20, 1 << 20}}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk) + ", window " + std::to_string(window) +
                 ", batch " + std::to_string(batch));
    OpReport report;
    std::string spill_path;
    {
      auto spill = SpillDir::Create(dir_->File("part-00000.npz"));
      ASSERT_TRUE(spill.ok()) << spill.status().ToString();
      auto runs = WriteSortedRuns(context, report, paths_, {"key"}, order, spill->path(), chunk);
      ASSERT_TRUE(runs.ok()) << runs.status().ToString();
      const size_t chunk_rows = std::max<uint64_t>(1, chunk / 12);
      size_t want_runs = 0;
      for (const io::Table& f : files_) want_runs += (f.rows() + chunk_rows - 1) / chunk_rows;
      EXPECT_EQ(runs->size(), want_runs);
      EXPECT_EQ(report.rows_in, expected_.size());
      // Merged two at a time in passes down to two runs, then merged.
      auto fewer = MergeDown(context, report, std::move(runs).value(), {"key"}, order,
                             spill->path(), window * 16, 2);
      ASSERT_TRUE(fewer.ok()) << fewer.status().ToString();
      EXPECT_EQ(fewer->size(), std::min<size_t>(want_runs, 2));
      RunMerger merger(std::move(fewer).value(), {"key"}, order, window, batch);
      std::vector<std::pair<std::string, int64_t>> got;
      size_t batches = 0;
      while (!merger.done()) {
        auto next = merger.Next(report);
        ASSERT_TRUE(next.ok()) << next.status().ToString();
        EXPECT_LE(next->rows(), std::max<uint64_t>(1, batch / 12));
        for (const auto& row : Rows(*next)) got.push_back(row);
        ASSERT_LT(++batches, 1000u);
      }
      EXPECT_EQ(got, expected_);
      spill_path = spill->path();
    }  // the runs go with their directory
    EXPECT_FALSE(fs::exists(spill_path));
  }
}

TEST_F(ReduceSpillTest, RangesOfSortedFilesMergeWithoutASpill) {
  // Each file sorted on its own (a sort's map output), then rows [1, n-1) of each merged.
  std::vector<SortedRun> runs;
  std::vector<std::pair<std::string, int64_t>> want;
  const std::vector<relational::SortKey> order(1);
  for (size_t i = 0; i < files_.size(); ++i) {
    std::vector<std::pair<std::string, int64_t>> rows = Rows(files_[i]);
    std::vector<uint32_t> idx(rows.size());
    for (uint32_t r = 0; r < idx.size(); ++r) idx[r] = r;
    std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) {
      const std::vector<size_t> k{0};
      return relational::CompareRows(files_[i], k, a, files_[i], k, b, order) < 0;
    });
    const std::string path = dir_->File("sorted-" + std::to_string(i) + ".npz");
    ASSERT_TRUE(io::WriteNpzAtomic(path, relational::TakeRows(files_[i], idx)).ok());
    for (size_t r = 1; r + 1 < idx.size(); ++r) want.push_back(rows[idx[r]]);
    runs.push_back(SortedRun{path, 1, idx.size() - 1});
  }
  std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) {
    if (a.first == "~" || b.first == "~") return a.first != "~" && b.first == "~";
    return a.first < b.first;
  });
  RunMerger merger(std::move(runs), {"key"}, order, 30, 24);
  OpReport report;
  std::vector<std::pair<std::string, int64_t>> got;
  while (!merger.done()) {
    auto next = merger.Next(report);
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    for (const auto& row : Rows(*next)) got.push_back(row);
  }
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace coupler::worker
