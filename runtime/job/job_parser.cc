#include "runtime/job/job_parser.h"

#include <set>
#include <string>

#include "runtime/job/scalars.h"
#include "runtime/job/spec_readers.h"
#include "runtime/util/byte_size.h"

namespace coupler::job {
namespace {

const std::vector<std::string> kJobKeys = {"name",    "description", "workdir", "run_dir",
                                           "reuse",   "priority",    "nodes"};
const std::vector<std::string> kNodeKeys = {"id",       "op",     "inputs", "params", "resources",
                                            "coupling", "ranks", "retries", "requires",
                                            "reuse",    "keep"};
const std::vector<std::string> kResourceKeys = {"cpus", "gpus", "gpu_memory", "memory"};
constexpr int64_t kMaxRanks = 100'000;

std::string Describe(const RawValue& v) {
  if (v.IsScalar()) return "'" + v.text + "'";
  return std::string(v.KindName());
}

// Reads typed fields with the diagnostics context (node, field) fixed.
class FieldReader {
 public:
  FieldReader(Diagnostics& diags, std::string node) : diags_(diags), node_(std::move(node)) {}

  void Error(SourcePos pos, const std::string& field, std::string msg, std::string hint = {}) {
    diags_.Add(pos, node_, field, std::move(msg), std::move(hint));
  }

  std::optional<std::string> String(const RawValue& v, const std::string& field) {
    if (!v.IsScalar()) {
      Error(v.pos, field, "expected a string, got " + std::string(v.KindName()));
      return std::nullopt;
    }
    return v.text;
  }

  std::optional<int64_t> Int(const RawValue& v, const std::string& field, int64_t lo, int64_t hi) {
    const bool plain = v.IsScalar() && !v.quoted;
    std::optional<int64_t> x = plain ? ParseInt(v.text) : std::nullopt;
    const bool out_of_range = x ? (*x < lo || *x > hi) : plain && LooksLikeInteger(v.text);
    if (out_of_range) {
      Error(v.pos, field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                              ", got " + v.text);
      return std::nullopt;
    }
    if (!x) Error(v.pos, field, "expected an integer, got " + Describe(v));
    return x;
  }

  std::optional<bool> Bool(const RawValue& v, const std::string& field) {
    std::optional<bool> b = v.IsScalar() && !v.quoted ? ParseBool(v.text) : std::nullopt;
    if (!b) Error(v.pos, field, "expected true or false, got " + Describe(v));
    return b;
  }

  // Calls `fn(entry)` for each entry of a map once, reporting keys given twice.
  template <typename Fn>
  void EachEntry(const RawValue& map, const std::string& prefix, Fn fn) {
    std::set<std::string> seen;
    for (const RawEntry& e : map.entries) {
      if (!seen.insert(e.key).second) {
        Error(e.key_pos, prefix + e.key, "key given twice");
        continue;
      }
      fn(e);
    }
  }

 private:
  Diagnostics& diags_;
  std::string node_;
};

void ReadResources(const RawValue& map, NodeSpec& node, FieldReader& r) {
  if (!map.IsMap()) {
    r.Error(map.pos, "resources",
            "expected a mapping of cpus/gpus/gpu_memory/memory, got " + std::string(map.KindName()));
    return;
  }
  r.EachEntry(map, "resources.", [&](const RawEntry& e) {
    const std::string field = "resources." + e.key;
    const RawValue& v = e.value;
    node.positions[field] = v.pos;
    if (e.key == "cpus") {
      std::optional<double> c = v.IsScalar() && !v.quoted ? ParseFloat(v.text) : std::nullopt;
      if (!c) {
        r.Error(v.pos, field, "expected a number of CPUs, got " + Describe(v));
      } else if (*c <= 0 || *c > 4096) {
        r.Error(v.pos, field, "must be > 0 and <= 4096, got " + v.text);
      } else {
        node.resources.cpus = *c;
      }
    } else if (e.key == "gpus") {
      if (auto g = r.Int(v, field, 0, 1024)) node.resources.gpus = static_cast<int>(*g);
    } else if (e.key == "gpu_memory" || e.key == "memory") {
      // The one byte-size parser of coupler (flags and configs use it too); a fraction of a
      // byte is floored, so "0.5B" is the zero this refuses.
      Result<size_t> bytes = v.IsScalar() ? util::ParseByteSize(v.text)
                                          : Result<size_t>(InvalidArgument("not a scalar"));
      if (!bytes.ok() || *bytes == 0) {
        r.Error(v.pos, field, "expected a positive size such as 4GiB or 512MiB, got " + Describe(v));
      } else {
        (e.key == "memory" ? node.resources.memory : node.resources.gpu_memory) = *bytes;
      }
    } else {
      r.Error(e.key_pos, field, "unknown resource '" + e.key + "'", DidYouMean(e.key, kResourceKeys));
    }
  });
}

// Label values are compared as text with what workers advertise (--labels k=v), so only
// scalars are accepted: a list or mapping could never match.
void ReadRequires(const RawValue& map, NodeSpec& node, FieldReader& r) {
  if (map.IsNull()) return;
  if (!map.IsMap()) {
    r.Error(map.pos, "requires",
            "expected a mapping of worker labels to values (e.g. interconnect: nvlink), got " +
                std::string(map.KindName()));
    return;
  }
  r.EachEntry(map, "requires.", [&](const RawEntry& e) {
    const std::string field = "requires." + e.key;
    node.positions[field] = e.value.pos;
    if (e.key.empty()) {
      r.Error(e.key_pos, field, "empty label name");
    } else if (!e.value.IsScalar() || e.value.text.empty()) {
      r.Error(e.value.pos, field,
              "expected a label value (a non-empty string), got " + Describe(e.value));
    } else {
      node.required_labels[e.key] = e.value.text;
    }
  });
}

void ReadInputs(const RawValue& v, NodeSpec& node, FieldReader& r) {
  if (v.IsNull()) return;
  auto add = [&](const RawValue& item, size_t i) {
    const std::string field = "inputs[" + std::to_string(i) + "]";
    node.positions[field] = item.pos;
    auto s = r.String(item, field);
    if (!s) return;
    if (s->empty()) {
      r.Error(item.pos, field, "empty input name");
    } else {
      node.inputs.push_back(*s);
    }
  };
  if (v.IsScalar()) {
    add(v, 0);
  } else if (v.IsSequence()) {
    for (size_t i = 0; i < v.items.size(); ++i) add(v.items[i], i);
  } else {
    r.Error(v.pos, "inputs", "expected a list of node ids or dataset paths, got a mapping");
  }
}

void ReadCoupling(const RawValue& v, NodeSpec& node, FieldReader& r) {
  auto s = r.String(v, "coupling");
  if (!s) return;
  if (*s == "auto") {
    node.coupling = Coupling::kAuto;
  } else if (*s == "loose") {
    node.coupling = Coupling::kLoose;
  } else if (*s == "tight") {
    node.coupling = Coupling::kTight;
  } else {
    r.Error(v.pos, "coupling", "expected auto, loose or tight, got '" + *s + "'",
            DidYouMean(*s, {"auto", "loose", "tight"}));
  }
}

void ReadNode(RawValue& n, size_t index, JobGraph& graph, Diagnostics& diags) {
  if (!n.IsMap()) {
    diags.Add(n.pos, "", "nodes[" + std::to_string(index) + "]",
              "expected a mapping with id and op, got " + std::string(n.KindName()));
    return;
  }
  NodeSpec node;
  node.pos = n.pos;
  // The id first, so every later message can name the node.
  const RawValue* id = n.Find("id");
  if (id != nullptr && id->IsScalar()) node.id = id->text;
  FieldReader r(diags, node.id);
  r.EachEntry(n, "", [&](const RawEntry& e) {
    const RawValue& v = e.value;
    node.positions[e.key] = v.pos;
    if (e.key == "id") {
      if (!v.IsScalar() || v.text.empty()) {
        r.Error(v.pos, "id", "expected a non-empty string, got " + Describe(v));
      }
    } else if (e.key == "op") {
      auto s = r.String(v, "op");
      if (s && s->empty()) {
        r.Error(v.pos, "op", "must not be empty: name one of the ops (see docs/ops.md)");
      } else if (s) {
        node.op = *s;
      }
    } else if (e.key == "inputs") {
      ReadInputs(v, node, r);
    } else if (e.key == "params") {
      if (v.IsNull()) return;
      if (!v.IsMap()) {
        r.Error(v.pos, "params",
                "expected a mapping of parameter names to values, got " + std::string(v.KindName()));
        return;
      }
      r.EachEntry(v, "params.", [&](const RawEntry& p) {
        node.positions["params." + p.key] = p.key_pos;
        // The tree is discarded after parsing: take the value instead of copying it.
        node.raw_params[p.key] = std::move(const_cast<RawEntry&>(p).value);
      });
    } else if (e.key == "resources") {
      ReadResources(v, node, r);
    } else if (e.key == "coupling") {
      ReadCoupling(v, node, r);
    } else if (e.key == "ranks") {
      node.ranks_given = true;
      if (auto x = r.Int(v, "ranks", 1, kMaxRanks)) node.ranks = static_cast<int>(*x);
    } else if (e.key == "requires") {
      ReadRequires(v, node, r);
    } else if (e.key == "retries") {
      if (auto x = r.Int(v, "retries", 0, 100)) node.retries = static_cast<int>(*x);
    } else if (e.key == "reuse") {
      if (auto b = r.Bool(v, "reuse")) node.reuse = *b;
    } else if (e.key == "keep") {
      if (auto b = r.Bool(v, "keep")) node.keep = *b;
    } else {
      r.Error(e.key_pos, e.key, "unknown field '" + e.key + "'", DidYouMean(e.key, kNodeKeys));
    }
  });
  if (id == nullptr) {
    r.Error(n.pos, "id",
            "missing required field 'id' (node " + std::to_string(index + 1) + " of the list)");
  }
  if (n.Find("op") == nullptr) r.Error(n.pos, "op", "missing required field 'op'");
  graph.nodes.push_back(std::move(node));
}

}  // namespace

std::optional<JobGraph> ParseJobSpec(std::string_view text, Diagnostics& diags) {
  std::optional<RawValue> root = ReadSpecText(text, diags);  // owned here, consumed below
  if (!root) return std::nullopt;
  if (root->IsNull()) {
    diags.Add({1, 1}, "", "", "empty spec: expected a mapping with 'name' and 'nodes'");
    return std::nullopt;
  }
  if (!root->IsMap()) {
    diags.Add(root->pos, "", "",
              "not a job spec: expected a mapping with 'name' and 'nodes', got " +
                  std::string(root->KindName()));
    return std::nullopt;
  }

  JobGraph graph;
  FieldReader r(diags, "");
  r.EachEntry(*root, "", [&](const RawEntry& e) {
    const RawValue& v = e.value;
    graph.positions[e.key] = v.pos;
    auto scalar = [&](std::string& out) {
      if (auto s = r.String(v, e.key)) out = *s;
    };
    if (e.key == "name") {
      scalar(graph.name);
    } else if (e.key == "description") {
      scalar(graph.description);
    } else if (e.key == "workdir") {
      scalar(graph.workdir);
    } else if (e.key == "run_dir") {
      scalar(graph.run_dir);
      // A folder under the workdir, never outside it: runs must not write where the
      // workdir's owner did not put them.
      const std::string& d = graph.run_dir;
      if (d.empty() || d.front() == '/' || d == ".." || d.starts_with("../") ||
          d.find("/../") != std::string::npos || d.ends_with("/..")) {
        r.Error(v.pos, e.key,
                "expected a folder under the workdir (relative, no '..'; '.' for the workdir "
                "itself), got '" + d + "'");
      }
    } else if (e.key == "reuse") {
      if (auto b = r.Bool(v, e.key)) graph.reuse = *b;
    } else if (e.key == "priority") {
      if (auto p = r.Int(v, e.key, -1000, 1000)) graph.priority = static_cast<int>(*p);
    } else if (e.key == "nodes") {
      if (v.IsNull()) return;  // reported below as an empty graph
      if (!v.IsSequence()) {
        r.Error(v.pos, e.key, "expected a list of nodes, got " + std::string(v.KindName()));
        return;
      }
      graph.nodes.reserve(v.items.size());
      auto& items = const_cast<std::vector<RawValue>&>(v.items);
      for (size_t i = 0; i < items.size(); ++i) ReadNode(items[i], i, graph, diags);
    } else {
      r.Error(e.key_pos, e.key, "unknown top-level field '" + e.key + "'",
              DidYouMean(e.key, kJobKeys));
    }
  });
  if (root->Find("name") == nullptr) r.Error(root->pos, "name", "missing required field 'name'");
  const RawValue* nodes = root->Find("nodes");
  if (nodes == nullptr || nodes->IsNull() || (nodes->IsSequence() && nodes->items.empty())) {
    r.Error(nodes != nullptr ? nodes->pos : root->pos, "nodes",
            "empty graph: a job needs at least one node");
  }
  return graph;
}

}  // namespace coupler::job
