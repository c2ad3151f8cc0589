// How a worker or client finds a local coordinator's keys: the note the coordinator leaves per
// endpoint, a note a stopped coordinator left behind (stale, not used), and the wait for a
// coordinator started in the same breath as its peers.
#include "runtime/net/key_discovery.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace coupler::net {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class KeyDiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/coupler-key-discovery-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    home_ = tmpl;
    ::setenv("COUPLER_HOME", home_.c_str(), 1);
    ::unsetenv("COUPLER_KEYS");
  }
  void TearDown() override {
    ::unsetenv("COUPLER_HOME");
    std::error_code ec;
    fs::remove_all(home_, ec);
  }
  // The one note in the notes folder (tcp notes are named by port).
  fs::path OnlyNote() const {
    for (const auto& e : fs::directory_iterator(home_ / "coordinators")) return e.path();
    return {};
  }
  fs::path home_;
};

TEST_F(KeyDiscoveryTest, ANoteOfALiveCoordinatorIsUsedAndOneLeftByAStoppedOneIsNot) {
  const std::string ep = "tcp://127.0.0.1:23999";
  ASSERT_TRUE(PublishKeyLocation(ep, "").ok());  // "insecure": no key files needed
  Result<std::optional<PeerKeys>> keys = FindPeerKeys(ep, KeyRole::kWorker, "", false);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_FALSE(keys->has_value()) << "the coordinator runs --insecure";

  // The same note as a coordinator that has stopped would have left it: its writer's pid is
  // taken by no process with that start time.
  const fs::path note = OnlyNote();
  std::error_code ec;
  const std::string ns = fs::read_symlink("/proc/self/ns/pid", ec).string();
  { std::ofstream(note, std::ios::trunc) << "insecure\npid " << ::getpid() << " 1 " << ns << "\n"; }
  keys = FindPeerKeys(ep, KeyRole::kWorker, "", false);
  ASSERT_FALSE(keys.ok());
  EXPECT_EQ(keys.status().code(), StatusCode::kNotFound);
  EXPECT_NE(keys.status().message().find("left by one that has stopped"), std::string::npos)
      << keys.status().message();
  // Written in another PID namespace (a coordinator in a container): its pid is not judged here.
  { std::ofstream(note, std::ios::trunc) << "insecure\npid " << ::getpid() << " 1 pid:[1]\n"; }
  EXPECT_TRUE(FindPeerKeys(ep, KeyRole::kWorker, "", false).ok());
  // A note without its writer (an older build's) is read as before.
  { std::ofstream(note, std::ios::trunc) << "insecure\n"; }
  EXPECT_TRUE(FindPeerKeys(ep, KeyRole::kWorker, "", false).ok());
}

TEST_F(KeyDiscoveryTest, APeerStartedBeforeItsCoordinatorWaitsForTheNote) {
  const std::string ep = "tcp://127.0.0.1:23997";
  std::thread coordinator([&] {
    std::this_thread::sleep_for(300ms);
    (void)PublishKeyLocation(ep, "");
  });
  Result<std::optional<PeerKeys>> keys =
      AwaitPeerKeys(ep, KeyRole::kClient, "", false, std::chrono::milliseconds(30'000));
  coordinator.join();
  EXPECT_TRUE(keys.ok()) << keys.status().ToString();

  // Nobody publishes: it gives up at its timeout with the reason, and says it waited.
  int told = 0;
  keys = AwaitPeerKeys("tcp://127.0.0.1:23995", KeyRole::kClient, "", false,
                       std::chrono::milliseconds(2'500), [&](const Status&) { ++told; });
  ASSERT_FALSE(keys.ok());
  EXPECT_NE(keys.status().message().find("no keys for the coordinator"), std::string::npos);
  EXPECT_EQ(told, 1);
  // Keys named on the command line are never waited for.
  keys = AwaitPeerKeys("tcp://127.0.0.1:23995", KeyRole::kClient, (home_ / "none").string(),
                       false, std::nullopt);
  EXPECT_FALSE(keys.ok());
}

}  // namespace
}  // namespace coupler::net

namespace coupler::net {
namespace {

TEST_F(KeyDiscoveryTest, PublishingANotePrunesTheNotesOfStoppedCoordinatorsOnly) {
  std::error_code ec;
  const std::string ns = fs::read_symlink("/proc/self/ns/pid", ec).string();
  const fs::path notes = home_ / "coordinators";
  fs::create_directories(notes);
  // Left by coordinators that stopped; by a live one (this process); by one in another PID
  // namespace; by an older build (no writer line). Only the first two kinds can be judged.
  { std::ofstream(notes / "tcp-7100") << "insecure\npid " << ::getpid() << " 1 " << ns << "\n"; }
  { std::ofstream(notes / "tcp-7200") << "insecure\npid 999999999 5 " << ns << "\n"; }
  ASSERT_TRUE(PublishKeyLocation("tcp://127.0.0.1:7300", "").ok());  // this one: alive
  { std::ofstream(notes / "tcp-7400") << "insecure\npid 999999999 5 pid:[1]\n"; }
  { std::ofstream(notes / "tcp-7500") << "insecure\n"; }
  ASSERT_TRUE(PublishKeyLocation("tcp://127.0.0.1:7600", "").ok());
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(notes)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  const std::vector<std::string> expected = {"tcp-7300", "tcp-7400", "tcp-7500", "tcp-7600"};
  EXPECT_EQ(left, expected);
}

}  // namespace
}  // namespace coupler::net
