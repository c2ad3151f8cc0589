// Where a job's outputs live and how their files are named: `{workdir}/{node}/part-NNNNN.npz`
// for a node's shards (`partial-NNNNN.npz` for what its map tasks hand its reduce; `.npy` where
// a command writes the file), and which
// names in a folder are shards and which are temporaries of an unfinished write. The
// coordinator plans these paths, the workers write them, `coupler run` and the loaders read
// them: all of them through this header, so the layout cannot drift between them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace coupler::io {

// The folder holding a node's outputs: "{workdir}/{node}".
std::string NodeDir(std::string_view workdir, std::string_view node);

// A shard's file name: "part-00004.npz", or "partial-00004.npz" for a map task's partial
// result that the node's reduce task combines into its part files.
enum class ShardKind { kPart, kPartial };
// What a shard file holds, and so its extension: kColumns, an .npz of columns (what coupler's
// ops write, npz_file.h); kRecords, an .npy (what a command's np.save writes: exec's {output}).
enum class ShardFormat { kColumns, kRecords };
std::string ShardFileName(int64_t shard, ShardKind kind = ShardKind::kPart,
                          ShardFormat format = ShardFormat::kColumns);

// "{workdir}/{node}/part-NNNNN.npz" (or partial-NNNNN.npz, or .npy).
std::string ShardPath(std::string_view workdir, std::string_view node, int64_t shard,
                      ShardKind kind = ShardKind::kPart, ShardFormat format = ShardFormat::kColumns);

// A shuffle's files: map task M of node N writes the rows of partition R to
// "{workdir}/{N}/shuffle/map-MMMMM.pRRRRR.npz", which reduce task R reads from every map task.
// In a folder of their own, so the node's folder still holds only its part files. The map task
// is handed the prefix ("{workdir}/{N}/shuffle/map-MMMMM") and names each file from it.
std::string ShufflePrefix(std::string_view workdir, std::string_view node, int64_t map_shard);
std::string ShufflePartitionPath(std::string_view prefix, int64_t partition);
// A range-partitioned shuffle (sort): map task M writes its shard sorted ("{prefix}.sorted.npz")
// and a sample of its keys ("{prefix}.sample.npz"); every reduce task reads them all.
std::string ShuffleSortedPath(std::string_view prefix);
std::string ShuffleSamplePath(std::string_view prefix);

// What marks a temporary file of an atomic write: "<final name>.tmp.<pid>.<hex>[.ext]"
// (see atomic_file.h, which names them).
inline constexpr std::string_view kTempInfix = ".tmp.";

// A temporary of an unfinished write, which a killed process can leave behind.
bool IsTempFileName(std::string_view name);

// The pid of the process that writes `name`, when it is a temporary of the file named
// `final_name` ("part-00001.npy.tmp.5471.280e..." → 5471); nullopt for any other name.
std::optional<long> TempWriterPid(std::string_view final_name, std::string_view name);

// A dataset shard: "*.npz" or "*.npy", not hidden, not a temporary.
bool IsShardFileName(std::string_view name);

}  // namespace coupler::io
