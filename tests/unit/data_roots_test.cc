// Which paths the coordinator touches for a job (coordinator/data_roots.h): never its own
// folders, never system folders by default, only the listed data roots when there are any, and
// a symlink is judged by where it leads.
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/data_roots.h"
#include "runtime/io/temp_dir.h"

namespace coupler::coordinator {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(DataRootsTest, RefusesTheCoordinatorsFoldersAndSystemFoldersByDefault) {
  auto dir = io::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const fs::path root = dir->path();
  fs::create_directories(root / "state/keys");
  fs::create_directories(root / "data");
  fs::create_symlink(root / "state", root / "data/innocent");
  const DataRoots roots = DataRoots::Make({}, {(root / "state").string()});

  EXPECT_TRUE(roots.Check("input", (root / "data/x.csv").string()).ok());
  EXPECT_TRUE(roots.Check("workdir", (root / "work").string()).ok());  // need not exist yet
  const Status token = roots.Check("input", (root / "state/http-token").string());
  ASSERT_FALSE(token.ok());
  EXPECT_THAT(token.message(), HasSubstr("input " + (root / "state/http-token").string()));
  EXPECT_THAT(token.message(), HasSubstr("is refused"));
  // Through a symlink, or a `..`, the state is still the state.
  EXPECT_FALSE(roots.Check("input", (root / "data/innocent/keys/coordinator.key").string()).ok());
  EXPECT_FALSE(roots.Check("input", (root / "data/../state/coupler.db").string()).ok());
  EXPECT_FALSE(roots.Check("input", (root / "state").string()).ok());
  EXPECT_TRUE(roots.Check("input", (root / "stateless/x").string()).ok()) << "a prefix is not a folder";
  for (const char* system : {"/etc/shadow", "/proc/self/environ", "/sys/kernel", "/usr/bin/env"}) {
    EXPECT_FALSE(roots.Check("input", system).ok()) << system;
  }
}

TEST(DataRootsTest, ListedRootsAreTheOnlyPlacesAllowed) {
  auto dir = io::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const fs::path root = dir->path();
  fs::create_directories(root / "data/state");
  const DataRoots roots =
      DataRoots::Make({(root / "data").string()}, {(root / "data/state").string()});
  EXPECT_TRUE(roots.Check("input", (root / "data/a/b.csv").string()).ok());
  const Status outside = roots.Check("input", (root / "other/b.csv").string());
  ASSERT_FALSE(outside.ok());
  EXPECT_THAT(outside.message(), HasSubstr("not under a data root"));
  // The coordinator's own folders stay refused inside a data root.
  EXPECT_FALSE(roots.Check("input", (root / "data/state/coupler.db").string()).ok());
}

}  // namespace
}  // namespace coupler::coordinator
