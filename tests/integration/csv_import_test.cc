// `coupler run` on a CSV the way it comes: a string column (with quoted commas and doubled
// quotes) and gaps in both columns, through import_csv -> column_stats -> standardize on two
// workers. Reading the shards back, codes and the dictionary sidecars give the original
// strings in order, the stats skip the gaps as pandas does, and the gaps stay missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/integration/coupler_cluster.h"
#include "worker/ops/shard_io.h"
#include "worker/ops/stats_file.h"

namespace coupler::itest {
namespace {

// The shards a node wrote, in shard order, wherever the run put its directory.
std::vector<fs::path> NodeShards(const fs::path& workdir, const std::string& node) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(workdir, ec)) {
    const fs::path& p = e.path();
    if (p.parent_path().filename() == node && p.extension() == ".npz" &&
        p.filename().string().rfind("part-", 0) == 0) {
      out.push_back(p);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(CsvImportRunTest, StringsAndGapsSurviveImportStatsAndStandardize) {
  TempDir scratch;
  const std::vector<std::string> cities = {"Paris", "New York, NY", "say \"hi\"", "Lyon"};
  std::vector<std::string> want_city;  // "" for missing
  std::vector<double> want_x;          // NaN for missing
  {
    std::ofstream csv(scratch.path() / "people.csv");
    csv << "id,city,x,label\n";
    for (int r = 0; r < 90; ++r) {
      std::string city = cities[static_cast<size_t>(r * 7 % 4)];
      std::string field = city;
      if (city.find_first_of(",\"") != std::string::npos) {
        field = "\"";
        for (const char c : city) field += c == '"' ? std::string("\"\"") : std::string(1, c);
        field += "\"";
      }
      if (r % 11 == 5) {
        city.clear();
        field = r % 2 == 0 ? "" : "NA";
      }
      const bool gap = r % 9 == 4;
      const double x = r * 0.25 - 3.0;
      csv << r << "," << field << "," << (gap ? (r % 2 == 0 ? "" : "nan") : std::to_string(x))
          << "," << r % 3 << "\n";
      want_city.push_back(city);
      want_x.push_back(gap ? NAN : x);
    }
    std::ofstream spec(scratch.path() / "csv-gaps.yaml");
    spec << "name: csv-gaps\nworkdir: out\nnodes:\n"
            "  - id: import\n    op: import_csv\n    inputs: [people.csv]\n"
            "    params: {shards: 3, label_column: label, columns: [city, x, label]}\n"
            "  - {id: stats, op: column_stats, inputs: [import]}\n"
            "  - {id: scaled, op: standardize, inputs: [import, stats]}\n";
  }
  const CommandResult r = RunToEnd({kCoupler, "run", "csv-gaps.yaml", "--workers", "2"},
                                   scratch.path(), 120s, scratch.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  const fs::path workdir = scratch.path() / "out";
  const std::vector<fs::path> imported = NodeShards(workdir, "import");
  ASSERT_EQ(imported.size(), 3u) << r.out;
  std::vector<std::string> got_city;
  std::vector<double> got_x;
  for (const fs::path& shard : imported) {
    EXPECT_FALSE(fs::exists(shard.string() + ".dict.json")) << shard;  // a member, not beside
    worker::OpReport report;
    auto table = worker::ReadShard(shard.string(), report);
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    ASSERT_EQ(table->Describe(), "city (int32), x (float32), label (int32)");
    const io::Column& city = table->column(0);
    ASSERT_TRUE(city.categorical()) << shard;
    for (const int32_t code : city.values<int32_t>()) {
      got_city.push_back(code < 0 ? "" : city.dictionary()->at(static_cast<size_t>(code)));
    }
    for (const float v : table->column(1).values<float>()) got_x.push_back(v);
  }
  EXPECT_EQ(got_city, want_city);
  ASSERT_EQ(got_x.size(), want_x.size());
  double sum = 0;
  size_t present = 0;
  for (size_t i = 0; i < want_x.size(); ++i) {
    if (std::isnan(want_x[i])) {
      EXPECT_TRUE(std::isnan(got_x[i])) << i;
      continue;
    }
    EXPECT_FLOAT_EQ(static_cast<float>(got_x[i]), static_cast<float>(want_x[i])) << i;
    sum += static_cast<double>(static_cast<float>(want_x[i]));
    ++present;
  }

  // The stats: x over the present values only; the categorical column is not summarized.
  std::vector<fs::path> stats_files;
  for (const auto& e : fs::recursive_directory_iterator(workdir)) {
    if (e.path().parent_path().filename() == "stats" && e.path().extension() == ".npz" &&
        e.path().filename().string().rfind("partial", 0) != 0) {
      stats_files.push_back(e.path());
    }
  }
  ASSERT_EQ(stats_files.size(), 1u);
  worker::OpReport report;
  auto stats_table = worker::ReadShard(stats_files[0].string(), report);
  ASSERT_TRUE(stats_table.ok()) << stats_table.status().ToString();
  auto stats = worker::StatsFromTable(*stats_table);
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats->size(), 1u);
  EXPECT_EQ((*stats)[0].column, "x");
  EXPECT_EQ((*stats)[0].moments.count, present);
  const double mean = sum / static_cast<double>(present);
  EXPECT_NEAR((*stats)[0].moments.mean, mean, 1e-9);

  // standardize: gaps stay NaN, the string column passes through with its dictionary.
  const std::vector<fs::path> scaled = NodeShards(workdir, "scaled");
  ASSERT_EQ(scaled.size(), 3u);
  std::vector<std::string> scaled_city;
  size_t row = 0;
  for (const fs::path& shard : scaled) {
    auto table = worker::ReadShard(shard.string(), report);
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    const io::Column* city = table->Find("city");
    ASSERT_TRUE(city != nullptr && city->categorical());
    for (const int32_t code : city->values<int32_t>()) {
      scaled_city.push_back(code < 0 ? "" : city->dictionary()->at(static_cast<size_t>(code)));
    }
    for (const float v : table->Find("x")->values<float>()) {
      EXPECT_EQ(std::isnan(v), std::isnan(want_x[row])) << row;
      if (!std::isnan(v)) {
        const double stddev = std::sqrt((*stats)[0].moments.m2 / static_cast<double>(present));
        EXPECT_NEAR(v, (static_cast<float>(want_x[row]) - mean) / stddev, 1e-5) << row;
      }
      ++row;
    }
  }
  EXPECT_EQ(scaled_city, want_city);
}

// A bad value past the part of the file the types come from fails the run with the
// line, the column and the hint.
TEST(CsvImportRunTest, TextInANumericColumnFailsWithLineColumnAndHint) {
  TempDir scratch;
  {
    std::ofstream csv(scratch.path() / "late.csv");
    csv << "a,b\n";
    for (int r = 0; r < 10500; ++r) csv << r << "," << r * 2 << ".5\n";
    csv << "10500,n/a-ish\n";
    std::ofstream spec(scratch.path() / "late.yaml");
    spec << "name: late\nworkdir: out\nnodes:\n"
            "  - {id: import, op: import_csv, inputs: [late.csv], params: {shards: 1}}\n";
  }
  const CommandResult r =
      RunToEnd({kCoupler, "run", "late.yaml", "--workers", "1"}, scratch.path(), 120s,
               scratch.path());
  EXPECT_NE(r.exit_code, 0) << r.out;
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find("line 10502, column 'b' (field 2): 'n/a-ish' is not a number"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("dtypes: {b: string}"), std::string::npos) << all;
}

}  // namespace
}  // namespace coupler::itest
