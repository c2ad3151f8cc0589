// A shuffle reduce within a memory budget. A partition whose shuffle files together pass what
// the in-memory reduce may hold (kInMemoryShare of the budget: the in-memory path holds its
// input, a concatenated copy and its result at once) is read a chunk at a time; each chunk is
// sorted stably by the op's keys and written as a sorted run under a spill directory beside the
// output; the runs are then merged a window of rows per run at a time (RunMerger), in key order,
// equal keys in input order, and the op turns the merged batches into output rows that an
// io::NpzStreamWriter writes without ever holding the part file. Runs already sorted on disk (a
// sort's map outputs) are merged the same way without a spill. Memory (SpillShares): a quarter
// of the budget for a chunk while runs are written (sorted a column at a time); while merging,
// a fifth for the windows and a sixteenth for a batch, which is held about three times over
// (its pieces, their concatenation, the op's result). group_by and dedup end a batch where a
// key does (a join, both sides' batches), so one key with more rows than the budget is still
// held whole.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/io/npz_stream_writer.h"
#include "runtime/io/table.h"
#include "runtime/relational/table_rows.h"
#include "runtime/status.h"
#include "worker/ops/op_context.h"

namespace coupler::worker {

// How many bytes of shuffle files the in-memory reduce takes per byte of budget.
inline constexpr uint64_t kInMemoryShare = 3;

// How a reduce past its budget shares it out: a chunk sorted into a run, every run's window
// together, and a merged batch (held about three times over). What the shares leave is for the
// op's own work on a batch and the allocator's slack (tests/integration/reduce_spill_test.cc
// measures the whole).
struct SpillShares {
  uint64_t chunk;
  uint64_t windows;
  uint64_t batch;
};
inline SpillShares SharesOf(uint64_t budget) { return {budget / 4, budget / 5, budget / 16}; }

// The task's budget (ops::kReduceMemoryParam) in bytes.
Result<uint64_t> ReduceBudget(const OpContext& context);

// The sizes of the files at `paths`, added up (a missing one: the reader explains it later).
uint64_t FileBytes(const std::vector<std::string>& paths);

// Whether a reduce reading `input_bytes` writes its output by streaming (past the budget's
// in-memory share, and not handed to a fused next op in memory).
bool ShouldSpill(const OpContext& context, const OpReport& report, uint64_t input_bytes,
                 uint64_t budget);

// One line in the attempt's log: this reduce went past its budget, how it read its input.
void NoteSpill(const OpContext& context, std::string_view op, uint64_t input_bytes, uint64_t budget,
               size_t runs, bool written);

// A directory of its own beside `output` for one attempt's runs, removed with everything in it
// when this goes (also when the task fails). A killed attempt's stays until its run directory
// is collected (coupler gc): its name holds the pid and a random tag, so no other attempt,
// retry or duplicate, can take it for its own.
class SpillDir {
 public:
  static Result<SpillDir> Create(const std::string& output);
  SpillDir(SpillDir&& other) noexcept;
  SpillDir& operator=(SpillDir&&) = delete;
  SpillDir(const SpillDir&) = delete;
  ~SpillDir();
  const std::string& path() const { return path_; }

 private:
  explicit SpillDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// A sorted run: rows [begin, end) of the shard at `path`. Only a merge opens it, so a reduce
// may have more runs than it may hold descriptors.
struct SortedRun {
  std::string path;
  size_t begin = 0;
  size_t end = 0;
};

// The most runs one merge reads at once (a descriptor and a window each); more are merged in
// passes (MergeDown).
inline constexpr size_t kMaxMergeWidth = 64;

// Rows [begin, end) of every column of `stored` (Stored columns), read from its file.
Result<io::Table> ReadRowRange(const io::Table& stored, size_t begin, size_t end, OpReport& report);

// Tables written as sorted runs under a folder: each one added is sorted stably by `by` (a
// column at a time, so it is held about once) and becomes the next run.
class RunWriter {
 public:
  RunWriter(std::string dir, std::vector<std::string> by, std::vector<relational::SortKey> keys);
  Status Add(io::Table chunk, OpReport& report);
  // The runs so far, in the order they were added.
  std::vector<SortedRun> Take() { return std::move(runs_); }

 private:
  std::string dir_;
  std::vector<std::string> by_;
  std::vector<relational::SortKey> keys_;
  std::vector<SortedRun> runs_;
  size_t written_ = 0;
};

// The shuffle files at `paths`, in order, cut into chunks of about `chunk_bytes`, each sorted
// stably by `by` and written under `dir` as a run. Runs come back in input order, so merging
// them with ties going to the earlier run keeps equal keys in input order. With a
// `position_column`, each row carries its place in the input (int64, counted across the files)
// in a column of that name, added last.
Result<std::vector<SortedRun>> WriteSortedRuns(const OpContext& context, OpReport& report,
                                               const std::vector<std::string>& paths,
                                               const std::vector<std::string>& by,
                                               const std::vector<relational::SortKey>& keys,
                                               const std::string& dir, uint64_t chunk_bytes,
                                               const std::string& position_column = "");

// Merges sorted runs (all of one schema) into batches of rows in order; ties go to the earlier
// run. Each run holds a window of its rows in memory; a batch ends when it reaches its row
// count or a window runs dry.
class RunMerger {
 public:
  RunMerger(std::vector<SortedRun> runs, std::vector<std::string> by,
            std::vector<relational::SortKey> keys, uint64_t window_bytes, uint64_t batch_bytes);

  // The next batch; a table with no rows once every run is merged.
  Result<io::Table> Next(OpReport& report);
  bool done() const;

 private:
  struct Cursor {
    SortedRun run;
    io::Table stored;      // the run's shard, opened with no column loaded
    size_t next_read = 0;  // the run's next row not yet in the window
    io::Table window;
    std::vector<size_t> key_index;
    size_t at = 0;         // the next row of the window to merge
    size_t taken_from = 0; // the first row of the window in the batch being built
  };
  Status Open(OpReport& report);
  Status Refill(Cursor& cursor, OpReport& report);

  std::vector<Cursor> cursors_;
  std::vector<std::string> by_;
  std::vector<relational::SortKey> keys_;
  uint64_t window_bytes_ = 0;
  uint64_t batch_bytes_ = 0;
  size_t window_rows_ = 1;
  size_t batch_rows_ = 1;
  bool started_ = false;
};

// `table` less the columns named `dropped` (the places a merge put rows back in order by).
io::Table WithoutColumns(io::Table table, std::initializer_list<std::string_view> dropped);

// Every batch of `merger`, less the columns `dropped`, appended to `writer`; the cancel flag is
// looked at between batches.
Status MergeInto(const OpContext& context, RunMerger& merger, io::NpzStreamWriter& writer,
                 OpReport& report, std::initializer_list<std::string_view> dropped = {});

// The part file written (NpzStreamWriter::Finish) and the report told its rows, path and bytes.
Status FinishPartFile(io::NpzStreamWriter& writer, const std::string& output, OpReport& report);

// Runs merged, `max_width` consecutive ones at a time, into runs under `dir` until at most
// `max_width` are left (consecutive runs stay in input order, so ties still go to the earlier
// rows). Runs already few enough come back as they are.
Result<std::vector<SortedRun>> MergeDown(const OpContext& context, OpReport& report,
                                         std::vector<SortedRun> runs,
                                         const std::vector<std::string>& by,
                                         const std::vector<relational::SortKey>& keys,
                                         const std::string& dir, uint64_t budget,
                                         size_t max_width = kMaxMergeWidth);

// A merge's batches cut where a key ends: the rows of a batch's last key are held back to lead
// the next batch, so every key's rows are in one batch (the last batch takes what is left).
class KeyBatches {
 public:
  KeyBatches(RunMerger& merger, std::vector<std::string> by, std::vector<relational::SortKey> keys)
      : merger_(merger), by_(std::move(by)), keys_(std::move(keys)) {}
  // The next batch (it may have no rows: a key still going on), or nullopt after the last.
  Result<std::optional<io::Table>> Next(OpReport& report);

 private:
  RunMerger& merger_;
  std::vector<std::string> by_;
  std::vector<relational::SortKey> keys_;
  io::Table carry_;
  bool finished_ = false;
};

}  // namespace coupler::worker
