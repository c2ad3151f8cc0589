#include "runtime/job/job_parser.h"

#include <set>
#include <string>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "runtime/job/scalars.h"
#include "runtime/job/text_precheck.h"

namespace coupler::job {
namespace {

const std::vector<std::string> kJobKeys = {"name", "description", "workdir", "priority", "nodes"};
const std::vector<std::string> kNodeKeys = {"id",       "op",     "inputs", "params", "resources",
                                            "coupling", "ranks", "retries"};
const std::vector<std::string> kResourceKeys = {"cpus", "gpus", "gpu_memory", "memory"};

SourcePos PosOf(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

std::string_view KindName(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Undefined: return "nothing";
  }
  return "nothing";
}

// yaml-cpp marks quoted scalars with the "!" tag; plain ones with "?".
bool IsQuoted(const YAML::Node& n) { return n.Tag() == "!"; }

constexpr int kMaxDepth = 64;
constexpr int64_t kMaxRanks = 100'000;

RawValue ToRaw(const YAML::Node& n, int depth) {
  RawValue v;
  v.pos = PosOf(n);
  if (depth > kMaxDepth) return v;
  switch (n.Type()) {
    case YAML::NodeType::Scalar:
      v.kind = RawValue::Kind::kScalar;
      v.text = n.Scalar();
      v.quoted = IsQuoted(n);
      break;
    case YAML::NodeType::Sequence:
      v.kind = RawValue::Kind::kSequence;
      for (const auto& item : n) v.items.push_back(ToRaw(item, depth + 1));
      break;
    case YAML::NodeType::Map:
      v.kind = RawValue::Kind::kMap;
      for (const auto& kv : n) {
        v.entries.emplace_back(kv.first.IsScalar() ? kv.first.Scalar() : std::string("?"),
                               ToRaw(kv.second, depth + 1));
      }
      break;
    default:
      break;
  }
  return v;
}

// Walks one node's mapping with the diagnostics context fixed.
class NodeReader {
 public:
  NodeReader(Diagnostics& diags, NodeSpec& node) : diags_(diags), node_(node) {}

  void Error(const YAML::Node& at, const std::string& field, std::string msg,
             std::string hint = {}) {
    diags_.Add(PosOf(at), node_.id, field, std::move(msg), std::move(hint));
  }

  std::optional<std::string> String(const YAML::Node& v, const std::string& field) {
    if (!v.IsScalar()) {
      Error(v, field, "expected a string, got " + std::string(KindName(v)));
      return std::nullopt;
    }
    return v.Scalar();
  }

  std::optional<int64_t> Int(const YAML::Node& v, const std::string& field, int64_t lo,
                             int64_t hi) {
    std::optional<int64_t> x;
    const bool plain = v.IsScalar() && !IsQuoted(v);
    if (plain) x = ParseInt(v.Scalar());
    if (!x) {
      if (plain && LooksLikeInteger(v.Scalar())) {
        Error(v, field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                            ", got " + v.Scalar());
      } else {
        Error(v, field, "expected an integer, got " + Describe(v));
      }
      return std::nullopt;
    }
    if (*x < lo || *x > hi) {
      Error(v, field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                          ", got " + std::to_string(*x));
      return std::nullopt;
    }
    return x;
  }

  static std::string Describe(const YAML::Node& v) {
    if (v.IsScalar()) return "'" + v.Scalar() + "'";
    return std::string(KindName(v));
  }

  void Resources(const YAML::Node& map) {
    if (!map.IsMap()) {
      Error(map, "resources", "expected a mapping of cpus/gpus/gpu_memory/memory, got " +
                                  std::string(KindName(map)));
      return;
    }
    std::set<std::string> seen;
    for (const auto& kv : map) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
      const std::string field = "resources." + key;
      if (!seen.insert(key).second) {
        Error(kv.first, field, "key given twice");
        continue;
      }
      node_.positions[field] = PosOf(kv.second);
      if (key == "cpus") {
        std::optional<double> c;
        if (kv.second.IsScalar() && !IsQuoted(kv.second)) c = ParseFloat(kv.second.Scalar());
        if (!c) {
          Error(kv.second, field, "expected a number of CPUs, got " + Describe(kv.second));
        } else if (*c <= 0 || *c > 4096) {
          Error(kv.second, field, "must be > 0 and <= 4096, got " + kv.second.Scalar());
        } else {
          node_.resources.cpus = *c;
        }
      } else if (key == "gpus") {
        if (auto g = Int(kv.second, field, 0, 1024)) node_.resources.gpus = static_cast<int>(*g);
      } else if (key == "gpu_memory" || key == "memory") {
        std::optional<uint64_t> bytes;
        if (kv.second.IsScalar()) bytes = ParseSize(kv.second.Scalar());
        if (!bytes || *bytes == 0) {
          Error(kv.second, field,
                "expected a positive size such as 4GiB or 512MiB, got " + Describe(kv.second));
        } else {
          (key == "memory" ? node_.resources.memory : node_.resources.gpu_memory) = *bytes;
        }
      } else {
        Error(kv.first, field, "unknown resource '" + key + "'",
              DidYouMean(key, kResourceKeys));
      }
    }
  }

  void Inputs(const YAML::Node& v) {
    if (v.IsNull()) return;
    auto add = [&](const YAML::Node& item, size_t i) {
      const std::string field = "inputs[" + std::to_string(i) + "]";
      node_.positions[field] = PosOf(item);
      if (auto s = String(item, field)) {
        if (s->empty()) {
          Error(item, field, "empty input name");
        } else {
          node_.inputs.push_back(*s);
        }
      }
    };
    if (v.IsScalar()) {
      add(v, 0);
    } else if (v.IsSequence()) {
      for (size_t i = 0; i < v.size(); ++i) add(v[i], i);
    } else {
      Error(v, "inputs", "expected a list of node ids or dataset paths, got " +
                             std::string(KindName(v)));
    }
  }

  void Params(const YAML::Node& v) {
    if (v.IsNull()) return;
    if (!v.IsMap()) {
      Error(v, "params", "expected a mapping of parameter names to values, got " +
                             std::string(KindName(v)));
      return;
    }
    for (const auto& kv : v) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
      node_.positions["params." + key] = PosOf(kv.first);
      if (node_.raw_params.count(key) != 0) {
        Error(kv.first, "params." + key, "parameter given twice");
        continue;
      }
      node_.raw_params[key] = ToRaw(kv.second, 0);
    }
  }

  void Coupling(const YAML::Node& v) {
    auto s = String(v, "coupling");
    if (!s) return;
    if (*s == "auto") {
      node_.coupling = Coupling::kAuto;
    } else if (*s == "loose") {
      node_.coupling = Coupling::kLoose;
    } else if (*s == "tight") {
      node_.coupling = Coupling::kTight;
    } else {
      Error(v, "coupling", "expected auto, loose or tight, got '" + *s + "'",
            DidYouMean(*s, {"auto", "loose", "tight"}));
    }
  }

 private:
  Diagnostics& diags_;
  NodeSpec& node_;
};

void ParseNode(const YAML::Node& n, size_t index, JobGraph& graph, Diagnostics& diags) {
  NodeSpec node;
  node.pos = PosOf(n);
  if (!n.IsMap()) {
    diags.Add(PosOf(n), "", "nodes[" + std::to_string(index) + "]",
              "expected a mapping with id and op, got " + std::string(KindName(n)));
    return;
  }
  // The id first, so every later message can name the node.
  if (const YAML::Node id = n["id"]) {
    node.positions["id"] = PosOf(id);
    if (id.IsScalar()) node.id = id.Scalar();
  }
  NodeReader reader(diags, node);
  std::set<std::string> seen;
  for (const auto& kv : n) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
    const YAML::Node& v = kv.second;
    if (!seen.insert(key).second) {
      reader.Error(kv.first, key, "key given twice");
      continue;
    }
    if (key != "id") node.positions[key] = PosOf(v);
    if (key == "id") {
      if (!v.IsScalar() || v.Scalar().empty()) {
        reader.Error(v, "id", "expected a non-empty string, got " + NodeReader::Describe(v));
      }
    } else if (key == "op") {
      if (auto s = reader.String(v, "op")) {
        if (s->empty()) {
          reader.Error(v, "op", "must not be empty: name one of the ops (see docs/ops.md)");
        } else {
          node.op = *s;
        }
      }
    } else if (key == "inputs") {
      reader.Inputs(v);
    } else if (key == "params") {
      reader.Params(v);
    } else if (key == "resources") {
      reader.Resources(v);
    } else if (key == "coupling") {
      reader.Coupling(v);
    } else if (key == "ranks") {
      node.ranks_given = true;
      if (auto r = reader.Int(v, "ranks", 1, kMaxRanks)) node.ranks = static_cast<int>(*r);
    } else if (key == "retries") {
      if (auto r = reader.Int(v, "retries", 0, 100)) node.retries = static_cast<int>(*r);
    } else {
      reader.Error(kv.first, key, "unknown field '" + key + "'", DidYouMean(key, kNodeKeys));
    }
  }
  if (!n["id"]) {
    reader.Error(n, "id", "missing required field 'id' (node " + std::to_string(index + 1) +
                              " of the list)");
  }
  if (!n["op"]) reader.Error(n, "op", "missing required field 'op'");
  graph.nodes.push_back(std::move(node));
}

// yaml-cpp's words for the common mistakes, in a user's words and at the cause.
void ReportYamlError(const YAML::Exception& e, const TextFacts& facts, Diagnostics& diags) {
  SourcePos pos = e.mark.is_null() ? SourcePos{} : SourcePos{e.mark.line + 1, e.mark.column + 1};
  std::string msg = e.msg;
  if (msg.find("flow not found") != std::string::npos && facts.unclosed_bracket) {
    const char open = facts.unclosed_bracket_char;
    pos = *facts.unclosed_bracket;
    msg = fmt::format("'{}' opened here is never closed (no matching '{}')", open,
                      open == '[' ? ']' : '}');
  } else if (msg.find("bad file") != std::string::npos ||
             msg.find("recursion") != std::string::npos) {
    msg = "nested too deep";
  }
  diags.Add(pos, "", "", "not valid YAML or JSON: " + msg);
}

}  // namespace

std::optional<JobGraph> ParseJobSpec(std::string_view text, Diagnostics& diags) {
  TextFacts facts;
  if (!PrecheckSpecText(text, diags, facts)) return std::nullopt;
  YAML::Node root;
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(std::string(text));
    if (docs.size() > 1) {
      diags.Add(PosOf(docs[1]), "", "",
                "not valid YAML or JSON: a second document starts here; a spec file holds one "
                "job (remove the extra text or '---')");
      return std::nullopt;
    }
    if (!docs.empty()) root = docs[0];
  } catch (const YAML::Exception& e) {
    ReportYamlError(e, facts, diags);
    return std::nullopt;
  }
  if (!root || root.IsNull()) {
    diags.Add({1, 1}, "", "", "empty spec: expected a mapping with 'name' and 'nodes'");
    return std::nullopt;
  }
  if (!root.IsMap()) {
    diags.Add(PosOf(root), "", "", "not a job spec: expected a mapping with 'name' and 'nodes', got " +
                                       std::string(KindName(root)));
    return std::nullopt;
  }

  JobGraph graph;
  std::set<std::string> seen;
  try {
    for (const auto& kv : root) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
      const YAML::Node& v = kv.second;
      graph.positions[key] = PosOf(v);
      if (!seen.insert(key).second) {
        diags.Add(PosOf(kv.first), "", key, "key given twice");
        continue;
      }
      auto scalar = [&](std::string& out) {
        if (v.IsScalar()) {
          out = v.Scalar();
        } else {
          diags.Add(PosOf(v), "", key, "expected a string, got " + std::string(KindName(v)));
        }
      };
      if (key == "name") {
        scalar(graph.name);
      } else if (key == "description") {
        scalar(graph.description);
      } else if (key == "workdir") {
        scalar(graph.workdir);
      } else if (key == "priority") {
        std::optional<int64_t> p;
        if (v.IsScalar() && !IsQuoted(v)) p = ParseInt(v.Scalar());
        if (!p || *p < -1000 || *p > 1000) {
          diags.Add(PosOf(v), "", key,
                    "expected an integer between -1000 and 1000, got " +
                        (v.IsScalar() ? "'" + v.Scalar() + "'" : std::string(KindName(v))));
        } else {
          graph.priority = static_cast<int>(*p);
        }
      } else if (key == "nodes") {
        if (v.IsNull()) continue;  // reported below as an empty graph
        if (!v.IsSequence()) {
          diags.Add(PosOf(v), "", key, "expected a list of nodes, got " + std::string(KindName(v)));
          continue;
        }
        graph.nodes.reserve(v.size());
        for (size_t i = 0; i < v.size(); ++i) ParseNode(v[i], i, graph, diags);
      } else {
        diags.Add(PosOf(kv.first), "", key, "unknown top-level field '" + key + "'",
                  DidYouMean(key, kJobKeys));
      }
    }
  } catch (const YAML::Exception& e) {
    // Conversions inside yaml-cpp can still throw on odd documents; report, never crash.
    diags.Add(e.mark.is_null() ? SourcePos{} : SourcePos{e.mark.line + 1, e.mark.column + 1},
              "", "", "unreadable spec: " + e.msg);
    return std::nullopt;
  }
  const YAML::Node& croot = root;
  if (!croot["name"]) diags.Add(PosOf(root), "", "name", "missing required field 'name'");
  const YAML::Node nodes = croot["nodes"];
  if (!nodes || nodes.IsNull() || (nodes.IsSequence() && nodes.size() == 0)) {
    diags.Add(nodes ? PosOf(nodes) : PosOf(root), "", "nodes",
              "empty graph: a job needs at least one node");
  }
  return graph;
}

}  // namespace coupler::job
