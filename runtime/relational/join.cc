#include "runtime/relational/join.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <type_traits>

#include "runtime/relational/table_rows.h"

namespace coupler::relational {
namespace {

constexpr std::array<std::pair<std::string_view, JoinHow>, 6> kHows{{
    {"inner", JoinHow::kInner},
    {"left", JoinHow::kLeft},
    {"right", JoinHow::kRight},
    {"outer", JoinHow::kOuter},
    {"semi", JoinHow::kSemi},
    {"anti", JoinHow::kAnti},
}};

bool IsInteger(const io::ColumnSchema& c) {
  return !c.categorical && (c.dtype == ElementType::kInt32 || c.dtype == ElementType::kInt64 ||
                            c.dtype == ElementType::kBool);
}
bool IsFloat(const io::ColumnSchema& c) {
  return !c.categorical && (c.dtype == ElementType::kFloat32 || c.dtype == ElementType::kFloat64);
}

// The type both sides' key columns are compared in, or nullopt when they cannot be.
std::optional<io::ColumnSchema> CommonKey(const io::ColumnSchema& a, const io::ColumnSchema& b) {
  if (a.categorical || b.categorical) {
    if (a.categorical && b.categorical) return a;
    return std::nullopt;
  }
  if (a.dtype == b.dtype) return a;
  io::ColumnSchema common = a;
  if (IsInteger(a) && IsInteger(b)) {
    common.dtype = ElementType::kInt64;
    return common;
  }
  if ((IsInteger(a) || IsFloat(a)) && (IsInteger(b) || IsFloat(b))) {
    common.dtype = ElementType::kFloat64;
    return common;
  }
  return std::nullopt;
}

bool MayBeMissing(JoinHow how, bool right_side) {
  return how == JoinHow::kOuter || (right_side ? how == JoinHow::kLeft : how == JoinHow::kRight);
}

ElementType Nullable(ElementType t, bool categorical) {
  return io::ColumnSchema::IsNullable(t, categorical) ? t : ElementType::kFloat64;
}

io::ColumnSchema SchemaOf(const io::Column& c) { return {c.name(), c.dtype(), c.categorical()}; }
io::TableSchema SchemaOf(const io::Table& t) {
  io::TableSchema s;
  for (const io::Column& c : t.columns()) s.columns.push_back(SchemaOf(c));
  return s;
}

// `column` as `dtype` (a key widened to the common type, or a column turned float64 so it can
// hold a missing value); the same column when it already is.
io::Column Converted(const io::Column& column, ElementType dtype) {
  if (column.dtype() == dtype) return column;
  io::Column out(column.name(), dtype, column.size());
  VisitValues(column, [&](auto in) {
    for (size_t r = 0; r < in.size(); ++r) {
      const bool missing = IsMissing(column, r);
      if (dtype == ElementType::kFloat64) {
        double v = 0;
        if constexpr (std::is_same_v<std::remove_const_t<typename decltype(in)::element_type>, int64_t>) {
          v = io::Int64AsDouble(in[r]);
        } else {
          v = static_cast<double>(in[r]);
        }
        out.values<double>()[r] = missing ? std::nan("") : v;
      } else {  // int64
        out.values<int64_t>()[r] = missing ? io::kMissingInt64 : static_cast<int64_t>(in[r]);
      }
    }
  });
  return out;
}

}  // namespace

std::optional<JoinHow> ParseJoinHow(std::string_view how) {
  for (const auto& [name, h] : kHows) {
    if (name == how) return h;
  }
  return std::nullopt;
}

std::string_view JoinHowName(JoinHow how) {
  for (const auto& [name, h] : kHows) {
    if (h == how) return name;
  }
  return "unknown";
}

Result<io::TableSchema> JoinSchema(const io::TableSchema& left, const io::TableSchema& right,
                                   const JoinOptions& options) {
  if (options.on.empty()) return InvalidArgument("a join needs at least one key column (on)");
  // The common type of each key, by key.
  std::vector<io::ColumnSchema> common_keys;
  for (const std::string& key : options.on) {
    const io::ColumnSchema* a = left.Find(key);
    const io::ColumnSchema* b = right.Find(key);
    if (a == nullptr) return InvalidArgument("no key column '" + key + "' in the left input");
    if (b == nullptr) return InvalidArgument("no key column '" + key + "' in the right input");
    const std::optional<io::ColumnSchema> common = CommonKey(*a, *b);
    if (!common) {
      return InvalidArgument("key '" + key + "' is " +
                             (a->categorical ? "strings" : std::string(ElementTypeName(a->dtype))) +
                             " on the left and " +
                             (b->categorical ? "strings" : std::string(ElementTypeName(b->dtype))) +
                             " on the right: they never compare equal");
    }
    common_keys.push_back(*common);
  }
  auto key_of = [&](const std::string& name) -> const io::ColumnSchema* {
    for (size_t k = 0; k < options.on.size(); ++k) {
      if (options.on[k] == name) return &common_keys[k];
    }
    return nullptr;
  };
  // As pandas' merge: the left's columns in its order (a key where the left has it), then the
  // right's other columns.
  io::TableSchema out;
  const bool with_right = options.how != JoinHow::kSemi && options.how != JoinHow::kAnti;
  for (int side = 0; side < (with_right ? 2 : 1); ++side) {
    const io::TableSchema& mine = side == 0 ? left : right;
    const io::TableSchema& other = side == 0 ? right : left;
    for (io::ColumnSchema c : mine.columns) {
      if (const io::ColumnSchema* key = key_of(c.name)) {
        if (side == 0) out.columns.push_back(*key);
        continue;
      }
      if (with_right && other.Find(c.name) != nullptr && key_of(c.name) == nullptr) {
        c.name += options.suffixes[side];
      }
      if (MayBeMissing(options.how, side == 1)) c.dtype = Nullable(c.dtype, c.categorical);
      if (out.Find(c.name) != nullptr) {
        return InvalidArgument("output column '" + c.name + "' would appear twice (choose other suffixes)");
      }
      out.columns.push_back(c);
    }
  }
  return out;
}

Result<io::Table> Join(const io::Table& left, const io::Table& right, const JoinOptions& options) {
  COUPLER_ASSIGN_OR_RETURN(const io::TableSchema schema,
                           JoinSchema(SchemaOf(left), SchemaOf(right), options));
  // Both sides' keys in one table, widened to one type and with one dictionary per string key,
  // so equal keys get one group whichever side their rows are on.
  std::vector<io::Table> key_parts(2);
  for (size_t k = 0; k < options.on.size(); ++k) {
    for (int side = 0; side < 2; ++side) {
      const io::Column& c = *(side == 0 ? left : right).Find(options.on[k]);
      COUPLER_RETURN_IF_ERROR(key_parts[side].AddColumn(Converted(c, schema.Find(options.on[k])->dtype)));
    }
  }
  const size_t nl = left.rows(), nr = right.rows();
  COUPLER_ASSIGN_OR_RETURN(const io::Table keys, Concatenate(std::move(key_parts)));
  std::vector<size_t> key_index(options.on.size());
  for (size_t k = 0; k < key_index.size(); ++k) key_index[k] = k;
  const RowGroups groups = GroupRows(keys, key_index, false);
  const size_t ngroups = groups.first_row.size();

  // Each group's rows on one side, in that side's order (a counting sort).
  auto rows_by_group = [&](size_t begin, size_t end) {
    std::vector<uint32_t> start(ngroups + 1, 0), rows(end - begin);
    for (size_t r = begin; r < end; ++r) ++start[groups.of_row[r] + 1];
    for (size_t g = 0; g < ngroups; ++g) start[g + 1] += start[g];
    std::vector<uint32_t> at(start.begin(), start.end() - 1);
    for (size_t r = begin; r < end; ++r) rows[at[groups.of_row[r]]++] = static_cast<uint32_t>(r - begin);
    return std::make_pair(std::move(start), std::move(rows));
  };
  const auto [right_start, right_rows] = rows_by_group(nl, nl + nr);

  std::vector<uint32_t> out_left, out_right, out_key;  // kMissingRow: no row on that side
  auto emit = [&](uint32_t l, uint32_t r) {
    out_left.push_back(l);
    out_right.push_back(r);
    out_key.push_back(l != kMissingRow ? l : static_cast<uint32_t>(nl) + r);
  };
  const JoinHow how = options.how;
  if (how == JoinHow::kRight) {
    const auto [left_start, left_rows] = rows_by_group(0, nl);
    for (size_t r = 0; r < nr; ++r) {
      const uint32_t g = groups.of_row[nl + r];
      if (left_start[g] == left_start[g + 1]) emit(kMissingRow, static_cast<uint32_t>(r));
      for (uint32_t i = left_start[g]; i < left_start[g + 1]; ++i) emit(left_rows[i], static_cast<uint32_t>(r));
    }
  } else {
    std::vector<uint8_t> right_matched(ngroups, 0);
    for (size_t l = 0; l < nl; ++l) {
      const uint32_t g = groups.of_row[l];
      const bool matched = right_start[g] != right_start[g + 1];
      right_matched[g] |= matched ? 1 : 0;
      switch (how) {
        case JoinHow::kSemi:
          if (matched) emit(static_cast<uint32_t>(l), kMissingRow);
          break;
        case JoinHow::kAnti:
          if (!matched) emit(static_cast<uint32_t>(l), kMissingRow);
          break;
        default:
          if (!matched && how != JoinHow::kInner) emit(static_cast<uint32_t>(l), kMissingRow);
          for (uint32_t i = right_start[g]; i < right_start[g + 1]; ++i) {
            emit(static_cast<uint32_t>(l), right_rows[i]);
          }
      }
    }
    if (how == JoinHow::kOuter) {
      // Right rows whose key no left row has.
      std::vector<uint8_t> left_has(ngroups, 0);
      for (size_t l = 0; l < nl; ++l) left_has[groups.of_row[l]] = 1;
      for (size_t r = 0; r < nr; ++r) {
        if (!left_has[groups.of_row[nl + r]]) emit(kMissingRow, static_cast<uint32_t>(r));
      }
    }
  }

  io::Table out;
  size_t at = 0;  // the output column being made, in the schema's order
  const bool with_right = how != JoinHow::kSemi && how != JoinHow::kAnti;
  for (int side = 0; side < (with_right ? 2 : 1); ++side) {
    const io::Table& mine = side == 0 ? left : right;
    const std::vector<uint32_t>& rows = side == 0 ? out_left : out_right;
    for (const io::Column& c : mine.columns()) {
      const auto key = std::find(options.on.begin(), options.on.end(), c.name());
      if (key != options.on.end()) {
        // A key once, where the left has it: the value of whichever side has the row.
        if (side == 0) {
          COUPLER_RETURN_IF_ERROR(out.AddColumn(TakeColumnRows(
              keys.column(static_cast<size_t>(key - options.on.begin())), out_key)));
          ++at;
        }
        continue;
      }
      const io::ColumnSchema& want = schema.columns[at++];
      io::Column taken = c.dtype() == want.dtype ? TakeColumnRows(c, rows)
                                                 : TakeColumnRows(Converted(c, want.dtype), rows);
      taken.set_name(want.name);
      COUPLER_RETURN_IF_ERROR(out.AddColumn(std::move(taken)));
    }
  }
  return out;
}

}  // namespace coupler::relational
