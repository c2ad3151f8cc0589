// The coordinator's HTTP job API as a pipeline (Airflow, a CI job) uses it: real curl against
// a real coordinator and worker, the bearer token on, bad input answered with the planner's
// own messages, retried submissions made once.
#include <sys/stat.h>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

struct HttpReply {
  int status = 0;
  std::string body;
};

// `curl` as a user types it; the status code comes from -w.
HttpReply Curl(Cluster& c, const std::vector<std::string>& args) {
  std::vector<std::string> argv{FindProgram("curl"), "-sS", "--max-time", "60", "-o", "-", "-w", "\\n%{http_code}"};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult r = RunToEnd(argv, c.logs(), 90s);
  HttpReply reply;
  const size_t nl = r.out.rfind('\n');
  if (nl == std::string::npos) return reply;
  reply.body = r.out.substr(0, nl);
  reply.status = std::atoi(r.out.c_str() + nl + 1);
  return reply;
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string Bearer(Cluster& c) { return "Authorization: Bearer " + c.ApiToken(); }

rapidjson::Document Json(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  return d;
}

// An import of a small CSV into `shards` shards, then `command` once per shard.
std::string ExecSpec(Cluster& c, const std::string& name, const std::string& command, int shards) {
  const fs::path csv = c.dir() / "in.csv";
  if (!fs::exists(csv)) WriteSyntheticCsv(csv, 200, 3);
  return "name: " + name + "\nworkdir: " + (c.dir() / ("work-" + name)).string() +
         "\nnodes:\n  - id: import\n    op: import_csv\n    inputs: [" + csv.string() +
         "]\n    params: {shards: " + std::to_string(shards) + "}\n  - id: run\n    op: exec\n" +
         "    inputs: [import]\n    params: {command: \"" + command + "\"}\n";
}

// As a JSON string literal.
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (ch == '\n') {
      out += "\\n";
      continue;
    }
    out += ch;
  }
  return out + "\"";
}

class HttpApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (FindProgram("curl").empty()) {
      if (std::getenv("CI") != nullptr) FAIL() << "curl is not installed";
      GTEST_SKIP() << "curl is not installed (scripts/install-deps.sh installs it)";
    }
    Cluster::Options o;
    o.coordinator_args = {"--http", "127.0.0.1:0"};
    cluster_.emplace(o);
    ASSERT_TRUE(cluster_->StartCoordinator()) << cluster_->Logs();
    url_ = cluster_->HttpUrl();
    ASSERT_FALSE(url_.empty()) << "no http= line in the ready file\n" << cluster_->Logs();
    cluster_->StartWorker("w1", 2);
    ASSERT_TRUE(cluster_->WaitWorkersAlive(1)) << cluster_->Logs();
  }
  Cluster& c() { return *cluster_; }

  std::optional<Cluster> cluster_;
  std::string url_;
};

TEST_F(HttpApiTest, EveryRouteButHealthzNeedsTheToken) {
  EXPECT_EQ(Curl(c(), {url_ + "/healthz"}).status, 200);
  for (const std::string route : {"/api/v1/jobs", "/api/v1/workers", "/api/v1/version", "/metrics"}) {
    EXPECT_EQ(Curl(c(), {url_ + route}).status, 401) << route;
    EXPECT_EQ(Curl(c(), {"-H", "Authorization: Bearer 0123456789abcdef0123456789abcdef", url_ + route}).status, 401)
        << route;
    EXPECT_EQ(Curl(c(), {"-H", Bearer(c()), url_ + route}).status, 200) << route;
  }
  HttpReply post = Curl(c(), {"-X", "POST", "-H", "Content-Type: application/yaml",
                              "--data-binary", "name: x\nnodes: []\n", url_ + "/api/v1/jobs"});
  EXPECT_EQ(post.status, 401);
  // The page's cookie opens reads, never a change: a page on another local port could make
  // the browser send it with a form.
  const std::string cookie = "coupler_token=" + c().ApiToken();
  EXPECT_EQ(Curl(c(), {"-b", cookie, url_ + "/api/v1/jobs"}).status, 200);
  EXPECT_EQ(Curl(c(), {"-b", cookie, "-X", "POST", "-H", "Content-Type: application/yaml",
                       "--data-binary", "name: x\n", url_ + "/api/v1/jobs"})
                .status,
            401);
  // The token file is the owner's alone.
  struct stat st{};
  ASSERT_EQ(::stat(c().ApiTokenFile().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(HttpApiTest, ABadSpecIsA400WithThePlannersFileLineMessage) {
  HttpReply r = Curl(c(), {"-X", "POST", "-H", Bearer(c()), "-H", "Content-Type: application/yaml",
                           "--data-binary", "name: bad\nnodes:\n  - id: a\n    op: no_such_op\n",
                           url_ + "/api/v1/jobs?path=bad.yaml"});
  EXPECT_EQ(r.status, 400) << r.body;
  rapidjson::Document d = Json(r.body);
  ASSERT_TRUE(d.IsObject() && d.HasMember("error")) << r.body;
  const std::string error = d["error"].GetString();
  EXPECT_NE(error.find("bad.yaml:4"), std::string::npos) << error;
  EXPECT_NE(error.find("no_such_op"), std::string::npos) << error;
  // Not JSON at all, and an unknown content type: 400 too, and the coordinator lives on.
  EXPECT_EQ(Curl(c(), {"-X", "POST", "-H", Bearer(c()), "-H", "Content-Type: application/json",
                       "--data-binary", "{\"spec\":", url_ + "/api/v1/jobs"})
                .status,
            400);
  EXPECT_EQ(Curl(c(), {"-X", "POST", "-H", Bearer(c()), "-H", "Content-Type: image/png",
                       "--data-binary", "x", url_ + "/api/v1/jobs"})
                .status,
            400);
  EXPECT_EQ(Curl(c(), {"-H", Bearer(c()), url_ + "/api/v1/jobs?state=bogus"}).status, 400);
  EXPECT_EQ(Curl(c(), {"-H", Bearer(c()), url_ + "/api/v1/jobs?limit=-3"}).status, 400);
  EXPECT_EQ(Curl(c(), {"-H", Bearer(c()), url_ + "/api/v1/jobs/j-999999"}).status, 404);
  EXPECT_EQ(Curl(c(), {"-H", Bearer(c()), url_ + "/api/v1/nothing"}).status, 404);
  EXPECT_EQ(Curl(c(), {url_ + "/healthz"}).status, 200);
}

TEST_F(HttpApiTest, ARetriedPostWithOneSubmissionIdMakesOneJob) {
  const std::string spec = "{\"submission_id\": \"nightly-2026-12-01\", \"spec\": " +
                           Quoted(ExecSpec(c(), "twice", "cp {input} {output}", 3)) + "}";
  HttpReply first = Curl(c(), {"-X", "POST", "-H", Bearer(c()), "-H", "Content-Type: application/json",
                               "--data-binary", spec, url_ + "/api/v1/jobs"});
  ASSERT_EQ(first.status, 201) << first.body << c().Logs();
  HttpReply second = Curl(c(), {"-X", "POST", "-H", Bearer(c()), "-H", "Content-Type: application/json",
                                "--data-binary", spec, url_ + "/api/v1/jobs"});
  ASSERT_EQ(second.status, 200) << second.body;
  const std::string id = Json(first.body)["job_id"].GetString();
  EXPECT_EQ(Json(second.body)["job_id"].GetString(), id);
  EXPECT_TRUE(Json(second.body)["existing"].GetBool());

  std::optional<JobView> done = c().WaitJobFinished(id);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->state, "succeeded") << done->error << c().Logs();
  HttpReply all = Curl(c(), {"-H", Bearer(c()), url_ + "/api/v1/jobs"});
  ASSERT_EQ(all.status, 200);
  rapidjson::Document jobs = Json(all.body);
  ASSERT_TRUE(jobs.IsObject() && jobs["jobs"].IsArray()) << all.body;
  EXPECT_EQ(jobs["jobs"].Size(), 1u) << all.body;
  // The job's document is the one `coupler status JOB --json` prints, byte for byte.
  ASSERT_TRUE(WaitUntil(
      [&] {
        HttpReply one = Curl(c(), {"-H", Bearer(c()), url_ + "/api/v1/jobs/" + id});
        CommandResult cli = c().Cli({"status", id, "--json"});
        return one.status == 200 && Trimmed(one.body) == Trimmed(cli.out);
      },
      20s, 200ms))
      << Curl(c(), {"-H", Bearer(c()), url_ + "/api/v1/jobs/" + id}).body << "\nvs\n"
      << c().Cli({"status", id, "--json"}).out;
  EXPECT_EQ(Curl(c(), {"-H", Bearer(c()), url_ + "/api/v1/jobs?state=succeeded&limit=5"}).status, 200);
}

TEST_F(HttpApiTest, CancelAndDrainGoThroughTheLoopsOwnChecks) {
  const std::string spec = ExecSpec(c(), "long", "sleep 60 && cp {input} {output}", 4);
  HttpReply submitted = Curl(c(), {"-X", "POST", "-H", Bearer(c()), "-H", "Content-Type: application/yaml",
                                   "--data-binary", spec, url_ + "/api/v1/jobs"});
  ASSERT_EQ(submitted.status, 201) << submitted.body << c().Logs();
  const std::string id = Json(submitted.body)["job_id"].GetString();
  HttpReply cancel = Curl(c(), {"-X", "POST", "-H", Bearer(c()), url_ + "/api/v1/jobs/" + id + "/cancel"});
  EXPECT_EQ(cancel.status, 200) << cancel.body;
  std::optional<JobView> job = c().WaitJobFinished(id, 60s);
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->state, "cancelled");
  EXPECT_EQ(Curl(c(), {"-X", "POST", "-H", Bearer(c()), url_ + "/api/v1/jobs/j-424242/cancel"}).status, 404);

  HttpReply workers = Curl(c(), {"-H", Bearer(c()), url_ + "/api/v1/workers"});
  ASSERT_EQ(workers.status, 200);
  EXPECT_NE(workers.body.find("\"w1\""), std::string::npos) << workers.body;
  EXPECT_EQ(Curl(c(), {"-X", "POST", "-H", Bearer(c()), url_ + "/api/v1/workers/nope/drain"}).status, 404);
  HttpReply drain = Curl(c(), {"-X", "POST", "-H", Bearer(c()), url_ + "/api/v1/workers/w1/drain"});
  EXPECT_EQ(drain.status, 200) << drain.body;
  EXPECT_TRUE(WaitUntil([&] { return !c().worker("w1").running(); }, 60s, 100ms))
      << "the drained worker did not leave\n" << c().Logs();
}

TEST_F(HttpApiTest, TheLogsOfOneTaskShowWhatItsCommandPrinted) {
  const std::string spec = ExecSpec(c(), "chatty", "echo shard-{shard}-says-hi && cp {input} {output}", 2);
  HttpReply submitted = Curl(c(), {"-X", "POST", "-H", Bearer(c()), "-H", "Content-Type: application/yaml",
                                   "--data-binary", spec, url_ + "/api/v1/jobs"});
  ASSERT_EQ(submitted.status, 201) << submitted.body << c().Logs();
  const std::string id = Json(submitted.body)["job_id"].GetString();
  std::optional<JobView> job = c().WaitJobFinished(id);
  ASSERT_TRUE(job && job->state == "succeeded") << c().Logs();
  HttpReply all = Curl(c(), {"-H", Bearer(c()), url_ + "/api/v1/jobs/" + id + "/logs?node=run"});
  ASSERT_EQ(all.status, 200) << all.body;
  rapidjson::Document d = Json(all.body);
  ASSERT_TRUE(d.IsObject() && d["logs"].IsArray()) << all.body;
  std::map<uint64_t, std::string> stdout_of;
  for (const auto& f : d["logs"].GetArray()) {
    if (std::string(f["stream"].GetString()) == "stdout") stdout_of[f["task"].GetUint64()] = f["text"].GetString();
  }
  ASSERT_EQ(stdout_of.size(), 2u) << all.body;
  // One task's log: its own line, not its sibling's.
  const uint64_t first = stdout_of.begin()->first;
  HttpReply one = Curl(c(), {"-H", Bearer(c()),
                             url_ + "/api/v1/jobs/" + id + "/logs?node=run&task=" + std::to_string(first)});
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_NE(one.body.find("shard-0-says-hi"), std::string::npos) << one.body;
  EXPECT_EQ(one.body.find("shard-1-says-hi"), std::string::npos) << one.body;
  EXPECT_NE(stdout_of.rbegin()->second.find("shard-1-says-hi"), std::string::npos) << all.body;
  EXPECT_EQ(Curl(c(), {"-H", Bearer(c()), url_ + "/api/v1/jobs/" + id + "/logs?node=nope"}).status, 404);
  EXPECT_EQ(Curl(c(), {"-H", Bearer(c()), url_ + "/api/v1/jobs/" + id + "/logs?task=x"}).status, 400);
  EXPECT_EQ(Curl(c(), {url_ + "/api/v1/jobs/" + id + "/logs"}).status, 401);
}

TEST_F(HttpApiTest, ThePageReadsWithoutJavaScript) {
  // What a browser with scripts off gets: the tables, server-rendered.
  HttpReply login = Curl(c(), {"-D", "-", url_ + "/?token=" + c().ApiToken()});
  EXPECT_EQ(login.status, 303);
  EXPECT_NE(login.body.find("HttpOnly"), std::string::npos) << login.body;
  HttpReply page = Curl(c(), {"-b", "coupler_token=" + c().ApiToken(), url_ + "/"});
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<table>"), std::string::npos);
  EXPECT_NE(page.body.find("data-worker=\"w1\""), std::string::npos) << page.body;
  EXPECT_NE(page.body.find("http-equiv=\"refresh\""), std::string::npos);
  EXPECT_EQ(page.body.find("http://"), std::string::npos) << "the page must fetch nothing from elsewhere";
  // A job parameter that is no job id cannot split the redirect's headers, and the browser
  // still lands on the page.
  HttpReply split = Curl(c(), {"-D", "-", url_ + "/?token=" + c().ApiToken() + "&job=x%0d%0aX-Evil:%20yes"});
  EXPECT_EQ(split.status, 303);
  EXPECT_EQ(split.body.find("X-Evil"), std::string::npos) << split.body;
  EXPECT_NE(split.body.find("Location: /\r\n"), std::string::npos) << split.body;
  HttpReply to_job = Curl(c(), {"-D", "-", url_ + "/?token=" + c().ApiToken() + "&job=j-000007"});
  EXPECT_NE(to_job.body.find("Location: /?job=j-000007\r\n"), std::string::npos) << to_job.body;
  EXPECT_EQ(Curl(c(), {url_ + "/"}).status, 401);
  EXPECT_EQ(Curl(c(), {url_ + "/?token=wrong"}).status, 401);
}

}  // namespace
}  // namespace coupler::itest
