#include "runtime/job/job_loader.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/job/job_parser.h"

namespace coupler::job {

namespace fs = std::filesystem;

LoadedJob LoadJobText(std::string_view text, const std::string& display_name,
                      const std::string& base_dir, const ValidationEnv& env) {
  LoadedJob out{std::nullopt, Diagnostics(display_name)};
  std::optional<JobGraph> graph = ParseJobSpec(text, out.diags);
  if (!graph) return out;
  graph->source_file = display_name;
  graph->base_dir = base_dir;
  ValidationEnv local = env;
  local.base_dir = base_dir;
  ValidateJob(*graph, local, out.diags);
  if (!out.diags.empty()) return out;

  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (graph->workdir.empty()) {
    graph->workdir = (cwd / "coupler-work" / graph->name).lexically_normal().string();
  } else {
    graph->workdir = ResolvePath(base_dir, graph->workdir);
  }
  out.graph = std::move(graph);
  return out;
}

LoadedJob LoadJobFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    LoadedJob out{std::nullopt, Diagnostics(path)};
    out.diags.Add({}, "", "", std::string("cannot read the spec file: ") + std::strerror(errno));
    return out;
  }
  std::ostringstream text;
  text << in.rdbuf();
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec);
  ValidationEnv env;
  env.probe = ProbePath;
  return LoadJobText(text.str(), path, abs.parent_path().lexically_normal().string(), env);
}

}  // namespace coupler::job
