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

TEST(SubprocessTest, AnErrorCarriesTheProgramsLastLinesNotMpirunsBanners) {
  // What mpirun leaves on stderr after a rank exits 3, behind the rank's own last lines.
  const std::string tail =
      "bad line 28\nbad line 29\r\n   \nbad line 30\n"
      "--------------------------------------------------------------------------\n"
      "Primary job  terminated normally, but 1 process returned\n"
      "a non-zero exit code. Per user-direction, the job has been aborted.\n"
      "--------------------------------------------------------------------------\n"
      "--------------------------------------------------------------------------\n"
      "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
      "the job to be terminated. The first process to do so was:\n\n"
      "  Process name: [[8455,1],0]\n  Exit code:    3\n"
      "--------------------------------------------------------------------------\n";
  EXPECT_EQ(worker::StderrSummary(tail), "bad line 28 | bad line 29 | bad line 30");
  // A Python traceback keeps where and what.
  EXPECT_EQ(worker::StderrSummary("Traceback (most recent call last):\n"
                                  "  File \"/x/train.py\", line 9, in <module>\n"
                                  "    main()\n  File \"/x/train.py\", line 7, in main\n"
                                  "    raise ValueError(\"no labels\")\nValueError: no labels\n"),
            "File \"/x/train.py\", line 7, in main | raise ValueError(\"no labels\") | "
            "ValueError: no labels");
  // The front of a tail may cut a banner: read from the end, the rest still counts.
  EXPECT_EQ(worker::StderrSummary("the job to be terminated.\n"
                                  "----------------------------------------\n"
                                  "rank 1: out of memory\n"),
            "rank 1: out of memory");
  // Nothing outside banners: the last lines as they are; a long line is cut.
  EXPECT_EQ(worker::StderrSummary("----------\nonly a banner\n----------\n"),
            "---------- | only a banner | ----------");
  const std::string summary = worker::StderrSummary(std::string(5000, 'x'));
  EXPECT_EQ(summary, std::string(300, 'x') + "...");
  EXPECT_EQ(worker::StderrSummary(""), "");

  worker::ShellResult exited;
  exited.end = worker::ShellResult::End::kExited;
  exited.exit_status = 3;
  exited.stderr_tail = tail;
  EXPECT_EQ(worker::EndStatus(exited, 10, "mpi_exec (2 ranks)").message(),
            "mpi_exec (2 ranks) exited with status 3: bad line 28 | bad line 29 | bad line 30");
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
