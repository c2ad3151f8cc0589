#include "train/stop_signal.h"

#include <signal.h>

#include "runtime/check.h"

namespace coupler::train {
namespace {

// Plain lock-free atomics: the only state an async-signal handler may touch.
std::atomic<bool> g_requested{false};
std::atomic<int> g_signal{0};
std::atomic<bool> g_installed{false};
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGUSR1};
struct sigaction g_previous[sizeof(kSignals) / sizeof(kSignals[0])];

static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

void OnTrainStopSignal(int sig) {
  g_signal.store(sig, std::memory_order_relaxed);
  g_requested.store(true, std::memory_order_relaxed);
  // The next one is not asked politely: a user pressing Ctrl-C twice wants the process gone.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int s : kSignals) ::sigaction(s, &dfl, nullptr);
}

}  // namespace

StopSignals::StopSignals() {
  COUPLER_CHECK(!g_installed.exchange(true)) << "StopSignals installed twice";
  g_requested.store(false);
  g_signal.store(0);
  struct sigaction action {};
  action.sa_handler = OnTrainStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // a blocking MPI or file call resumes; the flag waits for it
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    ::sigaction(kSignals[i], &action, &g_previous[i]);
  }
}

StopSignals::~StopSignals() {
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    ::sigaction(kSignals[i], &g_previous[i], nullptr);
  }
  g_installed.store(false);
}

const std::atomic<bool>& StopSignals::requested() const { return g_requested; }

int StopSignals::signal_number() const { return g_signal.load(); }

}  // namespace coupler::train
