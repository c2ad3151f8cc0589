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
        // The error goes to stderr, where scripts look for it; the summary that follows does
        // not say it again (JobSummaryText).
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

namespace {

// Thousands separated, as the rates and sizes below read best.
std::string Grouped(double value) {
  const std::string digits = std::to_string(static_cast<long long>(value + 0.5));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

// An evaluate node's rows, one per precision, beside its first (the reference).
void PrintPrecisionTable(const io::Table& table) {
  const io::Column* precision = table.Find("precision");
  const io::Column* accuracy = table.Find("accuracy");
  const io::Column* rate = table.Find("samples_per_s");
  const io::Column* bytes = table.Find("weight_bytes");
  if (precision == nullptr || precision->dictionary() == nullptr || rate == nullptr ||
      bytes == nullptr || rate->dtype() != ElementType::kFloat64 ||
      bytes->dtype() != ElementType::kFloat64) {
    return;
  }
  const auto& names = *precision->dictionary();
  const double base_accuracy = accuracy->values<double>()[0];
  const double base_rate = rate->values<double>()[0];
  const double base_bytes = bytes->values<double>()[0];
  std::printf("  %-9s %9s %10s %14s %9s %14s %8s\n", "precision", "accuracy", "vs first",
              "samples/s", "speed", "weight bytes", "size");
  for (size_t r = 0; r < table.rows(); ++r) {
    const int32_t code = precision->values<int32_t>()[r];
    const std::string name =
        code >= 0 && static_cast<size_t>(code) < names.size() ? names[code] : "?";
    const double a = accuracy->values<double>()[r];
    const double s = rate->values<double>()[r];
    const double b = bytes->values<double>()[r];
    char delta[32], speed[32], size[32];
    std::snprintf(delta, sizeof delta, "%+.2f pt", (a - base_accuracy) * 100);
    std::snprintf(speed, sizeof speed, "%.2fx", base_rate > 0 ? s / base_rate : 0.0);
    std::snprintf(size, sizeof size, "%.2fx", base_bytes > 0 ? b / base_bytes : 0.0);
    std::printf("  %-9s %9.4f %10s %14s %9s %14s %8s\n", name.c_str(), a, delta,
                Grouped(s).c_str(), speed, Grouped(b).c_str(), size);
  }
}

}  // namespace

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
    if (accuracy == nullptr || correct == nullptr || total == nullptr || table->rows() == 0 ||
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
    if (table->rows() > 1) PrintPrecisionTable(*table);
  }
}

}  // namespace coupler::cli
