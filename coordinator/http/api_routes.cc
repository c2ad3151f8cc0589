#include "coordinator/http/api_routes.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <regex>

#include "coordinator/http/api_token.h"
#include "coordinator/http/metrics_text.h"
#include "coordinator/http/page.h"
#include "coordinator/http/process_metrics.h"
#include "coordinator/http/readiness.h"
#include "coordinator/http/submission_json.h"
#include "runtime/job/job_phase.h"
#include "runtime/job/task_logs.h"
#include "runtime/util/json_writer.h"
#include "runtime/wire/codec.h"
#include "runtime/wire/envelope.h"
#include "runtime/wire/node_progress.h"
#include "runtime/wire/status_json.h"

namespace coupler::coordinator::http {
namespace {

using httplib::Request;
using httplib::Response;

constexpr const char* kJson = "application/json";
constexpr const char* kCookie = "coupler_token";
// A snapshot this fresh is served as is; older, the loop is asked for a new one.
constexpr int64_t kFreshMs = 1000;
constexpr std::chrono::milliseconds kSnapshotWait{500};
// Submissions are parsed and planned off the loop; a large spec takes a while.
constexpr std::chrono::milliseconds kSubmitTimeout{60'000};
constexpr std::chrono::milliseconds kControlTimeout{10'000};

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
constexpr size_t kMaxSubmissionId = 128;
// Logs: lines per file by default, bytes per file and per reply at most.
constexpr uint32_t kLogTailLines = 200;
constexpr size_t kLogFileBytes = 1u << 20;
constexpr size_t kLogReplyBytes = 16u << 20;
constexpr const char* kCancelRoute = R"(/api/v1/jobs/([A-Za-z0-9._-]+)/cancel)";
constexpr const char* kDrainRoute = R"(/api/v1/workers/([A-Za-z0-9._:-]+)/drain)";

void Json(Response& res, int status, std::string body) {
  res.status = status;
  res.set_content(std::move(body), kJson);
}

void Fail(Response& res, int status, std::string_view message) {
  json::Writer w;
  w.BeginObject();
  w.Field("error", message);
  w.EndObject();
  Json(res, status, w.Finish());
}

void Fail(Response& res, const Status& s) { Fail(res, HttpStatusFor(s.code()), s.message()); }

std::string BearerOf(const Request& req) {
  const std::string h = req.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (h.size() <= kBearer.size() || h.compare(0, kBearer.size(), kBearer) != 0) return "";
  return h.substr(kBearer.size());
}

std::string CookieOf(const Request& req) {
  const std::string cookies = req.get_header_value("Cookie");
  const std::string key = std::string(kCookie) + "=";
  size_t at = 0;
  while (at < cookies.size()) {
    while (at < cookies.size() && (cookies[at] == ' ' || cookies[at] == ';')) ++at;
    const size_t end = std::min(cookies.find(';', at), cookies.size());
    if (cookies.compare(at, key.size(), key) == 0) return cookies.substr(at + key.size(), end - at - key.size());
    at = end;
  }
  return "";
}

// Reads may also come with the page's cookie; changes need the header, which no other web
// page can make a browser send (a form or an <img> on another local port carries the cookie:
// SameSite treats every port of 127.0.0.1 as one site). The metrics token opens /metrics alone:
// a scraper's credential reads no job, spec or log.
enum class Access { kMetrics, kRead, kChange };

bool Authorized(const Request& req, const HttpContext& ctx, Access access) {
  const std::string bearer = BearerOf(req);
  if (ctx.api_token->Matches(bearer)) return true;
  if (access == Access::kMetrics && ctx.metrics_token && ctx.metrics_token->Matches(bearer)) return true;
  return access != Access::kChange && ctx.api_token->Matches(CookieOf(req));
}

void Unauthorized(Response& res) {
  res.set_header("WWW-Authenticate", "Bearer realm=\"coupler\"");
  Fail(res, 401,
       "missing or wrong API token: send the header 'Authorization: Bearer TOKEN', TOKEN being "
       "the contents of the coordinator's STATE/http-token (for /metrics, STATE/metrics-token "
       "also)");
}

// Wraps a handler with the token check and a last guard: a bug answers 500, never a crash.
httplib::Server::Handler Guarded(const HttpContext& ctx, Access access,
                                 std::function<void(const Request&, Response&)> handler) {
  return [&ctx, access, handler = std::move(handler)](const Request& req, Response& res) {
    if (!Authorized(req, ctx, access)) {
      Unauthorized(res);
      return;
    }
    try {
      handler(req, res);
    } catch (const std::exception& e) {
      Fail(res, 500, std::string("internal error: ") + e.what());
    }
  };
}

Result<uint32_t> ParseCount(const Request& req, const char* name, uint32_t fallback) {
  if (!req.has_param(name)) return fallback;
  const std::string v = req.get_param_value(name);
  uint32_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size()) {
    return InvalidArgument(std::string("?") + name + "=" + v + ": expected a whole number");
  }
  return n;
}

std::shared_ptr<const Snapshot> Current(const HttpContext& ctx) {
  return ctx.board->Get(kFreshMs, kSnapshotWait);
}

// The current snapshot, or null with a 503 answered (the loop has published none yet).
std::shared_ptr<const Snapshot> CurrentOrFail(const HttpContext& ctx, Response& res) {
  std::shared_ptr<const Snapshot> s = Current(ctx);
  if (!s) Fail(res, 503, "the coordinator has not published its state yet");
  return s;
}

// The job as of the latest snapshot; one that is not in it yet (submitted since) is looked
// for in a fresh one, and one older than the snapshot's newest jobs (kSnapshotJobs) is asked of
// the loop, which reads it from the state.
std::optional<wire::JobStatus> FindJob(const HttpContext& ctx, const std::string& id) {
  std::shared_ptr<const Snapshot> snapshot = Current(ctx);
  const wire::JobStatus* job = snapshot ? snapshot->FindJob(id) : nullptr;
  if (job == nullptr) {
    snapshot = ctx.board->Get(0, kSnapshotWait);
    job = snapshot ? snapshot->FindJob(id) : nullptr;
  }
  if (job != nullptr) return *job;
  wire::StatusRequest ask;
  ask.job_id = id;
  Result<wire::Message> reply = ctx.loop->Call(wire::Encode(ask), kControlTimeout);
  if (!reply.ok()) return std::nullopt;
  const auto* status = std::get_if<wire::StatusReply>(&*reply);
  if (status == nullptr || status->jobs.size() != 1) return std::nullopt;
  return status->jobs.front();
}

// FindJob, or nullopt with a 404 answered.
std::optional<wire::JobStatus> FindJobOrFail(const HttpContext& ctx, const std::string& id,
                                             Response& res) {
  std::optional<wire::JobStatus> job = FindJob(ctx, id);
  if (!job) Fail(res, 404, "no job " + id);
  return job;
}

bool ValidSubmissionId(std::string_view id) {
  if (id.empty() || id.size() > kMaxSubmissionId) return false;
  for (const char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == ':')) {
      return false;
    }
  }
  return true;
}

// POST /api/v1/jobs: JSON {"spec": TEXT or OBJECT, "submission_id", "priority", "path",
// "cwd"}, or the spec itself as YAML (Content-Type application/yaml, text/yaml, text/plain)
// with the rest as query parameters.
Result<wire::SubmitJob> ParseSubmission(const Request& req) {
  wire::SubmitJob submit;
  submit.client_id = "http";
  submit.spec_path = "request.yaml";
  const std::string type = req.get_header_value("Content-Type");
  if (type.rfind("application/json", 0) == 0) {
    COUPLER_RETURN_IF_ERROR(ReadSubmissionJson(req.body, submit));
  } else if (type.rfind("application/yaml", 0) == 0 || type.rfind("text/yaml", 0) == 0 ||
             type.rfind("application/x-yaml", 0) == 0 || type.rfind("text/plain", 0) == 0) {
    submit.spec_text = req.body;
    if (req.has_param("submission_id")) submit.submission_id = req.get_param_value("submission_id");
    if (req.has_param("path")) submit.spec_path = req.get_param_value("path");
    if (req.has_param("cwd")) submit.cwd = req.get_param_value("cwd");
    if (req.has_param("priority")) {
      const std::string p = req.get_param_value("priority");
      int v = 0;
      const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
      if (ec != std::errc() || end != p.data() + p.size()) {
        return InvalidArgument("?priority=" + p + ": expected an integer");
      }
      submit.priority = v;
    }
  } else {
    return InvalidArgument("send the spec as application/json ({\"spec\": ...}) or as "
                           "application/yaml, not '" + type + "'");
  }
  // The spec's relative paths resolve against its folder, as for `coupler submit`; a spec
  // sent without a path (or with a relative one) lives, for that, in `cwd`, by default the
  // coordinator's own directory.
  std::error_code ec;
  if (submit.cwd.empty()) submit.cwd = std::filesystem::current_path(ec).string();
  if (!std::filesystem::path(submit.spec_path).is_absolute()) {
    submit.spec_path = (std::filesystem::path(submit.cwd) / submit.spec_path).lexically_normal().string();
  }
  if (!submit.submission_id.empty() && !ValidSubmissionId(submit.submission_id)) {
    return InvalidArgument("submission_id must be 1 to 128 of A-Z a-z 0-9 . _ - :");
  }
  if (submit.spec_text.empty()) return InvalidArgument("the spec is empty");
  return submit;
}

void Submit(const HttpContext& ctx, const Request& req, Response& res) {
  Result<wire::SubmitJob> submit = ParseSubmission(req);
  if (!submit.ok()) {
    Fail(res, submit.status());
    return;
  }
  Result<wire::Message> reply = ctx.loop->Call(wire::Encode(*submit), kSubmitTimeout);
  if (!reply.ok()) {
    Fail(res, reply.status());
    return;
  }
  const auto* r = std::get_if<wire::SubmitReply>(&*reply);
  if (r == nullptr) {
    Fail(res, 500, "the coordinator answered a submission with another message");
    return;
  }
  if (!r->ok) {
    Fail(res, 400, r->error);
    return;
  }
  json::Writer w;
  w.BeginObject();
  w.Field("job_id", r->job_id);
  w.Field("submission_id", submit->submission_id);
  w.Field("existing", r->existing);
  w.EndObject();
  res.set_header("Location", "/api/v1/jobs/" + r->job_id);
  Json(res, r->existing ? 200 : 201, w.Finish());
}

void ListJobs(const HttpContext& ctx, const Request& req, Response& res) {
  std::optional<job::JobPhase> state;
  if (req.has_param("state")) {
    const std::string name = req.get_param_value("state");
    state = job::ParseJobPhase(name);
    if (!state) {
      Fail(res, 400, "?state=" + name + ": expected queued, running, succeeded, failed or cancelled");
      return;
    }
  }
  Result<uint32_t> limit = ParseCount(req, "limit", 0);
  if (!limit.ok()) {
    Fail(res, limit.status());
    return;
  }
  std::shared_ptr<const Snapshot> s = CurrentOrFail(ctx, res);
  if (!s) return;
  auto render = [&] {
    json::Writer w;
    w.BeginObject();
    w.BeginArray("jobs");
    uint32_t n = 0;
    uint64_t matching = 0;
    for (const wire::JobStatus& j : s->jobs) {  // newest first
      if (state && j.state != *state) continue;
      ++matching;
      if (*limit != 0 && n >= *limit) continue;
      const auto progress = s->Progress().find(j.id);
      wire::WriteJobStatus(w, j, progress == s->Progress().end() ? nullptr : &progress->second);
      ++n;
    }
    w.EndArray();
    // Every job the state holds in that state, listed or not (the list holds the newest).
    uint64_t total = 0;
    for (const auto& [st, count] : s->job_counts) {
      total += !state || st == job::JobPhaseName(*state) ? count : 0;
    }
    w.Field("total", std::max(total, matching));
    w.EndObject();
    return w.Finish();
  };
  // The unfiltered list is what pollers ask for: rendered once per snapshot.
  Json(res, 200, !state && *limit == 0 ? s->Cached(Snapshot::kJobList, render) : render());
}

void GetJob(const HttpContext& ctx, const Request& req, Response& res) {
  const std::optional<wire::JobStatus> job = FindJobOrFail(ctx, req.matches[1], res);
  if (!job) return;
  // Read here, on the HTTP thread: the tight nodes' steps, when this host sees the run dir.
  const auto progress = wire::TightNodeProgress(*job, /*running_only=*/false);
  Json(res, 200, wire::JobStatusJson(*job, &progress));
}

// GET /api/v1/jobs/{id}/logs?node=&task=&attempt=&tail=: what the job's tasks printed, as
// `coupler logs` reads it (runtime/job/task_logs.h), each file's last `tail` lines.
void Logs(const HttpContext& ctx, const Request& req, Response& res) {
  const std::string id = req.matches[1];
  const std::optional<wire::JobStatus> job = FindJobOrFail(ctx, id, res);
  if (!job) return;
  if (job->workdir.empty()) {
    Fail(res, 404, "job " + id + " finished before the coordinator's last start: only its summary "
                   "is kept; its logs are under its workdir's {node}/logs/");
    return;
  }
  std::optional<uint64_t> task;
  std::optional<uint32_t> attempt;
  if (req.has_param("task")) {
    Result<uint32_t> t = ParseCount(req, "task", 0);
    if (!t.ok()) return Fail(res, t.status());
    task = *t;
  }
  if (req.has_param("attempt")) {
    Result<uint32_t> a = ParseCount(req, "attempt", 0);
    if (!a.ok()) return Fail(res, a.status());
    attempt = *a;
  }
  Result<uint32_t> tail = ParseCount(req, "tail", kLogTailLines);
  if (!tail.ok()) return Fail(res, tail.status());
  std::vector<std::string> nodes;
  for (const wire::NodeStatus& n : job->nodes) nodes.push_back(n.id);
  const std::string node = req.has_param("node") ? req.get_param_value("node") : "";
  Result<std::vector<job::TaskLogFile>> files = job::ListTaskLogs(job->workdir, nodes, node, task, attempt);
  if (!files.ok()) return Fail(res, files.status());
  json::Writer w;
  w.BeginObject();
  w.Field("job_id", id);
  w.BeginArray("logs");
  size_t total = 0;
  for (const job::TaskLogFile& f : *files) {
    Result<std::string> text = job::ReadLogTailBeneath(job->workdir, f.path, *tail, kLogFileBytes);
    w.BeginObject();
    w.Field("node", f.node);
    w.Field("task", f.task_id);
    w.Field("attempt", f.attempt);
    w.Field("stream", f.stream);
    w.Field("bytes", f.bytes);
    // A reply stays bounded whatever the job printed: past the cap, files are listed only.
    const bool room = total < kLogReplyBytes;
    w.Field("text", text.ok() && room ? *text : std::string());
    if (!text.ok()) w.Field("error", text.status().message());
    if (text.ok() && room) total += text->size();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  Json(res, 200, w.Finish());
}

// Cancel and drain: the loop's Ack message, or its error.
void Control(const HttpContext& ctx, const std::string& request, const std::string& id_key,
             const std::string& id, Response& res) {
  Result<wire::Message> reply = ctx.loop->Call(request, kControlTimeout);
  if (!reply.ok()) {
    Fail(res, reply.status());
    return;
  }
  const auto* ack = std::get_if<wire::Ack>(&*reply);
  json::Writer w;
  w.BeginObject();
  w.Field(id_key, id);
  w.Field("message", ack != nullptr ? ack->message : std::string());
  w.EndObject();
  Json(res, 200, w.Finish());
}

void Page(const HttpContext& ctx, const Request& req, Response& res) {
  // Opened from the link the coordinator logs (?token=...): the token becomes a cookie the
  // browser sends back to this origin only, and leaves the address bar and the history.
  if (req.has_param("token")) {
    const std::string token = req.get_param_value("token");
    if (!ctx.api_token->Matches(token)) {
      Unauthorized(res);
      return;
    }
    res.set_header("Set-Cookie", std::string(kCookie) + "=" + token +
                                     "; Path=/; HttpOnly; SameSite=Strict");
    // Only a job id goes back into the Location header: a decoded parameter may hold a CR LF.
    const std::string job = req.has_param("job") ? req.get_param_value("job") : "";
    const bool plain_id = !job.empty() && job.size() <= kMaxSubmissionId &&
                          std::all_of(job.begin(), job.end(), [](char c) {
                            return std::isalnum(static_cast<unsigned char>(c)) || c == '-' ||
                                   c == '_' || c == '.';
                          });
    res.set_redirect(plain_id ? "/?job=" + job : "/", 303);
    return;
  }
  if (!Authorized(req, ctx, Access::kRead)) {
    res.status = 401;
    res.set_content(UnauthorizedPage(), "text/html; charset=utf-8");
    return;
  }
  std::shared_ptr<const Snapshot> s = CurrentOrFail(ctx, res);
  if (!s) return;
  const std::string job = req.has_param("job") ? req.get_param_value("job") : "";
  const bool fragment = req.has_param("fragment");
  res.set_header("Cache-Control", "no-store");
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                 "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
  res.set_content(fragment ? RenderPageBody(*s, job) : RenderPage(*s, job, ctx.version),
                  "text/html; charset=utf-8");
}

}  // namespace

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kPermissionDenied: return 403;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kResourceExhausted: return 429;
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kDeadlineExceeded: return 504;
    default: return 500;
  }
}

void AddApiRoutes(httplib::Server& server, const HttpContext& ctx) {
  server.Get("/healthz", [&ctx](const Request&, Response& res) {
    // Alive means the event loop still publishes, not only that this thread answers.
    std::shared_ptr<const Snapshot> s = ctx.board->Get(kFreshMs, std::chrono::milliseconds(2000));
    json::Writer w;
    w.BeginObject();
    const bool ok = s != nullptr;
    w.Field("status", ok ? "ok" : "the event loop does not answer");
    if (s) w.Field("store_error", s->stats.store_error);
    w.EndObject();
    Json(res, ok ? 200 : 503, w.Finish());
  });
  server.Get("/readyz", [&ctx](const Request&, Response& res) {
    // Probes carry no token: the answer names no job or worker, only why dispatch waits.
    std::shared_ptr<const Snapshot> s = ctx.board->Get(kFreshMs, std::chrono::milliseconds(kMaxLoopLagMs));
    const Readiness r = ReadinessOf(s.get(), WallMs());
    json::Writer w;
    w.BeginObject();
    w.Field("status", r.ready ? "ready" : "not ready");
    if (!r.ready) w.Field("reason", r.reason);
    w.EndObject();
    Json(res, r.ready ? 200 : 503, w.Finish());
  });
  server.Get("/", [&ctx](const Request& req, Response& res) {
    try {
      Page(ctx, req, res);
    } catch (const std::exception& e) {
      Fail(res, 500, std::string("internal error: ") + e.what());
    }
  });
  server.Get("/static/page.js", [](const Request&, Response& res) {
    res.set_content(std::string(PageScript()), "text/javascript; charset=utf-8");
  });
  server.Get("/static/page.css", [](const Request&, Response& res) {
    res.set_content(std::string(PageStyle()), "text/css; charset=utf-8");
  });
  server.Get("/metrics", Guarded(ctx, Access::kMetrics, [&ctx](const Request&, Response& res) {
    std::shared_ptr<const Snapshot> s = CurrentOrFail(ctx, res);
    if (!s) return;
    std::string text = s->Cached(Snapshot::kMetrics, [&] { return RenderMetrics(*s, ctx.version); });
    if (ctx.connections != nullptr) text += RenderConnectionMetrics(ctx.connections->counts());
    // Not cached with the snapshot's text: readiness and the process change between snapshots.
    text += RenderReadinessMetric(ReadinessOf(s.get(), WallMs()));
    text += RenderProcessMetrics();
    res.set_content(std::move(text), "text/plain; version=0.0.4; charset=utf-8");
  }));
  server.Get("/api/v1/version", Guarded(ctx, Access::kRead, [&ctx](const Request&, Response& res) {
    json::Writer w;
    w.BeginObject();
    w.Field("version", ctx.version);
    w.Field("api", "v1");
    w.Field("protocol", uint32_t{wire::kProtocolVersion});
    w.EndObject();
    Json(res, 200, w.Finish());
  }));
  server.Post("/api/v1/jobs", Guarded(ctx, Access::kChange, [&ctx](const Request& req, Response& res) {
    Submit(ctx, req, res);
  }));
  server.Get("/api/v1/jobs", Guarded(ctx, Access::kRead, [&ctx](const Request& req, Response& res) {
    ListJobs(ctx, req, res);
  }));
  server.Get(R"(/api/v1/jobs/([A-Za-z0-9._-]+))",
             Guarded(ctx, Access::kRead, [&ctx](const Request& req, Response& res) {
               GetJob(ctx, req, res);
             }));
  server.Get(R"(/api/v1/jobs/([A-Za-z0-9._-]+)/logs)",
             Guarded(ctx, Access::kRead, [&ctx](const Request& req, Response& res) {
               Logs(ctx, req, res);
             }));
  server.Post(kCancelRoute, Guarded(ctx, Access::kChange, [&ctx](const Request& req, Response& res) {
    const std::string id = req.matches[1];
    Control(ctx, wire::Encode(wire::CancelJob{id}), "job_id", id, res);
  }));
  server.Get("/api/v1/workers", Guarded(ctx, Access::kRead, [&ctx](const Request&, Response& res) {
    std::shared_ptr<const Snapshot> s = CurrentOrFail(ctx, res);
    if (!s) return;
    std::string workers = wire::WorkersJson(s->workers);
    while (!workers.empty() && workers.back() == '\n') workers.pop_back();
    Json(res, 200, "{\"workers\":" + workers + "}\n");
  }));
  server.Post(kDrainRoute, Guarded(ctx, Access::kChange, [&ctx](const Request& req, Response& res) {
    const std::string id = req.matches[1];
    Control(ctx, wire::Encode(wire::DrainWorker{id}), "worker_id", id, res);
  }));
  server.set_pre_routing_handler([&ctx](const Request& req, Response& res) {
    // Runs after the headers, before cpp-httplib reads a body. A body is read only for a
    // client that holds the token: any other is answered 401 here, its body unread (the
    // connection closes after the reply, so the rest is never parsed as a request).
    const bool may_have_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" ||
                               req.method == "DELETE" || req.method == "PRI";
    if (!may_have_body) return httplib::Server::HandlerResponse::Unhandled;
    if (!Authorized(req, ctx, Access::kChange)) {
      Unauthorized(res);
      res.set_header("Connection", "close");
      return httplib::Server::HandlerResponse::Handled;
    }
    // cpp-httplib inflates a gzip or brotli body with no bound on what it inflates to; the
    // API's bodies are small text, sent as is.
    const std::string encoding = req.get_header_value("Content-Encoding");
    if (!encoding.empty() && encoding != "identity") {
      Fail(res, 415, "send the body uncompressed: Content-Encoding '" + encoding + "' is not accepted");
      res.set_header("Connection", "close");
      return httplib::Server::HandlerResponse::Handled;
    }
    // cpp-httplib answers a POST that has neither a body nor a Content-Length with a bare 400
    // before any route runs; `curl -X POST .../cancel` sends just that. Such requests are
    // taken here, before it reads the body: cancel and drain need none.
    if (req.method != "POST" || req.has_header("Content-Length") || req.has_header("Transfer-Encoding")) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    static const std::regex cancel(kCancelRoute);
    static const std::regex drain(kDrainRoute);
    std::smatch m;
    if (std::regex_match(req.path, m, cancel)) {
      Control(ctx, wire::Encode(wire::CancelJob{m[1]}), "job_id", m[1], res);
    } else if (std::regex_match(req.path, m, drain)) {
      Control(ctx, wire::Encode(wire::DrainWorker{m[1]}), "worker_id", m[1], res);
    } else {
      Fail(res, 411, "this POST needs a body (its Content-Length): send the spec");
    }
    return httplib::Server::HandlerResponse::Handled;
  });
  server.set_error_handler([](const Request& req, Response& res) {
    if (res.status == 404 && res.body.empty()) Fail(res, 404, "no route " + req.method + " " + req.path);
  });
  server.set_exception_handler([](const Request&, Response& res, std::exception_ptr) {
    Fail(res, 500, "internal error");
  });
}

}  // namespace coupler::coordinator::http
