// The reuse catalogue (coordinator/reuse_index.h): what a succeeded node left is recorded with
// each file's identity, a symlink is never recorded nor followed, and a file replaced after the
// node succeeded is not linked into a later run. The catalogue lives in its own 0600 file, not
// in the workdir.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/admission_queue.h"
#include "coordinator/reuse_index.h"
#include "runtime/io/temp_dir.h"

namespace coupler::coordinator {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct Fixture {
  fs::path root;
  std::unique_ptr<ReuseIndex> index;
};

Fixture Make(const io::TempDir& dir) {
  Fixture f;
  f.root = fs::path(dir.path()) / "work";
  fs::create_directories(f.root / "runs/j-1/n/sub");
  std::ofstream(f.root / "runs/j-1/n/part-00000.npy") << "abc";
  std::ofstream(f.root / "runs/j-1/n/sub/extra.bin") << "xy";
  auto opened = ReuseIndex::Open((fs::path(dir.path()) / "private/reuse.db").string());
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  f.index = std::move(*opened);
  return f;
}

TEST(ReuseIndexTest, RecordsFilesWithTheirIdentityAndLinksThem) {
  auto dir = io::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  Fixture f = Make(*dir);
  struct stat st {};
  ASSERT_EQ(::stat((fs::path(dir->path()) / "private/reuse.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  const std::string run1 = (f.root / "runs/j-1").string();
  ASSERT_TRUE(f.index->Record(f.root.string(), "k1", run1, "j-1", "n").ok());
  auto found = f.index->FindIntact(f.root.string(), "k1");
  ASSERT_TRUE(found.has_value());
  ASSERT_EQ(found->files.size(), 2u);
  EXPECT_EQ(found->files[0].path, "part-00000.npy");
  EXPECT_EQ(found->files[1].path, "sub/extra.bin");
  EXPECT_FALSE(f.index->FindIntact((f.root / "other").string(), "k1").has_value())
      << "an entry belongs to its workdir";

  fs::create_directories(f.root / "runs/j-2");
  ASSERT_TRUE(LinkNodeOutputs(*found, (f.root / "runs/j-2").string(), "n").ok());
  EXPECT_EQ(Read(f.root / "runs/j-2/n/part-00000.npy"), "abc");
  EXPECT_EQ(Read(f.root / "runs/j-2/n/sub/extra.bin"), "xy");
  EXPECT_EQ(fs::hard_link_count(f.root / "runs/j-1/n/part-00000.npy"), 2u);
}

// A node that succeeded is recorded on the intake thread (its folder is walked there, never on
// the event loop), before any submission handed in after it is admitted: a job submitted once
// another finished finds the other's nodes.
TEST(ReuseIndexTest, TheIntakeThreadRecordsANodeBeforeTheNextSubmissionIsAdmitted) {
  auto dir = io::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  Fixture f = Make(*dir);
  zmq::context_t ctx(1);
  zmq::socket_t wake(ctx, zmq::socket_type::pull);
  wake.bind("inproc://reuse-order");
  AdmissionQueue intake(ctx, "inproc://reuse-order", 4, IntakeContext{nullptr, f.index.get(), ""});
  intake.Record({f.root.string(), "k1", (f.root / "runs/j-1").string(), "j-1", "n"});
  wire::SubmitJob submit;
  submit.spec_text = R"({"name": "j", "nodes": [{"id": "a", "op": "noop"}]})";
  ASSERT_TRUE(intake.Push({"c", "alice", false, "j-2", 0, ""}, submit).ok());
  zmq::message_t poke;
  ASSERT_TRUE(wake.recv(poke));  // the submission is done: everything before it is too
  EXPECT_EQ(intake.Take().size(), 1u);
  const std::optional<NodeOutputs> found = f.index->FindIntact(f.root.string(), "k1");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->job_id, "j-1");
}

TEST(ReuseIndexTest, ASymlinkIsNeverRecordedAndAReplacedFileIsNeverLinked) {
  auto dir = io::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  Fixture f = Make(*dir);
  const fs::path secret = fs::path(dir->path()) / "secret";
  std::ofstream(secret) << "token";
  // Planted before recording: not an output.
  fs::create_symlink(secret, f.root / "runs/j-1/n/part-00001.npy");
  const std::string run1 = (f.root / "runs/j-1").string();
  ASSERT_TRUE(f.index->Record(f.root.string(), "k1", run1, "j-1", "n").ok());
  auto found = f.index->FindIntact(f.root.string(), "k1");
  ASSERT_TRUE(found.has_value());
  for (const auto& file : found->files) EXPECT_NE(file.path, "part-00001.npy");

  // Swapped for a symlink after recording: the entry is no longer intact, and a link attempt
  // from an entry read before the swap is refused.
  fs::remove(f.root / "runs/j-1/n/part-00000.npy");
  fs::create_symlink(secret, f.root / "runs/j-1/n/part-00000.npy");
  EXPECT_FALSE(f.index->FindIntact(f.root.string(), "k1").has_value());
  fs::create_directories(f.root / "runs/j-2");
  EXPECT_FALSE(LinkNodeOutputs(*found, (f.root / "runs/j-2").string(), "n").ok());
  EXPECT_FALSE(fs::exists(f.root / "runs/j-2/n/part-00000.npy"));

  // Replaced by another regular file (a hard link to something else, or a rewrite): not the
  // recorded file either.
  fs::remove(f.root / "runs/j-1/n/part-00000.npy");
  std::ofstream(f.root / "runs/j-1/n/part-00000.npy") << "wxyz";
  EXPECT_FALSE(f.index->FindIntact(f.root.string(), "k1").has_value());
}

TEST(ReuseIndexTest, HashesAreCachedByPathSizeMtimeAndInode) {
  auto dir = io::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  Fixture f = Make(*dir);
  const fs::path csv = fs::path(dir->path()) / "a.csv";
  std::ofstream(csv) << "x,y\n1,2\n";
  auto h1 = f.index->Hash(csv.string());
  ASSERT_TRUE(h1.ok());
  auto h2 = f.index->Hash(csv.string());
  ASSERT_TRUE(h2.ok());
  EXPECT_EQ(*h1, *h2);
  std::ofstream(csv) << "x,y\n1,30\n";  // another size: mtimes can tie within a tick
  auto h3 = f.index->Hash(csv.string());
  ASSERT_TRUE(h3.ok());
  EXPECT_NE(*h1, *h3);
}

}  // namespace
}  // namespace coupler::coordinator
