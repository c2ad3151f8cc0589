// Table: a shard in memory, held by column (name, dtype, contiguous values) so kernels run tight
// loops over whole columns. A column an op does not use may stay in its shard file unread
// (StoredColumn): the op's output then takes its bytes over as they are, without loading them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/check.h"
#include "runtime/io/dtype.h"
#include "runtime/status.h"

namespace coupler::io {

// Where a column still lies in the shard file it was read from, unread: its values member (an
// .npy of its own) and, for a categorical column, its dictionary member, as byte ranges of the
// file opened at read time (a descriptor, so a later rename over the path changes nothing).
struct StoredMember {
  uint64_t offset = 0;  // of the member's data in the file
  uint64_t bytes = 0;
  uint32_t crc32 = 0;   // the zip checksum of those bytes, carried over as is
};
struct StoredColumn {
  std::shared_ptr<const int> fd;  // owns the descriptor (closed by its deleter)
  std::string path;               // for messages
  StoredMember values;
  uint64_t values_data = 0;  // where the values start in the file, after the member's .npy header
  std::optional<StoredMember> dictionary;
};

class Column {
 public:
  // `rows` zero values of `dtype`.
  Column(std::string name, ElementType dtype, size_t rows = 0);

  // Takes `values` without copying. `dtype` must be stored as T (fp16/bf16 as uint16_t bits).
  template <typename T>
  Column(std::string name, std::vector<T> values, ElementType dtype)
      : name_(std::move(name)), dtype_(dtype), values_(std::move(values)) {
    COUPLER_CHECK(StoresElementType<T>(dtype))
        << "column '" << name_ << "' of " << ElementTypeName(dtype)
        << " built from the wrong element type";
  }
  static Column Float32(std::string name, std::vector<float> values) {
    return Column(std::move(name), std::move(values), ElementType::kFloat32);
  }
  static Column Int32(std::string name, std::vector<int32_t> values) {
    return Column(std::move(name), std::move(values), ElementType::kInt32);
  }
  static Column Float64(std::string name, std::vector<double> values) {
    return Column(std::move(name), std::move(values), ElementType::kFloat64);
  }
  static Column Int64(std::string name, std::vector<int64_t> values) {
    return Column(std::move(name), std::move(values), ElementType::kInt64);
  }
  // A column of `rows` values left unread in its shard file: it has a name, a type and a size,
  // and can be renamed, kept or dropped, but its values cannot be read (checked: an op loads
  // the columns it computes with).
  static Column Stored(std::string name, ElementType dtype, size_t rows,
                       std::shared_ptr<const StoredColumn> stored);

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  ElementType dtype() const { return dtype_; }
  size_t size() const;
  size_t size_bytes() const { return size() * ElementSize(dtype_); }

  // False for a Stored column; its bytes are then stored()'s.
  bool loaded() const { return stored_ == nullptr; }
  const std::shared_ptr<const StoredColumn>& stored() const { return stored_; }

  // Typed views; asking for the wrong element type is a bug (checked).
  template <typename T>
  std::span<T> values() {
    return Vector<T>();
  }
  template <typename T>
  std::span<const T> values() const {
    return const_cast<Column*>(this)->Vector<T>();
  }
  // The storage itself, e.g. to append while parsing or to move the values out.
  template <typename T>
  std::vector<T>& Vector() {
    COUPLER_CHECK(StoresElementType<T>(dtype_))
        << "column '" << name_ << "' holds " << ElementTypeName(dtype_);
    COUPLER_CHECK(loaded()) << "column '" << name_ << "' was not loaded from its shard";
    return std::get<std::vector<T>>(values_);
  }

  // Raw bytes, for code that only moves values (the .npy transposition).
  std::byte* data();
  const std::byte* data() const { return const_cast<Column*>(this)->data(); }

  // New rows are zero.
  void Resize(size_t rows);

  // A categorical column (a CSV's string column) is int32 codes into its dictionary; -1 is a
  // missing value. Shared, since ops that keep or filter rows keep the codes and so the
  // dictionary; nullptr for every other column, and for a Stored one (its dictionary is a
  // member of its file, still unread).
  using Dictionary = std::vector<std::string>;
  const std::shared_ptr<const Dictionary>& dictionary() const { return dictionary_; }
  bool categorical() const {
    return dictionary_ != nullptr || (stored_ != nullptr && stored_->dictionary.has_value());
  }
  // Only an int32 column has a dictionary (checked).
  void set_dictionary(std::shared_ptr<const Dictionary> dictionary);

 private:
  using Storage = std::variant<std::vector<float>, std::vector<int32_t>, std::vector<uint16_t>,
                               std::vector<double>, std::vector<int64_t>, std::vector<uint8_t>>;

  std::string name_;
  ElementType dtype_;
  Storage values_;
  std::shared_ptr<const Dictionary> dictionary_;
  std::shared_ptr<const StoredColumn> stored_;
  size_t stored_rows_ = 0;
};

class Table {
 public:
  Table() = default;

  // 0 when there are no columns.
  size_t rows() const { return columns_.empty() ? 0 : columns_.front().size(); }
  size_t num_columns() const { return columns_.size(); }
  const std::vector<Column>& columns() const { return columns_; }

  // Mutable access; callers keep every column at rows() values (the writer checks).
  Column& column(size_t i) { return columns_.at(i); }
  const Column& column(size_t i) const { return columns_.at(i); }

  // InvalidArgument for a duplicate or empty name, or a length other than rows() (the first
  // column sets the row count).
  Status AddColumn(Column column);

  // nullptr when there is no such column.
  const Column* Find(std::string_view name) const;
  Column* Find(std::string_view name);

  // Bytes of one record: the sum of the columns' item sizes.
  size_t RowBytes() const;
  size_t DataBytes() const { return rows() * RowBytes(); }

  // "a (float32), b (int32)": for error messages that list what a shard has.
  std::string Describe() const;

  // OK when every column has rows() values and names are unique and non-empty.
  Status Validate() const;

 private:
  std::vector<Column> columns_;
};

}  // namespace coupler::io
