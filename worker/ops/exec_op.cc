// exec: any shell command per shard. {input}, {output} and {shard} are replaced (shell-quoted);
// {output} is a temporary name beside output_path, renamed over it when the command succeeds,
// so a command that dies half-way never leaves a partial output behind. A command that exits 0
// without writing {output} succeeds, and leaves a note saying so beside the missing file
// (missing_shard.h), which the tasks reading it quote.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "runtime/io/atomic_file.h"
#include "worker/ops/exit_code_rule.h"
#include "worker/ops/gang_launch.h"
#include "worker/ops/missing_shard.h"
#include "worker/ops/ops.h"
#include "worker/ops/subprocess.h"

namespace coupler::worker {
namespace {

// -1 when the path is not a regular file.
int64_t FileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : -1;
}

}  // namespace

Status RunExec(const OpContext& context, OpReport& report) {
  const wire::TaskSpec& spec = context.spec;
  COUPLER_ASSIGN_OR_RETURN(const std::string command, spec.params.Get<std::string>("command"));
  COUPLER_ASSIGN_OR_RETURN(double timeout_s, spec.params.Get<double>("timeout"));
  COUPLER_ASSIGN_OR_RETURN(const ExitCodeRule exit_rule, ExitCodeRuleFrom(spec.params));
  if (spec.timeout_ms > 0) timeout_s = std::min(timeout_s, static_cast<double>(spec.timeout_ms) / 1e3);

  std::string inputs;
  // An input an upstream exec succeeded without writing, with its note's why (missing_shard.h).
  // The command still runs (it may expect gaps); if it fails, that is the error to report,
  // not the bare "No such file" it printed. A folder input (a dataset directory) is no regular
  // file but exists, so only an absent path is looked into.
  Status missing_input;
  for (const std::string& path : spec.input_paths) {
    inputs += (inputs.empty() ? "" : " ") + ShellQuote(path);
    if (const int64_t size = FileSize(path); size > 0) {
      report.bytes_read += static_cast<uint64_t>(size);
    } else if (size < 0 && missing_input.ok() && ::access(path.c_str(), F_OK) != 0) {
      Status explained = ExplainMissingInput(path, NotFound(path + ": no such file"));
      if (explained.code() == StatusCode::kInvalidData) missing_input = std::move(explained);
    }
  }
  if (inputs.empty()) inputs = "''";
  std::string temp;
  if (!spec.output_path.empty()) {
    COUPLER_RETURN_IF_ERROR(io::CreateParentDirectories(spec.output_path));
    temp = io::TempPathFor(spec.output_path, /*keep_extension=*/true);
  }

  std::string line = SubstitutePlaceholders(command, {{"input", inputs},
                                                      {"output", ShellQuote(temp)},
                                                      {"shard", std::to_string(spec.shard_index)}});
  auto result = RunOpCommand(std::move(line), timeout_s, context.cancel, report.kernel_ms,
                             context.logs, {NoRetryExitVariable()});
  if (!result.ok()) return result.status();
  const ShellResult& r = *result;
  const bool succeeded = r.end == ShellResult::End::kExited && r.exit_status == 0;
  if (!succeeded) {
    if (!temp.empty()) io::RemoveQuietly(temp);
    const Status ended =
        ApplyExitCodeRule(exit_rule, r.end == ShellResult::End::kExited, r.exit_status,
                          EndStatus(r, timeout_s, "command"));
    if (missing_input.ok() || r.end != ShellResult::End::kExited) return ended;
    // Not retried: the input will be as missing next time.
    return Status(StatusCode::kInvalidData,
                  missing_input.message() + " (then the " + ended.message() + ")");
  }
  if (!temp.empty()) {
    if (const int64_t size = FileSize(temp); size >= 0) {
      COUPLER_RETURN_IF_ERROR(io::RenameOver(temp, spec.output_path));
      ClearMissingShardNote(spec.output_path);  // an earlier attempt's, if any
      report.output_paths.push_back(spec.output_path);
      report.bytes_written += static_cast<uint64_t>(size);
    } else {
      // Not a failure: a command may have nothing to say for a shard. The readers are told.
      COUPLER_RETURN_IF_ERROR(NoteMissingShard(
          spec.output_path, spec.node_id, spec.shard_index,
          "its exec task exited 0 without writing {output} (command: " + command + ")"));
    }
  }
  return Status::Ok();
}

}  // namespace coupler::worker
