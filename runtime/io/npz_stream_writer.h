// An .npz shard written a batch of rows at a time, for an output bigger than the memory of the
// task that writes it (a reduce past its budget). As batches arrive, each column's values go to
// an unlinked temporary file of its own beside the shard, a categorical column's codes rewritten
// into one dictionary of the writer's (each string once, in first-seen order); Finish writes the
// .npz from those files as WriteNpzAtomic writes a shard whose columns are Stored (copied with
// copy_file_range, not through memory). Memory holds one batch and the dictionaries, never the
// shard. The file is the one WriteNpzAtomic would write for the concatenated batches.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/io/table.h"
#include "runtime/status.h"

namespace coupler::io {

class NpzStreamWriter {
 public:
  explicit NpzStreamWriter(std::string path);
  ~NpzStreamWriter();
  NpzStreamWriter(NpzStreamWriter&&) noexcept;
  NpzStreamWriter& operator=(NpzStreamWriter&&) noexcept;

  // The first batch (it may have no rows) fixes the columns: names, types and which are
  // categorical, in order; a later batch that differs is an InvalidArgument naming the column.
  // Every column must be loaded.
  Status Append(const Table& batch);

  uint64_t rows() const;

  // Writes the shard atomically (nothing at `path` until it is whole); the temporary files go
  // with the writer. InvalidArgument when no batch fixed the columns.
  Status Finish(uint64_t* bytes_written = nullptr);

 private:
  struct Spool;
  std::string path_;
  std::vector<std::unique_ptr<Spool>> spools_;
  uint64_t rows_ = 0;
  bool started_ = false;
};

}  // namespace coupler::io
