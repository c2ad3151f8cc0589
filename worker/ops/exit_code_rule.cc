#include "worker/ops/exit_code_rule.h"

#include <algorithm>
#include <charconv>

namespace coupler::worker {
namespace {

bool Holds(const std::vector<int>& codes, int status) {
  return std::find(codes.begin(), codes.end(), status) != codes.end();
}

Result<std::vector<int>> Codes(const std::vector<std::string>& texts, std::string_view param) {
  std::vector<int> codes;
  for (const std::string& text : texts) {
    int code = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), code);
    if (ec != std::errc() || ptr != text.data() + text.size() || code < 1 || code > 255) {
      return InvalidArgument(std::string(param) + ": '" + text + "' is not an exit code 1..255");
    }
    codes.push_back(code);
  }
  return codes;
}

}  // namespace

std::optional<std::string> ExitCodeRule::NotRetried(int status) const {
  if (status == kNoRetryExitCode) {
    return "exit status " + std::to_string(status) + " asks not to be retried";
  }
  if (Holds(no_retry, status)) {
    return "exit status " + std::to_string(status) + " is in no_retry_exit_codes";
  }
  if (retry_only_listed && !Holds(retry_only, status)) {
    return "exit status " + std::to_string(status) + " is not in retry_on_exit_codes";
  }
  return std::nullopt;
}

Status ApplyExitCodeRule(const ExitCodeRule& rule, bool exited, int exit_status,
                         Status failed) {
  if (failed.ok() || !exited || exit_status == 0) return failed;
  const std::optional<std::string> why = rule.NotRetried(exit_status);
  if (!why) return failed;
  return Status(StatusCode::kInvalidData,
                std::string(failed.message()) + " (not retried: " + *why + ")");
}

std::string NoRetryExitVariable() {
  return "COUPLER_NO_RETRY_EXIT=" + std::to_string(kNoRetryExitCode);
}

Result<ExitCodeRule> ExitCodeRuleFrom(const wire::TaskParams& params) {
  ExitCodeRule rule;
  COUPLER_ASSIGN_OR_RETURN(const std::optional<std::vector<std::string>> no_retry,
                           params.Optional<std::vector<std::string>>("no_retry_exit_codes"));
  if (no_retry) {
    COUPLER_ASSIGN_OR_RETURN(const std::vector<int> codes, Codes(*no_retry, "no_retry_exit_codes"));
    rule.no_retry.insert(rule.no_retry.end(), codes.begin(), codes.end());
  }
  COUPLER_ASSIGN_OR_RETURN(const std::optional<std::vector<std::string>> retry_on,
                           params.Optional<std::vector<std::string>>("retry_on_exit_codes"));
  if (retry_on) {
    COUPLER_ASSIGN_OR_RETURN(rule.retry_only, Codes(*retry_on, "retry_on_exit_codes"));
    rule.retry_only_listed = true;
  }
  return rule;
}

}  // namespace coupler::worker
