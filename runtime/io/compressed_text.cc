#include "runtime/io/compressed_text.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "runtime/io/unique_fd.h"

namespace coupler::io {

Compression CompressionOf(std::string_view path) {
  if (path.ends_with(".gz")) return Compression::kGzip;
  if (path.ends_with(".zst")) return Compression::kZstd;
  return Compression::kNone;
}

struct TextReader::Impl {
  std::string path;
  Compression compression = Compression::kNone;
  UniqueFd fd;         // plain and zstd
  gzFile gz = nullptr;  // gzip: zlib reads the file itself (and concatenated members)
  ZSTD_DCtx* zstd = nullptr;
  std::vector<char> in;  // zstd: compressed bytes read but not yet decoded
  ZSTD_inBuffer in_buffer{nullptr, 0, 0};
  bool in_ended = false;
  bool frame_open = false;  // zstd: inside a frame (its end not decoded yet)

  ~Impl() {
    if (gz != nullptr) gzclose(gz);
    if (zstd != nullptr) ZSTD_freeDCtx(zstd);
  }

  Status Corrupt(const std::string& why) const {
    return InvalidArgument(path + ": " + why);
  }

  Result<size_t> ReadPlain(char* dst, size_t max) {
    while (true) {
      const ssize_t n = ::read(fd.get(), dst, max);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) return Internal(path + ": read: " + std::strerror(errno));
    }
  }

  Result<size_t> ReadGzip(char* dst, size_t max) {
    const unsigned ask = static_cast<unsigned>(std::min<size_t>(max, 1u << 30));
    const int n = gzread(gz, dst, ask);
    if (n < 0) {
      int code = 0;
      const char* message = gzerror(gz, &code);
      return Corrupt(std::string("not a valid gzip file (") + (message ? message : "?") + ")");
    }
    if (n == 0 && !gzeof(gz)) return Corrupt("gzip data ends early");
    // gzread returns what it has at a truncated end; zlib flags it only as Z_BUF_ERROR.
    if (n == 0) {
      int code = 0;
      gzerror(gz, &code);
      if (code == Z_BUF_ERROR) return Corrupt("gzip data is truncated");
    }
    return static_cast<size_t>(n);
  }

  Result<size_t> ReadZstd(char* dst, size_t max) {
    ZSTD_outBuffer out{dst, max, 0};
    while (out.pos == 0) {
      if (in_buffer.pos == in_buffer.size && !in_ended) {
        COUPLER_ASSIGN_OR_RETURN(const size_t n, ReadPlain(in.data(), in.size()));
        if (n == 0) in_ended = true;
        in_buffer = {in.data(), n, 0};
      }
      if (in_buffer.pos == in_buffer.size && in_ended) {
        if (frame_open) return Corrupt("zstd data is truncated");
        return size_t{0};
      }
      const size_t hint = ZSTD_decompressStream(zstd, &out, &in_buffer);
      if (ZSTD_isError(hint)) {
        return Corrupt(std::string("not valid zstd data (") + ZSTD_getErrorName(hint) + ")");
      }
      frame_open = hint != 0;  // 0: a frame ended exactly here
    }
    return out.pos;
  }
};

TextReader::TextReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TextReader::TextReader(TextReader&&) noexcept = default;
TextReader& TextReader::operator=(TextReader&&) noexcept = default;
TextReader::~TextReader() = default;

Result<TextReader> TextReader::Open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->compression = CompressionOf(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) return NotFound(path + ": no such file");
    return Internal(path + ": cannot open: " + std::strerror(e));
  }
  impl->fd = UniqueFd(fd);
  switch (impl->compression) {
    case Compression::kNone: break;
    case Compression::kGzip: {
      // zlib would pass a file that is not gzip through as it is: refuse it instead.
      unsigned char magic[2] = {};
      const ssize_t got = ::pread(fd, magic, 2, 0);
      if (got == 2 && !(magic[0] == 0x1f && magic[1] == 0x8b)) {
        return InvalidArgument(path + ": not a gzip file (it does not start with 1f 8b)");
      }
      // zlib takes its own descriptor, so the UniqueFd keeps only ours.
      const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
      if (dup < 0) return Internal(path + ": " + std::strerror(errno));
      impl->gz = gzdopen(dup, "rb");
      if (impl->gz == nullptr) {
        ::close(dup);
        return Internal(path + ": cannot start reading gzip data");
      }
      gzbuffer(impl->gz, 1u << 20);
      break;
    }
    case Compression::kZstd:
      impl->zstd = ZSTD_createDCtx();
      if (impl->zstd == nullptr) return ResourceExhausted(path + ": cannot start a zstd decoder");
      impl->in.resize(ZSTD_DStreamInSize());
      break;
  }
  return TextReader(std::move(impl));
}

Result<size_t> TextReader::Read(std::string& out, size_t max) {
  const size_t before = out.size();
  out.resize(before + max);
  Result<size_t> n = [&]() -> Result<size_t> {
    switch (impl_->compression) {
      case Compression::kNone: return impl_->ReadPlain(out.data() + before, max);
      case Compression::kGzip: return impl_->ReadGzip(out.data() + before, max);
      case Compression::kZstd: return impl_->ReadZstd(out.data() + before, max);
    }
    return Internal("unknown compression");
  }();
  out.resize(before + (n.ok() ? *n : 0));
  return n;
}

Result<std::string> ReadTextPrefix(const std::string& path, size_t bytes) {
  COUPLER_ASSIGN_OR_RETURN(TextReader reader, TextReader::Open(path));
  std::string text;
  while (text.size() < bytes) {
    COUPLER_ASSIGN_OR_RETURN(const size_t n, reader.Read(text, bytes - text.size()));
    if (n == 0) break;
  }
  return text;
}

}  // namespace coupler::io
