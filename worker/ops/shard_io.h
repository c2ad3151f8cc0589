// The shard plumbing every npy op shares: reading and writing shards while counting bytes into
// the report, picking the columns an op works on, and the task's input/output paths.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/io/dtype.h"
#include "runtime/io/npz_file.h"
#include "runtime/io/table.h"
#include "runtime/status.h"
#include "worker/ops/op_context.h"

namespace coupler::worker {

// The shard at `path` (io::ReadShardFile): an op names the columns it computes with in `wanted`
// and leaves the rest unread (Stored), so WriteShard passes them on without loading them.
// An input that is missing is explained (missing_shard.h). In a fused chain, a path the stage
// holds (report.stage, shard_stage.h) is the previous op's table, taken from memory.
Result<io::Table> ReadShard(std::string_view path, OpReport& report,
                            const io::ColumnWanted& wanted = {});

// Loads the named columns that ReadShard left unread (names not in the table are skipped: the
// op's own checks name them). Bytes read are counted.
Status LoadColumns(io::Table& table, const std::vector<std::string>& names, OpReport& report);

// Atomic write of an .npz of columns (io::WriteNpzAtomic); records the path in output_paths and
// the file size in bytes_written. A path the fused chain's stage holds is parked there for the
// next op instead (nothing written, nothing recorded): hence the table is taken, not copied.
Status WriteShard(std::string_view path, io::Table&& table, OpReport& report);

// input_paths[index], or InvalidArgument saying how many inputs the op expects.
Result<std::string> InputPath(const OpContext& context, size_t index, std::string_view expected);

// output_path, or InvalidArgument when the task has none.
Result<std::string> OutputPath(const OpContext& context);

// Ops with a map and a reduce task (column_stats, evaluate): runs `map` or `reduce` as the
// task's kind says.
using OpBody = Status (*)(const OpContext&, OpReport&);
Status RunMapOrReduce(const OpContext& context, OpReport& report, OpBody map, OpBody reduce);

// A reduce task's partial files, read in order (checking for cancel between them) and handed
// to `visit` with their index; `what` names them in the error for a task with none.
Status ForEachPartial(const OpContext& context, OpReport& report, std::string_view what,
                      const std::function<Status(size_t index, const std::string& path,
                                                 const io::Table& partial)>& visit);

// Replaces each named int64 column by its float32 values (a missing value becomes NaN), for ops
// whose arithmetic is float32 (standardize, filter_map): counts and pixel values are exact,
// integers past 2^24 round, which is what scaling them means anyway. Other columns stay.
void WidenInt64ToFloat32(io::Table& table, const std::vector<std::string>& names);

// For ReadShard: load the columns named in `names`, or when `names` is empty every column
// holding `dtype` that is not categorical (the columns SelectColumns would pick).
io::ColumnWanted NamedOrOfType(const std::vector<std::string>& names, ElementType dtype);

// Indexes of the columns an op works on: `names` (each must exist and hold `dtype`), or when
// `names` is empty every column holding `dtype`. Errors list what the shard has.
Result<std::vector<size_t>> SelectColumns(const io::Table& table,
                                          const std::vector<std::string>& names, ElementType dtype);

}  // namespace coupler::worker
