// OpDef: what an op declares about itself — coupling, params, hardware class and how it
// expands into tasks. The validator and planner read these; execution comes from elsewhere.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/io/output_layout.h"
#include "runtime/job/job_graph.h"

namespace coupler::ops {

// A shuffle's partition count (Expansion::kShuffle): an int or "auto" in the spec; its map
// tasks are handed the planned count under the same name.
inline constexpr std::string_view kPartitionsParam = "partitions";
// A shuffle reduce's memory budget, MiB: a partition bigger than it spills (worker/ops/reduce_spill.h).
inline constexpr std::string_view kReduceMemoryParam = "reduce_memory_mib";

// For a shuffle over every input: how many of its map tasks read the first input.
inline constexpr std::string_view kLeftMapsParam = "left_maps";

enum class ParamType {
  kBool,
  kInt,
  kFloat,
  kString,
  kStringList,
  kIntOrAuto,  // an int, or the word "auto"
  kBoolOrAuto,  // true, false, or the word "auto" (decided at admission)
  kPath,       // a string naming an existing file, relative to the spec
  kStringMap,  // a mapping of names to strings, in the spec's order
  // A list of integers (exit codes), each within min..max. Kept as their decimal text in a
  // std::vector<std::string>, so it travels on the wire as a string list does.
  kIntList,
};
std::string_view ParamTypeName(ParamType t);

struct ParamSchema {
  std::string name;
  ParamType type = ParamType::kString;
  bool required = false;
  std::optional<job::ParamValue> default_value;
  std::optional<double> min;             // inclusive, for numbers
  std::optional<double> max;             // inclusive, for numbers
  std::vector<std::string> choices;      // allowed strings, when non-empty
  std::vector<std::string> placeholders; // allowed {name} placeholders in a command string
  std::string doc;
};

enum class HardwareClass { kCpu, kGpu, kGpuFastInterconnect };
std::string_view HardwareClassName(HardwareClass h);

// How a node of this op becomes work.
enum class Expansion {
  kPerShard,            // one task per shard of the first input
  kPerShardWithReduce,  // one task per shard, then one reduce task
  // One map task per shard of the first input, each writing its rows as one run per output
  // partition (by a hash or range of key columns); then one reduce task per partition, reading
  // that partition's run from every map task. The partition count is `count_param`'s value
  // ("auto": as many as the first input has shards). A stage boundary: the node's output
  // has one shard per partition.
  kShuffle,
  kFixed,               // a count from a param (import_csv: shards; noop without inputs: tasks)
  kGang,                // one group of `ranks` processes started together
};

// What a node's output looks like to the nodes that read it.
enum class OutputShape {
  kSameAsInput,  // one output shard per input shard
  kFromParam,    // the count param's value
  kSingle,       // one shard (stats, a model, metrics)
};

// How a node of this op may join a fused per-shard chain (runtime/plan/fusion.h): consecutive
// per-shard nodes run as one task per shard in one worker process, each node's shard handed to
// the next in memory unless something else needs it on disk.
enum class Fusion {
  kNone,     // never fused (reduces, gangs, ops that do not go through shard tables)
  kLink,     // reads and writes its shard as a table in this process: may start, continue or end a chain
  kEnd,      // reads its shard as a table in this process, writes something else (write_csv): ends one
  kEndOnDisk,  // runs a command that reads files (exec): ends one, reading its input from disk
};

// One declared input slot, e.g. standardize's "stats" must come from a column_stats node.
struct InputSlot {
  std::string name;
  std::vector<std::string> from_ops;  // allowed producer ops; empty = any node or dataset
  bool dataset_file = false;          // a path to a file (a CSV), not a node or shard directory
};

struct OpDef {
  std::string name;
  std::string summary;
  job::Coupling default_coupling = job::Coupling::kLoose;
  bool can_be_tight = false;
  bool can_be_loose = true;
  HardwareClass hardware = HardwareClass::kCpu;
  Expansion expansion = Expansion::kPerShard;
  OutputShape output = OutputShape::kSameAsInput;
  std::string count_param;     // for kFixed / kFromParam
  // Who writes the output shards decides their format: coupler (.npz) or a command (.npy).
  io::ShardFormat output_format = io::ShardFormat::kColumns;
  std::vector<InputSlot> inputs;  // fixed slots, in order
  // Inputs past the slots take the last slot's kind (import_csv: every input is a CSV file).
  bool last_slot_repeats = false;
  size_t min_inputs = 0;
  size_t max_inputs = 0;       // SIZE_MAX = any number
  std::vector<ParamSchema> params;
  Fusion fusion = Fusion::kNone;
  // A shuffle over several inputs (join): one map task per shard of every input, in input
  // order, instead of per shard of the first only. Its tasks are told where the first input's
  // map tasks end (kLeftMapsParam).
  bool maps_every_input = false;
  // A shuffle by ranges of the keys (sort) rather than by their hash: each map task writes its
  // shard sorted and a sample of its keys, and every reduce task reads all of them, derives the
  // same partition bounds from the samples and takes its range (io::ShuffleSortedPath).
  bool range_partitioned = false;
  // A bool param that, when true, turns the shuffle off: one task per shard of the first input,
  // each reading every other input whole (a broadcast join of a small side). Empty: none.
  std::string broadcast_param;

  const ParamSchema* FindParam(std::string_view param) const;
};

// Whether `params` turn the op's shuffle into a broadcast (OpDef::broadcast_param).
bool Broadcasts(const OpDef& op, const std::map<std::string, job::ParamValue>& params);

}  // namespace coupler::ops
