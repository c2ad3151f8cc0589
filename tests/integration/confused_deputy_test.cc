// An authorized client is not trusted with the coordinator's files: mallory, a plain client
// with her own key from `coupler keygen`, whose commands run on a worker that cannot see the
// coordinator's state directory (its own mount namespace, as a separate host or pod would be),
// tries to make the coordinator read, link or serve its secrets for her: through the reuse
// index her job can write, through inputs it reads at admission, through symlinks planted in
// her own run directory. The token never reaches her, no key enters authorized/admins/.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/client.h"
#include "runtime/net/curve_keys.h"
#include "runtime/net/endpoint.h"
#include "tests/integration/coupler_cluster.h"
#include "tests/integration/key_sets.h"

namespace coupler::itest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Every regular file under `dir` (symlinks not followed) whose bytes contain `needle`.
std::vector<std::string> FilesHolding(const fs::path& dir, const std::string& needle) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_symlink(ec) || !it->is_regular_file(ec)) continue;
    if (ReadFile(it->path()).find(needle) != std::string::npos) found.push_back(it->path().string());
  }
  return found;
}

std::vector<std::string> Names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool CanUnshareMounts() {
  if (geteuid() != 0) return false;
  const std::string unshare = FindProgram("unshare");
  if (unshare.empty()) return false;
  // The worker's own namespace needs a tmpfs mounted in it, not only the namespace (a
  // container may allow the one and not the other).
  return RunToEnd({unshare, "-m", "--propagation", "private", FindProgram("sh"), "-c",
                   "mount -t tmpfs tmpfs /tmp"},
                  "/tmp", 20s)
             .exit_code == 0;
}

TEST(ConfusedDeputyTest, AJobCannotMakeTheCoordinatorLinkItsStateIntoARun) {
  if (!CanUnshareMounts()) {
    GTEST_SKIP() << "needs root (and mounts allowed) to give the worker its own mount namespace "
                    "with the state hidden (CI runs as root)";
  }
  Cluster c;
  ASSERT_TRUE(c.StartCoordinator()) << c.Logs();
  const fs::path mallory = KeygenAndAuthorize(c, "mallory", "client", {"clients"});
  const fs::path worker_keys = KeygenAndAuthorize(c, "far-worker", "worker", {"workers"});
  const std::vector<std::string> admins_before = Names(c.keys() / "authorized/admins");
  const std::string token = c.ApiToken();
  ASSERT_FALSE(token.empty());
  const uint64_t token_bytes = fs::file_size(c.ApiTokenFile());

  // The worker sees everything but the state directory, which a tmpfs hides.
  Process::Options o;
  o.deadline = 240s;
  o.output = c.logs();
  o.name = "far-worker";
  Process worker = Process::Spawn(
      {FindProgram("unshare"), "-m", "--propagation", "private", FindProgram("sh"), "-c",
       "mount -t tmpfs tmpfs \"$1\" && shift && exec \"$@\"", "sh", c.state().string(), kCoupler,
       "--log-level", "info", "worker", "--coordinator", c.endpoint(), "--keys",
       worker_keys.string(), "--id", "far", "--slots", "2", "--heartbeat-ms", "300"},
      o);
  ASSERT_TRUE(worker.started());
  ASSERT_TRUE(c.WaitWorkersAlive(1)) << c.Logs();

  const fs::path in = c.dir() / "in";
  fs::create_directories(in);
  WriteFile(in / "a.npy", "shard a");
  const fs::path work = c.dir() / "work-m";
  // Run 1: `steal` copies its input (and checks it cannot see the state: a separate host);
  // `show` prints whatever sits in steal's folder.
  const fs::path spec = c.dir() / "mine.yaml";
  WriteFile(spec, "name: mine\nworkdir: work-m\nnodes:\n"
                  "  - id: steal\n    op: exec\n    inputs: [in]\n    params:\n"
                  "      command: \"test ! -e " + c.ApiTokenFile().string() +
                  " && cp {input} {output} && ln -s " + c.ApiTokenFile().string() +
                  " $(dirname {output})/part-00009.npy\"\n"
                  "  - id: show\n    op: exec\n    inputs: [steal]\n    params:\n"
                  "      command: \"cat $(dirname {input})/* ; cp {input} {output}\"\n");
  auto submit = [&](const fs::path& s, bool reuse) {
    std::vector<std::string> args{"submit", s.string(), "--keys", mallory.string()};
    if (reuse) args.push_back("--reuse");
    CommandResult r = c.Cli(args);
    std::string id = r.out;
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return id;
  };
  const std::string first = submit(spec, false);
  ASSERT_FALSE(first.empty()) << c.Logs();
  auto done = c.WaitJobFinished(first, 120s);
  ASSERT_TRUE(done.has_value()) << c.Logs();
  ASSERT_EQ(done->state, "succeeded") << done->error << c.Logs();
  EXPECT_EQ(done->submitted_by, "mallory");

  // Run 2, her attack: every reuse entry her workdir holds (the index an older coupler kept
  // there) now names the coordinator's token as steal's output, and steal's recorded file
  // becomes a symlink to it.
  const fs::path attack = c.dir() / "attack.py";
  WriteFile(attack,
            "import json, os, sys\n"
            "work, state, size, run = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]\n"
            "path = os.path.join(work, 'reuse.json')\n"
            "try:\n    doc = json.load(open(path))\nexcept Exception:\n    doc = {'version': 1, 'nodes': {}}\n"
            "for key, e in doc.get('nodes', {}).items():\n"
            "    e['run_dir'] = os.path.dirname(state)\n"
            "    e['node'] = os.path.basename(state)\n"
            "    e['files'] = [{'path': 'http-token', 'bytes': size}]\n"
            "json.dump(doc, open(path + '.new', 'w'))\n"
            "os.replace(path + '.new', path)\n"
            "victim = os.path.join(work, 'runs', run, 'steal', 'part-00000.npy')\n"
            "os.remove(victim)\n"
            "os.symlink(os.path.join(state, 'http-token'), victim)\n");
  const fs::path attack_spec = c.dir() / "attack.yaml";
  WriteFile(attack_spec, "name: attack\nworkdir: work-a\nnodes:\n"
                         "  - id: rewrite\n    op: exec\n    inputs: [in]\n    params:\n"
                         "      command: \"python3 " + attack.string() + " " + work.string() + " " +
                         c.state().string() + " " + std::to_string(token_bytes) + " " + first +
                         " && cp {input} {output}\"\n");
  const std::string second = submit(attack_spec, false);
  ASSERT_FALSE(second.empty()) << c.Logs();
  done = c.WaitJobFinished(second, 120s);
  ASSERT_TRUE(done.has_value()) << c.Logs();
  ASSERT_EQ(done->state, "succeeded") << done->error << c.Logs();

  // Run 3: her own spec again, with --reuse.
  const std::string third = submit(spec, true);
  ASSERT_FALSE(third.empty()) << c.Logs();
  done = c.WaitJobFinished(third, 120s);
  ASSERT_TRUE(done.has_value()) << c.Logs();
  EXPECT_GT(done->node("steal").attempts, 0u)
      << "a recorded output became a symlink: not the same file, so the node runs again";

  // The token is in no file of hers (outputs, links, task logs), and no key became an admin.
  for (const fs::path& dir : {work, c.dir() / "work-a"}) {
    const std::vector<std::string> leaked = FilesHolding(dir, token);
    EXPECT_TRUE(leaked.empty()) << "the token is in " << leaked.front();
  }
  EXPECT_EQ(Names(c.keys() / "authorized/admins"), admins_before);
  // Her planted symlink was never taken for an output either.
  EXPECT_FALSE(fs::exists(work / "runs" / third / "steal/part-00009.npy") &&
               !fs::is_symlink(work / "runs" / third / "steal/part-00009.npy"));
  worker.Kill();
}

TEST(ConfusedDeputyTest, AdmissionNeitherReadsNorEchoesFilesAClientNames) {
  Cluster c;
  ASSERT_TRUE(c.StartCoordinator()) << c.Logs();
  const fs::path mallory = KeygenAndAuthorize(c, "mallory", "client", {"clients"});
  const std::string token = c.ApiToken();
  client::ClientSecurity security;
  security.keys_dir = mallory.string();
  // Her own client, not the CLI: nothing validates the spec before the coordinator does.
  auto client = client::Client::Connect(net::ClientEndpointFor(c.endpoint()), 10s, security);
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  const std::string coordinator_key = ReadFile(c.keys() / "coordinator.key");
  struct Case {
    std::string input;
    std::string secret;  // what must not come back
  };
  const std::vector<Case> cases = {
      {c.ApiTokenFile().string(), token},
      {(c.keys() / "coordinator.key").string(), coordinator_key.substr(coordinator_key.find("secret = ") + 9, 20)},
      {"/etc/passwd", "root:"},
  };
  int n = 0;
  for (const Case& k : cases) {
    const fs::path spec = c.dir() / ("read-" + std::to_string(++n) + ".yaml");
    WriteFile(spec, "name: peek\nworkdir: work-p\nnodes:\n"
                    "  - id: load\n    op: import_csv\n    inputs: [" + k.input + "]\n"
                    "  - id: pick\n    op: filter\n    inputs: [load]\n    params: {where: \"x > 1\"}\n");
    Result<std::string> id = (*client)->Submit(spec.string());
    ASSERT_FALSE(id.ok()) << k.input << " was admitted as job " << *id;
    EXPECT_THAT(id.status().message(), HasSubstr("refused")) << k.input;
    EXPECT_THAT(id.status().message(), Not(HasSubstr(k.secret))) << k.input;
  }

  // A workdir inside the state: refused before anything is made there.
  const fs::path inside = c.dir() / "inside.yaml";
  WriteFile(inside, "name: inside\nworkdir: " + (c.keys() / "authorized").string() +
                        "\nrun_dir: admins\nnodes:\n  - {id: n, op: noop}\n");
  Result<std::string> id = (*client)->Submit(inside.string());
  ASSERT_FALSE(id.ok()) << "admitted as " << *id;
  EXPECT_THAT(id.status().message(), HasSubstr("workdir"));
  EXPECT_FALSE(fs::exists(c.keys() / "authorized/admins/n"));
  EXPECT_FALSE(fs::exists(c.keys() / "authorized/latest"));

  // Her workdir is hers, but its runs/ became a link into the state: refused before the mkdir.
  fs::create_directories(c.dir() / "work-l");
  fs::create_symlink(c.keys() / "authorized", c.dir() / "work-l/runs");
  const std::vector<std::string> lists_before = Names(c.keys() / "authorized");
  const fs::path linked = c.dir() / "linked.yaml";
  WriteFile(linked, "name: linked\nworkdir: work-l\nnodes:\n  - {id: n, op: noop}\n");
  id = (*client)->Submit(linked.string());
  ASSERT_FALSE(id.ok()) << "admitted as " << *id;
  EXPECT_THAT(id.status().message(), HasSubstr("run directory"));
  EXPECT_EQ(Names(c.keys() / "authorized"), lists_before);

  // Her own CSV, with a column it lacks, is admitted: the column is checked where the file
  // is read as hers (`coupler submit` here, the import task on a worker), never echoed here.
  const fs::path csv = c.dir() / "mine.csv";
  WriteFile(csv, "a,b\n1,2\n");
  const fs::path own = c.dir() / "own.yaml";
  WriteFile(own, "name: own\nworkdir: work-o\nnodes:\n"
                 "  - id: load\n    op: import_csv\n    inputs: [mine.csv]\n"
                 "  - id: pick\n    op: filter\n    inputs: [load]\n    params: {where: \"x > 1\"}\n");
  Result<std::string> admitted = (*client)->Submit(own.string());
  EXPECT_TRUE(admitted.ok()) << admitted.status().ToString();
  CommandResult cli = c.Cli({"submit", own.string(), "--keys", mallory.string()});
  EXPECT_EQ(cli.exit_code, 2) << cli.out << cli.err;
  EXPECT_THAT(cli.err, HasSubstr("unknown column 'x'"));
}

TEST(ConfusedDeputyTest, LogsAreNeverServedFromOutsideTheRunDirectory) {
  Cluster::Options options;
  options.coordinator_args = {"--http", "127.0.0.1:0"};
  Cluster c(options);
  ASSERT_TRUE(c.StartCoordinator()) << c.Logs();
  c.StartWorker("w1", 2);
  ASSERT_TRUE(c.WaitWorkersAlive(1)) << c.Logs();
  const fs::path outside = c.dir() / "outside.txt";
  WriteFile(outside, "SECRET-OUTSIDE-THE-RUN\n");
  const fs::path elsewhere = c.dir() / "elsewhere";
  fs::create_directories(elsewhere / "1/rank.0");
  fs::create_symlink(outside, elsewhere / "1/rank.0/stdout");

  const fs::path spec = c.dir() / "plant.yaml";
  // Symlinks named as other attempts' logs: one to a file, one a ranks folder leading out.
  WriteFile(spec, "name: plant\nworkdir: work\nnodes:\n"
                  "  - id: p\n    op: exec\n    inputs: [in]\n    params:\n"
                  "      command: \"L=$(dirname {output})/logs && mkdir -p $L && ln -s " +
                  outside.string() + " $L/task-000007.attempt-0.stdout && ln -s " +
                  outside.string() + " $L/task-000000.attempt-9.stderr && ln -s " +
                  elsewhere.string() + " $L/task-000008.attempt-0.ranks && echo printed\"\n");
  fs::create_directories(c.dir() / "in");
  WriteFile(c.dir() / "in/a.npy", "x");
  const std::string job = c.Submit(spec);
  ASSERT_FALSE(job.empty()) << c.Logs();
  auto done = c.WaitJobFinished(job, 120s);
  ASSERT_TRUE(done.has_value()) << c.Logs();
  ASSERT_EQ(done->state, "succeeded") << done->error << c.Logs();

  const std::string url = c.HttpUrl();
  ASSERT_FALSE(url.empty()) << c.Logs();
  const std::string bearer = "Authorization: Bearer " + c.ApiToken();
  for (const std::string query : {"", "?node=p", "?node=p&task=7", "?node=p&task=0&attempt=9",
                                  "?node=p&task=8"}) {
    CommandResult r = RunToEnd({FindProgram("curl"), "-sS", "--max-time", "60", "-H", bearer,
                                url + "/api/v1/jobs/" + job + "/logs" + query},
                               c.logs(), 90s);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, Not(HasSubstr("SECRET-OUTSIDE"))) << query;
  }
  // The task's own output is still served.
  CommandResult own = RunToEnd({FindProgram("curl"), "-sS", "--max-time", "60", "-H", bearer,
                                url + "/api/v1/jobs/" + job + "/logs?node=p"},
                               c.logs(), 90s);
  EXPECT_THAT(own.out, HasSubstr("printed"));
}

}  // namespace
}  // namespace coupler::itest
