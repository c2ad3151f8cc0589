// Log lines carry their date, in UTC: a log kept past midnight, or gathered from hosts in
// several time zones, still orders and lines up.
#include "runtime/logging.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <regex>
#include <string>

#include <gtest/gtest.h>

namespace coupler {
namespace {

std::string UtcDay() {
  char day[16];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(day, sizeof day, "%Y-%m-%d", &tm);
  return day;
}

TEST(LoggingTest, EveryLineStartsWithItsUtcDateAndTime) {
  const std::string day_before = UtcDay();
  // What the component's logger writes to stderr, caught in a file.
  std::FILE* caught = std::tmpfile();
  ASSERT_NE(caught, nullptr);
  std::fflush(stderr);
  const int saved = ::dup(2);
  ASSERT_GE(saved, 0);
  ASSERT_EQ(::dup2(::fileno(caught), 2), 2);
  auto log = Logger("logging-test");
  log->warn("a dated line");
  log->flush();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::rewind(caught);
  char line[512] = {};
  ASSERT_NE(std::fgets(line, sizeof line, caught), nullptr);
  std::fclose(caught);
  const std::string text(line);
  const std::regex dated(
      R"(^(\x1b\[[0-9;]*m)?\[\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z warning logging-test\](\x1b\[[0-9;]*m)? a dated line\n$)");
  EXPECT_TRUE(std::regex_match(text, dated)) << text;
  // UTC: the date is the UTC day, whatever the machine's zone (either side of a midnight).
  const std::string day_after = UtcDay();
  EXPECT_TRUE(text.find(day_before) != std::string::npos || text.find(day_after) != std::string::npos)
      << text;
}

}  // namespace
}  // namespace coupler
