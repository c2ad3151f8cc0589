// How a commit's output paths fit in one TEXT column: each path followed by '\n', with '\\' and
// '\n' inside a path escaped as "\\\\" and "\\n". Lossless for any path (POSIX allows newlines),
// keeps [] apart from [""], and stays readable in the sqlite3 shell.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/status.h"

namespace coupler::store {

// Appends the encoding of `paths` to `*out` (cleared first), so a caller can reuse one buffer.
void EncodePathList(const std::vector<std::string>& paths, std::string* out);

// InvalidArgument for text EncodePathList could not have written (a dangling escape or a last
// path without its terminator).
Result<std::vector<std::string>> DecodePathList(std::string_view text);

}  // namespace coupler::store
