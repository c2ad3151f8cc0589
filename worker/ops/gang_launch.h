// What the leader of a tight node's gang needs to start it: how many ranks the coordinator
// reserved, whether they are all on this machine, and an Open MPI hostfile for the reserved
// hosts. Shared by the train and mpi_exec ops, so both launch a gang alike.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/status.h"
#include "runtime/wire/worker_messages.h"

namespace coupler::worker {

// The ranks reserved for the gang (the sum of spec.gang_ranks), or `declared` when the task
// carries no reservation (a tight op forced loose with ranks: 1).
uint32_t GangRanks(const wire::TaskSpec& spec, int64_t declared);

// Every reserved host is this machine ("localhost", 127.0.0.1 or its hostname, or unnamed):
// the group starts with plain `-np`, no hostfile and no remote launch.
bool GangIsLocal(const wire::TaskSpec& spec);

// "host slots=N" per reserved host; "localhost slots=RANKS" when the gang is local.
std::string GangHostfileText(const wire::TaskSpec& spec, uint32_t ranks);

// Writes `text` to `path` atomically (not fsync'd: it is rebuilt on a retry).
Status WriteTextFile(const std::string& path, const std::string& text);

// `command` with each {name} of `values` replaced by its text; other braces are left as
// written (the job validator has already refused unknown placeholders).
std::string SubstitutePlaceholders(std::string_view command,
                                   const std::vector<std::pair<std::string_view, std::string>>& values);

}  // namespace coupler::worker
