#include "runtime/job/validator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/spec_test_util.h"

namespace coupler::job {
namespace {

using ::testing::HasSubstr;
using testing::Errors;
using testing::Load;

constexpr const char* kPipeline = R"(name: digits
nodes:
  - id: import
    op: import_csv
    inputs: [/data/digits.csv]
    params: {shards: 4, label_column: label}
  - id: stats
    op: column_stats
    inputs: [import]
  - id: std
    op: standardize
    inputs: [import, stats]
  - id: train
    op: train
    inputs: [std]
    ranks: 2
    params: {config: /cfg/train.yaml, precision: bf16, micro_batch: auto}
)";

TEST(ValidatorTest, AcceptsAValidPipelineAndTypesItsParams) {
  LoadedJob j = Load(kPipeline);
  ASSERT_TRUE(j.ok()) << Errors(j);
  const NodeSpec& import = j.graph->nodes[0];
  EXPECT_EQ(std::get<int64_t>(import.params.at("shards")), 4);
  EXPECT_EQ(std::get<bool>(import.params.at("header")), true);  // default filled in
  EXPECT_EQ(import.resolved_inputs.at(0).kind, InputRef::Kind::kFile);
  const NodeSpec& train = j.graph->nodes[3];
  EXPECT_EQ(std::get<std::string>(train.params.at("micro_batch")), "auto");
  EXPECT_EQ(std::get<std::string>(train.params.at("config")), "/cfg/train.yaml");
  EXPECT_EQ(j.graph->workdir.substr(j.graph->workdir.size() - 20), "/coupler-work/digits");
}

TEST(ValidatorTest, ResolvesRelativePathsAgainstTheSpecDirectory) {
  LoadedJob j = Load("name: j\nworkdir: ../out\nnodes:\n  - {id: a, op: clip, inputs: [../data/shards], params: {min: 0, max: 1}}\n");
  ASSERT_TRUE(j.ok()) << Errors(j);
  EXPECT_EQ(j.graph->nodes[0].resolved_inputs[0].path, "/data/shards");
  EXPECT_EQ(j.graph->nodes[0].resolved_inputs[0].shards, 4);
  EXPECT_EQ(j.graph->workdir, "/out");
}

struct BadSpec {
  const char* name;
  const char* yaml;
  const char* expected;
};

class ValidatorErrorTest : public ::testing::TestWithParam<BadSpec> {};

TEST_P(ValidatorErrorTest, ReportsTheProblemWithNodeFieldAndPosition) {
  LoadedJob j = Load(GetParam().yaml);
  EXPECT_FALSE(j.ok());
  EXPECT_THAT(Errors(j), HasSubstr(GetParam().expected));
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, ValidatorErrorTest,
    ::testing::Values(
        BadSpec{"DuplicateId", "name: j\nnodes:\n  - {id: a, op: noop}\n  - {id: a, op: noop}\n",
                "job.yaml:4:10: error: node 'a': field 'id': duplicate node id (first defined at line 3)"},
        BadSpec{"UnknownOp", "name: j\nnodes:\n  - {id: a, op: colum_stats}\n",
                "job.yaml:3:17: error: node 'a': field 'op': unknown op 'colum_stats'; did you mean 'column_stats'?"},
        BadSpec{"UnknownParam", "name: j\nnodes:\n  - {id: a, op: noop, params: {taks: 3}}\n",
                "node 'a': field 'params.taks': unknown parameter 'taks' for op 'noop'; did you mean 'tasks'?"},
        BadSpec{"MissingParam", "name: j\nnodes:\n  - {id: a, op: clip, inputs: [/data/shards], params: {min: 1}}\n",
                "field 'params.max': missing required parameter 'max'"},
        BadSpec{"MistypedParam", "name: j\nnodes:\n  - {id: a, op: noop, params: {tasks: many}}\n",
                "job.yaml:3:39: error: node 'a': field 'params.tasks': expected an integer, got 'many'"},
        BadSpec{"QuotedNumber", "name: j\nnodes:\n  - {id: a, op: noop, params: {tasks: \"3\"}}\n",
                "expected an integer, got the string \"3\""},
        BadSpec{"OutOfRange", "name: j\nnodes:\n  - {id: a, op: import_csv, inputs: [/data/digits.csv], params: {shards: 0}}\n",
                "field 'params.shards': must be between 1 and 1000000, got 0"},
        BadSpec{"BadChoice", "name: j\nnodes:\n  - {id: a, op: cast, inputs: [/data/shards], params: {dtype: float8}}\n",
                "field 'params.dtype': must be one of float16, bfloat16, got 'float8'"},
        BadSpec{"BadChoiceInAList", "name: j\nnodes:\n  - {id: a, op: evaluate, inputs: [/data/shards, /data/shards], params: {precisions: [fp32, int4]}}\n",
                "field 'params.precisions': each must be one of fp32, bf16, int8, got 'int4'"},
        BadSpec{"BadPlaceholder", "name: j\nnodes:\n  - {id: a, op: exec, inputs: [/data/shards], params: {command: 'cp {inptu} {output}'}}\n",
                "unknown placeholder {inptu}; known: {input}, {output}, {shard}, {spec_dir}; did you mean 'input'?"},
        BadSpec{"PlaceholderInDoubleQuotes", "name: j\nnodes:\n  - {id: a, op: exec, inputs: [/data/shards], params: {command: 'cat \"{input}\" > {output}'}}\n",
                "job.yaml:3:65: error: node 'a': field 'params.command': placeholder {input} is inside double quotes, which undoes the shell quoting coupler gives its value (a file name could then run commands); drop the quotes: coupler quotes the value of {input} itself"},
        BadSpec{"PlaceholderInSingleQuotes", "name: j\nnodes:\n  - {id: a, op: exec, inputs: [/data/shards], params: {command: \"sh -c 'cp {input} {output}'\"}}\n",
                "field 'params.command': placeholder {input} is inside single quotes"},
        BadSpec{"MpiExecPlaceholderInQuotes", "name: j\nnodes:\n  - {id: t, op: mpi_exec, params: {command: \"mpirun -np {ranks} --hostfile '{hostfile}' x\"}}\n",
                "node 't': field 'params.command': placeholder {hostfile} is inside single quotes"},
        BadSpec{"PlaceholderAfterBackslash", "name: j\nnodes:\n  - {id: a, op: exec, inputs: [/data/shards], params: {command: 'cp \\{input} {output}'}}\n",
                "placeholder {input} is right after a backslash, which undoes the shell quoting coupler gives its value (a file name could then run commands); drop the backslash"},
        BadSpec{"PlaceholderInComment", "name: j\nnodes:\n  - {id: a, op: exec, inputs: [/data/shards], params: {command: 'cp {input} {output} # not {shard}'}}\n",
                "placeholder {shard} is inside a shell comment"},
        BadSpec{"ClipBounds", "name: j\nnodes:\n  - {id: a, op: clip, inputs: [/data/shards], params: {min: 2, max: 1}}\n",
                "min (2) is greater than max (1)"},
        BadSpec{"MissingInput", "name: j\nnodes:\n  - {id: stats, op: noop}\n  - {id: b, op: clip, inputs: [stast], params: {min: 0, max: 1}}\n",
                "field 'inputs[0]': input 'stast' names neither a node nor an existing path (looked at /specs/stast); did you mean 'stats' (a node)?"},
        BadSpec{"Cycle", "name: j\nnodes:\n  - {id: a, op: noop, inputs: [c]}\n  - {id: b, op: noop, inputs: [a]}\n  - {id: c, op: noop, inputs: [b]}\n",
                "cycle: "},
        BadSpec{"SelfLoop", "name: j\nnodes:\n  - {id: a, op: noop, inputs: [a]}\n",
                "node reads its own output (cycle a -> a)"},
        BadSpec{"ZeroRanks", "name: j\nnodes:\n  - {id: t, op: mpi_exec, ranks: 0, params: {command: x}}\n",
                "job.yaml:3:34: error: node 't': field 'ranks': must be between 1 and 100000, got 0"},
        BadSpec{"RanksOnLooseOp", "name: j\nnodes:\n  - {id: c, op: clip, ranks: 4, inputs: [/data/shards], params: {min: 0, max: 1}}\n",
                "field 'ranks': ranks > 1 on op 'clip', which cannot run tight"},
        BadSpec{"TightForcedLoose", "name: j\nnodes:\n  - {id: t, op: train, ranks: 2, coupling: loose, params: {config: /cfg/train.yaml}}\n",
                "field 'coupling': tight op 'train' forced loose cannot have ranks > 1 (got 2)"},
        BadSpec{"LooseForcedTight", "name: j\nnodes:\n  - {id: c, op: noop, coupling: tight}\n",
                "field 'coupling': op 'noop' cannot run tight"},
        BadSpec{"GpusAndShare", "name: j\nnodes:\n  - {id: c, op: noop, resources: {gpus: 1, gpu_memory: 2GiB}}\n",
                "field 'resources.gpu_memory': gpu_memory asks for a share of one GPU; do not combine it with gpus"},
        BadSpec{"EmptyGraph", "name: j\nnodes: []\n", "empty graph"},
        BadSpec{"BadJobName", "name: my job\nnodes:\n  - {id: a, op: noop}\n", "job name 'my job' may use only"},
        BadSpec{"InputCount", "name: j\nnodes:\n  - {id: a, op: standardize, inputs: [/data/shards]}\n",
                "op 'standardize' takes 2 inputs [data, stats], got 1"},
        BadSpec{"WrongProducer", "name: j\nnodes:\n  - {id: s, op: noop}\n  - {id: a, op: standardize, inputs: [/data/shards, s]}\n",
                "input 'stats' of op 'standardize' must be a column_stats node, got 's' (op noop)"},
        BadSpec{"CsvIntoShardOp", "name: j\nnodes:\n  - {id: a, op: clip, inputs: [/data/digits.csv], params: {min: 0, max: 1}}\n",
                "is a file; op 'clip' reads a directory of .npz/.npy shards"},
        BadSpec{"ImportFromNode", "name: j\nnodes:\n  - {id: s, op: noop}\n  - {id: a, op: import_csv, inputs: [s]}\n",
                "op 'import_csv' reads a file (csv), but 's' is a node"},
        BadSpec{"EmptyDataset", "name: j\nnodes:\n  - {id: a, op: clip, inputs: [/data/empty], params: {min: 0, max: 1}}\n",
                "dataset directory '/data/empty' holds no .npz/.npy shards"},
        BadSpec{"MissingConfig", "name: j\nnodes:\n  - {id: t, op: train, params: {config: nope.yaml}}\n",
                "field 'params.config': file 'nope.yaml' not found (looked at /specs/nope.yaml)"}),
    [](const ::testing::TestParamInfo<BadSpec>& p) { return std::string(p.param.name); });

TEST(ValidatorTest, AcceptsUnquotedPlaceholdersBesideQuotedText) {
  LoadedJob j = Load(
      "name: j\nnodes:\n  - id: a\n    op: exec\n    inputs: [/data/shards]\n    params:\n"
      "      command: sh -c 'cp \"$0\" \"$1\"' {input} {output} && echo \"shard {{}}\" {shard}\n");
  EXPECT_TRUE(j.ok()) << Errors(j);
}

// {spec_dir} is the validator's to fill: the worker never learns where the spec was.
TEST(ValidatorTest, ReplacesSpecDirWithTheSpecsFolderShellQuoted) {
  LoadedJob j = Load(
      "name: j\nnodes:\n  - id: a\n    op: exec\n    inputs: [/data/shards]\n    params:\n"
      "      command: /usr/bin/python3 {spec_dir}/step.py {input} {output}\n");
  ASSERT_TRUE(j.ok()) << Errors(j);
  EXPECT_EQ(std::get<std::string>(j.graph->nodes[0].params.at("command")),
            "/usr/bin/python3 '/specs'/step.py {input} {output}");
  LoadedJob quoted = Load(
      "name: j\nnodes:\n  - id: a\n    op: exec\n    inputs: [/data/shards]\n    params:\n"
      "      command: \"python3 '{spec_dir}/x.py' {input} {output}\"\n");
  EXPECT_FALSE(quoted.ok());
  EXPECT_THAT(Errors(quoted), HasSubstr("{spec_dir}"));
}

TEST(ValidatorTest, PrintsTheWholeCycle) {
  LoadedJob j = Load("name: j\nnodes:\n  - {id: a, op: noop, inputs: [c]}\n  - {id: b, op: noop, inputs: [a]}\n  - {id: c, op: noop, inputs: [b]}\n");
  const std::string e = Errors(j);
  // Every node of the cycle appears, in data-flow order, closing on the first.
  EXPECT_TRUE(e.find("a -> b -> c -> a") != std::string::npos ||
              e.find("b -> c -> a -> b") != std::string::npos ||
              e.find("c -> a -> b -> c") != std::string::npos)
      << e;
  EXPECT_EQ(j.diags.size(), 1u) << e;
}

TEST(ValidatorTest, ReportsSeveralErrorsAtOnce) {
  LoadedJob j = Load("name: j\nnodes:\n  - {id: a, op: clpi}\n  - {id: b, op: noop, params: {tasks: x}}\n  - {id: c, op: noop, ranks: 0}\n  - {id: c, op: noop}\n");
  EXPECT_EQ(j.diags.size(), 4u) << Errors(j);
}

}  // namespace
}  // namespace coupler::job
