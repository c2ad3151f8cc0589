#include "runtime/ops/builtin_ops.h"

#include <cstdint>
#include <limits>

#include "runtime/ops/train_keys.h"

namespace coupler::ops {
namespace {

using job::Coupling;
using job::ParamValue;
constexpr size_t kAny = std::numeric_limits<size_t>::max();

ParamSchema Param(std::string name, ParamType type, std::string doc) {
  ParamSchema p;
  p.name = std::move(name);
  p.type = type;
  p.doc = std::move(doc);
  return p;
}
ParamSchema Required(ParamSchema p) {
  p.required = true;
  return p;
}
ParamSchema Default(ParamSchema p, ParamValue v) {
  p.default_value = std::move(v);
  return p;
}
ParamSchema Range(ParamSchema p, std::optional<double> lo, std::optional<double> hi) {
  p.min = lo;
  p.max = hi;
  return p;
}
ParamSchema Choices(ParamSchema p, std::vector<std::string> c) {
  p.choices = std::move(c);
  return p;
}

OpDef Loose(std::string name, std::string summary, Expansion expansion) {
  OpDef d;
  d.name = std::move(name);
  d.summary = std::move(summary);
  d.expansion = expansion;
  d.min_inputs = 1;
  d.max_inputs = 1;
  d.inputs = {InputSlot{"data", {}, false}};
  return d;
}

// A gang op: one group of `ranks` processes, on GPUs with a fast interconnect by default.
OpDef Tight(std::string name, std::string summary, size_t max_inputs) {
  OpDef d;
  d.name = std::move(name);
  d.summary = std::move(summary);
  d.default_coupling = Coupling::kTight;
  d.can_be_tight = true;
  d.hardware = HardwareClass::kGpuFastInterconnect;
  d.expansion = Expansion::kGang;
  d.output = OutputShape::kSingle;
  d.min_inputs = 0;
  d.max_inputs = max_inputs;
  return d;
}

// Every op that runs a command bounds it the same way.
ParamSchema Timeout() {
  return Range(Default(Param("timeout", ParamType::kFloat,
                             "seconds before the command and everything it started are killed"),
                       3600.0),
               0.001, 7 * 86400.0);
}

// A command's exit codes the coordinator must not retry, besides 65 (the documented one).
ParamSchema NoRetryExitCodes() {
  return Range(Param("no_retry_exit_codes", ParamType::kIntList,
                     "exit codes that fail the task at once (65 always does)"),
               1, 255);
}

// When given, the only exit codes that are retried.
ParamSchema RetryOnExitCodes() {
  return Range(Param("retry_on_exit_codes", ParamType::kIntList,
                     "the only exit codes that are retried (default: all but 65)"),
               1, 255);
}

ParamSchema Columns(std::string doc) { return Param("columns", ParamType::kStringList, std::move(doc)); }

}  // namespace

std::vector<OpDef> BuiltinOpDefs() {
  std::vector<OpDef> ops;

  OpDef import_csv = Loose("import_csv", "split CSV files into .npz shards", Expansion::kFixed);
  import_csv.output = OutputShape::kFromParam;
  import_csv.count_param = "shards";
  import_csv.inputs = {InputSlot{"csv", {}, true}};
  // One dataset of many files: a list, a glob (`data/*.csv.gz`) or a folder of CSV files.
  import_csv.max_inputs = SIZE_MAX;
  import_csv.last_slot_repeats = true;
  import_csv.params = {
      Range(Default(Param("shards", ParamType::kInt, "number of output shards (one task each)"),
                    int64_t{8}),
            1, 1'000'000),
      Default(Param("header", ParamType::kBool, "the first line names the columns"), true),
      Param("label_column", ParamType::kString, "column stored as int32 labels"),
      Columns("columns to keep, in this order (default: every column, in file order)"),
      Param("dtypes", ParamType::kStringMap,
            "forced column types: float32, float64, int32, int64, bool, datetime or string "
            "(default: from the file's first 1 MiB: int64, float32, bool, datetime or string)"),
      Param("na_values", ParamType::kStringList,
            "more fields read as missing (besides the empty one and pandas' defaults: NULL, "
            "NA, N/A, nan, NaN, #N/A, ...)"),
      Default(Choices(Param("delimiter", ParamType::kString,
                            "the field separator: ',', ';', a tab (TSV) or '|'"),
                      {",", ";", "\t", "|"}),
              std::string(",")),
      Default(Choices(Param("encoding", ParamType::kString,
                            "utf-8 (checked) or latin-1 (converted to UTF-8)"),
                      {"utf-8", "latin-1"}),
              std::string("utf-8")),
      Default(Param("quoted_newlines", ParamType::kBool,
                    "quoted fields may hold line breaks; each file is then read whole by one "
                    "task"),
              false),
      Default(Param("keep_default_na", ParamType::kBool,
                    "false: only na_values (and the empty field) are missing, not pandas' "
                    "defaults"),
              true),
  };
  import_csv.fusion = Fusion::kLink;
  ops.push_back(import_csv);

  OpDef stats = Loose("column_stats", "count, mean, variance, min, max per column",
                      Expansion::kPerShardWithReduce);
  stats.output = OutputShape::kSingle;
  stats.params = {Columns("columns to summarize (default: every numeric column)")};
  ops.push_back(stats);

  // The relational ops shuffle: map tasks route rows by key to `partitions` runs, one reduce
  // task per partition writes one part file (worker/ops/shuffle_runs.h).
  ParamSchema partitions = Default(
      Range(Param(std::string(kPartitionsParam), ParamType::kIntOrAuto,
                  "output partitions (part files): a count, or auto for as many as the input "
                  "has shards"),
            1, 65536),
      std::string("auto"));

  ParamSchema reduce_memory = Default(
      Range(Param(std::string(kReduceMemoryParam), ParamType::kInt,
                  "MiB a reduce task may hold: a bigger partition spills sorted runs beside its "
                  "output and merges them (docs/relational.md)"),
            1, 1 << 20),
      int64_t{1024});

  OpDef group_by = Loose("group_by", "aggregates per group of equal keys, through a shuffle",
                         Expansion::kShuffle);
  group_by.count_param = std::string(kPartitionsParam);
  group_by.params = {
      Required(Param("keys", ParamType::kStringList, "the key columns, in order")),
      Required(Param("aggregates", ParamType::kStringMap,
                     "output column: fn(column) or size(); fn is count, sum, mean, min, max, "
                     "std, var, nunique, first or last (docs/relational.md)")),
      partitions,
      Default(Param("dropna", ParamType::kBool,
                    "rows with a missing key belong to no group (pandas' default); false: they "
                    "form groups of their own"),
              true),
      reduce_memory,
  };
  ops.push_back(group_by);

  OpDef dedup = Loose("dedup", "one row per distinct key (keep the first or last), through a shuffle",
                      Expansion::kShuffle);
  dedup.count_param = std::string(kPartitionsParam);
  dedup.params = {
      Param("keys", ParamType::kStringList, "the columns that make rows duplicates (default: all)"),
      Default(Choices(Param("keep", ParamType::kString,
                            "which of the duplicates stays, in input order"),
                      {"first", "last"}),
              std::string("first")),
      partitions,
      reduce_memory,
  };
  ops.push_back(dedup);

  OpDef join = Loose("join", "rows of two inputs whose keys are equal (pandas' merge), through a shuffle",
                     Expansion::kShuffle);
  join.count_param = std::string(kPartitionsParam);
  join.maps_every_input = true;
  join.broadcast_param = "broadcast";
  join.min_inputs = join.max_inputs = 2;
  join.inputs = {InputSlot{"left", {}, false}, InputSlot{"right", {}, false}};
  join.params = {
      Required(Param("on", ParamType::kStringList, "the key columns, named alike on both sides")),
      Default(Choices(Param("how", ParamType::kString,
                            "inner, left, right, outer; semi or anti: the left rows with or "
                            "without a match"),
                      {"inner", "left", "right", "outer", "semi", "anti"}),
              std::string("inner")),
      Default(Param("suffixes", ParamType::kStringList,
                    "appended to the other columns both sides have: left's, then right's"),
              std::vector<std::string>{"_x", "_y"}),
      Default(Param("broadcast", ParamType::kBoolOrAuto,
                    "true: no shuffle, each task joins one left shard with the whole right "
                    "input (at most 512 MiB; inner, left, semi and anti only); auto: so when "
                    "the right input is known at admission to be at most 64 MiB and "
                    "`partitions` is left at auto"),
              std::string("auto")),
      partitions,
      reduce_memory,
  };
  ops.push_back(join);

  OpDef sort = Loose("sort", "one order across every part file, through a shuffle by key ranges",
                     Expansion::kShuffle);
  sort.count_param = std::string(kPartitionsParam);
  sort.range_partitioned = true;
  sort.params = {
      Required(Param("by", ParamType::kStringList, "the columns to sort by, most significant first")),
      Param("descending", ParamType::kStringList, "those of `by` sorted largest first"),
      Default(Choices(Param("na_position", ParamType::kString, "where missing values go"),
                      {"last", "first"}),
              std::string("last")),
      partitions,
      reduce_memory,
  };
  ops.push_back(sort);

  OpDef standardize = Loose("standardize", "(x - mean) / stddev with reduced stats",
                            Expansion::kPerShard);
  standardize.min_inputs = standardize.max_inputs = 2;
  standardize.inputs = {InputSlot{"data", {}, false}, InputSlot{"stats", {"column_stats"}, false}};
  standardize.params = {Columns("columns to standardize (default: those in the stats)")};
  standardize.fusion = Fusion::kLink;
  ops.push_back(standardize);

  OpDef filter_map = Loose("filter_map", "value = a * b; keep rows with value > threshold; sqrt",
                           Expansion::kPerShard);
  filter_map.params = {
      Required(Param("a", ParamType::kString, "first factor column")),
      Required(Param("b", ParamType::kString, "second factor column")),
      Default(Param("threshold", ParamType::kFloat, "keep rows whose product exceeds this"), 0.0),
      Default(Param("out", ParamType::kString, "name of the output column"), std::string("value")),
  };
  filter_map.fusion = Fusion::kLink;
  ops.push_back(filter_map);

  OpDef filter = Loose("filter", "keep the rows where an expression holds", Expansion::kPerShard);
  filter.params = {Required(Param(
      "where", ParamType::kString,
      "boolean expression over the columns, e.g. \"x0 > 0 and city == 'Paris'\" "
      "(docs/expressions.md)"))};
  filter.fusion = Fusion::kLink;
  ops.push_back(filter);

  OpDef select = Loose("select", "keep, drop or rename columns", Expansion::kPerShard);
  select.params = {
      Param("keep", ParamType::kStringList, "columns to keep, in this order"),
      Param("drop", ParamType::kStringList, "columns to drop (not with keep)"),
      Param("rename", ParamType::kStringMap, "old: new names, applied after keep/drop"),
  };
  select.fusion = Fusion::kLink;
  ops.push_back(select);

  OpDef derive = Loose("derive", "add or replace columns computed by expressions",
                       Expansion::kPerShard);
  derive.params = {Required(Param(
      "columns", ParamType::kStringMap,
      "name: numeric expression, in order (a later one may read an earlier one)"))};
  derive.fusion = Fusion::kLink;
  ops.push_back(derive);

  OpDef clip = Loose("clip", "clamp columns into [min, max]", Expansion::kPerShard);
  clip.params = {
      Required(Param("min", ParamType::kFloat, "lower bound")),
      Required(Param("max", ParamType::kFloat, "upper bound")),
      Columns("columns to clip (default: every float column)"),
  };
  clip.fusion = Fusion::kLink;
  ops.push_back(clip);

  OpDef cast = Loose("cast", "float32 columns to float16 or bfloat16", Expansion::kPerShard);
  cast.params = {
      Required(Choices(Param("dtype", ParamType::kString, "target type"), {"float16", "bfloat16"})),
      Columns("columns to cast (default: every float32 column)"),
  };
  cast.fusion = Fusion::kLink;
  ops.push_back(cast);

  OpDef write_csv = Loose("write_csv", "each shard as a CSV file (part-NNNNN.csv)",
                          Expansion::kPerShard);
  write_csv.params = {
      Default(Choices(Param("delimiter", ParamType::kString,
                            "the field separator: ',', ';', a tab or '|'"),
                      {",", ";", "\t", "|"}),
              std::string(",")),
  };
  write_csv.fusion = Fusion::kEnd;
  ops.push_back(write_csv);

  OpDef evaluate = Loose("evaluate", "score a trained model on held-out shards",
                         Expansion::kPerShardWithReduce);
  evaluate.hardware = HardwareClass::kGpu;
  evaluate.output = OutputShape::kSingle;
  evaluate.min_inputs = evaluate.max_inputs = 2;
  evaluate.max_inputs = 3;
  evaluate.inputs = {InputSlot{"data", {}, false}, InputSlot{"model", {"train"}, false},
                     InputSlot{"calibration", {"quantize"}, false}};
  evaluate.params = {
      Param("label_column", ParamType::kString, "column holding the labels"),
      Choices(Param("precisions", ParamType::kStringList,
                    "precisions to score at, one result row each (default: fp32; fp32, bf16 "
                    "and int8 with a calibration)"),
              {"fp32", "bf16", "int8"}),
  };
  ops.push_back(evaluate);

  OpDef quantize = Loose("quantize",
                         "calibrate a trained model's INT8 activations on its training rows",
                         Expansion::kPerShardWithReduce);
  quantize.output = OutputShape::kSingle;
  quantize.min_inputs = quantize.max_inputs = 2;
  quantize.inputs = {InputSlot{"data", {}, false}, InputSlot{"model", {"train"}, false}};
  quantize.params = {
      Param("label_column", ParamType::kString, "column holding the labels"),
      Range(Default(Param("percentile", ParamType::kFloat,
                          "each layer's input is clipped at this percentile of its magnitudes"),
                    99.99),
            50.0, 100.0),
      Range(Default(Param("calibration_rows", ParamType::kInt,
                          "training rows per shard the calibration looks at"),
                    int64_t{2048}),
            1, 10'000'000),
  };
  ops.push_back(quantize);

  OpDef noop = Loose("noop", "does nothing, one task per input shard or `tasks` tasks",
                     Expansion::kPerShard);
  noop.min_inputs = 0;
  noop.max_inputs = kAny;
  noop.inputs = {};
  noop.count_param = "tasks";
  noop.params = {
      Range(Default(Param("tasks", ParamType::kInt, "task count when the node has no inputs"),
                    int64_t{1}),
            1, 100'000'000),
      Range(Default(Param("sleep_ms", ParamType::kInt, "time each task takes"), int64_t{0}), 0,
            86'400'000),
  };
  ops.push_back(noop);

  OpDef exec = Loose("exec", "run a command per shard", Expansion::kPerShard);
  exec.params = {
      Required(Param("command", ParamType::kString,
                     "shell command; {input} {output} {shard} {spec_dir}")),
      Timeout(),
      NoRetryExitCodes(),
      RetryOnExitCodes(),
  };
  exec.params[0].placeholders = {"input", "output", "shard", "spec_dir"};
  // The first input is what it runs per shard; more inputs (a script, a config, another node)
  // follow it in {input} and, being inputs, are hashed for --reuse.
  exec.max_inputs = SIZE_MAX;
  exec.output_format = io::ShardFormat::kRecords;  // np.save(output, ...) writes .npy
  exec.fusion = Fusion::kEndOnDisk;
  ops.push_back(exec);

  OpDef train = Tight("train", "data-parallel MLP training, one rank per GPU", 1);
  train.inputs = {InputSlot{"data", {}, false}};
  train.params = {Required(Param("config", ParamType::kPath, "training config file (YAML)"))};
  for (const TrainNodeKey& key : kTrainNodeKeys) {
    train.params.push_back(
        Choices(Range(Param(std::string(key.name), key.type, std::string(key.doc)), key.min, key.max),
                {key.choices.begin(), key.choices.end()}));
  }
  train.params.push_back(Timeout());
  ops.push_back(train);

  OpDef mpi_exec = Tight("mpi_exec", "the user's own MPI program as one gang", kAny);
  mpi_exec.params = {
      Required(Param("command", ParamType::kString,
                     "command; {launch} {ranks} {hostfile} {hosts} {input} {output} "
                     "{master_addr} {master_port} {job} {node} {attempt} {spec_dir}")),
      Timeout(),
      NoRetryExitCodes(),
      RetryOnExitCodes(),
  };
  mpi_exec.params[0].placeholders = {"ranks",       "hostfile",    "hosts", "launch",
                                     "input",       "output",      "master_addr",
                                     "master_port", "job",         "node",
                                     "attempt",     "spec_dir"};
  ops.push_back(mpi_exec);

  return ops;
}

}  // namespace coupler::ops
