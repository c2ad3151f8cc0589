#include "cli/job_wait.h"

#include <unistd.h>

#include <chrono>
#include <optional>
#include <cstdio>
#include <thread>

#include "cli/signals.h"
#include "cli/status_format.h"
#include "runtime/job/job_phase.h"

namespace coupler::cli {

WaitOutcome WaitForJob(client::Client& client, const std::string& job_id) {
  const bool tty = isatty(STDERR_FILENO) != 0;
  const auto start = std::chrono::steady_clock::now();
  auto last_line = start - std::chrono::hours(1);
  int unreachable = 0;
  WaitOutcome out;
  const std::atomic<bool>& stop = StopRequested();
  while (!stop.load()) {
    // Long poll: the reply comes as soon as the job finishes, or after the progress period.
    Result<wire::StatusReply> reply =
        client.Status(job_id, std::chrono::milliseconds(tty ? 200 : 2000));
    if (!reply.ok()) {
      // A restarting coordinator is briefly unreachable: keep trying for a while.
      if (++unreachable >= 6) {
        std::fprintf(stderr, "\ncoupler: %s\n", reply.status().message().c_str());
        return out;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    unreachable = 0;
    if (reply->jobs.empty()) {
      std::fprintf(stderr, "coupler: the coordinator does not know job %s\n", job_id.c_str());
      return out;
    }
    const wire::JobStatus& job = reply->jobs.front();
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    const bool finished = job::IsFinished(job.state);
    if (tty) {
      std::fprintf(stderr, "\r%s\033[K", ProgressLine(job, elapsed).c_str());
    } else if (finished || now - last_line >= std::chrono::seconds(2)) {
      std::fprintf(stderr, "%s\n", ProgressLine(job, elapsed).c_str());
      last_line = now;
    }
    if (finished) {
      if (tty) std::fputc('\n', stderr);
      out.final_status = job;
      const bool succeeded = job.state == job::JobPhase::kSucceeded;
      out.exit_code = succeeded ? 0 : 1;
      if (!succeeded) {
        std::fprintf(stderr, "coupler: job %s %s: %s\n", job.id.c_str(),
                     std::string(job::JobPhaseName(job.state)).c_str(), job.error.c_str());
      }
      return out;
    }
  }
  std::fprintf(stderr, "\ncoupler: interrupted; job %s keeps running (coupler cancel %s)\n",
               job_id.c_str(), job_id.c_str());
  return out;
}

}  // namespace coupler::cli
