// Opening a path beneath a directory without following any symlink: what a process that reads
// or links files on someone else's behalf (the coordinator serving a job's logs, linking a
// reused run's outputs) needs, so that a symlink or `..` planted by the job cannot lead it out
// of the job's own folder. Linux openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), with a
// component-by-component O_NOFOLLOW walk where the kernel has no openat2 (before 5.6, or a
// seccomp filter that refuses it): the same refusals either way.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "runtime/io/unique_fd.h"
#include "runtime/status.h"

namespace coupler::io {

// Opens `rel` (relative, no "..", no empty or absolute path) beneath the directory `dir_fd`
// with `flags` (O_CLOEXEC and O_NOFOLLOW are added; O_CREAT creates the last component with
// `mode`). No component may be a symlink. InvalidArgument names `rel` and why for a symlink or
// an escaping path; NotFound when a component is missing.
Result<UniqueFd> OpenBeneath(int dir_fd, std::string_view rel, int flags, mode_t mode = 0);

// Opens the directory at the absolute `path` (following symlinks there: it is a path the caller
// trusts, such as a run directory it recorded itself).
Result<UniqueFd> OpenDirectory(const std::string& path);

// Makes every missing directory of `rel` beneath `dir_fd` (mode 0777 & ~umask) and returns the
// last one, opened; no component may be a symlink.
Result<UniqueFd> MakeDirectoriesBeneath(int dir_fd, std::string_view rel);

// Is `rel` a path OpenBeneath accepts (relative, no "..", no empty component)?
bool IsPlainRelativePath(std::string_view rel);

}  // namespace coupler::io
