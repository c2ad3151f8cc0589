// Specs built to crash or bloat whoever reads them, submitted straight to a real coordinator
// over its client port (not through `coupler submit`, which checks the file first): each is
// refused with its reason, and the coordinator keeps serving.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "client/client.h"
#include "coordinator/coordinator.h"
#include "tests/integration/coupler_cluster.h"
#include "runtime/net/endpoint.h"

namespace coupler::itest {
namespace {

void Write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(HostileSpecTest, CoordinatorRefusesEachWithItsReasonAndKeepsServing) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();

  struct Case {
    std::string file;
    std::string text;
    std::string reason;
  };
  std::string bomb = "name: bomb\nnodes: []\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int k = 0; k < 9; ++k) bomb += std::string(k ? ", " : "") + "*" + static_cast<char>(c - 1);
    bomb += "]\n";
  }
  const std::vector<Case> cases = {
      {"deep.json",
       R"({"name":"x","nodes":)" + std::string(500'000, '[') + std::string(500'000, ']') + "}",
       "deep.json:1:84: error: nested more than 64 levels deep"},
      {"bomb.yaml", bomb, "error: anchors and aliases (&name, *name) up to here copy more"},
      {"placeholder.yaml",
       "name: x\nnodes:\n  - {id: a, op: noop}\n  - {id: b, op: exec, inputs: [a], params: "
       "{command: \"cat {" + std::string(100'000, 'x') + "}\"}}\n",
       "unknown placeholder {xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...}"},
      {"quoted.yaml",
       "name: x\nnodes:\n  - {id: a, op: noop}\n  - {id: b, op: exec, inputs: [a], params: "
       "{command: \"cat '{input}'\"}}\n",
       "placeholder {input} is inside single quotes"},
  };
  auto client = client::Client::Connect(net::ClientEndpointFor(cluster.endpoint()),
                                             std::chrono::seconds(60));
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  for (const Case& c : cases) {
    const fs::path spec = cluster.dir() / c.file;
    Write(spec, c.text);
    Result<std::string> id = (*client)->Submit(spec.string());
    ASSERT_FALSE(id.ok()) << c.file << " was admitted as " << *id;
    EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument) << id.status().ToString();
    EXPECT_NE(id.status().message().find(c.reason), std::string::npos)
        << c.file << ": " << id.status().message().substr(0, 500);
    ASSERT_TRUE(cluster.coordinator().running()) << "after " << c.file << "\n" << cluster.Logs();
  }
  // Still serving: a good spec is admitted after the bad ones.
  const fs::path good = cluster.dir() / "good.yaml";
  Write(good, "name: good\nnodes:\n  - {id: a, op: noop}\n");
  Result<std::string> id = (*client)->Submit(good.string());
  EXPECT_TRUE(id.ok()) << id.status().ToString() << "\n" << cluster.Logs();
}

}  // namespace
}  // namespace coupler::itest
