// `coupler run` of import_csv -> filter -> derive -> select on a small CSV: the rows kept and
// the values derived are the ones worked out by hand, across two shards and two workers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "runtime/io/shard_file.h"
#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

TEST(ExpressionPipelineTest, FilterDeriveSelectGiveTheHandComputedRows) {
  TempDir dir;
  // x0, x1, label. Kept: x0 > 0 and (x1 < 5 or label == 2).
  WriteFile(dir / "data.csv",
            "x0,x1,label\n"
            "1.5,2,0\n"    // kept: score = 1.5*2+1 = 4
            "-1,1,2\n"     // x0 <= 0
            "2,8,2\n"      // kept through label == 2: score = 17
            "3,9,1\n"      // x1 >= 5 and label 1
            "0.5,-4,1\n"   // kept: score = -1, root NaN
            "4,4.5,3\n");  // kept: score = 19
  WriteFile(dir / "spec.yaml",
            "name: expr-pipeline\n"
            "workdir: " + (dir / "work").string() + "\n"
            "nodes:\n"
            "  - id: import\n"
            "    op: import_csv\n"
            "    inputs: [data.csv]\n"
            "    params: {shards: 2, label_column: label}\n"
            "  - id: keep\n"
            "    op: filter\n"
            "    inputs: [import]\n"
            "    params: {where: \"x0 > 0 and (x1 < 5 or label == 2)\"}\n"
            "  - id: more\n"
            "    op: derive\n"
            "    inputs: [keep]\n"
            "    params:\n"
            "      columns: {s: \"x0 * x1 + 1\", r: \"sqrt(s)\"}\n"
            "  - id: out\n"
            "    op: select\n"
            "    inputs: [more]\n"
            "    params: {keep: [label, s, r], rename: {s: score}}\n");
  const CommandResult r = RunToEnd({kCoupler, "run", (dir / "spec.yaml").string(), "--workers", "2"},
                                   dir.path(), 120s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  std::vector<int32_t> labels;
  std::vector<float> scores, roots;
  for (int s = 0; s < 2; ++s) {
    auto t = io::ReadShardFile((dir / "work" / "latest" / "out" / PartName(s)).string());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    ASSERT_EQ(t->Describe(), "label (int32), score (float32), r (float32)");
    for (int32_t v : t->Find("label")->values<int32_t>()) labels.push_back(v);
    for (float v : t->Find("score")->values<float>()) scores.push_back(v);
    for (float v : t->Find("r")->values<float>()) roots.push_back(v);
  }
  EXPECT_THAT(labels, ::testing::ElementsAre(0, 2, 1, 3));
  EXPECT_THAT(scores, ::testing::ElementsAre(4.0f, 17.0f, -1.0f, 19.0f));
  ASSERT_EQ(roots.size(), 4u);
  EXPECT_EQ(roots[0], 2.0f);
  EXPECT_EQ(roots[1], std::sqrt(17.0f));
  EXPECT_TRUE(std::isnan(roots[2]));
  EXPECT_EQ(roots[3], std::sqrt(19.0f));

  // The four nodes are one fused chain: one task per shard ran them all, and only the last
  // node's shards were written; every node has its shards done and its own logs.
  const CommandResult plan = RunToEnd({kCoupler, "plan", (dir / "spec.yaml").string()}, dir.path(), 60s);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_THAT(plan.out, ::testing::HasSubstr(
                            "import (memory) -> keep (memory) -> more (memory) -> out"));
  const std::filesystem::path run = std::filesystem::canonical(dir / "work" / "latest");
  for (const char* node : {"import", "keep", "more", "out"}) {
    SCOPED_TRACE(node);
    const bool written = std::string(node) == "out";
    EXPECT_EQ(std::filesystem::exists(run / node / PartName(0)), written);
    EXPECT_EQ(std::filesystem::exists(run / node / PartName(1)), written);
    size_t logs = 0;
    for (const auto& f : std::filesystem::directory_iterator(run / node / "logs")) {
      logs += f.path().filename().string().ends_with(".stdout") ? 1 : 0;
    }
    EXPECT_EQ(logs, 2u) << "one log per shard's task";
  }
}

// `keep: true` writes a fused node's shards too, and changes nothing else.
TEST(ExpressionPipelineTest, KeepWritesAFusedNodesShardsAsTheyWere) {
  TempDir dir;
  WriteFile(dir / "data.csv", "x0,label\n1.5,0\n-1,2\n2,2\n3,1\n");
  WriteFile(dir / "spec.yaml",
            "name: keep-pipeline\n"
            "workdir: " + (dir / "work").string() + "\n"
            "nodes:\n"
            "  - {id: import, op: import_csv, inputs: [data.csv], params: {shards: 2}}\n"
            "  - {id: keep, op: filter, inputs: [import], keep: true, params: {where: \"x0 > 0\"}}\n"
            "  - {id: more, op: derive, inputs: [keep], params: {columns: {s: \"x0 * 2\"}}}\n");
  const CommandResult r = RunToEnd({kCoupler, "run", (dir / "spec.yaml").string(), "--workers", "2"},
                                   dir.path(), 120s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::filesystem::path run = std::filesystem::canonical(dir / "work" / "latest");
  std::vector<float> kept, doubled;
  for (int s = 0; s < 2; ++s) {
    EXPECT_FALSE(std::filesystem::exists(run / "import" / PartName(s)));
    auto k = io::ReadShardFile((run / "keep" / PartName(s)).string());
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    for (float v : k->Find("x0")->values<float>()) kept.push_back(v);
    auto m = io::ReadShardFile((run / "more" / PartName(s)).string());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    for (float v : m->Find("s")->values<float>()) doubled.push_back(v);
  }
  EXPECT_THAT(kept, ::testing::ElementsAre(1.5f, 2.0f, 3.0f));
  EXPECT_THAT(doubled, ::testing::ElementsAre(3.0f, 4.0f, 6.0f));
}

}  // namespace
}  // namespace coupler::itest
