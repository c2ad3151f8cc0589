// Diagnostics: the error lines a user sees for a bad job spec. Each names file:line:column,
// the node and the field, so the fix is one jump away; several are collected per run.
#pragma once

#include <string>
#include <vector>

namespace coupler::job {

// 1-based line and column in the spec file; 0 means unknown.
struct SourcePos {
  int line = 0;
  int column = 0;
};

struct Diagnostic {
  std::string file;
  SourcePos pos;
  std::string node;   // node id, empty for job-level problems
  std::string field;  // e.g. "op", "params.shards", "resources.gpu_memory"
  std::string message;
  std::string hint;   // optional: "did you mean 'column_stats'?"

  // "spec.yaml:12:7: error: node 'stats': field 'op': unknown op 'colum_stats'; did you mean ..."
  std::string ToString() const;
};

// Collects diagnostics up to a cap, so one broken file reports its problems together without
// flooding the terminal.
class Diagnostics {
 public:
  static constexpr size_t kDefaultCap = 20;
  explicit Diagnostics(std::string file, size_t cap = kDefaultCap)
      : file_(std::move(file)), cap_(cap) {}

  void Add(SourcePos pos, std::string node, std::string field, std::string message,
           std::string hint = {});

  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  // Errors seen, including those past the cap that were not kept.
  size_t total() const { return total_; }
  bool full() const { return items_.size() >= cap_; }
  const std::vector<Diagnostic>& items() const { return items_; }
  const std::string& file() const { return file_; }

  // All kept lines, then "... and N more errors" when the cap was hit.
  std::string ToString() const;

 private:
  std::string file_;
  size_t cap_;
  size_t total_ = 0;
  std::vector<Diagnostic> items_;
};

}  // namespace coupler::job
