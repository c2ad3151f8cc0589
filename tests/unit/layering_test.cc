// The folder tree is the architecture (docs/architecture.md): which part may include which, and
// which system headers stay behind one folder's walls. Read from the sources, so a new include
// that crosses a wall fails here with the file and line, not later as a surprise link
// dependency.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace coupler {
namespace {

namespace fs = std::filesystem;

struct Include {
  std::string file;  // relative to the source root
  int line = 0;
  std::string target;  // what is between the quotes or brackets
  bool angled = false;
};

std::vector<Include> IncludesUnder(const std::string& folder) {
  std::vector<Include> out;
  const fs::path root(COUPLER_SOURCE_DIR);
  for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".h" && ext != ".cc" && ext != ".cu")) continue;
    std::ifstream in(entry.path());
    std::string text;
    for (int n = 1; std::getline(in, text); ++n) {
      const size_t at = text.find("#include ");
      if (at != 0) continue;
      const size_t open = text.find_first_of("\"<", at);
      const size_t close = text.find_first_of("\">", open + 1);
      if (open == std::string::npos || close == std::string::npos) continue;
      out.push_back({fs::relative(entry.path(), root).string(), n,
                     text.substr(open + 1, close - open - 1), text[open] == '<'});
    }
  }
  return out;
}

std::string TopFolder(const std::string& path) { return path.substr(0, path.find('/')); }

// Who may include whom. cli/, tests/ and bench/ sit on top and may include anything. An entry
// is a top folder, or a folder below one ("train/config/": the training program's input
// contract, which the worker's train op checks before it starts mpirun).
const std::map<std::string, std::set<std::string>>& Allowed() {
  static const std::map<std::string, std::set<std::string>> kAllowed = {
      {"runtime", {"runtime"}},
      {"kernels", {"runtime", "kernels"}},
      {"train", {"runtime", "kernels", "train"}},
      {"client", {"runtime", "client"}},
      {"coordinator", {"runtime", "coordinator"}},
      {"worker", {"runtime", "kernels", "worker", "train/config/"}},
  };
  return kAllowed;
}

const std::set<std::string>& ProjectFolders() {
  static const std::set<std::string> kFolders = {"runtime", "kernels", "train", "client",
                                                 "coordinator", "worker", "cli"};
  return kFolders;
}

TEST(LayeringTest, EachPartIncludesOnlyThePartsBelowIt) {
  for (const auto& [folder, allowed] : Allowed()) {
    for (const Include& inc : IncludesUnder(folder)) {
      if (inc.angled || inc.target.find('/') == std::string::npos) continue;
      const std::string to = TopFolder(inc.target);
      if (!ProjectFolders().count(to)) continue;
      bool ok = allowed.count(to) > 0;
      for (const std::string& part : allowed) {
        if (part.back() == '/' && inc.target.rfind(part, 0) == 0) ok = true;
      }
      EXPECT_TRUE(ok)
          << inc.file << ":" << inc.line << " includes \"" << inc.target << "\": " << folder
          << "/ may include only what lies below it";
    }
  }
}

// MPI, NCCL, CUDA, SQLite and HTTP headers stay inside the folders that own them, so no other part
// needs them to build and no other binary links them.
TEST(LayeringTest, SystemHeadersStayBehindTheirOwnersWalls) {
  const std::vector<std::pair<std::string, std::string>> owners = {
      {"mpi.h", "train/comm/"},
      {"nccl.h", "train/comm/nccl/"},
      {"sqlite3.h", "coordinator/store/"},
      {"httplib.h", "coordinator/http/"},
  };
  for (const char* folder : {"runtime", "kernels", "train", "client", "coordinator",
                             "worker", "cli"}) {
    for (const Include& inc : IncludesUnder(folder)) {
      if (!inc.angled) continue;
      for (const auto& [header, owner] : owners) {
        if (inc.target != header) continue;
        EXPECT_EQ(inc.file.rfind(owner, 0), 0u)
            << inc.file << ":" << inc.line << " includes <" << header << ">, which only "
            << owner << " may";
      }
      if (inc.target.rfind("cuda", 0) == 0 || inc.target.rfind("cublas", 0) == 0) {
        const bool owned = inc.file.rfind("kernels/cuda/", 0) == 0 ||
                           inc.file.rfind("train/comm/nccl/", 0) == 0;
        EXPECT_TRUE(owned) << inc.file << ":" << inc.line << " includes <" << inc.target
                           << ">: CUDA headers stay in kernels/cuda/ and train/comm/nccl/";
      }
    }
  }
}

}  // namespace
}  // namespace coupler
