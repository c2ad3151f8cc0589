// Opening beneath a folder without following symlinks (runtime/io/beneath.h): a symlink at any
// step, an absolute path or a `..` is refused; plain files and folders open.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/io/beneath.h"
#include "runtime/io/temp_dir.h"

namespace coupler::io {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string ReadAll(int fd) {
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(BeneathTest, OpensPlainFilesAndRefusesSymlinksAtEveryStep) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const fs::path root = dir->path();
  fs::create_directories(root / "run/n/logs");
  fs::create_directories(root / "outside");
  std::ofstream(root / "run/n/logs/a.stdout") << "mine";
  std::ofstream(root / "outside/secret") << "not yours";
  fs::create_symlink(root / "outside/secret", root / "run/n/logs/b.stdout");
  fs::create_symlink(root / "outside", root / "run/n/linked");

  auto run = OpenDirectory((root / "run").string());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto plain = OpenBeneath(run->get(), "n/logs/a.stdout", O_RDONLY);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(ReadAll(plain->get()), "mine");

  auto file_link = OpenBeneath(run->get(), "n/logs/b.stdout", O_RDONLY);
  ASSERT_FALSE(file_link.ok());
  EXPECT_THAT(file_link.status().message(), HasSubstr("symlink"));
  auto dir_link = OpenBeneath(run->get(), "n/linked/secret", O_RDONLY);
  ASSERT_FALSE(dir_link.ok());
  EXPECT_THAT(dir_link.status().message(), HasSubstr("symlink"));
  for (const char* escaping : {"../outside/secret", "/etc/passwd", "n/../../outside/secret", ""}) {
    auto r = OpenBeneath(run->get(), escaping, O_RDONLY);
    EXPECT_FALSE(r.ok()) << escaping;
  }
  auto missing = OpenBeneath(run->get(), "n/logs/none", O_RDONLY);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(BeneathTest, MakesFoldersBeneathButNotThroughASymlink) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const fs::path root = dir->path();
  fs::create_directories(root / "run");
  fs::create_directories(root / "elsewhere");
  fs::create_symlink(root / "elsewhere", root / "run/planted");
  auto run = OpenDirectory((root / "run").string());
  ASSERT_TRUE(run.ok());
  auto made = MakeDirectoriesBeneath(run->get(), "a/b/c");
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_TRUE(fs::is_directory(root / "run/a/b/c"));
  auto through = MakeDirectoriesBeneath(run->get(), "planted/x");
  EXPECT_FALSE(through.ok());
  EXPECT_FALSE(fs::exists(root / "elsewhere/x"));
}

}  // namespace
}  // namespace coupler::io
