#include "cli/job_wait.h"

#include <unistd.h>

#include <chrono>
#include <optional>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli/signals.h"
#include "cli/status_format.h"
#include "runtime/io/output_layout.h"
#include "runtime/io/shard_file.h"
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

void PrintAccuracy(const job::JobGraph& graph, const std::string& run_dir,
                   bool quiet_if_unreadable) {
  for (const auto& node : graph.nodes) {
    if (node.op != "evaluate") continue;
    const std::string path = io::ShardPath(run_dir, node.id, 0);
    std::error_code ec;
    if (quiet_if_unreadable && !std::filesystem::exists(path, ec)) continue;
    Result<io::Table> table = io::ReadShardFile(path);
    const io::Column* accuracy = table.ok() ? table->Find("accuracy") : nullptr;
    const io::Column* correct = table.ok() ? table->Find("correct") : nullptr;
    const io::Column* total = table.ok() ? table->Find("total") : nullptr;
    if (accuracy == nullptr || correct == nullptr || total == nullptr || table->rows() != 1 ||
        accuracy->dtype() != ElementType::kFloat64 || correct->dtype() != ElementType::kFloat64 ||
        total->dtype() != ElementType::kFloat64) {
      std::fprintf(stderr, "coupler: cannot read the accuracy of node '%s' from %s\n",
                   node.id.c_str(), path.c_str());
      continue;
    }
    const io::Column* held_out = table->Find("held_out");
    const bool only_held_out = held_out != nullptr && held_out->dtype() == ElementType::kFloat64 &&
                               held_out->values<double>()[0] == 1.0;
    std::printf("%s: %s %.4f (%.0f/%.0f rows)\n", node.id.c_str(),
                only_held_out ? "held-out accuracy" : "accuracy", accuracy->values<double>()[0],
                correct->values<double>()[0], total->values<double>()[0]);
  }
}

}  // namespace coupler::cli
