// Commands an op runs: environment given to the command (how a gang's secret reaches its
// mpirun) stays out of its command line, and output can be followed as it is written (how a
// remote MPI daemon's output reaches its launcher).
#include "worker/ops/subprocess.h"

#include <gtest/gtest.h>

#include "runtime/net/local_address.h"

namespace coupler {
namespace {

TEST(SubprocessTest, ExtraEnvironmentReachesTheCommandButNotItsCommandLine) {
  worker::ShellCommand shell;
  shell.command = "echo \"token=$COUPLER_GANG_TOKEN home=${HOME:+set}\"; tr '\\0' ' ' < /proc/$$/cmdline";
  shell.env = {"COUPLER_GANG_TOKEN=s3cret"};
  Result<worker::ShellResult> r = worker::RunShellCommand(shell);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_status, 0);
  // The worker's own environment is kept beside it.
  EXPECT_NE(r->stdout_tail.find("token=s3cret home=set"), std::string::npos) << r->stdout_tail;
  const std::string cmdline = r->stdout_tail.substr(r->stdout_tail.find('\n') + 1);
  EXPECT_EQ(cmdline.find("s3cret"), std::string::npos) << cmdline;
}

TEST(SubprocessTest, OutputIsHandedOverAsItIsReadOnEachStream) {
  worker::ShellCommand shell;
  shell.command = "echo out; echo err >&2";
  std::string out, err;
  shell.on_output = [&](int stream, std::string_view data) { (stream == 1 ? out : err) += data; };
  Result<worker::ShellResult> r = worker::RunShellCommand(shell);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(out, "out\n");
  EXPECT_EQ(err, "err\n");
}

TEST(SubprocessTest, ACancelledCommandEndsAsCancelledNotAsAFailure) {
  worker::ShellResult cancelled;
  cancelled.end = worker::ShellResult::End::kCancelled;
  const Status status = worker::EndStatus(cancelled, 10, "command");
  EXPECT_EQ(status.code(), StatusCode::kCancelled) << status.ToString();
  worker::ShellResult killed;
  killed.end = worker::ShellResult::End::kSignaled;
  killed.signal = 9;
  EXPECT_EQ(worker::EndStatus(killed, 10, "command").code(), StatusCode::kAborted);
}

TEST(LocalAddressTest, TheAddressFacingThePeer) {
  Result<std::string> tcp = net::LocalAddressToward("tcp://127.0.0.1:7100");
  ASSERT_TRUE(tcp.ok()) << tcp.status().ToString();
  EXPECT_EQ(*tcp, "127.0.0.1");
  Result<std::string> ipc = net::LocalAddressToward("ipc:///tmp/c");
  ASSERT_TRUE(ipc.ok());
  EXPECT_EQ(*ipc, "127.0.0.1");
  EXPECT_EQ(net::LocalAddressToward("tcp://no-such-host.invalid:7100").status().code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(net::LocalAddressToward("bogus").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coupler
