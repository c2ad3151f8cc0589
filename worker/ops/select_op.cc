// select: keeps (`keep`, in that order) or drops (`drop`) columns, then renames (`rename`,
// old: new). Values are not touched; categorical dictionaries stay with their columns.
#include <algorithm>

#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"

namespace coupler::worker {

Status RunSelect(const OpContext& context, OpReport& report) {
  const wire::TaskParams& params = context.spec.params;
  COUPLER_ASSIGN_OR_RETURN(const std::string input, InputPath(context, 0, "[data shard]"));
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const auto keep, params.Optional<std::vector<std::string>>("keep"));
  COUPLER_ASSIGN_OR_RETURN(const auto drop, params.Optional<std::vector<std::string>>("drop"));
  COUPLER_ASSIGN_OR_RETURN(const auto rename, params.Optional<job::ParamMap>("rename"));
  // No value is read: the kept columns go to the output as they are on disk.
  COUPLER_ASSIGN_OR_RETURN(io::Table table,
                           ReadShard(input, report, [](const io::ColumnInfo&) { return false; }));
  auto missing = [&](const std::string& name, std::string_view param) {
    return InvalidArgument(input + ": " + std::string(param) + ": no column '" + name +
                           "' (the shard has " + table.Describe() + ")");
  };
  std::vector<io::Column> columns;
  if (keep) {
    for (const std::string& name : *keep) {
      io::Column* c = table.Find(name);
      if (c == nullptr) return missing(name, "keep");
      columns.push_back(*c);
    }
  } else {
    if (drop) {
      for (const std::string& name : *drop) {
        if (table.Find(name) == nullptr) return missing(name, "drop");
      }
    }
    for (const io::Column& c : table.columns()) {
      if (drop && std::find(drop->begin(), drop->end(), c.name()) != drop->end()) continue;
      columns.push_back(c);
    }
  }
  if (rename) {
    // All at once, by the names before renaming, so {a: b, b: a} swaps.
    std::vector<std::string> before;
    for (const io::Column& c : columns) before.push_back(c.name());
    for (const job::ParamEntry& entry : *rename) {
      auto it = std::find(before.begin(), before.end(), entry.key);
      if (it == before.end()) return missing(entry.key, "rename");
      columns[static_cast<size_t>(it - before.begin())].set_name(entry.value);
    }
  }
  if (columns.empty()) return InvalidArgument(input + ": select leaves no columns");
  io::Table out;
  for (io::Column& c : columns) {
    if (Status s = out.AddColumn(std::move(c)); !s.ok()) return s.WithContext(input);
  }
  report.rows_in = table.rows();
  report.rows_out = out.rows();
  return WriteShard(output, std::move(out), report);
}

}  // namespace coupler::worker
