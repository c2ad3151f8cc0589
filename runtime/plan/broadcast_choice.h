// `broadcast: auto` on a join, decided once, at admission (and by `coupler plan`), from what the
// files on disk say of the right input's size: a right side of at most kAutoBroadcastBytes is
// read whole by every task instead of being shuffled with the left. The decision is written
// into the node's params (true or false), so the admitted plan records it and a restart
// replays it, whatever the files have become since.
//
// The right input's size is known when it is a dataset (a file, or a folder of shards) or a node
// that does not make its input bigger, computed from one: import_csv of CSV files (strings become
// codes), filter, select, dedup, sort and group_by, followed back to the files they read. Any
// other producer (a command, a join, derive's new columns) is not known before it runs, and
// such a join shuffles. A join asked for explicit `partitions`, or a right or outer join (which
// cannot broadcast), shuffles too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/job/job_graph.h"

namespace coupler::plan {

inline constexpr uint64_t kAutoBroadcastBytes = uint64_t{64} << 20;

struct BroadcastChoice {
  std::string node;
  std::optional<uint64_t> right_bytes;  // nullopt: not known before the job runs
  bool broadcast = false;
  std::string why;  // one line for people: "right input about 1.2 MiB (at most 64.0 MiB)"
};

// Decides every `broadcast: auto` of `graph` (loaded and validated) and writes the choice into
// the node's params. Reads file sizes only (stat and a folder's listing).
std::vector<BroadcastChoice> ChooseBroadcasts(job::JobGraph& graph);

}  // namespace coupler::plan
