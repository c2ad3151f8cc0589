#include "runtime/logging.h"

#include <mutex>
#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace coupler {
namespace {

std::mutex& LoggerMutex() {
  static std::mutex m;
  return m;
}

spdlog::level::level_enum& CurrentLevel() {
  static spdlog::level::level_enum level = spdlog::level::warn;
  return level;
}

}  // namespace

std::shared_ptr<spdlog::logger> Logger(std::string_view component) {
  std::lock_guard lock(LoggerMutex());
  std::string name(component);
  if (auto existing = spdlog::get(name)) return existing;
  auto logger = spdlog::stderr_color_mt(name);
  logger->set_level(CurrentLevel());
  // Dated, in UTC: a log kept past midnight, or gathered from hosts in other time zones, still
  // orders and lines up ("[2026-12-06T18:07:48.892Z warn coordinator] ...").
  logger->set_pattern(std::string(kLogLinePattern), spdlog::pattern_time_type::utc);
  return logger;
}

Status SetLogLevel(std::string_view level) {
  static constexpr std::string_view kNames[] = {"trace", "debug", "info", "warn", "error", "off"};
  bool known = false;
  for (auto n : kNames) known |= (n == level);
  if (!known) {
    return InvalidArgument("unknown log level '" + std::string(level) +
                           "' (use trace, debug, info, warn, error or off)");
  }
  std::lock_guard lock(LoggerMutex());
  CurrentLevel() = spdlog::level::from_str(std::string(level));
  spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& l) { l->set_level(CurrentLevel()); });
  return Status::Ok();
}

}  // namespace coupler
