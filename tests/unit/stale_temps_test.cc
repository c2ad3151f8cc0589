#include "worker/stale_temps.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace coupler::worker {
namespace {

namespace fs = std::filesystem;

TEST(StaleTempsTest, RemovesTemporariesOfDeadWritersOnly) {
  const fs::path dir = fs::temp_directory_path() / ("stale-" + std::to_string(getpid()));
  fs::create_directories(dir);
  auto touch = [&](const std::string& name) { std::ofstream(dir / name) << "x"; };
  // pid 2^22+1 is above Linux's pid_max default: never alive.
  touch("part-00004.npy.tmp.4194305.280efdc67caaec13.npy");
  touch("part-00004.npy.tmp." + std::to_string(getpid()) + ".0123456789abcdef");  // alive: us
  touch("part-00004.npy");
  touch("part-00005.npy.tmp.4194305.280efdc67caaec13");  // another output's temp
  EXPECT_EQ(RemoveStaleTemps((dir / "part-00004.npy").string()), 1);
  EXPECT_FALSE(fs::exists(dir / "part-00004.npy.tmp.4194305.280efdc67caaec13.npy"));
  EXPECT_TRUE(fs::exists(dir / "part-00004.npy"));
  EXPECT_TRUE(fs::exists(dir / ("part-00004.npy.tmp." + std::to_string(getpid()) + ".0123456789abcdef")));
  EXPECT_TRUE(fs::exists(dir / "part-00005.npy.tmp.4194305.280efdc67caaec13"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace coupler::worker
