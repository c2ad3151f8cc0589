// join: pandas' merge(left, right, on=keys, how=...) through a shuffle of both inputs. Map tasks
// (one per shard of the left input, then one per shard of the right) route every row of their
// shard by the hash of its keys; reduce task r joins the left rows of partition r with its right
// rows (runtime/relational/join.h) and writes part file r. Keys compare by value on both sides.
#include "runtime/ops/op_def.h"
#include "runtime/relational/join.h"
#include "runtime/relational/table_rows.h"
#include "worker/ops/ops.h"
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
