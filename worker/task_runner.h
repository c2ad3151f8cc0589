// RunTask: executes one loose task on this worker — an op from worker/ops/ over .npy shards —
// and reports how it went as a wire::TaskOutcome. This is the whole contract between the
// coordinator's task expansion and the worker's ops.
//
// TaskSpec conventions (what the coordinator sends):
// - `op`: the op name: import_csv, column_stats, standardize, filter_map, clip, cast, noop,
//   exec, evaluate (map + reduce), and the gang ops train and mpi_exec (run by a gang's
//   leader; docs/ops.md, "Tight nodes"); anything else fails with "unknown op '<name>'".
// - `params`: the node's params as the validator typed them, every default filled in
//   (wire::TaskParams): an op reads Get<double>("threshold") and never restates a default.
// - `kind`: map, reduce (column_stats and evaluate run the one or the other) or gang;
//   `shards`: the node's map task count (import_csv: N in "task i of N"); `ranks`: a gang's
//   declared rank count (the reservation, gang_hosts/gang_ranks, wins).
// - `shard_index`: the shard of a map task (import_csv: i of N); -1 for a reduce task.
// - `input_paths`: for a map task the shard_index-th shard of each input, in input order
//   (import_csv: [csv file]; standardize: [data shard, stats file]; exec: any, all passed as
//   {input}); for the column_stats reduce, every partial stats file.
// - `output_path`: the final file this task publishes (column_stats map tasks write their
//   partial there; a gang's is its node directory). Written under a temporary name and renamed, so it appears whole or not at
//   all; parent directories are created.
// - `timeout_ms`: exec, train and mpi_exec honour it (with their own `timeout` param, the
//   smaller wins).
//
// Shards are .npz archives of columns, or .npy arrays of records that a command wrote
// (runtime/io/shard_file.h; docs/ops.md, "Shard format").
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "runtime/wire/worker_messages.h"
#include "worker/ops/gang_launch.h"
#include "worker/task_device.h"
#include "worker/task_log.h"

namespace coupler::worker {

// Never throws. Fills ok / error (one line: "<op>: what failed and why"; "cancelled" when
// `cancel` became true), output_paths, rows_in / rows_out, device, kernel_ms (time inside
// kernels, or the command for exec) and bytes_processed (bytes read + written; for exec the
// sizes of its input files and of the output it published).
// `placement` is where the kernels should run (the pool thread's GPU, or the CPU). Ops with
// CUDA twins use it; the others (import_csv, exec, noop) run on the CPU. `device` records
// what actually ran: "cuda:N" when a kernel ran on GPU N, else "cpu"; gpu_requested_but_cpu
// flags a task that asked for a GPU (gpus or gpu_memory) and ran on the CPU all the same.
// `cancel` may be flipped by another thread at any time; ops check it between steps, noop
// while sleeping and exec every few milliseconds (killing the command's process group).
// `gang`: how a gang leader starts its ranks (see TaskEnvironment); null: plain mpirun.
// Every attempt of a job's task leaves logs under its node's folder (runtime/job/task_logs.h),
// each stream within `log_bytes`: a command's output, or for an in-process op one line saying
// what ran, the rows in and out, the device and the error.
wire::TaskOutcome RunTask(const wire::TaskSpec& spec, const std::atomic<bool>* cancel = nullptr,
                          TaskPlacement placement = {},
                          const GangSetup* gang = nullptr,
                          size_t log_bytes = kDefaultTaskLogBytes);

}  // namespace coupler::worker
