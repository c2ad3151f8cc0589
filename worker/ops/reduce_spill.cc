#include "worker/ops/reduce_spill.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <system_error>

#include "runtime/io/atomic_file.h"
#include "runtime/io/npz_file.h"
#include "runtime/io/npz_stream_writer.h"
#include "runtime/ops/op_def.h"
#include "runtime/util/byte_size.h"
#include "worker/ops/shard_io.h"
#include "worker/ops/shard_stage.h"

namespace coupler::worker {
namespace {

// Plans admitted before the budget was a param carry none: they get its default.
constexpr int64_t kDefaultReduceMemoryMib = 1024;

bool NoColumn(const io::ColumnInfo&) { return false; }

std::vector<uint32_t> Range(size_t begin, size_t end) {
  std::vector<uint32_t> rows(end - begin);
  std::iota(rows.begin(), rows.end(), static_cast<uint32_t>(begin));
  return rows;
}

// relational::TakeRows, each column of `table` let go once its rows are taken: at most one
// column is held twice.
Result<io::Table> TakeRowsReleasing(io::Table table, std::span<const uint32_t> rows) {
  io::Table out;
  for (size_t i = 0; i < table.num_columns(); ++i) {
    io::Column& column = table.column(i);
    COUPLER_RETURN_IF_ERROR(out.AddColumn(relational::TakeColumnRows(column, rows)));
    column = io::Column(column.name(), column.dtype(), 0);
  }
  return out;
}

}  // namespace

Result<uint64_t> ReduceBudget(const OpContext& context) {
  COUPLER_ASSIGN_OR_RETURN(const std::optional<int64_t> mib,
                           context.spec.params.Optional<int64_t>(std::string(ops::kReduceMemoryParam)));
  const int64_t value = mib.value_or(kDefaultReduceMemoryMib);
  if (value < 1) return InvalidArgument(std::string(ops::kReduceMemoryParam) + " must be at least 1");
  return static_cast<uint64_t>(value) << 20;
}

uint64_t FileBytes(const std::vector<std::string>& paths) {
  uint64_t total = 0;
  for (const std::string& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_size);
  }
  return total;
}

bool ShouldSpill(const OpContext& context, const OpReport& report, uint64_t input_bytes,
                 uint64_t budget) {
  if (report.stage != nullptr && report.stage->Holds(context.spec.output_path)) return false;
  return input_bytes > budget / kInMemoryShare;
}

void NoteSpill(const OpContext& context, std::string_view op, uint64_t input_bytes, uint64_t budget,
               size_t runs, bool written) {
  if (context.logs == nullptr) return;
  context.logs->Note(std::string(op) + ": partition " + std::to_string(context.spec.shard_index) +
                     " reads " + util::FormatBytes(input_bytes) + ", past 1/" +
                     std::to_string(kInMemoryShare) + " of its " + util::FormatBytes(budget) +
                     " budget: merged " + std::to_string(runs) +
                     (written ? " sorted runs it spilled" : " sorted runs of its map tasks") +
                     ", a window of each at a time");
}

Result<SpillDir> SpillDir::Create(const std::string& output) {
  std::string path = io::TempPathFor(output) + ".spill";
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) return InvalidArgument("create the spill directory " + path + ": " + error.message());
  return SpillDir(std::move(path));
}

SpillDir::SpillDir(SpillDir&& other) noexcept : path_(std::exchange(other.path_, std::string())) {}

SpillDir::~SpillDir() {
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

Result<io::Table> ReadRowRange(const io::Table& stored, size_t begin, size_t end, OpReport& report) {
  io::Table out;
  for (const io::Column& column : stored.columns()) {
    if (column.loaded()) {
      COUPLER_RETURN_IF_ERROR(out.AddColumn(relational::TakeColumnRows(column, Range(begin, end))));
      continue;
    }
    COUPLER_ASSIGN_OR_RETURN(io::Column range,
                             io::ReadStoredRows(column, begin, end, &report.bytes_read));
    COUPLER_RETURN_IF_ERROR(out.AddColumn(std::move(range)));
  }
  return out;
}

RunWriter::RunWriter(std::string dir, std::vector<std::string> by,
                     std::vector<relational::SortKey> keys)
    : dir_(std::move(dir)), by_(std::move(by)), keys_(std::move(keys)) {}

Status RunWriter::Add(io::Table chunk, OpReport& report) {
  if (chunk.rows() == 0) return Status::Ok();
  COUPLER_ASSIGN_OR_RETURN(const std::vector<size_t> k,
                           relational::ColumnIndexes(chunk, by_, "key column"));
  std::vector<uint32_t> order;
  {
    KernelTimer timer(report.kernel_ms);
    order = relational::StableOrder(chunk, k, keys_);
  }
  COUPLER_ASSIGN_OR_RETURN(io::Table sorted, TakeRowsReleasing(std::move(chunk), order));
  char name[32];
  std::snprintf(name, sizeof(name), "/run-%06zu.npz", written_++);
  const std::string path = dir_ + name;
  const size_t rows = sorted.rows();
  COUPLER_RETURN_IF_ERROR(io::WriteNpzAtomic(path, sorted));
  runs_.push_back(SortedRun{path, 0, rows});
  return Status::Ok();
}

Result<std::vector<SortedRun>> WriteSortedRuns(const OpContext& context, OpReport& report,
                                               const std::vector<std::string>& paths,
                                               const std::vector<std::string>& by,
                                               const std::vector<relational::SortKey>& keys,
                                               const std::string& dir, uint64_t chunk_bytes,
                                               const std::string& position_column) {
  RunWriter writer(dir, by, keys);
  int64_t position = 0;
  for (const std::string& path : paths) {
    COUPLER_ASSIGN_OR_RETURN(const io::Table stored, ReadShard(path, report, &NoColumn));
    if (!position_column.empty() && stored.Find(position_column) != nullptr) {
      return InvalidArgument(path + " has a column named '" + position_column +
                             "', which this reduce uses for itself");
    }
    const size_t rows = stored.rows();
    const size_t row_bytes = stored.RowBytes() + (position_column.empty() ? 0 : sizeof(int64_t));
    const size_t chunk_rows = std::max<size_t>(1, chunk_bytes / std::max<size_t>(1, row_bytes));
    for (size_t begin = 0; begin < rows; begin += chunk_rows) {
      if (context.Cancelled()) return Cancelled();
      const size_t end = std::min(rows, begin + chunk_rows);
      COUPLER_ASSIGN_OR_RETURN(io::Table chunk, ReadRowRange(stored, begin, end, report));
      report.rows_in += chunk.rows();
      if (!position_column.empty()) {
        std::vector<int64_t> at(chunk.rows());
        std::iota(at.begin(), at.end(), position);
        position += static_cast<int64_t>(chunk.rows());
        COUPLER_RETURN_IF_ERROR(chunk.AddColumn(io::Column::Int64(position_column, std::move(at))));
      }
      Status added = writer.Add(std::move(chunk), report);
      if (!added.ok()) return added.WithContext(path);
    }
  }
  return writer.Take();
}

RunMerger::RunMerger(std::vector<SortedRun> runs, std::vector<std::string> by,
                     std::vector<relational::SortKey> keys, uint64_t window_bytes,
                     uint64_t batch_bytes)
    : by_(std::move(by)), keys_(std::move(keys)), window_bytes_(window_bytes),
      batch_bytes_(batch_bytes) {
  for (SortedRun& run : runs) {
    Cursor cursor;
    cursor.next_read = run.begin;
    cursor.run = std::move(run);
    cursors_.push_back(std::move(cursor));
  }
}

Status RunMerger::Open(OpReport& report) {
  size_t row_bytes = 1;
  for (Cursor& cursor : cursors_) {
    COUPLER_ASSIGN_OR_RETURN(cursor.stored, ReadShard(cursor.run.path, report, &NoColumn));
    if (cursor.run.end > cursor.stored.rows() || cursor.run.begin > cursor.run.end) {
      return InvalidArgument(cursor.run.path + " has " + std::to_string(cursor.stored.rows()) +
                             " rows, not rows " + std::to_string(cursor.run.begin) + ".." +
                             std::to_string(cursor.run.end));
    }
    row_bytes = std::max<size_t>(row_bytes, cursor.stored.RowBytes());
  }
  window_rows_ = std::max<size_t>(1, window_bytes_ / cursors_.size() / row_bytes);
  batch_rows_ = std::max<size_t>(1, batch_bytes_ / row_bytes);
  for (Cursor& cursor : cursors_) COUPLER_RETURN_IF_ERROR(Refill(cursor, report));
  return Status::Ok();
}

Status RunMerger::Refill(Cursor& cursor, OpReport& report) {
  const size_t end = std::min(cursor.run.end, cursor.next_read + window_rows_);
  cursor.window = io::Table();
  COUPLER_ASSIGN_OR_RETURN(cursor.window, ReadRowRange(cursor.stored, cursor.next_read, end, report));
  cursor.next_read = end;
  cursor.at = cursor.taken_from = 0;
  COUPLER_ASSIGN_OR_RETURN(cursor.key_index, relational::ColumnIndexes(cursor.window, by_, "key column"));
  return Status::Ok();
}

bool RunMerger::done() const {
  if (!started_) return cursors_.empty();
  return std::all_of(cursors_.begin(), cursors_.end(), [](const Cursor& c) {
    return c.at == c.window.rows() && c.next_read == c.run.end;
  });
}

Result<io::Table> RunMerger::Next(OpReport& report) {
  if (cursors_.empty()) return InvalidArgument("nothing to merge");
  if (!started_) {
    COUPLER_RETURN_IF_ERROR(Open(report));
    started_ = true;
  }
  std::vector<uint32_t> picks;  // the cursor of each merged row, in order
  {
    KernelTimer timer(report.kernel_ms);
    while (picks.size() < batch_rows_) {
      size_t best = cursors_.size();
      for (size_t c = 0; c < cursors_.size(); ++c) {
        const Cursor& cursor = cursors_[c];
        if (cursor.at == cursor.window.rows()) continue;
        // Strictly smaller only: on a tie the earlier run (input order) goes first.
        if (best == cursors_.size() ||
            relational::CompareRows(cursor.window, cursor.key_index, cursor.at,
                                    cursors_[best].window, cursors_[best].key_index,
                                    cursors_[best].at, keys_) < 0) {
          best = c;
        }
      }
      if (best == cursors_.size()) break;  // every window is empty
      Cursor& cursor = cursors_[best];
      picks.push_back(static_cast<uint32_t>(best));
      ++cursor.at;
      // A window that ran dry with rows still to read ends the batch: the rows taken from it
      // must be copied out before it is refilled.
      if (cursor.at == cursor.window.rows() && cursor.next_read < cursor.run.end) break;
    }
  }
  // Each cursor's taken rows are one contiguous range of its window: copy those out, then
  // interleave them in merged order.
  std::vector<io::Table> pieces;
  std::vector<uint32_t> offset(cursors_.size(), 0);
  uint32_t total = 0;
  for (size_t c = 0; c < cursors_.size(); ++c) {
    Cursor& cursor = cursors_[c];
    offset[c] = total;
    if (cursor.at > cursor.taken_from || (pieces.empty() && c + 1 == cursors_.size())) {
      pieces.push_back(relational::TakeRows(cursor.window, Range(cursor.taken_from, cursor.at)));
      total += static_cast<uint32_t>(cursor.at - cursor.taken_from);
    }
    cursor.taken_from = cursor.at;
  }
  COUPLER_ASSIGN_OR_RETURN(io::Table merged, relational::Concatenate(std::move(pieces)));
  std::vector<uint32_t> order;
  order.reserve(picks.size());
  std::vector<uint32_t> seen(cursors_.size(), 0);
  for (const uint32_t c : picks) order.push_back(offset[c] + seen[c]++);
  COUPLER_ASSIGN_OR_RETURN(io::Table batch, TakeRowsReleasing(std::move(merged), order));
  for (Cursor& cursor : cursors_) {
    if (cursor.at == cursor.window.rows() && cursor.next_read < cursor.run.end) {
      COUPLER_RETURN_IF_ERROR(Refill(cursor, report));
    }
  }
  return batch;
}

io::Table WithoutColumns(io::Table table, std::initializer_list<std::string_view> dropped) {
  io::Table out;
  for (size_t i = 0; i < table.num_columns(); ++i) {
    io::Column& column = table.column(i);
    if (std::find(dropped.begin(), dropped.end(), column.name()) != dropped.end()) continue;
    (void)out.AddColumn(std::move(column));  // names stay unique, lengths equal
  }
  return out;
}

Status MergeInto(const OpContext& context, RunMerger& merger, io::NpzStreamWriter& writer,
                 OpReport& report, std::initializer_list<std::string_view> dropped) {
  do {
    if (context.Cancelled()) return Cancelled();
    COUPLER_ASSIGN_OR_RETURN(io::Table batch, merger.Next(report));
    COUPLER_RETURN_IF_ERROR(writer.Append(WithoutColumns(std::move(batch), dropped)));
  } while (!merger.done());
  return Status::Ok();
}

Status FinishPartFile(io::NpzStreamWriter& writer, const std::string& output, OpReport& report) {
  uint64_t bytes = 0;
  COUPLER_RETURN_IF_ERROR(writer.Finish(&bytes));
  report.rows_out = writer.rows();
  report.output_paths.push_back(output);
  report.bytes_written += bytes;
  return Status::Ok();
}

Result<std::vector<SortedRun>> MergeDown(const OpContext& context, OpReport& report,
                                         std::vector<SortedRun> runs,
                                         const std::vector<std::string>& by,
                                         const std::vector<relational::SortKey>& keys,
                                         const std::string& dir, uint64_t budget, size_t max_width) {
  max_width = std::max<size_t>(2, max_width);
  size_t pass = 0;
  while (runs.size() > max_width) {
    std::vector<SortedRun> merged;
    for (size_t first = 0; first < runs.size(); first += max_width) {
      const size_t last = std::min(runs.size(), first + max_width);
      if (last - first == 1) {
        merged.push_back(std::move(runs[first]));
        continue;
      }
      std::vector<SortedRun> group(runs.begin() + static_cast<ptrdiff_t>(first),
                                   runs.begin() + static_cast<ptrdiff_t>(last));
      char name[48];
      std::snprintf(name, sizeof(name), "/pass-%02zu-run-%06zu.npz", pass, merged.size());
      const std::string path = dir + name;
      RunMerger merger(std::move(group), by, keys, SharesOf(budget).windows, SharesOf(budget).batch);
      io::NpzStreamWriter writer(path);
      COUPLER_RETURN_IF_ERROR(MergeInto(context, merger, writer, report));
      COUPLER_RETURN_IF_ERROR(writer.Finish());
      merged.push_back(SortedRun{path, 0, writer.rows()});
      // The merged runs this reduce wrote are done with (a sort's map outputs are not its own).
      for (size_t i = first; i < last; ++i) {
        if (runs[i].path.starts_with(dir + "/")) io::RemoveQuietly(runs[i].path);
      }
    }
    runs = std::move(merged);
    ++pass;
  }
  return runs;
}

Result<std::optional<io::Table>> KeyBatches::Next(OpReport& report) {
  if (finished_) return std::optional<io::Table>();
  COUPLER_ASSIGN_OR_RETURN(io::Table batch, merger_.Next(report));
  const bool last = merger_.done();
  if (carry_.num_columns() > 0) {
    std::vector<io::Table> parts;
    parts.push_back(std::move(carry_));
    parts.push_back(std::move(batch));
    COUPLER_ASSIGN_OR_RETURN(batch, relational::Concatenate(std::move(parts)));
    carry_ = io::Table();
  }
  if (last) {
    finished_ = true;
    return std::optional<io::Table>(std::move(batch));
  }
  if (batch.rows() == 0) return std::optional<io::Table>(std::move(batch));
  COUPLER_ASSIGN_OR_RETURN(const std::vector<size_t> k,
                           relational::ColumnIndexes(batch, by_, "key column"));
  const size_t n = batch.rows();
  size_t cut = n - 1;
  while (cut > 0 && relational::CompareRows(batch, k, cut - 1, batch, k, n - 1, keys_) == 0) --cut;
  carry_ = relational::TakeRows(batch, Range(cut, n));
  return std::optional<io::Table>(relational::TakeRows(batch, Range(0, cut)));
}

}  // namespace coupler::worker
