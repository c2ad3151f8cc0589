// Which paths the coordinator may touch on a job's behalf. A client may name any path in its
// spec, and the coordinator (often another user, sometimes root) stats its inputs, lists their
// folders, hashes their content for reuse and creates the run directory: without a rule, a
// client borrows the coordinator's rights over files it could never read itself. The rule, on
// each path with its symlinks resolved:
//   - never inside the coordinator's own folders (state, keys, ~/.coupler): what decides trust;
//   - with operator-listed data roots (`--data-root DIR`, repeatable), only beneath one of them;
//   - without any, anywhere but the system folders (/etc, /proc, /sys, /usr, ...; SystemFolders).
// docs/security.md gives the reasoning.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/status.h"

namespace coupler::coordinator {

class DataRoots {
 public:
  // Folders are made absolute and their symlinks resolved (they need not exist).
  static DataRoots Make(const std::vector<std::string>& allowed, const std::vector<std::string>& denied);

  // OK when `path` may be used; InvalidArgument naming `what` ("input", "workdir"), the path
  // and the rule otherwise. Never says anything about the file beyond its name.
  Status Check(std::string_view what, const std::string& path) const;

  // Refused by default: the system's own configuration, secrets and kernel interfaces.
  static const std::vector<std::string>& SystemFolders();

  const std::vector<std::string>& allowed() const { return allowed_; }

 private:
  std::vector<std::string> allowed_;
  std::vector<std::string> denied_;  // the coordinator's folders (always) + system folders (default)
};

}  // namespace coupler::coordinator
