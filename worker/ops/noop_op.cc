// noop: sleeps `sleep_ms` and writes nothing. With sleep_ms 0 it returns at once, so running
// millions of them measures the dispatch path alone.
#include <algorithm>
#include <chrono>
#include <thread>

#include "worker/ops/ops.h"

namespace coupler::worker {

Status RunNoop(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const int64_t sleep_ms, context.spec.params.Get<int64_t>("sleep_ms"));
  if (sleep_ms <= 0) return Status::Ok();

  KernelTimer timer(report.kernel_ms);
  // Slices short enough that a cancel is noticed promptly, long enough to cost nothing.
  constexpr auto kSlice = std::chrono::milliseconds(20);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(sleep_ms);
  for (auto now = std::chrono::steady_clock::now(); now < deadline;
       now = std::chrono::steady_clock::now()) {
    if (context.Cancelled()) return Cancelled();
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(kSlice,
                                                                              deadline - now));
  }
  return Status::Ok();
}

}  // namespace coupler::worker
