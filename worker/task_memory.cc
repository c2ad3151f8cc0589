#include "worker/task_memory.h"

#include <malloc.h>

namespace coupler::worker {

void RetainTaskMemory() {
  // Blocks below 64 MiB come from the heap (fixed, so glibc's sliding threshold stops moving);
  // up to 512 MiB of free heap top is kept rather than trimmed.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

}  // namespace coupler::worker
