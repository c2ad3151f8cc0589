#include "runtime/io/table.h"

#include <unordered_set>

namespace coupler::io {

Column::Column(std::string name, ElementType dtype, size_t rows)
    : name_(std::move(name)), dtype_(dtype) {
  switch (dtype) {
    case ElementType::kFloat32: values_ = std::vector<float>(rows); break;
    case ElementType::kInt32: values_ = std::vector<int32_t>(rows); break;
    case ElementType::kFloat16:
    case ElementType::kBFloat16: values_ = std::vector<uint16_t>(rows); break;
    case ElementType::kFloat64: values_ = std::vector<double>(rows); break;
    case ElementType::kInt64:
    case ElementType::kDatetime64: values_ = std::vector<int64_t>(rows); break;
    case ElementType::kBool: values_ = std::vector<uint8_t>(rows); break;
  }
}

Column Column::Stored(std::string name, ElementType dtype, size_t rows,
                      std::shared_ptr<const StoredColumn> stored) {
  COUPLER_CHECK(stored != nullptr) << "column '" << name << "' stored nowhere";
  Column column(std::move(name), dtype, 0);
  column.stored_ = std::move(stored);
  column.stored_rows_ = rows;
  return column;
}

size_t Column::size() const {
  if (stored_ != nullptr) return stored_rows_;
  return std::visit([](const auto& v) { return v.size(); }, values_);
}

std::byte* Column::data() {
  COUPLER_CHECK(loaded()) << "column '" << name_ << "' was not loaded from its shard";
  return std::visit([](auto& v) { return reinterpret_cast<std::byte*>(v.data()); }, values_);
}

void Column::Resize(size_t rows) {
  COUPLER_CHECK(loaded()) << "column '" << name_ << "' was not loaded from its shard";
  std::visit([rows](auto& v) { v.resize(rows); }, values_);
}

void Column::set_dictionary(std::shared_ptr<const Dictionary> dictionary) {
  COUPLER_CHECK(dictionary == nullptr || dtype_ == ElementType::kInt32)
      << "column '" << name_ << "' of " << ElementTypeName(dtype_)
      << " given a dictionary: categorical codes are int32";
  dictionary_ = std::move(dictionary);
}

Status Table::AddColumn(Column column) {
  if (column.name().empty()) return InvalidArgument("a column needs a non-empty name");
  if (Find(column.name()) != nullptr) {
    return InvalidArgument("duplicate column '" + column.name() + "'");
  }
  if (!columns_.empty() && column.size() != rows()) {
    return InvalidArgument("column '" + column.name() + "' has " + std::to_string(column.size()) +
                           " rows but the table has " + std::to_string(rows()));
  }
  columns_.push_back(std::move(column));
  return Status::Ok();
}

const Column* Table::Find(std::string_view name) const {
  for (const Column& c : columns_) {
    if (c.name() == name) return &c;
  }
  return nullptr;
}

Column* Table::Find(std::string_view name) {
  return const_cast<Column*>(std::as_const(*this).Find(name));
}

size_t Table::RowBytes() const {
  size_t bytes = 0;
  for (const Column& c : columns_) bytes += ElementSize(c.dtype());
  return bytes;
}

std::string Table::Describe() const {
  std::string out;
  for (const Column& c : columns_) {
    if (!out.empty()) out += ", ";
    out += c.name();
    out += " (";
    out += ElementTypeName(c.dtype());
    out += ")";
  }
  return out.empty() ? "no columns" : out;
}

Status Table::Validate() const {
  std::unordered_set<std::string_view> names;
  for (const Column& c : columns_) {
    if (c.name().empty()) return InvalidArgument("a column has an empty name");
    if (!names.insert(c.name()).second) {
      return InvalidArgument("duplicate column '" + c.name() + "'");
    }
    if (c.size() != rows()) {
      return InvalidArgument("column '" + c.name() + "' has " + std::to_string(c.size()) +
                             " rows but column '" + columns_.front().name() + "' has " +
                             std::to_string(rows()));
    }
  }
  return Status::Ok();
}

}  // namespace coupler::io
