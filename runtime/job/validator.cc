#include "runtime/job/validator.h"

#include <glob.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <unordered_map>

#include "runtime/io/output_layout.h"
#include "runtime/job/param_validator.h"
#include "runtime/job/schema_pass.h"
#include "runtime/job/scalars.h"

namespace coupler::job {
namespace {

namespace fs = std::filesystem;
using ops::OpDef;

// [A-Za-z0-9][A-Za-z0-9_.-]*: ids and job names become directory names.
bool IsValidId(std::string_view s) {
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (s.empty() || !alnum(s.front())) return false;
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return alnum(c) || c == '_' || c == '.' || c == '-'; });
}

std::string Plural(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

class GraphValidator {
 public:
  GraphValidator(JobGraph& g, const ValidationEnv& env, Diagnostics& diags)
      : g_(g), env_(env), diags_(diags) {}

  void Run() {
    CheckName();
    IndexIds();
    for (size_t i = 0; i < g_.nodes.size(); ++i) CheckNode(g_.nodes[i], i);
    CheckCycles();
  }

 private:
  SourcePos JobPos(const std::string& field) const {
    auto it = g_.positions.find(field);
    return it == g_.positions.end() ? SourcePos{1, 1} : it->second;
  }

  void CheckName() {
    if (g_.name.empty()) return;  // the parser reported it missing
    if (!IsValidId(g_.name)) {
      diags_.Add(JobPos("name"), "", "name",
                 "job name '" + g_.name + "' may use only letters, digits, '_', '-' and '.'"
                 " (it names the work directory)");
    }
  }

  void IndexIds() {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const NodeSpec& n = g_.nodes[i];
      if (n.id.empty()) continue;
      if (!IsValidId(n.id)) {
        diags_.Add(n.PosOf("id"), n.id, "id",
                   "node id may use only letters, digits, '_', '-' and '.' (it names the output "
                   "directory)");
      }
      auto [it, inserted] = index_.emplace(n.id, i);
      if (!inserted) {
        const NodeSpec& first = g_.nodes[it->second];
        diags_.Add(n.PosOf("id"), n.id, "id",
                   "duplicate node id (first defined at line " +
                       std::to_string(first.PosOf("id").line) + ")");
      }
      ids_.push_back(n.id);
    }
  }

  void CheckNode(NodeSpec& n, size_t index) {
    const OpDef* op = nullptr;
    if (!n.op.empty()) {
      op = env_.registry->Find(n.op);
      if (op == nullptr) {
        diags_.Add(n.PosOf("op"), n.id, "op", "unknown op '" + n.op + "'",
                   DidYouMean(n.op, env_.registry->Names()));
      }
    }
    CheckInputs(n, index, op);
    if (op == nullptr) return;
    ValidateParams(n, *op, env_, diags_);
    CheckCoupling(n, *op);
    CheckResources(n);
  }

  void CheckInputs(NodeSpec& n, size_t index, const OpDef* op) {
    n.resolved_inputs.clear();
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const std::string& name = n.inputs[k];
      const std::string field = "inputs[" + std::to_string(k) + "]";
      InputRef ref;
      ref.name = name;
      auto it = index_.find(name);
      if (it != index_.end()) {
        if (it->second == index) {
          diags_.Add(n.PosOf(field), n.id, field, "node reads its own output (cycle " + n.id +
                                                     " -> " + n.id + ")");
          continue;
        }
        ref.kind = InputRef::Kind::kNode;
        ref.node_index = it->second;
      } else if (ExpandsToFiles(n, op, k, name, field)) {
        continue;  // its files were added (or an error was reported)
      } else {
        ref.path = ResolvePath(env_.base_dir, name);
        PathInfo info = env_.probe ? env_.probe(ref.path) : PathInfo{PathInfo::Kind::kDirectory, 1};
        if (info.kind == PathInfo::Kind::kMissing) {
          std::string hint = DidYouMean(name, ids_);
          if (!hint.empty()) hint = hint.substr(0, hint.size() - 1) + " (a node)?";
          diags_.Add(n.PosOf(field), n.id, field,
                     "input '" + name + "' names neither a node nor an existing path (looked at " +
                         ref.path + ")",
                     hint);
          continue;
        }
        ref.kind = info.kind == PathInfo::Kind::kFile ? InputRef::Kind::kFile
                                                      : InputRef::Kind::kDirectory;
        ref.shards = info.shards;
      }
      if (op != nullptr) CheckSlot(n, *op, k, ref, field);
      n.resolved_inputs.push_back(std::move(ref));
    }
    if (op == nullptr) return;
    if (n.inputs.size() < op->min_inputs || n.inputs.size() > op->max_inputs) {
      std::string want;
      if (op->min_inputs == op->max_inputs) {
        want = Plural(op->min_inputs, "input");
        if (!op->inputs.empty()) {
          want += " [";
          for (size_t s = 0; s < op->inputs.size(); ++s) {
            want += (s ? ", " : "") + op->inputs[s].name;
          }
          want += "]";
        }
      } else if (op->max_inputs == SIZE_MAX) {
        want = "at least " + Plural(op->min_inputs, "input");
      } else {
        want = std::to_string(op->min_inputs) + " to " + Plural(op->max_inputs, "input");
      }
      diags_.Add(n.PosOf("inputs"), n.id, "inputs",
                 "op '" + op->name + "' takes " + want + ", got " + std::to_string(n.inputs.size()));
    }
  }

  // The slot input k fills; nullptr past the slots of an op whose last slot does not repeat.
  static const ops::InputSlot* SlotOf(const OpDef& op, size_t k) {
    if (k < op.inputs.size()) return &op.inputs[k];
    return op.last_slot_repeats && !op.inputs.empty() ? &op.inputs.back() : nullptr;
  }

  // A file input given as a glob or a folder (import_csv: `data/*.csv.gz`, `data/events/`)
  // becomes one input per file, in name order. False when `name` is a single path.
  bool ExpandsToFiles(NodeSpec& n, const OpDef* op, size_t k, const std::string& name,
                      const std::string& field) {
    const ops::InputSlot* slot = op != nullptr ? SlotOf(*op, k) : nullptr;
    if (slot == nullptr || !slot->dataset_file || !env_.list_files) return false;
    const std::string path = ResolvePath(env_.base_dir, name);
    const bool pattern = IsGlobPattern(name);
    if (!pattern) {
      const PathInfo info = env_.probe ? env_.probe(path) : PathInfo{};
      if (info.kind != PathInfo::Kind::kDirectory) return false;
    }
    const std::optional<std::vector<std::string>> files = env_.list_files(path);
    if (!files) return false;
    if (files->empty()) {
      diags_.Add(n.PosOf(field), n.id, field,
                 pattern ? "no file matches '" + name + "' (looked for " + path + ")"
                         : "folder '" + name + "' holds no .csv, .csv.gz or .csv.zst file");
      return true;
    }
    for (const std::string& file : *files) {
      InputRef ref;
      ref.name = file;
      ref.path = file;
      const PathInfo info = env_.probe ? env_.probe(file) : PathInfo{PathInfo::Kind::kFile, 0};
      if (info.kind != PathInfo::Kind::kFile) {
        diags_.Add(n.PosOf(field), n.id, field, "'" + file + "' is not a readable file");
        continue;
      }
      ref.kind = InputRef::Kind::kFile;
      n.resolved_inputs.push_back(std::move(ref));
    }
    return true;
  }

  void CheckSlot(const NodeSpec& n, const OpDef& op, size_t k, const InputRef& ref,
                 const std::string& field) {
    if (ref.kind == InputRef::Kind::kNode && g_.nodes[ref.node_index].op == "write_csv") {
      diags_.Add(n.PosOf(field), n.id, field,
                 "'" + ref.name + "' is a write_csv node: its CSV files are the job's output, "
                 "not shards another node reads (read its input instead)");
      return;
    }
    const ops::InputSlot* slot_of = SlotOf(op, k);
    if (slot_of == nullptr) return;
    const ops::InputSlot& slot = *slot_of;
    if (slot.dataset_file) {
      if (ref.kind != InputRef::Kind::kFile) {
        diags_.Add(n.PosOf(field), n.id, field,
                   "op '" + op.name + "' reads a file (" + slot.name + "), but '" + ref.name +
                       "' is " + (ref.kind == InputRef::Kind::kNode ? "a node" : "a directory"));
      }
      return;
    }
    if (ref.kind == InputRef::Kind::kFile) {
      diags_.Add(n.PosOf(field), n.id, field,
                 "'" + ref.name + "' is a file; op '" + op.name +
                     "' reads a directory of .npz/.npy shards or a node (import a CSV with import_csv)");
      return;
    }
    if (ref.kind == InputRef::Kind::kDirectory && ref.shards == 0 && env_.probe) {
      diags_.Add(n.PosOf(field), n.id, field,
                 "dataset directory '" + ref.name + "' holds no .npz/.npy shards");
      return;
    }
    if (!slot.from_ops.empty()) {
      const std::string producer =
          ref.kind == InputRef::Kind::kNode ? g_.nodes[ref.node_index].op : std::string();
      if (std::find(slot.from_ops.begin(), slot.from_ops.end(), producer) == slot.from_ops.end()) {
        diags_.Add(n.PosOf(field), n.id, field,
                   "input '" + slot.name + "' of op '" + op.name + "' must be a " +
                       slot.from_ops.front() + " node, got '" + ref.name + "'" +
                       (producer.empty() ? "" : " (op " + producer + ")"));
      }
    }
  }

  void CheckCoupling(const NodeSpec& n, const OpDef& op) {
    if (n.ranks < 1) {
      diags_.Add(n.PosOf("ranks"), n.id, "ranks",
                 "ranks must be >= 1, got " + std::to_string(n.ranks));
      return;
    }
    const Coupling effective = n.coupling == Coupling::kAuto ? op.default_coupling : n.coupling;
    if (effective == Coupling::kTight && !op.can_be_tight) {
      diags_.Add(n.PosOf("coupling"), n.id, "coupling",
                 "op '" + op.name + "' cannot run tight: it is loose work (one task per shard)");
      return;
    }
    if (effective == Coupling::kLoose && !op.can_be_loose) {
      diags_.Add(n.PosOf("coupling"), n.id, "coupling",
                 "op '" + op.name + "' cannot run loose");
      return;
    }
    if (n.ranks > 1 && effective == Coupling::kLoose) {
      if (!op.can_be_tight) {
        diags_.Add(n.PosOf("ranks"), n.id, "ranks",
                   "ranks > 1 on op '" + op.name +
                       "', which cannot run tight (it runs one task per shard instead)");
      } else {
        diags_.Add(n.PosOf("coupling"), n.id, "coupling",
                   "tight op '" + op.name + "' forced loose cannot have ranks > 1 (got " +
                       std::to_string(n.ranks) + "); use coupling: tight or ranks: 1");
      }
    }
  }

  void CheckResources(const NodeSpec& n) {
    const Resources& r = n.resources;
    if (r.gpus > 0 && r.gpu_memory > 0) {
      diags_.Add(n.PosOf("resources.gpu_memory"), n.id, "resources.gpu_memory",
                 "gpu_memory asks for a share of one GPU; do not combine it with gpus");
    }
  }

  // Iterative DFS (10,000-node chains must not overflow the stack); prints each cycle once.
  void CheckCycles() {
    enum Color : uint8_t { kWhite, kGrey, kBlack };
    std::vector<Color> color(g_.nodes.size(), kWhite);
    std::vector<size_t> parent(g_.nodes.size(), SIZE_MAX);
    for (size_t root = 0; root < g_.nodes.size(); ++root) {
      if (color[root] != kWhite) continue;
      std::vector<std::pair<size_t, size_t>> stack{{root, 0}};  // node, next input
      color[root] = kGrey;
      while (!stack.empty()) {
        auto& [u, next] = stack.back();
        const auto& ins = g_.nodes[u].resolved_inputs;
        if (next == ins.size()) {
          color[u] = kBlack;
          stack.pop_back();
          continue;
        }
        const InputRef& ref = ins[next++];
        if (ref.kind != InputRef::Kind::kNode) continue;
        size_t v = ref.node_index;
        if (color[v] == kWhite) {
          color[v] = kGrey;
          parent[v] = u;
          stack.emplace_back(v, 0);
        } else if (color[v] == kGrey) {
          ReportCycle(u, v, parent);
        }
      }
    }
  }

  void ReportCycle(size_t from, size_t to, const std::vector<size_t>& parent) {
    // `from` reads `to`, and parent[] walks from each node to the node that reads it, so this
    // path follows the data: from -> (its readers ...) -> to -> from.
    std::vector<size_t> path{from};
    for (size_t x = from; x != to && parent[x] != SIZE_MAX; x = parent[x]) path.push_back(parent[x]);
    std::string text;
    for (size_t x : path) text += g_.nodes[x].id + " -> ";
    text += g_.nodes[from].id;
    const NodeSpec& n = g_.nodes[from];
    diags_.Add(n.PosOf("inputs"), n.id, "inputs", "cycle: " + text);
  }

  JobGraph& g_;
  const ValidationEnv& env_;
  Diagnostics& diags_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::string> ids_;
};

}  // namespace

bool IsGlobPattern(std::string_view path) {
  return path.find_first_of("*?[") != std::string_view::npos;
}

std::optional<std::vector<std::string>> ListDatasetFiles(const std::string& abs_path) {
  std::vector<std::string> files;
  if (IsGlobPattern(abs_path)) {
    glob_t matches{};
    const int rc = ::glob(abs_path.c_str(), GLOB_NOSORT, nullptr, &matches);
    if (rc == 0) {
      for (size_t i = 0; i < matches.gl_pathc; ++i) {
        std::error_code ec;
        if (fs::is_regular_file(matches.gl_pathv[i], ec)) files.emplace_back(matches.gl_pathv[i]);
      }
    }
    globfree(&matches);
  } else {
    std::error_code ec;
    if (!fs::is_directory(abs_path, ec)) return std::nullopt;
    for (const auto& e : fs::directory_iterator(abs_path, ec)) {
      const std::string name = e.path().filename().string();
      const bool csv = name.ends_with(".csv") || name.ends_with(".csv.gz") ||
                       name.ends_with(".csv.zst");
      std::error_code type_ec;
      if (csv && !name.starts_with(".") && e.is_regular_file(type_ec)) {
        files.push_back(e.path().string());
      }
    }
  }
  std::sort(files.begin(), files.end());  // byte order, whatever the locale
  return files;
}

PathInfo ProbePath(const std::string& abs_path) {
  std::error_code ec;
  auto st = fs::status(abs_path, ec);
  if (ec || !fs::exists(st)) return {};
  if (fs::is_regular_file(st)) return {PathInfo::Kind::kFile, 0};
  if (!fs::is_directory(st)) return {};
  PathInfo info{PathInfo::Kind::kDirectory, 0};
  for (const auto& e : fs::directory_iterator(abs_path, ec)) {
    if (io::IsShardFileName(e.path().filename().string())) ++info.shards;
  }
  return info;
}

std::string ResolvePath(const std::string& base_dir, const std::string& path) {
  fs::path p(path);
  if (p.is_relative() && !base_dir.empty()) p = fs::path(base_dir) / p;
  return p.lexically_normal().string();
}

void ValidateJob(JobGraph& graph, const ValidationEnv& env, Diagnostics& diags) {
  GraphValidator(graph, env, diags).Run();
  // Column checks need typed params and an acyclic graph with resolved inputs.
  if (diags.empty()) CheckColumnSchemas(graph, env, diags);
}

}  // namespace coupler::job
