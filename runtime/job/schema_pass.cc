#include "runtime/job/schema_pass.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "runtime/expr/program.h"
#include "runtime/job/scalars.h"
#include "runtime/relational/aggregate_spec.h"
#include "runtime/relational/join.h"

namespace coupler::job {
namespace {

using Schema = std::optional<io::TableSchema>;

// Nodes in an order where every input comes first (Kahn's algorithm, no recursion).
std::vector<size_t> TopologicalOrder(const JobGraph& g) {
  const size_t n = g.nodes.size();
  std::vector<size_t> pending(n, 0);
  std::vector<std::vector<size_t>> readers(n);
  for (size_t i = 0; i < n; ++i) {
    for (const InputRef& in : g.nodes[i].resolved_inputs) {
      if (in.kind != InputRef::Kind::kNode) continue;
      ++pending[i];
      readers[in.node_index].push_back(i);
    }
  }
  std::vector<size_t> order;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) order.push_back(i);
  }
  for (size_t k = 0; k < order.size(); ++k) {
    for (size_t r : readers[order[k]]) {
      if (--pending[r] == 0) order.push_back(r);
    }
  }
  return order;
}

template <typename T>
const T* ParamAs(const NodeSpec& n, const std::string& name) {
  auto it = n.params.find(name);
  return it == n.params.end() ? nullptr : std::get_if<T>(&it->second);
}

std::vector<std::string> Names(const io::TableSchema& s) {
  std::vector<std::string> out;
  for (const io::ColumnSchema& c : s.columns) out.push_back(c.name);
  return out;
}

class SchemaPass {
 public:
  SchemaPass(const JobGraph& g, const ValidationEnv& env, Diagnostics& diags)
      : g_(g), env_(env), diags_(diags), schemas_(g.nodes.size()) {}

  std::vector<Schema> Run() {
    for (size_t i : TopologicalOrder(g_)) schemas_[i] = Output(g_.nodes[i]);
    return std::move(schemas_);
  }

 private:
  // Where a param's value (or the k-th entry of a mapping) was written.
  SourcePos ValuePos(const NodeSpec& n, const std::string& param, int entry = -1) const {
    auto it = n.raw_params.find(param);
    if (it != n.raw_params.end()) {
      const RawValue& v = it->second;
      if (entry >= 0 && static_cast<size_t>(entry) < v.entries.size() &&
          v.entries[static_cast<size_t>(entry)].value.pos.line > 0) {
        return v.entries[static_cast<size_t>(entry)].value.pos;
      }
      if (entry < 0 && v.pos.line > 0) return v.pos;
    }
    return n.PosOf("params." + param);
  }

  void Error(const NodeSpec& n, SourcePos pos, const std::string& field, std::string message,
             std::string hint = {}) {
    diags_.Add(pos, n.id, field, std::move(message), std::move(hint));
  }

  // Compiles `text`; reports and returns nullopt on an error.
  std::optional<expr::Program> Check(const NodeSpec& n, SourcePos pos, const std::string& field,
                                     const std::string& text, const io::TableSchema& schema,
                                     expr::Expect expect) {
    expr::ExprResult<expr::Program> program = expr::Compile(text, schema, expect);
    if (!program.ok()) {
      Error(n, pos, field, program.error().Describe(text));
      return std::nullopt;
    }
    return std::move(program.value());
  }

  Schema FirstInput(const NodeSpec& n) const {
    if (n.resolved_inputs.empty()) return std::nullopt;
    const InputRef& in = n.resolved_inputs.front();
    if (in.kind != InputRef::Kind::kNode) return std::nullopt;  // a shard directory: unread
    return schemas_[in.node_index];
  }

  // A named column that must exist: reported with a did-you-mean when it does not.
  bool NeedColumn(const NodeSpec& n, const std::string& field, const std::string& name,
                  const io::TableSchema& schema) {
    if (schema.Find(name) != nullptr) return true;
    Error(n, ValuePos(n, field.substr(field.find('.') + 1)), field,
          "no column '" + name + "' in the input", DidYouMean(name, Names(schema)));
    return false;
  }

  Schema Output(const NodeSpec& n) {
    const std::string& op = n.op;
    if (op == "import_csv") {
      return env_.dataset_schema ? env_.dataset_schema(n) : std::nullopt;
    }
    Schema in = FirstInput(n);
    if (op == "clip") return in;
    if (op == "standardize") return Standardize(n, in);
    if (!in) return std::nullopt;
    if (op == "filter") {
      const std::string* where = ParamAs<std::string>(n, "where");
      if (where == nullptr) return in;
      Check(n, ValuePos(n, "where"), "params.where", *where, *in, expr::Expect::kBoolean);
      return in;
    }
    if (op == "derive") return Derive(n, *in);
    if (op == "select") return Select(n, *in);
    if (op == "filter_map") {
      const std::string* a = ParamAs<std::string>(n, "a");
      const std::string* b = ParamAs<std::string>(n, "b");
      const std::string* out = ParamAs<std::string>(n, "out");
      if (a != nullptr) NeedColumn(n, "params.a", *a, *in);
      if (b != nullptr) NeedColumn(n, "params.b", *b, *in);
      for (io::ColumnSchema& c : in->columns) {  // int64 factors multiply as float32
        const bool factor = (a != nullptr && c.name == *a) || (b != nullptr && c.name == *b);
        if (factor && c.dtype == ElementType::kInt64) c.dtype = ElementType::kFloat32;
      }
      if (out != nullptr && in->Find(*out) == nullptr) {
        in->columns.push_back({*out, ElementType::kFloat32, false});
      }
      return in;
    }
    if (op == "cast") return Cast(n, *in);
    if (op == "column_stats") return Stats(n, *in);
    if (op == "group_by") return GroupBy(n, *in);
    if (op == "join") return Join(n, *in);
    if (op == "sort") {
      if (const auto* by = ParamAs<std::vector<std::string>>(n, "by")) {
        for (const std::string& column : *by) NeedColumn(n, "params.by", column, *in);
      }
      if (const auto* descending = ParamAs<std::vector<std::string>>(n, "descending")) {
        const auto* by = ParamAs<std::vector<std::string>>(n, "by");
        for (const std::string& column : *descending) {
          if (by == nullptr || std::find(by->begin(), by->end(), column) == by->end()) {
            Error(n, ValuePos(n, "descending"), "params.descending",
                  "column '" + column + "' is not one of `by`");
          }
        }
      }
      return in;
    }
    if (op == "dedup") {
      if (const auto* keys = ParamAs<std::vector<std::string>>(n, "keys")) {
        for (const std::string& key : *keys) NeedColumn(n, "params.keys", key, *in);
      }
      return in;
    }
    return std::nullopt;  // exec, mpi_exec, train, evaluate, noop: what they write is theirs
  }

  // The int64 columns standardize rescales come out float32: the named ones, or by default the
  // ones its stats input summarized (as the op takes them from the stats file); unknown stats:
  // the ones column_stats summarizes by default.
  Schema Standardize(const NodeSpec& n, Schema in) {
    if (!in) return in;
    std::vector<std::string> names;
    if (const auto* columns = ParamAs<std::vector<std::string>>(n, "columns")) names = *columns;
    const bool by_default = names.empty();
    if (by_default && n.resolved_inputs.size() > 1 &&
        n.resolved_inputs[1].kind == InputRef::Kind::kNode) {
      if (const Schema& stats = schemas_[n.resolved_inputs[1].node_index]) names = Names(*stats);
    }
    for (io::ColumnSchema& c : in->columns) {
      const bool chosen =
          names.empty() ? io::IsSummarizedByDefault(c.dtype, c.categorical)
                        : std::find(names.begin(), names.end(), c.name) != names.end();
      if (chosen && c.dtype == ElementType::kInt64 && !c.categorical) {
        c.dtype = ElementType::kFloat32;
      }
    }
    return in;
  }

  Schema Derive(const NodeSpec& n, io::TableSchema schema) {
    const ParamMap* columns = ParamAs<ParamMap>(n, "columns");
    if (columns == nullptr) return schema;
    for (size_t k = 0; k < columns->size(); ++k) {
      const ParamEntry& e = (*columns)[k];
      std::optional<expr::Program> program =
          Check(n, ValuePos(n, "columns", static_cast<int>(k)), "params.columns." + e.key, e.value,
                schema, expr::Expect::kNumber);
      if (!program) return std::nullopt;  // later entries may read this one
      io::ColumnSchema column{e.key, expr::ElementTypeOf(program->result), false};
      auto it = std::find_if(schema.columns.begin(), schema.columns.end(),
                             [&](const io::ColumnSchema& c) { return c.name == e.key; });
      if (it != schema.columns.end()) {
        *it = column;
      } else {
        schema.columns.push_back(column);
      }
    }
    return schema;
  }

  // The keys, then each aggregate's column, typed as the op will write them; a key or column
  // that does not exist, or a function that does not apply to its column, is reported where the
  // spec names it.
  Schema GroupBy(const NodeSpec& n, const io::TableSchema& in) {
    io::TableSchema out;
    bool ok = true;
    if (const auto* keys = ParamAs<std::vector<std::string>>(n, "keys")) {
      for (const std::string& key : *keys) {
        if (!NeedColumn(n, "params.keys", key, in)) {
          ok = false;
          continue;
        }
        const io::ColumnSchema& c = *in.Find(key);
        if (c.dtype == ElementType::kFloat16 || c.dtype == ElementType::kBFloat16) {
          Error(n, ValuePos(n, "keys"), "params.keys",
                "key column '" + key + "' is " + std::string(ElementTypeName(c.dtype)) +
                    ": 16-bit floats are not keys");
          ok = false;
          continue;
        }
        if (out.Find(key) != nullptr) {
          Error(n, ValuePos(n, "keys"), "params.keys", "key column '" + key + "' is named twice");
          ok = false;
          continue;
        }
        out.columns.push_back(c);
      }
    }
    if (const auto* aggregates = ParamAs<ParamMap>(n, "aggregates")) {
      for (size_t i = 0; i < aggregates->size(); ++i) {
        const ParamEntry& e = (*aggregates)[i];
        const SourcePos pos = ValuePos(n, "aggregates", static_cast<int>(i));
        auto spec = relational::ParseAggregate(e.key, e.value);
        if (!spec.ok()) {
          Error(n, pos, "params.aggregates." + e.key, spec.status().message());
          ok = false;
          continue;
        }
        const io::ColumnSchema* column = spec->column.empty() ? nullptr : in.Find(spec->column);
        if (!spec->column.empty() && column == nullptr) {
          Error(n, pos, "params.aggregates." + e.key, "no column '" + spec->column + "' in the input",
                DidYouMean(spec->column, Names(in)));
          ok = false;
          continue;
        }
        auto typed = relational::AggregateOutput(*spec, column);
        if (!typed.ok()) {
          Error(n, pos, "params.aggregates." + e.key, typed.status().message());
          ok = false;
          continue;
        }
        if (out.Find(e.key) != nullptr) {
          Error(n, pos, "params.aggregates." + e.key,
                "output column '" + e.key + "' is also a key or another aggregate");
          ok = false;
          continue;
        }
        out.columns.push_back(*typed);
      }
    }
    if (!ok) return std::nullopt;
    return out;
  }

  // Both inputs' columns known: the keys checked on both sides and the output typed as the op
  // writes it (relational::JoinSchema).
  Schema Join(const NodeSpec& n, const io::TableSchema& left) {
    const auto* broadcast = ParamAs<bool>(n, "broadcast");
    const auto* how_text = ParamAs<std::string>(n, "how");
    if (broadcast != nullptr && *broadcast && how_text != nullptr &&
        (*how_text == "right" || *how_text == "outer")) {
      // Each task sees one left shard: it cannot know which right rows no shard matched.
      Error(n, ValuePos(n, "broadcast"), "params.broadcast",
            "a broadcast join cannot be '" + *how_text + "': use inner, left, semi or anti, or shuffle");
      return std::nullopt;
    }
    if (n.resolved_inputs.size() < 2 || n.resolved_inputs[1].kind != InputRef::Kind::kNode) {
      return std::nullopt;
    }
    const Schema& right = schemas_[n.resolved_inputs[1].node_index];
    if (!right) return std::nullopt;
    relational::JoinOptions options;
    if (const auto* on = ParamAs<std::vector<std::string>>(n, "on")) options.on = *on;
    if (const auto* how = ParamAs<std::string>(n, "how")) {
      options.how = relational::ParseJoinHow(*how).value_or(relational::JoinHow::kInner);
    }
    if (const auto* suffixes = ParamAs<std::vector<std::string>>(n, "suffixes");
        suffixes != nullptr && suffixes->size() == 2) {
      options.suffixes = {(*suffixes)[0], (*suffixes)[1]};
    }
    auto out = relational::JoinSchema(left, *right, options);
    if (!out.ok()) {
      Error(n, ValuePos(n, "on"), "params.on", out.status().message());
      return std::nullopt;
    }
    return std::move(out).value();
  }

  Schema Select(const NodeSpec& n, const io::TableSchema& in) {
    io::TableSchema out;
    bool ok = true;
    if (const auto* keep = ParamAs<std::vector<std::string>>(n, "keep")) {
      for (const std::string& name : *keep) {
        if (!NeedColumn(n, "params.keep", name, in)) {
          ok = false;
          continue;
        }
        if (out.Find(name) != nullptr) {
          Error(n, ValuePos(n, "keep"), "params.keep", "column '" + name + "' is kept twice");
          ok = false;
          continue;
        }
        out.columns.push_back(*in.Find(name));
      }
    } else {
      const auto* drop = ParamAs<std::vector<std::string>>(n, "drop");
      if (drop != nullptr) {
        for (const std::string& name : *drop) ok = NeedColumn(n, "params.drop", name, in) && ok;
      }
      for (const io::ColumnSchema& c : in.columns) {
        if (drop && std::find(drop->begin(), drop->end(), c.name) != drop->end()) continue;
        out.columns.push_back(c);
      }
    }
    if (const auto* rename = ParamAs<ParamMap>(n, "rename")) {
      const io::TableSchema before = out;
      for (const ParamEntry& e : *rename) {
        if (!NeedColumn(n, "params.rename", e.key, before)) {
          ok = false;
          continue;
        }
        // By the names before renaming, so {a: b, b: a} swaps (as the op does).
        const size_t index = static_cast<size_t>(before.Find(e.key) - before.columns.data());
        out.columns[index].name = e.value;
      }
      std::vector<std::string> seen;
      for (const io::ColumnSchema& c : out.columns) {
        if (std::find(seen.begin(), seen.end(), c.name) != seen.end()) {
          Error(n, ValuePos(n, "rename"), "params.rename",
                "renaming gives two columns named '" + c.name + "'");
          ok = false;
        }
        seen.push_back(c.name);
      }
    }
    if (ok && out.columns.empty()) {
      Error(n, n.PosOf("params"), "params", "select leaves no columns");
      ok = false;
    }
    if (!ok) return std::nullopt;
    return out;
  }

  Schema Cast(const NodeSpec& n, io::TableSchema schema) {
    const std::string* dtype = ParamAs<std::string>(n, "dtype");
    if (dtype == nullptr) return std::nullopt;
    const ElementType to = *dtype == "float16" ? ElementType::kFloat16 : ElementType::kBFloat16;
    const auto* columns = ParamAs<std::vector<std::string>>(n, "columns");
    for (io::ColumnSchema& c : schema.columns) {
      const bool named = columns != nullptr &&
                         std::find(columns->begin(), columns->end(), c.name) != columns->end();
      if (c.dtype == ElementType::kFloat32 && !c.categorical && (columns == nullptr || named)) {
        c.dtype = to;
      }
    }
    return schema;
  }

  // One float64 field per summarized column (worker/ops/stats_file.h).
  Schema Stats(const NodeSpec& n, const io::TableSchema& in) {
    io::TableSchema out;
    const auto* columns = ParamAs<std::vector<std::string>>(n, "columns");
    for (const io::ColumnSchema& c : in.columns) {
      const bool named = columns != nullptr &&
                         std::find(columns->begin(), columns->end(), c.name) != columns->end();
      if (columns != nullptr ? named : io::IsSummarizedByDefault(c.dtype, c.categorical)) {
        out.columns.push_back({c.name, ElementType::kFloat64, false});
      }
    }
    return out;
  }

  const JobGraph& g_;
  const ValidationEnv& env_;
  Diagnostics& diags_;
  std::vector<Schema> schemas_;
};

}  // namespace

void CheckColumnSchemas(JobGraph& graph, const ValidationEnv& env, Diagnostics& diags) {
  std::vector<std::optional<io::TableSchema>> schemas = SchemaPass(graph, env, diags).Run();
  for (size_t i = 0; i < graph.nodes.size(); ++i) graph.nodes[i].output_schema = std::move(schemas[i]);
}

}  // namespace coupler::job
