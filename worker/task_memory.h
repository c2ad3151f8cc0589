// A worker's tasks allocate and free shard-sized buffers one after another (a 625k-row shard is
// a few 2.5 MB columns in and out). glibc hands such blocks back to the kernel on free (mmap'd
// above its threshold, trimmed off the heap top otherwise), so every task faulted its buffers
// in again, zeroed by the kernel. A worker keeps them for its next task instead: on the CSV
// pipeline (bench/pipeline/, 10M rows, 2 workers), four alternating runs each took 0.98-1.18 s
// with 0.49-0.62 s of system time against 1.18-1.26 s with 0.67-0.78 s without. The cost is
// that an idle worker stays at the size of its largest task.
#pragma once

namespace coupler::worker {

// Sets the process's malloc to keep freed task buffers (mallopt); call once at start.
void RetainTaskMemory();

}  // namespace coupler::worker
