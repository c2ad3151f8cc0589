#include "runtime/job/job_loader.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "runtime/job/dataset_schema.h"
#include "runtime/job/job_parser.h"
#include "runtime/job/spec_limits.h"

namespace coupler::job {

namespace fs = std::filesystem;

LoadedJob LoadJobText(std::string_view text, const std::string& display_name,
                      const std::string& base_dir, const ValidationEnv& env) {
  LoadedJob out{std::nullopt, Diagnostics(display_name)};
  // Submitted text arrives here too: the coordinator refuses an oversize spec before parsing it.
  if (Status size = CheckSpecSize(text.size()); !size.ok()) {
    out.diags.Add({}, "", "", size.message());
    return out;
  }
  std::optional<JobGraph> graph = ParseJobSpec(text, out.diags);
  if (!graph) return out;
  graph->source_file = display_name;
  graph->base_dir = base_dir;
  ValidationEnv local = env;
  local.base_dir = base_dir;
  ValidateJob(*graph, local, out.diags);
  if (!out.diags.empty()) return out;

  std::error_code ec;
  const fs::path cwd = env.cwd.empty() ? fs::current_path(ec) : fs::path(env.cwd);
  if (graph->workdir.empty()) {
    graph->workdir = (cwd / "coupler-work" / graph->name).lexically_normal().string();
  } else {
    graph->workdir = ResolvePath(base_dir, graph->workdir);
  }
  graph->workdir_root = graph->workdir;  // the run directory under it is chosen at admission
  out.graph = std::move(graph);
  return out;
}

LoadedJob LoadJobFile(const std::string& path) {
  auto fail = [&path](const std::string& message) {
    LoadedJob out{std::nullopt, Diagnostics(path)};
    out.diags.Add({}, "", "", message);
    return out;
  };
  std::string text;
  std::error_code ec;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(std::string("cannot read the spec file: ") + std::strerror(errno));
    // A regular file is refused by its size, unread; anything else (a pipe) is read until it
    // passes the limit, one buffer at most beyond it, enough for LoadJobText to refuse it.
    const auto size = fs::file_size(path, ec);
    if (!ec) {
      if (Status s = CheckSpecSize(size); !s.ok()) return fail(s.message());
      text.reserve(size);
    }
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
      text.append(buf, static_cast<size_t>(in.gcount()));
      if (text.size() > kMaxSpecBytes) break;
    }
  }
  fs::path abs = fs::absolute(path, ec);
  ValidationEnv env;
  env.probe = ProbePath;
  env.list_files = ListDatasetFiles;
  env.dataset_schema = CsvHeaderSchema;
  return LoadJobText(text, path, abs.parent_path().lexically_normal().string(), env);
}

}  // namespace coupler::job
