#include "cli/signals.h"

#include <csignal>

namespace coupler::cli {
namespace {

std::atomic<bool> g_stop{false};

extern "C" void OnStopSignal(int) { g_stop.store(true); }

}  // namespace

const std::atomic<bool>& StopRequested() {
  static const bool installed = [] {
    struct sigaction sa {};
    sa.sa_handler = OnStopSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)installed;
  return g_stop;
}

}  // namespace coupler::cli
