#include "coordinator/data_roots.h"

#include <filesystem>

namespace coupler::coordinator {
namespace {

namespace fs = std::filesystem;

// Absolute, with every symlink of the part that exists resolved: a link in a user's folder that
// points into the state directory is judged by where it leads.
std::string Resolved(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (ec) p = path;
  fs::path r = fs::weakly_canonical(p, ec);
  if (ec) r = p.lexically_normal();
  std::string s = r.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

bool Beneath(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

}  // namespace

const std::vector<std::string>& DataRoots::SystemFolders() {
  // The system's own configuration, secrets, kernel interfaces and programs. Not homes, nor
  // /var/lib or /opt: data lives there on real machines (and CI checkouts), so an operator who
  // wants those closed lists data roots instead.
  static const std::vector<std::string> kFolders = {
      "/etc", "/proc", "/sys", "/dev", "/boot", "/run", "/var/run", "/var/log",
      "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
  };
  return kFolders;
}

DataRoots DataRoots::Make(const std::vector<std::string>& allowed,
                          const std::vector<std::string>& denied) {
  DataRoots roots;
  for (const std::string& a : allowed) {
    if (!a.empty()) roots.allowed_.push_back(Resolved(a));
  }
  for (const std::string& d : denied) {
    if (!d.empty()) roots.denied_.push_back(Resolved(d));
  }
  if (roots.allowed_.empty()) {
    for (const std::string& s : SystemFolders()) roots.denied_.push_back(Resolved(s));
  }
  return roots;
}

Status DataRoots::Check(std::string_view what, const std::string& path) const {
  const std::string resolved = Resolved(path);
  const std::string shown =
      std::string(what) + " " + path + (resolved == path ? "" : " (" + resolved + ")");
  for (const std::string& d : denied_) {
    if (Beneath(resolved, d)) {
      return InvalidArgument(shown + " is refused: the coordinator does not open files under " + d +
                             " for a job (docs/security.md, data roots)");
    }
  }
  if (allowed_.empty()) return Status::Ok();
  for (const std::string& a : allowed_) {
    if (Beneath(resolved, a)) return Status::Ok();
  }
  std::string list;
  for (const std::string& a : allowed_) list += (list.empty() ? "" : ", ") + a;
  return InvalidArgument(shown + " is refused: it is not under a data root of this coordinator (" +
                         list + "; docs/security.md)");
}

}  // namespace coupler::coordinator
