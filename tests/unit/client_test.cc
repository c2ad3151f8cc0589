#include "client/client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/unit/store_test_util.h"

namespace coupler::client {
namespace {

namespace fs = std::filesystem;

// Past the wire's message cap a spec would be dropped on the way and the user told that no
// coordinator answers; the client refuses it first, with its size, sending nothing.
TEST(ClientTest, RefusesASpecOverTheSizeLimitBeforeSending) {
  store::testing::TempDir dir;
  const fs::path spec = dir.path() / "huge.yaml";
  { std::ofstream(spec) << "name: x\n"; }
  fs::resize_file(spec, 70ull << 20);
  // Nothing listens here: a request that went out would end in "no answer".
  // (plaintext: with nobody there, there are no keys to find either)
  ClientSecurity plaintext;
  plaintext.insecure = true;
  auto client = Client::Connect("ipc://" + (dir.path() / "nobody").string(),
                                std::chrono::seconds(2), plaintext);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  Result<std::string> id = (*client)->Submit(spec.string());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument) << id.status().ToString();
  EXPECT_EQ(id.status().message(), "spec is 70.0 MiB, over the 16 MiB limit");
}

// Nobody listens: the request is not left waiting for the full request timeout, and the error
// names the endpoint tried.
TEST(ClientTest, ACoordinatorThatNeverAnswersTheHandshakeIsReportedUnreachable) {
  store::testing::TempDir dir;
  ClientSecurity plaintext;
  plaintext.insecure = true;
  const std::string endpoint = "ipc://" + (dir.path() / "nobody").string();
  auto client = Client::Connect(endpoint, std::chrono::seconds(60), plaintext);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  Result<wire::StatusReply> reply = (*client)->Status();
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable) << reply.status().ToString();
  EXPECT_EQ(reply.status().message(),
            "no coordinator answered at " + endpoint + " within 3 s; is it running?");
}

}  // namespace
}  // namespace coupler::client
