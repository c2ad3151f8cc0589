// Reading a text file that may be compressed, as import_csv reads its inputs: `.gz` (gzip, any
// number of concatenated members, through zlib) and `.zst` (Zstandard frames, through libzstd)
// are decompressed as streams, a chunk at a time, so a file bigger than memory can be parsed;
// anything else is read as it is. The compression is told by the file name, as pandas'
// compression="infer" does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/status.h"

namespace coupler::io {

enum class Compression : uint8_t { kNone = 0, kGzip = 1, kZstd = 2 };

// By the name's ending: ".gz" gzip, ".zst" zstd, else none.
Compression CompressionOf(std::string_view path);

// A file's decompressed bytes, chunk by chunk. RAII: the file (and the decoder) close with it.
class TextReader {
 public:
  static Result<TextReader> Open(const std::string& path);
  TextReader(TextReader&&) noexcept;
  TextReader& operator=(TextReader&&) noexcept;
  ~TextReader();

  // Appends up to `max` bytes of text to `out`; 0 once the text has ended. InvalidArgument
  // naming the file for corrupt or truncated compressed data.
  Result<size_t> Read(std::string& out, size_t max);

 private:
  struct Impl;
  explicit TextReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The first `bytes` bytes of a file's text (fewer when the text is shorter): what the planner
// and every import task decide column types from.
Result<std::string> ReadTextPrefix(const std::string& path, size_t bytes);

}  // namespace coupler::io
