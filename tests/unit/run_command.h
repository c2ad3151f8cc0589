// Runs the built `coupler` binary as a user would, from the source root, with a deadline, and
// captures exit code, stdout and stderr.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace coupler::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `timeout` kills a hung child, so one broken command cannot stall the suite.
inline CommandResult RunCoupler(const std::vector<std::string>& args, int timeout_s = 120) {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() /
                       ("coupler-test-" + std::to_string(getpid()) + "-" +
                        std::to_string(std::rand()));
  fs::create_directories(tmp);
  std::string cmd = "cd " + ShellQuote(COUPLER_SOURCE_DIR) + " && timeout -k 5 " +
                    std::to_string(timeout_s) + " " + ShellQuote(COUPLER_BINARY);
  for (const auto& a : args) cmd += " " + ShellQuote(a);
  cmd += " >" + ShellQuote((tmp / "out").string()) + " 2>" + ShellQuote((tmp / "err").string());
  const int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = Slurp(tmp / "out");
  r.err = Slurp(tmp / "err");
  fs::remove_all(tmp);
  return r;
}

}  // namespace coupler::testing
