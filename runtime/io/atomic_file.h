// Helpers for publishing a file atomically: write it under a unique temporary name in the same
// directory (rename is atomic only within one filesystem), then rename it over the final name,
// so readers see the old file or the whole new one, never half of it.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "runtime/status.h"

namespace coupler::io {

// "<path>.tmp.<pid>.<random hex>", plus path's extension again when `keep_extension` (tools such
// as np.save append ".npy" to a name that does not end in it, and would miss the temp name).
std::string TempPathFor(std::string_view path, bool keep_extension = false);

// mkdir -p of the directory that will hold `path`; OK when it exists.
Status CreateParentDirectories(std::string_view path);

// rename(2) `from` over `to`; on failure `from` is removed.
Status RenameOver(const std::string& from, const std::string& to);

// Writes the concatenation of `parts` to a temp file beside `path` and renames it over `path`
// (creating parent directories). `durable` adds fsync of the file before the rename and of the
// directory after it, for state that cannot be recomputed (checkpoints).
Status WriteFileAtomic(const std::string& path, std::span<const std::span<const std::byte>> parts,
                       bool durable);

// Removes `path` if it exists; errors are ignored (used on failure paths).
void RemoveQuietly(const std::string& path) noexcept;

}  // namespace coupler::io
