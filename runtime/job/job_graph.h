// JobGraph: a user's job spec as data. The parser fills it from YAML/JSON with source
// positions; the validator types the params against the op registry; the planner reads it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "runtime/io/column_schema.h"
#include "runtime/job/diagnostics.h"
#include "runtime/job/param_value.h"
#include "runtime/job/raw_value.h"

namespace coupler::job {

enum class Coupling { kAuto, kLoose, kTight };
std::string_view CouplingName(Coupling c);

struct Resources {
  double cpus = 1.0;             // per task (per rank for tight nodes)
  int gpus = 0;                  // whole GPUs per task / per rank
  uint64_t gpu_memory = 0;       // bytes of one GPU: a fractional share instead of whole GPUs
  uint64_t memory = 0;           // host memory bytes, 0 = unspecified
};

// An input after validation: another node's output, or a dataset on disk.
struct InputRef {
  enum class Kind { kNode, kFile, kDirectory };
  Kind kind = Kind::kNode;
  std::string name;       // as written
  std::string path;       // absolute path for datasets
  size_t node_index = 0;  // for kNode
  int shards = 0;         // .npy shards found in a dataset directory
};

struct NodeSpec {
  std::string id;
  std::string op;
  std::vector<std::string> inputs;
  std::map<std::string, RawValue> raw_params;  // as written
  std::map<std::string, ParamValue> params;    // typed by the validator, defaults filled in
  std::vector<InputRef> resolved_inputs;       // filled by the validator
  Resources resources;
  Coupling coupling = Coupling::kAuto;
  int ranks = 1;
  bool ranks_given = false;
  int retries = 3;
  int priority = 0;
  // `reuse:` on the node: true/false overrides the job's `reuse` (and --reuse); unset follows it.
  std::optional<bool> reuse;
  // `keep: true`: its outputs are written even where a fused chain would hand them to the next
  // node in memory only (runtime/plan/fusion.h).
  bool keep = false;
  // `requires:` in the spec: labels a worker must advertise (all of them) to run this node.
  std::map<std::string, std::string> required_labels;
  // Where each field was written ("id", "op", "inputs", "inputs[1]", "params.shards",
  // "resources.gpus", ...), so late checks can still point at the line.
  std::map<std::string, SourcePos> positions;
  SourcePos pos;  // the node's own mapping
  // The columns this node writes, as the validator's column pass derived them (types, nullable,
  // dictionary); nullopt where they are not known before the job runs (an exec node's output,
  // or an import_csv whose file the loader could not read).
  std::optional<io::TableSchema> output_schema;

  SourcePos PosOf(const std::string& field) const;
};

struct JobGraph {
  std::string name;
  std::string description;
  // Absolute once loaded. Once admitted, the job's run directory (run_dir.h): every output,
  // log and marker of this run lives under it; `workdir_root` keeps the spec's workdir.
  std::string workdir;
  std::string workdir_root;
  // `run_dir:` pins the run directory to this folder under the workdir ("." the workdir
  // itself); empty: a fresh `runs/{job_id}` per submission.
  std::string run_dir;
  bool reuse = false;  // `reuse: true`: reuse unchanged nodes of earlier succeeded runs
  std::string source_file;  // as given by the user, for messages
  std::string base_dir;     // relative inputs and paths resolve against this
  int priority = 0;
  std::vector<NodeSpec> nodes;
  std::map<std::string, SourcePos> positions;  // job-level fields

  // Index of the node with this id, or nullopt.
  std::optional<size_t> Find(std::string_view id) const;
};

}  // namespace coupler::job
