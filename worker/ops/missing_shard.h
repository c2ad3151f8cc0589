// Missing shards, explained: an exec task whose command exits 0 without writing its {output}
// leaves a note beside the file it did not write, and a downstream task that finds an input
// missing says which node's shard it is and why, never a bare "No such file".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/status.h"

namespace coupler::worker {

// The note beside a missing output: "<output>.missing" (not a shard name, so no loader lists
// it as data).
std::string MissingShardNotePath(std::string_view output_path);

// Records why `output_path` (shard `shard` of node `node`) was not written: `why` is one line
// for people. Replaces an older note.
Status NoteMissingShard(std::string_view output_path, std::string_view node, int64_t shard,
                        std::string_view why);

// The output exists now (a later attempt wrote it): its old note, if any, goes.
void ClearMissingShardNote(std::string_view output_path);

// For a read of input `path` that failed with NotFound (`not_found`): when a note explains the
// missing file, InvalidData "input shard 3 of node 'clean' (PATH) is missing: <why>" — the
// upstream task succeeded without writing it, so no retry of the reader can find it; otherwise
// NotFound naming the node and shard when `path` is a node's shard (it may still appear: a
// shared filesystem that lags), with the original message. Other statuses pass through.
Status ExplainMissingInput(std::string_view path, const Status& not_found);

}  // namespace coupler::worker
