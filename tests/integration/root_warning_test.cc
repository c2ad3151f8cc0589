// A coordinator running as root that admits client keys which are not admins says so at start,
// once, with the count and where the fix is documented; one whose clients are all admins (the
// local key set a coordinator makes for itself) says nothing.
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kWarning = "running as root with";

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

bool WaitListening(Cluster& cluster) {
  auto listening = [&] {
    return cluster.coordinator().err().find("listening for workers") != std::string::npos;
  };
  return WaitUntil(listening, 30s, 20ms);
}

// `coupler keygen DIR --role client --name NAME`, as an operator makes a user's key; its public
// half is admitted into each of `lists` of the cluster's key set.
void AdmitClientKey(Cluster& cluster, const std::string& name,
                    const std::vector<std::string>& lists) {
  const fs::path dir = cluster.dir() / ("keys-" + name);
  CommandResult r = RunToEnd({kCoupler, "keygen", dir.string(), "--role", "client", "--name", name},
                             cluster.logs(), 30s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const std::string& list : lists) {
    const fs::path to = cluster.keys() / "authorized" / list / (name + ".pub");
    fs::create_directories(to.parent_path());
    fs::copy_file(dir / (name + ".pub"), to, fs::copy_options::overwrite_existing);
  }
}

TEST(RootWarningTest, RootWithNonAdminClientKeysWarnsOnceAndAdminsOnlyDoesNot) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "the warning is about running as root; this test runs as uid " << ::geteuid();
  }
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  // Only the local key set: its client key is also an admin. Its whole start is logged by the
  // time its loop says it listens; the warning would come before that.
  ASSERT_TRUE(WaitListening(cluster)) << cluster.Logs();
  EXPECT_THAT(cluster.coordinator().err(), Not(HasSubstr(kWarning)));

  // bob is a plain client; carol is a client and an admin, so she is not counted.
  cluster.coordinator().Kill();
  AdmitClientKey(cluster, "bob", {"clients"});
  AdmitClientKey(cluster, "carol", {"clients", "admins"});
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  ASSERT_TRUE(WaitListening(cluster)) << cluster.Logs();
  const std::string err = cluster.coordinator().err();
  EXPECT_EQ(Count(err, kWarning), 1u) << err;
  EXPECT_THAT(err, HasSubstr("running as root with 1 client key(s) that are not admins"));
  EXPECT_THAT(err, HasSubstr("docs/security.md"));
  // A warning, not a refusal: bob's key still works.
  fs::copy_file(cluster.keys() / "coordinator.pub", cluster.dir() / "keys-bob" / "coordinator.pub");
  CommandResult status = cluster.Cli({"status", "--keys", (cluster.dir() / "keys-bob").string()});
  EXPECT_EQ(status.exit_code, 0) << status.err;
}

}  // namespace
}  // namespace coupler::itest
