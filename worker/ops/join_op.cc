// join: pandas' merge(left, right, on=keys, how=...) through a shuffle of both inputs. Map tasks
// (one per shard of the left input, then one per shard of the right) route every row of their
// shard by the hash of its keys; reduce task r joins the left rows of partition r with its right
// rows (runtime/relational/join.h) and writes part file r. Keys compare by value on both sides.
// A partition past the reduce's memory budget is joined from sorted runs of both sides instead
// (reduce_spill.h), into the same part file.
#include "runtime/io/npz_stream_writer.h"
#include "runtime/ops/op_def.h"
#include "runtime/relational/join.h"
#include "runtime/relational/table_rows.h"
#include "worker/ops/ops.h"
#include "worker/ops/reduce_spill.h"
#include "worker/ops/shard_io.h"
#include "worker/ops/shuffle_files.h"

namespace coupler::worker {
namespace {

Result<relational::JoinOptions> Options(const OpContext& context) {
  const wire::TaskParams& params = context.spec.params;
  relational::JoinOptions options;
  COUPLER_ASSIGN_OR_RETURN(options.on, params.Get<std::vector<std::string>>("on"));
  COUPLER_ASSIGN_OR_RETURN(const std::string how, params.Get<std::string>("how"));
  const std::optional<relational::JoinHow> parsed = relational::ParseJoinHow(how);
  if (!parsed) return InvalidArgument("unknown join how '" + how + "'");
  options.how = *parsed;
  COUPLER_ASSIGN_OR_RETURN(const std::vector<std::string> suffixes,
                           params.Get<std::vector<std::string>>("suffixes"));
  if (suffixes.size() != 2) return InvalidArgument("suffixes: two strings, for the left and the right");
  options.suffixes = {suffixes[0], suffixes[1]};
  return options;
}

Status RunMap(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string input, InputPath(context, 0, "[one shard of one side]"));
  COUPLER_ASSIGN_OR_RETURN(const relational::JoinOptions options, Options(context));
  COUPLER_ASSIGN_OR_RETURN(const int64_t partitions,
                           context.spec.params.Get<int64_t>(std::string(ops::kPartitionsParam)));
  // Every column travels: the output holds whole rows of both sides.
  COUPLER_ASSIGN_OR_RETURN(io::Table table, ReadShard(input, report));
  report.rows_in = table.rows();
  for (const std::string& key : options.on) {
    if (table.Find(key) == nullptr) {
      return InvalidArgument(input + ": no key column '" + key + "' (the shard has " +
                             table.Describe() + ")");
    }
  }
  return WriteRuns(context, std::move(table), options.on, partitions, report);
}

// Past the budget, each row's place in its side's input (reduce_spill.h), dropped on output.
constexpr char kLeftRow[] = "__coupler_left_row";
constexpr char kRightRow[] = "__coupler_right_row";

// A side's columns with no rows (and its place column), for a join where that side has none.
Result<io::Table> EmptySide(const std::string& path, const char* position, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const io::Table stored,
                           ReadShard(path, report, [](const io::ColumnInfo&) { return false; }));
  COUPLER_ASSIGN_OR_RETURN(io::Table empty, ReadRowRange(stored, 0, 0, report));
  COUPLER_RETURN_IF_ERROR(empty.AddColumn(io::Column::Int64(position, {})));
  return empty;
}

// The rows of `t` from `begin` on (a side's rows whose keys come after what was joined).
io::Table RowsFrom(const io::Table& t, size_t begin) {
  std::vector<uint32_t> rows(t.rows() - begin);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<uint32_t>(begin + i);
  return relational::TakeRows(t, rows);
}

// Past the budget (reduce_spill.h): each side's rows, with their places, as sorted runs by key;
// both merged in step, a batch of whole keys at a time, and the keys both batches cover joined
// in memory; the joined rows, as runs sorted by their places (the in-memory join's order: the
// left's, each left row's matches in the right's; a right join the right's; an outer join's
// unmatched right rows last), merged again into the part file.
Status ReduceSpilling(const OpContext& context, OpReport& report, const relational::JoinOptions& options,
                      size_t left_maps, const std::string& output, uint64_t budget) {
  const auto& inputs = context.spec.input_paths;
  const std::vector<std::string> paths[2] = {
      std::vector<std::string>(inputs.begin(), inputs.begin() + static_cast<ptrdiff_t>(left_maps)),
      std::vector<std::string>(inputs.begin() + static_cast<ptrdiff_t>(left_maps), inputs.end())};
  const char* positions[2] = {kLeftRow, kRightRow};
  COUPLER_ASSIGN_OR_RETURN(const SpillDir dir, SpillDir::Create(output));
  const std::vector<relational::SortKey> by_key(options.on.size());
  const SpillShares shares = SharesOf(budget);
  std::vector<SortedRun> runs[2];
  size_t run_count = 0;
  for (int side = 0; side < 2; ++side) {
    const std::string side_dir = dir.path() + (side == 0 ? "/left" : "/right");
    COUPLER_ASSIGN_OR_RETURN(runs[side], WriteSortedRuns(context, report, paths[side], options.on,
                                                         by_key, side_dir, shares.chunk, positions[side]));
    run_count += runs[side].size();
    COUPLER_ASSIGN_OR_RETURN(runs[side], MergeDown(context, report, std::move(runs[side]), options.on,
                                                   by_key, side_dir, budget / 2));
  }
  NoteSpill(context, "join", FileBytes(inputs), budget, run_count, true);
  // What the joined rows are put back in order by.
  const bool semi = options.how == relational::JoinHow::kSemi || options.how == relational::JoinHow::kAnti;
  const std::vector<std::string> order_by =
      semi ? std::vector<std::string>{kLeftRow}
      : options.how == relational::JoinHow::kRight ? std::vector<std::string>{kRightRow, kLeftRow}
                                                   : std::vector<std::string>{kLeftRow, kRightRow};
  const std::vector<relational::SortKey> ascending(order_by.size());
  RunWriter joined_runs(dir.path() + "/joined", order_by, ascending);
  io::Table current[2];
  for (int side = 0; side < 2; ++side) {
    COUPLER_ASSIGN_OR_RETURN(current[side], EmptySide(paths[side].front(), positions[side], report));
  }
  {
    std::optional<RunMerger> mergers[2];
    std::optional<KeyBatches> batches[2];
    bool done[2] = {true, true};
    for (int side = 0; side < 2; ++side) {
      if (runs[side].empty()) continue;
      mergers[side].emplace(std::move(runs[side]), options.on, by_key, shares.windows / 2, shares.batch / 2);
      batches[side].emplace(*mergers[side], options.on, by_key);
      done[side] = false;
    }
    std::vector<io::Table> joined;  // joined rows not yet written as a run
    uint64_t joined_bytes = 0;
    while (true) {
      if (context.Cancelled()) return Cancelled();
      for (int side = 0; side < 2; ++side) {
        while (!done[side] && current[side].rows() == 0) {
          COUPLER_ASSIGN_OR_RETURN(std::optional<io::Table> next, batches[side]->Next(report));
          if (!next) {
            done[side] = true;
          } else {
            current[side] = std::move(*next);
          }
        }
      }
      if (current[0].rows() == 0 && current[1].rows() == 0) break;
      COUPLER_ASSIGN_OR_RETURN(const std::vector<size_t> kl,
                               relational::ColumnIndexes(current[0], options.on, "key column"));
      COUPLER_ASSIGN_OR_RETURN(const std::vector<size_t> kr,
                               relational::ColumnIndexes(current[1], options.on, "key column"));
      // Each batch holds whole keys, and a side's later batches only keys past its last one: so
      // every row up to the smaller of the two last keys has all its matches here. What is past
      // it waits for the other side's next batch (or, that side done, for nothing). A side with
      // no rows left bounds nothing.
      size_t take[2] = {current[0].rows(), current[1].rows()};
      if (current[0].rows() > 0 && current[1].rows() > 0) {
        const size_t last_l = current[0].rows() - 1, last_r = current[1].rows() - 1;
        const int c = relational::CompareRows(current[0], kl, last_l, current[1], kr, last_r, by_key);
        if (c <= 0) {
          size_t n = 0;  // right rows not past the left's last key
          while (n < current[1].rows() &&
                 relational::CompareRows(current[1], kr, n, current[0], kl, last_l, by_key) <= 0) {
            ++n;
          }
          take[1] = n;
        }
        if (c > 0) {
          size_t n = 0;
          while (n < current[0].rows() &&
                 relational::CompareRows(current[0], kl, n, current[1], kr, last_r, by_key) <= 0) {
            ++n;
          }
          take[0] = n;
        }
      }
      io::Table part[2];
      for (int side = 0; side < 2; ++side) {
        if (take[side] == current[side].rows()) {
          part[side] = std::move(current[side]);
          current[side] = RowsFrom(part[side], part[side].rows());  // no rows, same columns
        } else {
          std::vector<uint32_t> head(take[side]);
          for (size_t i = 0; i < head.size(); ++i) head[i] = static_cast<uint32_t>(i);
          part[side] = relational::TakeRows(current[side], head);
          current[side] = RowsFrom(current[side], take[side]);
        }
      }
      Result<io::Table> rows = [&] {
        KernelTimer timer(report.kernel_ms);
        return relational::Join(part[0], part[1], options);
      }();
      if (!rows.ok()) return rows.status().WithContext(output);
      joined_bytes += rows->DataBytes();
      joined.push_back(std::move(rows).value());
      if (joined_bytes >= shares.batch) {
        COUPLER_ASSIGN_OR_RETURN(io::Table all, relational::Concatenate(std::move(joined)));
        COUPLER_RETURN_IF_ERROR(joined_runs.Add(std::move(all), report));
        joined.clear();
        joined_bytes = 0;
      }
    }
    if (!joined.empty()) {
      COUPLER_ASSIGN_OR_RETURN(io::Table all, relational::Concatenate(std::move(joined)));
      COUPLER_RETURN_IF_ERROR(joined_runs.Add(std::move(all), report));
    }
  }
  io::NpzStreamWriter writer(output);
  std::vector<SortedRun> ordered = joined_runs.Take();
  if (ordered.empty()) {
    // Nothing matched: the output's columns, no rows.
    COUPLER_ASSIGN_OR_RETURN(io::Table none, relational::Join(current[0], current[1], options));
    COUPLER_RETURN_IF_ERROR(writer.Append(WithoutColumns(std::move(none), {kLeftRow, kRightRow})));
  } else {
    COUPLER_ASSIGN_OR_RETURN(ordered, MergeDown(context, report, std::move(ordered), order_by, ascending,
                                                dir.path() + "/joined", budget));
    RunMerger in_order(std::move(ordered), order_by, ascending, shares.windows, shares.batch);
    COUPLER_RETURN_IF_ERROR(MergeInto(context, in_order, writer, report, {kLeftRow, kRightRow}));
  }
  return FinishPartFile(writer, output, report);
}

Status RunReduce(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const relational::JoinOptions options, Options(context));
  COUPLER_ASSIGN_OR_RETURN(const int64_t left_maps,
                           context.spec.params.Get<int64_t>(std::string(ops::kLeftMapsParam)));
  const auto& inputs = context.spec.input_paths;
  if (left_maps < 1 || static_cast<size_t>(left_maps) >= inputs.size()) {
    return InvalidArgument("a join's reduce reads both sides: " + std::to_string(left_maps) +
                           " of its " + std::to_string(inputs.size()) + " files are the left's");
  }
  COUPLER_ASSIGN_OR_RETURN(const uint64_t budget, ReduceBudget(context));
  if (ShouldSpill(context, report, FileBytes(inputs), budget)) {
    return ReduceSpilling(context, report, options, static_cast<size_t>(left_maps), output, budget);
  }
  std::vector<io::Table> sides[2];
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (context.Cancelled()) return Cancelled();
    COUPLER_ASSIGN_OR_RETURN(io::Table file, ReadShard(inputs[i], report));
    report.rows_in += file.rows();
    sides[i < static_cast<size_t>(left_maps) ? 0 : 1].push_back(std::move(file));
  }
  Result<io::Table> left = relational::Concatenate(std::move(sides[0]));
  if (!left.ok()) return left.status().WithContext("the left input's shards");
  Result<io::Table> right = relational::Concatenate(std::move(sides[1]));
  if (!right.ok()) return right.status().WithContext("the right input's shards");
  Result<io::Table> joined = [&] {
    KernelTimer timer(report.kernel_ms);
    return relational::Join(*left, *right, options);
  }();
  if (!joined.ok()) return joined.status().WithContext(output);
  report.rows_out = joined->rows();
  return WriteShard(output, std::move(joined).value(), report);
}

// A broadcast join: one shard of the left input against the whole right input, no shuffle.
// The right side is read by every task, so it must be small: past kBroadcastLimit the task
// fails and says to shuffle instead.
constexpr uint64_t kBroadcastLimit = uint64_t{512} << 20;

Status RunBroadcast(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string output, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const relational::JoinOptions options, Options(context));
  if (options.how == relational::JoinHow::kRight || options.how == relational::JoinHow::kOuter) {
    return InvalidArgument("a broadcast join cannot be " +
                           std::string(relational::JoinHowName(options.how)) +
                           ": each task sees one left shard");
  }
  const auto& inputs = context.spec.input_paths;
  if (inputs.size() < 2) {
    return InvalidArgument("a broadcast join reads a left shard and the right input's shards");
  }
  COUPLER_ASSIGN_OR_RETURN(const io::Table left, ReadShard(inputs[0], report));
  std::vector<io::Table> right_shards;
  uint64_t right_bytes = 0;
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (context.Cancelled()) return Cancelled();
    COUPLER_ASSIGN_OR_RETURN(io::Table shard, ReadShard(inputs[i], report));
    right_bytes += shard.DataBytes();
    if (right_bytes > kBroadcastLimit) {
      return InvalidData("the broadcast side holds more than " +
                         std::to_string(kBroadcastLimit >> 20) +
                         " MiB: every task would read it; leave `broadcast` off to shuffle both sides");
    }
    right_shards.push_back(std::move(shard));
  }
  Result<io::Table> right = relational::Concatenate(std::move(right_shards));
  if (!right.ok()) return right.status().WithContext("the right input's shards");
  report.rows_in = left.rows() + right->rows();
  Result<io::Table> joined = [&] {
    KernelTimer timer(report.kernel_ms);
    return relational::Join(left, *right, options);
  }();
  if (!joined.ok()) return joined.status().WithContext(output);
  report.rows_out = joined->rows();
  return WriteShard(output, std::move(joined).value(), report);
}

}  // namespace

Status RunJoin(const OpContext& context, OpReport& report) {
  // Admission turns `auto` into true or false; a task of a plan made without it shuffles.
  const Result<bool> broadcast = context.spec.params.Get<bool>("broadcast");
  if (broadcast.ok() && *broadcast) return RunBroadcast(context, report);
  return RunMapOrReduce(context, report, &RunMap, &RunReduce);
}

}  // namespace coupler::worker
