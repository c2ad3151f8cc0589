// What `coupler gc` removes (coordinator/retention.h): the run directories of finished jobs
// past the retention, never a running job's, one within the retention, a reusable one, one a
// newer job shares (a pinned run_dir), or one without the job's own marker; on a dry run,
// nothing.
#include "coordinator/retention.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "runtime/io/temp_dir.h"
#include "runtime/job/workdir_marker.h"

namespace coupler::coordinator {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kDay = 86'400'000;
constexpr int64_t kNow = 100 * kDay;

store::JobRecord Job(const std::string& id, const std::string& state, int64_t finished_ms,
                     const fs::path& run_dir) {
  store::JobRecord r;
  r.id = id;
  r.state = state;
  r.finished_ms = finished_ms;
  r.run_dir = run_dir.string();
  return r;
}

// A run directory as admission leaves it: the job's marker, and some output.
void MakeRun(const fs::path& dir, const std::string& job) {
  fs::create_directories(dir / "node");
  std::ofstream(dir / "node" / "part-00000.npy") << std::string(4096, 'x');
  std::ofstream(job::WorkdirMarkerPath(dir.string(), job)) << "token";
}

TEST(RetentionTest, OnlyFinishedJobsPastBothLimitsAreCandidates) {
  const std::vector<store::JobRecord> jobs = {
      Job("j-5", "running", 0, "/r/5"),          Job("j-4", "succeeded", kNow - 1, "/r/4"),
      Job("j-3", "failed", kNow - 9 * kDay, "/r/3"), Job("j-2", "cancelled", kNow - 9 * kDay, "/r/2"),
      Job("j-1", "succeeded", kNow - 9 * kDay, "/r/1")};
  std::vector<std::string> ids;
  for (const store::JobRecord* r : PastRetention(jobs, kNow, {7 * kDay, 0})) ids.push_back(r->id);
  EXPECT_EQ(ids, (std::vector<std::string>{"j-3", "j-2", "j-1"}));
  ids.clear();
  for (const store::JobRecord* r : PastRetention(jobs, kNow, {7 * kDay, 2})) ids.push_back(r->id);
  EXPECT_EQ(ids, (std::vector<std::string>{"j-2", "j-1"})) << "the newest 2 finished stay";
}

TEST(RetentionTest, RemovesOnlyWhatNoRuleKeeps) {
  auto tmp = io::TempDir::Create();
  ASSERT_TRUE(tmp.ok());
  const fs::path root = fs::path(tmp->path()) / "work" / "runs";
  MakeRun(root / "j-1", "j-1");  // removed
  MakeRun(root / "j-2", "j-2");  // reusable
  MakeRun(root / "pinned", "j-3");  // shared with a newer job
  fs::create_directories(root / "j-4");  // no marker
  fs::create_directory_symlink(root / "j-1", root / "j-5");  // a symlink, never followed
  const std::vector<store::JobRecord> jobs = {
      Job("j-1", "succeeded", 1, root / "j-1"), Job("j-2", "failed", 1, root / "j-2"),
      Job("j-3", "succeeded", 1, root / "pinned"), Job("j-4", "succeeded", 1, root / "j-4"),
      Job("j-5", "succeeded", 1, root / "j-5")};
  std::vector<const store::JobRecord*> all;
  for (const auto& j : jobs) all.push_back(&j);
  const std::vector<std::string> in_use = {(root / "pinned").string()};
  auto reusable = [&](const std::string& dir) -> Result<bool> { return dir == (root / "j-2").string(); };

  const std::vector<GcEntry> dry = RemoveRunDirs(all, in_use, reusable, true, nullptr);
  EXPECT_TRUE(dry[0].kept.empty());
  EXPECT_GE(dry[0].bytes, 4096u);
  EXPECT_TRUE(fs::exists(root / "j-1" / "node" / "part-00000.npy")) << "a dry run removes nothing";

  const std::vector<GcEntry> done = RemoveRunDirs(all, in_use, reusable, false, nullptr);
  ASSERT_EQ(done.size(), 5u);
  EXPECT_TRUE(done[0].kept.empty()) << done[0].kept;
  EXPECT_FALSE(fs::exists(root / "j-1"));
  EXPECT_NE(done[1].kept.find("reusable"), std::string::npos);
  EXPECT_NE(done[2].kept.find("in use"), std::string::npos);
  EXPECT_NE(done[3].kept.find("marker"), std::string::npos);
  EXPECT_NE(done[4].kept.find("not a directory"), std::string::npos) << done[4].kept;
  for (const char* kept : {"j-2", "pinned", "j-4"}) EXPECT_TRUE(fs::exists(root / kept)) << kept;
}

}  // namespace
}  // namespace coupler::coordinator
