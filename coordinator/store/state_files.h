// The state directory's files checked before SQLite opens them. SQLite takes an empty or
// missing database file for a new, empty one, and a WAL whose header or a middle frame is
// damaged for a shorter WAL, silently dropping every commit after the damage: either way a
// coordinator would come up having forgotten jobs it had reported finished. These checks turn
// that into a clear refusal.
#pragma once

#include <string>

#include "runtime/status.h"

namespace coupler::store {

// The marker a state directory gets once its database holds the schema: from then on, a
// missing or empty database there is damage, not a fresh start. It also records the
// database's commit generation (commit_generation.h).
inline constexpr const char* kStateMarker = "coupler.state";

// InvalidArgument, naming the file and what to do, when `dir` held state and its database is
// missing, empty, without a SQLite header, or its WAL is damaged. OK for a fresh directory.
Status CheckStateFiles(const std::string& dir, const std::string& db_file);

// The WAL at `path`: OK when absent, empty or sound (a torn last frame after a crash is sound:
// SQLite never committed it); InvalidArgument when its header fails its checksum or a frame
// fails its checksum while later frames of the same generation follow.
Status CheckWal(const std::string& path);

}  // namespace coupler::store
