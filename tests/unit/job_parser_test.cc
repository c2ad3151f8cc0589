#include "runtime/job/job_parser.h"

#include <malloc.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace coupler::job {
namespace {

using ::testing::HasSubstr;

TEST(JobParserTest, ReadsEveryNodeField) {
  Diagnostics d("job.yaml");
  auto g = ParseJobSpec(R"(name: demo
workdir: out
priority: 3
nodes:
  - id: a
    op: noop
    inputs: [x, y]
    params: {tasks: 4, note: "8"}
    resources: {cpus: 0.5, gpu_memory: 4GiB, memory: 1GB}
    coupling: loose
    ranks: 1
    retries: 5
)", d);
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(d.empty()) << d.ToString();
  EXPECT_EQ(g->name, "demo");
  EXPECT_EQ(g->workdir, "out");
  EXPECT_EQ(g->priority, 3);
  ASSERT_EQ(g->nodes.size(), 1u);
  const NodeSpec& n = g->nodes[0];
  EXPECT_EQ(n.id, "a");
  EXPECT_EQ(n.op, "noop");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(n.raw_params.at("tasks").text, "4");
  EXPECT_FALSE(n.raw_params.at("tasks").quoted);
  EXPECT_TRUE(n.raw_params.at("note").quoted);
  EXPECT_DOUBLE_EQ(n.resources.cpus, 0.5);
  EXPECT_EQ(n.resources.gpu_memory, 4ull << 30);
  EXPECT_EQ(n.resources.memory, 1'000'000'000ull);
  EXPECT_EQ(n.coupling, Coupling::kLoose);
  EXPECT_EQ(n.retries, 5);
  EXPECT_EQ(n.PosOf("op").line, 6);
  EXPECT_EQ(n.PosOf("op").column, 9);
  EXPECT_EQ(n.PosOf("inputs[1]").line, 7);
}

TEST(JobParserTest, AcceptsJson) {
  Diagnostics d("job.json");
  auto g = ParseJobSpec(R"({"name": "j", "nodes": [{"id": "a", "op": "noop", "params": {"tasks": 2}}]})", d);
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(d.empty()) << d.ToString();
  EXPECT_EQ(g->nodes.at(0).raw_params.at("tasks").text, "2");
}

TEST(JobParserTest, RejectsTextThatIsNotYaml) {
  Diagnostics d("bad.yaml");
  EXPECT_FALSE(ParseJobSpec("name: [unclosed\nnodes: {", d).has_value());
  EXPECT_THAT(d.ToString(), HasSubstr("bad.yaml:"));
  EXPECT_THAT(d.ToString(), HasSubstr("not valid YAML or JSON"));
}

TEST(JobParserTest, RejectsEmptyAndNonMappingDocuments) {
  Diagnostics empty("e.yaml");
  EXPECT_FALSE(ParseJobSpec("", empty).has_value());
  EXPECT_THAT(empty.ToString(), HasSubstr("empty spec"));
  Diagnostics list("l.yaml");
  EXPECT_FALSE(ParseJobSpec("- a\n- b\n", list).has_value());
  EXPECT_THAT(list.ToString(), HasSubstr("expected a mapping"));
}

TEST(JobParserTest, ReportsEveryStructuralErrorWithItsPosition) {
  Diagnostics d("job.yaml");
  auto g = ParseJobSpec(R"(name: j
nodez: 1
nodes:
  - id: a
    op: noop
    ranks: two
    colour: red
    resources: {cpus: -1, gpu_memory: 4 gigs}
)", d);
  ASSERT_TRUE(g.has_value());
  const std::string s = d.ToString();
  EXPECT_THAT(s, HasSubstr("job.yaml:2:1: error: field 'nodez': unknown top-level field 'nodez'; "
                           "did you mean 'nodes'?"));
  EXPECT_THAT(s, HasSubstr("job.yaml:6:12: error: node 'a': field 'ranks': expected an integer, got 'two'"));
  EXPECT_THAT(s, HasSubstr("job.yaml:7:5: error: node 'a': field 'colour': unknown field 'colour'"));
  EXPECT_THAT(s, HasSubstr("field 'resources.cpus': must be > 0"));
  EXPECT_THAT(s, HasSubstr("field 'resources.gpu_memory': expected a positive size"));
  EXPECT_EQ(d.size(), 5u);
}

// Resource sizes go through util::ParseByteSize, the parser flags and configs use, and a size
// it refuses (or zero) is reported at its line and column.
TEST(JobParserTest, ParsesResourceSizesWithTheOneByteSizeParser) {
  auto gpu_memory = [](const std::string& size, std::string* errors) -> uint64_t {
    Diagnostics d("job.yaml");
    auto g = ParseJobSpec("name: j\nnodes:\n  - id: a\n    op: noop\n    resources: {gpu_memory: " +
                              size + "}\n",
                          d);
    *errors = d.ToString();
    return g.has_value() && d.size() == 0 ? g->nodes.at(0).resources.gpu_memory : 0;
  };
  std::string errors;
  EXPECT_EQ(gpu_memory("4GiB", &errors), 4ull << 30);
  EXPECT_EQ(gpu_memory("512MiB", &errors), 512ull << 20);
  EXPECT_EQ(gpu_memory("1.5GB", &errors), 1'500'000'000ull);
  EXPECT_EQ(gpu_memory("4096", &errors), 4096ull);
  EXPECT_EQ(gpu_memory("2 KiB", &errors), 2048ull);
  EXPECT_EQ(gpu_memory("4G", &errors), 4ull << 30);
  EXPECT_EQ(gpu_memory("1.5B", &errors), 1u);  // as util::ParseByteSize floors it
  for (const char* bad : {"-1GiB", "4 gigs", "GiB", "0.5B", "99999999TiB"}) {
    EXPECT_EQ(gpu_memory(bad, &errors), 0u) << bad;
    EXPECT_THAT(errors, HasSubstr("job.yaml:5:29: error: node 'a': field 'resources.gpu_memory': "
                                  "expected a positive size such as 4GiB or 512MiB, got '" +
                                  std::string(bad) + "'"))
        << bad;
  }
}

TEST(JobParserTest, ReportsDuplicateKeys) {
  Diagnostics d("job.yaml");
  ParseJobSpec("name: j\nnodes:\n  - id: a\n    op: noop\n    op: clip\n", d);
  EXPECT_THAT(d.ToString(), HasSubstr("job.yaml:5:5: error: node 'a': field 'op': key given twice"));
}

TEST(JobParserTest, CapsTheNumberOfReportedErrors) {
  std::string yaml = "name: j\nnodes:\n";
  for (int i = 0; i < 50; ++i) yaml += "  - {id: n" + std::to_string(i) + ", op: noop, bogus: 1}\n";
  Diagnostics d("job.yaml", 10);
  ParseJobSpec(yaml, d);
  EXPECT_EQ(d.size(), 10u);
  EXPECT_EQ(d.total(), 50u);
  EXPECT_THAT(d.ToString(), HasSubstr("... and 40 more errors"));
}

TEST(JobParserTest, ReadsRequiredWorkerLabels) {
  Diagnostics d("job.yaml");
  auto g = ParseJobSpec(
      "name: j\nnodes:\n  - id: a\n    op: noop\n    requires: {interconnect: nvlink, zone: a}\n",
      d);
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(d.empty()) << d.ToString();
  EXPECT_EQ(g->nodes[0].required_labels,
            (std::map<std::string, std::string>{{"interconnect", "nvlink"}, {"zone", "a"}}));
}

TEST(JobParserTest, RejectsRequiresThatIsNotAMappingOfStrings) {
  Diagnostics d("job.yaml");
  ParseJobSpec(R"(name: j
nodes:
  - id: a
    op: noop
    requires: [nvlink]
  - id: b
    op: noop
    requires: {zone: {name: b}, rack: ""}
)", d);
  const std::string s = d.ToString();
  EXPECT_THAT(s, HasSubstr("job.yaml:5:15: error: node 'a': field 'requires': expected a mapping "
                           "of worker labels to values"));
  EXPECT_THAT(s, HasSubstr("node 'b': field 'requires.zone': expected a label value (a non-empty "
                           "string), got a mapping"));
  EXPECT_THAT(s, HasSubstr("node 'b': field 'requires.rack': expected a label value"));
  EXPECT_EQ(d.size(), 3u);
}


// A spec whose one param nests `lists` lists: root, nodes, node and params are 4 more levels.
std::string JsonNested(int lists) {
  return R"({"name": "j", "nodes": [{"id": "a", "op": "noop", "params": {"p": )" +
         std::string(lists, '[') + std::string(lists, ']') + "}}]}";
}
std::string YamlFlowNested(int lists) {
  return "name: j\nnodes:\n  - id: a\n    op: noop\n    params:\n      p: " +
         std::string(lists, '[') + std::string(lists, ']') + "\n";
}
std::string YamlBlockNested(int lists) {
  std::string text = "name: j\nnodes:\n  - id: a\n    op: noop\n    params:\n      p:\n        ";
  for (int i = 0; i < lists; ++i) text += "- ";
  return text + "x\n";
}

TEST(JobParserTest, ReadsSpecsNestedUpToTheLimitInEveryForm) {
  for (const std::string& text : {JsonNested(kMaxSpecDepth - 4), YamlFlowNested(kMaxSpecDepth - 4),
                                  YamlBlockNested(kMaxSpecDepth - 4)}) {
    Diagnostics d("job.yaml");
    auto g = ParseJobSpec(text, d);
    ASSERT_TRUE(g.has_value()) << d.ToString();
    EXPECT_TRUE(d.empty()) << d.ToString();
    // The innermost list is there, 60 levels down.
    const RawValue* v = &g->nodes.at(0).raw_params.at("p");
    for (int i = 1; i < kMaxSpecDepth - 4; ++i) {
      ASSERT_EQ(v->items.size(), 1u) << "level " << i;
      v = &v->items[0];
    }
    EXPECT_TRUE(v->IsSequence());
  }
}

TEST(JobParserTest, RefusesOneLevelPastTheLimitWithItsPosition) {
  struct Case {
    std::string text;
    const char* where;
  };
  for (const Case& c : {Case{JsonNested(kMaxSpecDepth - 3), "job.yaml:1:127: "},
                        Case{YamlFlowNested(kMaxSpecDepth - 3), "job.yaml:6:70: "},
                        Case{YamlBlockNested(kMaxSpecDepth - 3), "job.yaml:7:129: "}}) {
    Diagnostics d("job.yaml");
    EXPECT_FALSE(ParseJobSpec(c.text, d).has_value());
    EXPECT_EQ(d.ToString(), std::string(c.where) +
                                "error: nested more than 64 levels deep (lists and mappings "
                                "inside one another); a spec may nest at most 64\n");
  }
}

// An alias pastes its anchor's whole depth where it stands.
TEST(JobParserTest, CountsTheDepthAnAliasBrings) {
  const std::string anchored = "[" + std::string(40, '[') + std::string(40, ']') + "]";
  Diagnostics d("job.yaml");
  EXPECT_FALSE(ParseJobSpec("name: j\nnodes:\n  - id: a\n    op: noop\n    params:\n      p: &deep " +
                                anchored + "\n      q: " + std::string(30, '[') + "*deep" +
                                std::string(30, ']') + "\n",
                            d)
                   .has_value());
  EXPECT_THAT(d.ToString(), HasSubstr("job.yaml:7:40: error: nested more than 64 levels deep"));
}

TEST(JobParserTest, ReadsAnchorsAndAliasesUsedForReuse) {
  Diagnostics d("job.yaml");
  auto g = ParseJobSpec(
      "name: j\nnodes:\n  - {id: a, op: noop, resources: &small {cpus: 2, memory: 1GiB}}\n"
      "  - {id: b, op: noop, resources: *small}\n",
      d);
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(d.empty()) << d.ToString();
  EXPECT_DOUBLE_EQ(g->nodes.at(1).resources.cpus, 2.0);
  EXPECT_EQ(g->nodes.at(1).resources.memory, 1ull << 30);
}

TEST(JobParserTest, RefusesAnAliasBombAtTheAliasThatPassesTheBudget) {
  std::string text = "name: j\nnodes: []\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    text += std::string(1, c) + ": &" + c + " [";
    for (int k = 0; k < 9; ++k) text += std::string(k ? ", " : "") + "*" + static_cast<char>(c - 1);
    text += "]\n";
  }
  Diagnostics d("bomb.yaml");
  EXPECT_FALSE(ParseJobSpec(text, d).has_value());
  EXPECT_EQ(d.ToString(),
            "bomb.yaml:7:4: error: anchors and aliases (&name, *name) up to here copy more than "
            "100,000 values; a spec may copy at most that many (write the values out instead)\n");
}


// A refused spec leaves nothing behind: the heap in use returns to where it was.
TEST(JobParserTest, KeepsNoMemoryAfterARefusedSpec) {
  std::string bomb = "name: j\nnodes: []\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int k = 0; k < 9; ++k) bomb += std::string(k ? ", " : "") + "*" + static_cast<char>(c - 1);
    bomb += "]\n";
  }
  const std::string deep = R"({"name": "j", "nodes": )" + std::string(100'000, '[') +
                           std::string(100'000, ']') + "}";
  for (const std::string& text : {bomb, deep}) {
    Diagnostics warm("job.yaml");
    ParseJobSpec(text, warm);  // first use allocates what stays for the process (yaml-cpp, fmt)
    const size_t before = mallinfo2().uordblks;
    Diagnostics d("job.yaml");
    EXPECT_FALSE(ParseJobSpec(text, d).has_value());
    EXPECT_EQ(d.size(), 1u) << d.ToString();
    const size_t after = mallinfo2().uordblks;
    EXPECT_LT(after, before + (64 << 10)) << "heap in use grew from " << before << " to " << after;
  }
}

}  // namespace
}  // namespace coupler::job
