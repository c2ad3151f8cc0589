// The fixed 20-byte header in front of every coupler message: what it is, which protocol
// version wrote it, how long the payload is, and which coordinator epoch it speaks for. Packed byte by byte, little-endian, so the
// layout never depends on a compiler's struct padding or the host's byte order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/status.h"
#include "runtime/wire/message_type.h"

namespace coupler::wire {

// Offset 0: magic "CPLR" | 4: version u16 | 6: type u16 | 8: payload length u32 |
// 12: epoch u64 | 20: payload. The first 12 bytes keep their meaning in every version, so any
// peer can read what a message is and refuse a version it does not decode.
inline constexpr char kMagic[4] = {'C', 'P', 'L', 'R'};
inline constexpr size_t kHeaderSize = 20;

// The version this build writes. A reader accepts [kMinSupportedVersion, kProtocolVersion];
// any change to a message's fields needs a bump (see docs/protocol.md).
inline constexpr uint16_t kProtocolVersion = 17;
// 2 added TaskSpec.gpus; 3 added TaskSpec.gang_hosts/gang_ranks and NodeStatus.ranks/reason;
// 4 added CoordinatorStats.queued_*/recommended_workers; 5 added WorkerStatus.labels/cpus/
// memory_bytes; 6 added JobStatus.submitted_by and CoordinatorStats' trust counters (peers
// are told apart by their keys from 6 on, so older peers are refused); 7 added
// RegisterWorker.address (hosts are addresses from 7 on), the Launch* messages, TaskSpec's
// gang_token and workdir marker, TaskOutcome.host_refused, NodeStatus.hosts,
// JobStatus.refused_hosts and WorkerStatus.address; 8 made TaskSpec typed (kind, shards, ranks,
// params as typed values instead of text with "__" keys), which a 7 peer cannot read; 9 added
// the operations fields: Heartbeat.gpu_sampling, SubmitJob.submission_id, SubmitReply.existing,
// StatusRequest.state/limit, the prefetched counts, NodeStatus' graph (op, stage, deps),
// JobStatus.workdir/submission_id, CoordinatorStats.warnings, WorkerStatus' live GPU samples
// and TaskOutcome.wall_ms; 10 added SubmitJob.reuse, RetryJob and typed mappings; 11 added
// RegisterWorker.holding and the Registered, ResultAck and RegisterAgain messages (a restarted
// coordinator adopts the attempts its workers hold); 12 added Reclaim and Reclaimed (queued work
// moves to idle workers); 13 added TaskSpec.fused and in_memory_outputs, and
// TaskOutcome.fused_node (fused per-shard chains); 14 added the header's epoch (fencing: a
// worker refuses what an older coordinator sends, a coordinator stops when a worker speaks for
// a newer one) and moved Registered's epoch there; 15 added BanWorker, WorkerStatus.ban_reason
// and the worker state banned; 16 added GPU health (GpuUsage readings, GpuInfo.uuid),
// Heartbeat.fenced_gpus, FenceGpu and WorkerStatus.gpu_fences; 17 added TaskOutcome.lost_inputs
// (a reduce's missing shuffle files, whose map tasks run again).
// A payload's layout follows its version: the previous version (N-1) is read and written too,
// each field new since guarded by its version (payload_version.h), so a pool upgrades one
// process at a time; anything older is refused with its version named rather than half
// understood.
inline constexpr uint16_t kMinSupportedVersion = 16;

// Default cap on a payload the decoder will look at; far above a batch of a few hundred tasks,
// far below what would hurt a coordinator holding a million-task job.
inline constexpr size_t kDefaultMaxPayloadBytes = size_t{64} << 20;

struct Header {
  uint16_t version = kProtocolVersion;
  MessageType type = MessageType::kAck;
  uint32_t payload_size = 0;
  // The coordinator epoch the sender speaks for (its store's generation, +1 at every start on
  // a state directory): a coordinator stamps its own on everything it sends to workers, a
  // worker the one it registered under (0 before that); clients send 0. It is a fencing token:
  // a worker drops what a coordinator older than the one it registered with sends, and a
  // coordinator that hears a newer epoch knows another one owns its state and stops.
  uint64_t epoch = 0;

  friend bool operator==(const Header&, const Header&) = default;
};

// Writes exactly kHeaderSize bytes at `out`.
void WriteHeader(const Header& header, char* out);

// Reads and checks the first kHeaderSize bytes of `bytes`: long enough, magic, supported
// version, known type. It does not look at the payload (Decode does); the payload_size it
// returns is what the sender claimed.
Result<Header> ReadHeader(std::string_view bytes);

// Rewrites the epoch of an encoded message in place (`message` starts with a header).
void StampEpoch(std::string& message, uint64_t epoch);

}  // namespace coupler::wire
