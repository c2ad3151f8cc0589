#include "runtime/job/job_loader.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

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
  const fs::path cwd = env.cwd.empty() ? fs::current_path(ec) : fs::path(env.cwd);
  if (graph->workdir.empty()) {
    graph->workdir = (cwd / "coupler-work" / graph->name).lexically_normal().string();
  } else {
    graph->workdir = ResolvePath(base_dir, graph->workdir);
  }
  out.graph = std::move(graph);
  return out;
}

LoadedJob LoadJobFile(const std::string& path) {
  std::string text;
  std::error_code ec;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      LoadedJob out{std::nullopt, Diagnostics(path)};
      out.diags.Add({}, "", "", std::string("cannot read the spec file: ") + std::strerror(errno));
      return out;
    }
    const auto size = fs::file_size(path, ec);
    if (!ec) text.reserve(size);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  fs::path abs = fs::absolute(path, ec);
  ValidationEnv env;
  env.probe = ProbePath;
  return LoadJobText(text, path, abs.parent_path().lexically_normal().string(), env);
}

}  // namespace coupler::job
