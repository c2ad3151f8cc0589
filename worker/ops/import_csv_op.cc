// import_csv: task i of N parses the i-th byte range of one CSV file (kernels/csv_import.h)
// into one .npy shard (and its string columns' dictionaries beside it). The file is mapped, so a
// task touches only its range's pages plus the sample at the file's start, from which every task
// decides the same column types (runtime/io/csv_schema.h).
#include "kernels/csv_import.h"
#include "runtime/io/mapped_file.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"

namespace coupler::worker {

Status RunImportCsv(const OpContext& context, OpReport& report) {
  const wire::TaskSpec& spec = context.spec;
  const wire::TaskParams& params = spec.params;
  COUPLER_ASSIGN_OR_RETURN(const std::string csv_path, InputPath(context, 0, "[csv file]"));
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  kernels::CsvOptions options;
  COUPLER_ASSIGN_OR_RETURN(options.header, params.Get<bool>("header"));
  COUPLER_ASSIGN_OR_RETURN(const std::optional<std::string> label_column,
                           params.Optional<std::string>("label_column"));
  if (label_column) options.label_column = *label_column;
  COUPLER_ASSIGN_OR_RETURN(const std::optional<std::vector<std::string>> columns,
                           params.Optional<std::vector<std::string>>("columns"));
  if (columns) options.columns = *columns;
  COUPLER_ASSIGN_OR_RETURN(const std::optional<job::ParamMap> dtypes,
                           params.Optional<job::ParamMap>("dtypes"));
  if (dtypes) options.dtypes = *dtypes;
  COUPLER_ASSIGN_OR_RETURN(const std::optional<std::vector<std::string>> na_values,
                           params.Optional<std::vector<std::string>>("na_values"));
  COUPLER_ASSIGN_OR_RETURN(const std::optional<bool> keep_default_na,
                           params.Optional<bool>("keep_default_na"));
  options.na_values = io::CsvNaTokens(na_values.value_or(std::vector<std::string>{}),
                                      keep_default_na.value_or(true));
  // The node's task count, as the coordinator planned it from the `shards` param.
  const int64_t shards = spec.shards;
  if (shards < 1 || spec.shard_index < 0 || spec.shard_index >= shards) {
    return InvalidArgument("shard_index " + std::to_string(spec.shard_index) +
                           " is outside [0, " + std::to_string(shards) + ")");
  }

  COUPLER_ASSIGN_OR_RETURN(const io::MappedFile file, io::MappedFile::Open(csv_path));
  const std::string_view text = file.text();
  auto layout = io::InferCsvLayout(text.substr(0, io::kCsvSchemaSampleBytes), options);
  if (!layout.ok()) return layout.status().WithContext(csv_path);
  const kernels::CsvRange range =
      kernels::CsvTaskRange(text, options.header, static_cast<size_t>(spec.shard_index),
                            static_cast<size_t>(shards));
  file.AdviseSequential(range.begin, range.end - range.begin);
  if (context.Cancelled()) return Cancelled();

  std::vector<kernels::CsvCoerced> coerced;
  auto table = [&] {
    KernelTimer timer(report.kernel_ms);
    return kernels::ParseCsvRange(text, range, *layout, options, &coerced);
  }();
  if (!table.ok()) return table.status().WithContext(csv_path);
  // Timestamps that did not parse became NaT; the task's log says how many, per column.
  for (const kernels::CsvCoerced& c : coerced) {
    if (c.count == 0 || context.logs == nullptr) continue;
    context.logs->Note("import_csv: column '" + c.column + "': " + std::to_string(c.count) +
                       " value(s) not an ISO 8601 timestamp stored as NaT (missing); the first, "
                       "row " + std::to_string(c.first_row) + " of this shard: '" +
                       c.first_value + "'");
  }
  report.bytes_read += range.end - range.begin;
  report.rows_in = report.rows_out = table->rows();
  if (context.Cancelled()) return Cancelled();
  return WriteShard(output, *table, report);
}

}  // namespace coupler::worker
