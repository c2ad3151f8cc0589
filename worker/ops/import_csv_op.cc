// import_csv: task i of N parses its share of a CSV dataset into one .npy shard (and its string
// columns' dictionaries beside it). The dataset is one file or several (a list, a glob, a
// folder), each plain or compressed (.gz, .zst): kernels::CsvTaskFiles says which bytes of which
// files are this task's. A plain file is mapped, so a task touches only its range's pages; a
// compressed one is read whole by one task as a stream, a chunk at a time. Every task decides
// the same column types from the first file's first bytes (runtime/io/csv_schema.h), and every
// file's header must name the same columns.
#include <sys/stat.h>

#include <algorithm>

#include "kernels/csv_import.h"
#include "runtime/io/compressed_text.h"
#include "runtime/io/mapped_file.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"

namespace coupler::worker {
namespace {

// Decompressed text is parsed in chunks of this many bytes (plus the line cut at its end).
constexpr size_t kStreamChunkBytes = 16u << 20;

Result<kernels::CsvOptions> OptionsFrom(const wire::TaskParams& params) {
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
  COUPLER_ASSIGN_OR_RETURN(const std::optional<std::string> delimiter,
                           params.Optional<std::string>("delimiter"));
  COUPLER_ASSIGN_OR_RETURN(const std::optional<std::string> encoding,
                           params.Optional<std::string>("encoding"));
  COUPLER_RETURN_IF_ERROR(
      io::SetCsvDialect(options, delimiter.value_or(","), encoding.value_or("utf-8")));
  COUPLER_ASSIGN_OR_RETURN(const std::optional<bool> quoted_newlines,
                           params.Optional<bool>("quoted_newlines"));
  options.quoted_newlines = quoted_newlines.value_or(false);
  return options;
}

// A later file's header must name the first file's columns, in the same order.
Status CheckHeader(std::string_view text, const std::string& path, const io::CsvLayout& layout,
                   const kernels::CsvOptions& options, const std::string& first_path) {
  if (!options.header || text.empty()) return Status::Ok();
  COUPLER_ASSIGN_OR_RETURN(const std::vector<std::string> names,
                           io::CsvHeaderNames(text, options.header, options.delimiter,
                                              options.encoding));
  if (names == layout.header) return Status::Ok();
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return InvalidArgument(path + ": its header (" + list + ") is not that of " + first_path +
                         ", the dataset's first file; every file must name the same columns");
}

// Parses a whole compressed file through `parser`, chunk by chunk, each chunk cut at its last
// newline (the rest waits for the next chunk).
Status ParseStream(const std::string& path, bool first_file, const io::CsvLayout& layout,
                   const kernels::CsvOptions& options, const std::string& first_path,
                   kernels::CsvRowParser& parser, const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(io::TextReader reader, io::TextReader::Open(path));
  std::string buffer;
  uint64_t lines_before = 0;
  bool at_start = true;
  bool ended = false;
  while (!ended) {
    if (context.Cancelled()) return Cancelled();
    COUPLER_ASSIGN_OR_RETURN(const size_t n, reader.Read(buffer, kStreamChunkBytes));
    ended = n == 0;
    const size_t last_newline = buffer.rfind('\n');
    if (!ended && last_newline == std::string::npos) continue;  // a line longer than a chunk
    const size_t cut = ended ? buffer.size() : last_newline + 1;
    const std::string_view text(buffer.data(), cut);
    size_t begin = 0;
    if (at_start) {
      if (!first_file) COUPLER_RETURN_IF_ERROR(CheckHeader(text, path, layout, options, first_path));
      begin = kernels::CsvRangeBetween(text, options.header, 0, 0).begin;
      at_start = false;
    }
    // A record whose quoted field holds a line break past this chunk waits for the next one.
    size_t done = cut;
    {
      KernelTimer timer(report.kernel_ms);
      COUPLER_RETURN_IF_ERROR(
          parser.Parse(text, {begin, cut}, lines_before,
                       ended || !options.quoted_newlines ? nullptr : &done));
    }
    if (done < begin) done = begin;
    lines_before += static_cast<uint64_t>(std::count(text.begin(), text.begin() + done, '\n'));
    report.bytes_read += done;
    buffer.erase(0, done);
  }
  return Status::Ok();
}

}  // namespace

Status RunImportCsv(const OpContext& context, OpReport& report) {
  const wire::TaskSpec& spec = context.spec;
  const std::vector<std::string>& files = spec.input_paths;
  if (files.empty()) return InvalidArgument("expected input_paths [csv file, ...], got none");
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const kernels::CsvOptions options, OptionsFrom(spec.params));
  // The node's task count, as the coordinator planned it from the `shards` param.
  const int64_t shards = spec.shards;
  if (shards < 1 || spec.shard_index < 0 || spec.shard_index >= shards) {
    return InvalidArgument("shard_index " + std::to_string(spec.shard_index) +
                           " is outside [0, " + std::to_string(shards) + ")");
  }

  std::vector<uint64_t> sizes;
  std::vector<bool> compressed;
  for (const std::string& path : files) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return NotFound(path + ": no such file");
    sizes.push_back(static_cast<uint64_t>(st.st_size));
    // A compressed file cannot be entered in the middle, nor can a file whose quoted fields
    // may hold line breaks: both are read whole, each by one task.
    compressed.push_back(io::CompressionOf(path) != io::Compression::kNone ||
                         options.quoted_newlines);
  }

  // The types, from the first file's first bytes (decompressed), as every task decides them.
  COUPLER_ASSIGN_OR_RETURN(const std::string sample,
                           io::ReadTextPrefix(files.front(), io::kCsvSchemaSampleBytes));
  auto layout = io::InferCsvLayout(sample, options);
  if (!layout.ok()) return layout.status().WithContext(files.front());

  kernels::CsvRowParser parser(*layout, options);
  for (const kernels::CsvFilePart& part :
       kernels::CsvTaskFiles(sizes, compressed, static_cast<size_t>(spec.shard_index),
                             static_cast<size_t>(shards))) {
    const std::string& path = files[part.file];
    if (context.Cancelled()) return Cancelled();
    if (part.whole && io::CompressionOf(path) != io::Compression::kNone) {
      COUPLER_RETURN_IF_ERROR(ParseStream(path, part.file == 0, *layout, options, files.front(),
                                          parser, context, report)
                                  .WithContext(path));
      continue;
    }
    COUPLER_ASSIGN_OR_RETURN(const io::MappedFile file, io::MappedFile::Open(path));
    const std::string_view text = file.text();
    if (part.file != 0) {
      COUPLER_RETURN_IF_ERROR(CheckHeader(text, path, *layout, options, files.front()));
    }
    const kernels::CsvRange range =
        part.whole ? kernels::CsvRangeBetween(text, options.header, 0, text.size())
                   : kernels::CsvRangeBetween(text, options.header, part.begin, part.end);
    if (range.begin >= range.end) continue;
    file.AdviseSequential(range.begin, range.end - range.begin);
    KernelTimer timer(report.kernel_ms);
    if (Status s = parser.Parse(text, range); !s.ok()) return s.WithContext(path);
    report.bytes_read += range.end - range.begin;
  }
  if (context.Cancelled()) return Cancelled();
  std::vector<kernels::CsvCoerced> coerced = parser.coerced();
  COUPLER_ASSIGN_OR_RETURN(io::Table table, parser.Finish());
  report.rows_in = report.rows_out = table.rows();
  // Timestamps that did not parse became NaT; the task's log says how many, per column.
  for (const kernels::CsvCoerced& c : coerced) {
    if (c.count == 0 || context.logs == nullptr) continue;
    context.logs->Note("import_csv: column '" + c.column + "': " + std::to_string(c.count) +
                       " value(s) not an ISO 8601 timestamp stored as NaT (missing); the first, "
                       "row " + std::to_string(c.first_row) + " of this shard: '" +
                       c.first_value + "'");
  }
  return WriteShard(output, std::move(table), report);
}

}  // namespace coupler::worker
