// The digits preprocessing pipeline on a coordinator and two worker processes, checked against a
// single-process reference computed here from the CSV: standardized columns have mean 0 and
// stddev 1, filter_map matches the plain scalar loop bit for bit, in row order across shards.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstring>

#include "runtime/io/shard_file.h"
#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

struct Csv {
  std::vector<std::string> names;
  std::vector<std::vector<float>> columns;  // every column, as float32
};

// The reference reader: one line per row, comma-separated, parsed with from_chars like the
// CSV kernel (the digits are small integers, so any correct parse agrees exactly).
Csv ReadCsv(const fs::path& path) {
  Csv csv;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::stringstream header(line);
  for (std::string name; std::getline(header, name, ',');) csv.names.push_back(name);
  csv.columns.resize(csv.names.size());
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    size_t col = 0;
    size_t pos = 0;
    while (col < csv.names.size()) {
      const size_t comma = std::min(line.find(',', pos), line.size());
      float v = 0;
      std::from_chars(line.data() + pos, line.data() + comma, v);
      csv.columns[col++].push_back(v);
      pos = comma + 1;
    }
  }
  return csv;
}

// Every shard of a node's output, in shard order, concatenated column by column.
struct Concatenated {
  size_t shards = 0;
  size_t rows = 0;
  std::map<std::string, std::vector<float>> f32;
  std::map<std::string, std::vector<int32_t>> i32;
  std::vector<std::string> int64;  // int64 columns, kept in f32 too (the digits are exact there)
  std::vector<std::string> order;  // column names as stored
};

Concatenated ReadNode(const fs::path& dir, int shards) {
  Concatenated all;
  for (int s = 0; s < shards; ++s) {
    auto table = io::ReadShardFile((dir / PartName(s)).string());
    EXPECT_TRUE(table.ok()) << table.status().ToString();
    if (!table.ok()) continue;
    ++all.shards;
    all.rows += table->rows();
    if (s == 0) {
      for (const auto& c : table->columns()) all.order.push_back(c.name());
    }
    for (const auto& c : table->columns()) {
      if (c.dtype() == ElementType::kFloat32) {
        auto v = c.values<float>();
        all.f32[c.name()].insert(all.f32[c.name()].end(), v.begin(), v.end());
      } else if (c.dtype() == ElementType::kInt32) {
        auto v = c.values<int32_t>();
        all.i32[c.name()].insert(all.i32[c.name()].end(), v.begin(), v.end());
      } else if (c.dtype() == ElementType::kInt64) {
        if (s == 0) all.int64.push_back(c.name());
        for (const int64_t v : c.values<int64_t>()) {
          all.f32[c.name()].push_back(static_cast<float>(v));
        }
      } else {
        ADD_FAILURE() << "unexpected dtype in column " << c.name();
      }
    }
  }
  return all;
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

TEST(DigitsPipelineTest, TwoWorkersMatchSingleProcessReference) {
  const fs::path csv_path = kSourceDir / "data" / "digits.csv";
  ASSERT_TRUE(fs::exists(csv_path)) << csv_path << " is missing: run scripts/fetch-digits.sh";
  const Csv csv = ReadCsv(csv_path);
  const size_t rows = csv.columns.at(0).size();
  ASSERT_EQ(rows, 1797u);
  ASSERT_EQ(csv.names.back(), "label");

  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  cluster.StartWorker("w2", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();

  constexpr int kShards = 5;
  const fs::path spec = cluster.dir() / "digits.yaml";
  WriteFile(spec, "name: it-digits\n"
                  "workdir: work\n"
                  "nodes:\n"
                  "  - id: import\n"
                  "    op: import_csv\n"
                  "    inputs: [" + csv_path.string() + "]\n"
                  "    params: {shards: " + std::to_string(kShards) + ", label_column: label}\n"
                  "  - id: stats\n"
                  "    op: column_stats\n"
                  "    inputs: [import]\n"
                  "  - id: standardize\n"
                  "    op: standardize\n"
                  "    inputs: [import, stats]\n"
                  "  - id: features\n"
                  "    op: filter_map\n"
                  "    inputs: [import]\n"
                  "    params: {a: p20, b: p28, threshold: 16, out: ink}\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  const auto final_status = cluster.WaitJobFinished(job);
  ASSERT_TRUE(final_status) << cluster.Logs();
  ASSERT_EQ(final_status->state, "succeeded") << final_status->error << "\n" << cluster.Logs();
  // 5 imports + 5 stats maps + 1 reduce + 5 standardize + 5 filter_map, each run once.
  EXPECT_EQ(final_status->total, 21u);
  EXPECT_EQ(final_status->done, 21u);
  for (const auto& [id, node] : final_status->nodes) EXPECT_EQ(node.state, "done") << id;

  const fs::path work = cluster.dir() / "work" / "latest";
  const size_t features = csv.names.size() - 1;  // p0..p63

  // import: the CSV, in order, split over the shards.
  const Concatenated imported = ReadNode(work / "import", kShards);
  ASSERT_EQ(imported.shards, static_cast<size_t>(kShards));
  ASSERT_EQ(imported.rows, rows);
  // The pixels are integers: int64 columns, exactly the file's values.
  EXPECT_EQ(imported.int64.size(), features);
  for (size_t c = 0; c < features; ++c) {
    ASSERT_EQ(imported.f32.at(csv.names[c]), csv.columns[c]) << csv.names[c];
  }
  ASSERT_EQ(imported.i32.at("label").size(), rows);
  for (size_t r = 0; r < rows; ++r) {
    ASSERT_EQ(imported.i32.at("label")[r], static_cast<int32_t>(csv.columns.back()[r]));
  }
  EXPECT_TRUE(fs::exists(work / "stats" / PartName(0)));

  // standardize: per column mean 0 and population stddev 1 over the whole data set (constant
  // columns, which carry no information, become 0), and each value matches the reference.
  const Concatenated standardized = ReadNode(work / "standardize", kShards);
  ASSERT_EQ(standardized.rows, rows);
  EXPECT_EQ(standardized.i32.at("label"), imported.i32.at("label"));
  size_t non_constant = 0;
  for (size_t c = 0; c < features; ++c) {
    const std::vector<float>& x = csv.columns[c];
    double ref_mean = 0;
    for (float v : x) ref_mean += v;
    ref_mean /= static_cast<double>(rows);
    double ref_m2 = 0;
    for (float v : x) ref_m2 += (v - ref_mean) * (v - ref_mean);
    const double ref_std = std::sqrt(ref_m2 / static_cast<double>(rows));

    const std::vector<float>& z = standardized.f32.at(csv.names[c]);
    ASSERT_EQ(z.size(), rows);
    double mean = 0;
    for (float v : z) mean += v;
    mean /= static_cast<double>(rows);
    double m2 = 0;
    for (float v : z) m2 += (v - mean) * (v - mean);
    const double stddev = std::sqrt(m2 / static_cast<double>(rows));
    EXPECT_NEAR(mean, 0.0, 1e-5) << csv.names[c];
    if (ref_std == 0) {
      for (float v : z) ASSERT_EQ(v, 0.0f) << "constant column " << csv.names[c];
      continue;
    }
    ++non_constant;
    EXPECT_NEAR(stddev, 1.0, 1e-5) << csv.names[c];
    for (size_t r = 0; r < rows; ++r) {
      ASSERT_NEAR(z[r], (x[r] - ref_mean) / ref_std, 1e-5) << csv.names[c] << " row " << r;
    }
  }
  EXPECT_GT(non_constant, 50u);  // the digits have a few all-zero border pixels, not more

  // filter_map: the plain scalar loop, row order across shards, bit for bit.
  const std::vector<float>& a = csv.columns[20];
  const std::vector<float>& b = csv.columns[28];
  ASSERT_EQ(csv.names[20], "p20");
  ASSERT_EQ(csv.names[28], "p28");
  std::vector<size_t> kept_rows;
  std::vector<float> ink;
  for (size_t r = 0; r < rows; ++r) {
    const float v = a[r] * b[r];
    if (v > 16.0f) {
      kept_rows.push_back(r);
      ink.push_back(std::sqrt(v));
    }
  }
  ASSERT_GT(kept_rows.size(), 0u);
  ASSERT_LT(kept_rows.size(), rows);
  const Concatenated filtered = ReadNode(work / "features", kShards);
  ASSERT_EQ(filtered.rows, kept_rows.size());
  ASSERT_EQ(filtered.order.back(), "ink");
  const std::vector<float>& got_ink = filtered.f32.at("ink");
  for (size_t i = 0; i < ink.size(); ++i) {
    ASSERT_TRUE(SameBits(got_ink[i], ink[i])) << "row " << i << ": " << got_ink[i] << " vs "
                                              << ink[i];
  }
  for (size_t c = 0; c < features; ++c) {
    const std::vector<float>& got = filtered.f32.at(csv.names[c]);
    for (size_t i = 0; i < kept_rows.size(); ++i) {
      ASSERT_TRUE(SameBits(got[i], csv.columns[c][kept_rows[i]])) << csv.names[c] << " row " << i;
    }
  }
  for (size_t i = 0; i < kept_rows.size(); ++i) {
    ASSERT_EQ(filtered.i32.at("label")[i], static_cast<int32_t>(csv.columns.back()[kept_rows[i]]));
  }
}

}  // namespace
}  // namespace coupler::itest
