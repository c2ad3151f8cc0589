#include "coordinator/reuse_index.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "runtime/io/atomic_file.h"
#include "runtime/io/beneath.h"
#include "runtime/io/content_hash.h"
#include "runtime/io/output_layout.h"
#include "runtime/io/unique_fd.h"

namespace coupler::coordinator {
namespace {

struct DirCloser {
  void operator()(DIR* d) const noexcept { ::closedir(d); }
};
using UniqueDir = std::unique_ptr<DIR, DirCloser>;

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

store::ReuseFile Identity(std::string rel, const struct stat& st) {
  store::ReuseFile f;
  f.path = std::move(rel);
  f.bytes = static_cast<uint64_t>(st.st_size);
  f.device = static_cast<uint64_t>(st.st_dev);
  f.inode = static_cast<uint64_t>(st.st_ino);
  f.mtime_ns = MtimeNs(st);
  return f;
}

// Lists `dir_fd` (which it consumes) into `out`, names prefixed with `prefix`.
Status ListInto(io::UniqueFd dir_fd, const std::string& prefix, bool top,
                std::vector<store::ReuseFile>& out) {
  UniqueDir dir(::fdopendir(dir_fd.get()));
  if (!dir) return io::ErrnoStatus("list", prefix.empty() ? "." : prefix, errno);
  const int fd = dir_fd.Release();  // closedir closes it now
  while (dirent* e = ::readdir(dir.get())) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    const std::string rel = prefix + name;
    if (S_ISDIR(st.st_mode)) {
      if (top && name == "logs") continue;  // printed output, not outputs
      COUPLER_ASSIGN_OR_RETURN(io::UniqueFd sub, io::OpenBeneath(fd, name, O_RDONLY | O_DIRECTORY));
      COUPLER_RETURN_IF_ERROR(ListInto(std::move(sub), rel + "/", false, out));
    } else if (S_ISREG(st.st_mode) && !io::IsTempFileName(name)) {
      out.push_back(Identity(rel, st));
    }
    // Symlinks, fifos, sockets, devices: never outputs, never followed.
  }
  return Status::Ok();
}

bool SameFile(const store::ReuseFile& recorded, const struct stat& st) {
  return S_ISREG(st.st_mode) && recorded.bytes == static_cast<uint64_t>(st.st_size) &&
         recorded.device == static_cast<uint64_t>(st.st_dev) &&
         recorded.inode == static_cast<uint64_t>(st.st_ino) && recorded.mtime_ns == MtimeNs(st);
}

// The recorded file, opened beneath the run directory, if it is still that file.
Result<io::UniqueFd> OpenRecorded(int run_fd, const NodeOutputs& from, const store::ReuseFile& f) {
  COUPLER_ASSIGN_OR_RETURN(io::UniqueFd fd,
                           io::OpenBeneath(run_fd, from.node + "/" + f.path, O_RDONLY));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return io::ErrnoStatus("stat", f.path, errno);
  if (!SameFile(f, st)) {
    return NotFound(from.run_dir + "/" + from.node + "/" + f.path +
                    " is not the file recorded when its node succeeded");
  }
  return fd;
}

// A copy of `src` as `name` in `dir_fd`, for filesystems that refuse hard links.
Status CopyInto(int src, int dir_fd, const std::string& name, const std::string& shown) {
  io::UniqueFd out(::openat(dir_fd, name.c_str(),
                            O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!out.valid()) return io::ErrnoStatus("create", shown, errno);
  off_t offset = 0;
  for (;;) {
    const ssize_t n = ::sendfile(out.get(), src, &offset, 1 << 30);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io::ErrnoStatus("copy into", shown, errno);
    if (n == 0) break;
  }
  return out.Close(shown);
}

}  // namespace

Result<std::unique_ptr<ReuseIndex>> ReuseIndex::Open(const std::string& path) {
  COUPLER_ASSIGN_OR_RETURN(std::unique_ptr<store::ReuseStore> store, store::ReuseStore::Open(path));
  return std::unique_ptr<ReuseIndex>(new ReuseIndex(std::move(store)));
}

std::optional<NodeOutputs> ReuseIndex::FindIntact(const std::string& root, const std::string& key) {
  std::optional<NodeOutputs> entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Result<std::optional<NodeOutputs>> found = store_->Find(root, key);
    if (!found.ok() || !*found) return std::nullopt;
    entry = std::move(**found);
  }
  if (entry->run_dir.empty() || entry->files.empty()) return std::nullopt;
  Result<io::UniqueFd> run = io::OpenDirectory(entry->run_dir);
  if (!run.ok()) return std::nullopt;  // the old run was cleaned up
  for (const store::ReuseFile& f : entry->files) {
    if (!OpenRecorded(run->get(), *entry, f).ok()) return std::nullopt;  // gone or changed
  }
  return entry;
}

Status ReuseIndex::Record(const std::string& root, const std::string& key,
                          const std::string& run_dir, const std::string& job_id,
                          const std::string& node) {
  NodeOutputs out;
  out.root = root;
  out.key = key;
  out.run_dir = run_dir;
  out.job_id = job_id;
  out.node = node;
  COUPLER_ASSIGN_OR_RETURN(out.files, ListNodeOutputs(run_dir, node));
  if (out.files.empty()) return Status::Ok();  // nothing a later run could take over
  std::lock_guard<std::mutex> lock(mu_);
  return store_->Put(out);
}

Result<uint64_t> ReuseIndex::Hash(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return NotFound("cannot read " + path + ": it is gone");
  // Only regular files: a FIFO a command names would block the read, a folder has no bytes.
  if (!S_ISREG(st.st_mode)) return InvalidArgument(path + " is not a regular file");
  store::FileHashEntry now;
  now.path = path;
  now.bytes = static_cast<uint64_t>(st.st_size);
  now.mtime_ns = MtimeNs(st);
  now.inode = static_cast<uint64_t>(st.st_ino);
  {
    std::lock_guard<std::mutex> lock(mu_);
    Result<std::optional<store::FileHashEntry>> cached = store_->FindHash(path);
    if (cached.ok() && *cached && (*cached)->bytes == now.bytes &&
        (*cached)->mtime_ns == now.mtime_ns && (*cached)->inode == now.inode) {
      return (*cached)->hash;
    }
  }
  // Hashed outside the lock: a 500 MB CSV must not hold up a node's recording on the loop.
  COUPLER_ASSIGN_OR_RETURN(now.hash, io::HashFile(path));
  std::lock_guard<std::mutex> lock(mu_);
  (void)store_->PutHashes({now});  // a cache: a failed write only means hashing again
  return now.hash;
}

Result<std::vector<store::ReuseFile>> ListNodeOutputs(const std::string& run_dir,
                                                      const std::string& node) {
  std::vector<store::ReuseFile> out;
  Result<io::UniqueFd> run = io::OpenDirectory(run_dir);
  if (!run.ok()) {
    if (run.status().code() == StatusCode::kNotFound) return out;
    return run.status();
  }
  Result<io::UniqueFd> dir = io::OpenBeneath(run->get(), node, O_RDONLY | O_DIRECTORY);
  // A node that wrote nothing (noop, an exec with no outputs) has no folder: no outputs.
  if (!dir.ok()) {
    if (dir.status().code() == StatusCode::kNotFound) return out;
    return dir.status();
  }
  COUPLER_RETURN_IF_ERROR(ListInto(std::move(dir).value(), "", true, out));
  std::sort(out.begin(), out.end(),
            [](const store::ReuseFile& a, const store::ReuseFile& b) { return a.path < b.path; });
  return out;
}

Status LinkNodeOutputs(const NodeOutputs& from, const std::string& to_run_dir,
                       const std::string& to_node) {
  COUPLER_ASSIGN_OR_RETURN(io::UniqueFd from_run, io::OpenDirectory(from.run_dir));
  COUPLER_ASSIGN_OR_RETURN(io::UniqueFd to_run, io::OpenDirectory(to_run_dir));
  COUPLER_ASSIGN_OR_RETURN(io::UniqueFd to_dir, io::MakeDirectoriesBeneath(to_run.get(), to_node));
  // A pinned run directory reusing its own earlier run: the files are already in place.
  if (Result<io::UniqueFd> from_dir = io::OpenBeneath(from_run.get(), from.node, O_RDONLY | O_DIRECTORY);
      from_dir.ok()) {
    struct stat a {}, b {};
    if (::fstat(from_dir->get(), &a) == 0 && ::fstat(to_dir.get(), &b) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
      return Status::Ok();
    }
  }
  for (const store::ReuseFile& f : from.files) {
    COUPLER_ASSIGN_OR_RETURN(io::UniqueFd src, OpenRecorded(from_run.get(), from, f));
    const size_t slash = f.path.rfind('/');
    io::UniqueFd sub;
    int dir_fd = to_dir.get();
    if (slash != std::string::npos) {
      COUPLER_ASSIGN_OR_RETURN(sub, io::MakeDirectoriesBeneath(to_dir.get(), f.path.substr(0, slash)));
      dir_fd = sub.get();
    }
    const std::string name = slash == std::string::npos ? f.path : f.path.substr(slash + 1);
    const std::string shown = to_run_dir + "/" + to_node + "/" + f.path;
    // Beside the target first, then renamed over it: a reader never sees a partial file. The
    // link is made from the open descriptor, so it is the file checked above, whatever
    // happens to its name meanwhile.
    const std::string tmp = io::TempPathFor(name);
    const std::string proc = "/proc/self/fd/" + std::to_string(src.get());
    if (::linkat(AT_FDCWD, proc.c_str(), dir_fd, tmp.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      COUPLER_RETURN_IF_ERROR(CopyInto(src.get(), dir_fd, tmp, shown));
    }
    if (::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
      const int error = errno;
      ::unlinkat(dir_fd, tmp.c_str(), 0);
      return io::ErrnoStatus("rename into", shown, error);
    }
  }
  return Status::Ok();
}

}  // namespace coupler::coordinator
