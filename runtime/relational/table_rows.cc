#include "runtime/relational/table_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include "runtime/relational/shuffle_math.h"

namespace coupler::relational {
namespace {

uint64_t HashBytes(std::string_view s) {  // FNV-1a, then mixed: stable across builds
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return Mix(h ^ s.size());
}

constexpr uint64_t kMissingWord = 0x7ff8dead00000001ULL;  // what every missing value hashes from

uint64_t DoubleWord(double v) {
  if (std::isnan(v)) return kMissingWord;
  if (v == 0.0) v = 0.0;  // -0.0 and 0.0 are one key
  // An integral double hashes as the integer it equals, so 3 and 3.0 route alike.
  if (std::abs(v) < 9.0e18 && v == std::trunc(v)) return static_cast<uint64_t>(static_cast<int64_t>(v));
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
}

template <typename T>
void PutMissing(T& v) {
  if constexpr (std::is_same_v<T, float>) {
    v = std::nanf("");
  } else if constexpr (std::is_same_v<T, double>) {
    v = std::nan("");
  } else if constexpr (std::is_same_v<T, int64_t>) {
    v = io::kMissingInt64;
  } else {
    v = T{};
  }
}

}  // namespace

Result<std::vector<size_t>> ColumnIndexes(const io::Table& table, const std::vector<std::string>& names,
                                          std::string_view what) {
  std::vector<size_t> indexes;
  indexes.reserve(names.size());
  for (const std::string& name : names) {
    size_t k = 0;
    while (k < table.num_columns() && table.column(k).name() != name) ++k;
    if (k == table.num_columns()) {
      return InvalidArgument("no " + std::string(what) + " '" + name + "' (the rows have " +
                             table.Describe() + ")");
    }
    indexes.push_back(k);
  }
  return indexes;
}

bool IsMissing(const io::Column& column, size_t r) {
  if (column.categorical()) return column.values<int32_t>()[r] < 0;
  switch (column.dtype()) {
    case ElementType::kFloat32: return std::isnan(column.values<float>()[r]);
    case ElementType::kFloat64: return std::isnan(column.values<double>()[r]);
    case ElementType::kInt64:
    case ElementType::kDatetime64: return column.values<int64_t>()[r] == io::kMissingInt64;
    default: return false;
  }
}

io::Column TakeColumnRows(const io::Column& column, std::span<const uint32_t> rows) {
  io::Column out(column.name(), column.dtype(), rows.size());
  VisitValues(column, [&](auto in) {
    using T = std::remove_const_t<typename decltype(in)::element_type>;
    std::span<T> dst = out.values<T>();
    const bool codes = column.categorical();
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] == kMissingRow) {
        if constexpr (std::is_same_v<T, int32_t>) {
          dst[i] = codes ? -1 : 0;
        } else {
          PutMissing(dst[i]);
        }
      } else {
        dst[i] = in[rows[i]];
      }
    }
  });
  if (column.dictionary() != nullptr) out.set_dictionary(column.dictionary());
  return out;
}

io::Table TakeRows(const io::Table& table, std::span<const uint32_t> rows) {
  io::Table out;
  for (const io::Column& column : table.columns()) {
    COUPLER_CHECK(out.AddColumn(TakeColumnRows(column, rows)).ok()) << column.name();
  }
  return out;
}

Result<io::Table> Concatenate(std::vector<io::Table> parts) {
  if (parts.empty()) return io::Table();
  const io::Table& first = parts.front();
  for (size_t p = 1; p < parts.size(); ++p) {
    const io::Table& t = parts[p];
    if (t.num_columns() != first.num_columns()) {
      return InvalidArgument("part " + std::to_string(p) + " has " + t.Describe() +
                             " but part 0 has " + first.Describe());
    }
    for (size_t c = 0; c < t.num_columns(); ++c) {
      const io::Column& a = first.column(c);
      const io::Column& b = t.column(c);
      if (a.name() != b.name() || a.dtype() != b.dtype() || a.categorical() != b.categorical()) {
        return InvalidArgument("part " + std::to_string(p) + " has " + t.Describe() +
                               " but part 0 has " + first.Describe());
      }
    }
  }
  if (parts.size() == 1) return std::move(parts.front());
  size_t rows = 0;
  for (const io::Table& t : parts) rows += t.rows();
  io::Table out;
  for (size_t c = 0; c < first.num_columns(); ++c) {
    const io::Column& head = first.column(c);
    io::Column column(head.name(), head.dtype(), rows);
    if (head.categorical()) {
      auto dictionary = std::make_shared<io::Column::Dictionary>();
      std::unordered_map<std::string_view, int32_t> code_of;
      std::span<int32_t> dst = column.values<int32_t>();
      size_t at = 0;
      for (const io::Table& t : parts) {
        const io::Column& part = t.column(c);
        const io::Column::Dictionary* dict = part.dictionary().get();
        // Each of the part's codes, remapped once.
        std::vector<int32_t> remap(dict != nullptr ? dict->size() : 0, -1);
        for (size_t k = 0; k < remap.size(); ++k) {
          auto [it, added] = code_of.try_emplace((*dict)[k], static_cast<int32_t>(dictionary->size()));
          if (added) dictionary->push_back((*dict)[k]);
          remap[k] = it->second;
        }
        // code_of's keys view the parts' dictionaries: keep them alive until the end.
        for (const int32_t code : part.values<int32_t>()) {
          dst[at++] = code >= 0 && static_cast<size_t>(code) < remap.size() ? remap[code] : -1;
        }
      }
      column.set_dictionary(std::move(dictionary));
    } else {
      size_t at = 0;
      for (const io::Table& t : parts) {
        const io::Column& part = t.column(c);
        VisitValues(part, [&](auto in) {
          using T = std::remove_const_t<typename decltype(in)::element_type>;
          std::span<T> dst = column.values<T>();
          std::copy(in.begin(), in.end(), dst.begin() + static_cast<std::ptrdiff_t>(at));
        });
        at += part.size();
      }
    }
    COUPLER_RETURN_IF_ERROR(out.AddColumn(std::move(column)));
  }
  return out;
}

namespace {

double NumberAt(const io::Column& c, size_t r) {
  double v = 0;
  VisitValues(c, [&](auto in) { v = static_cast<double>(in[r]); });
  return v;
}

}  // namespace

int CompareRows(const io::Table& a, std::span<const size_t> ka, size_t ra, const io::Table& b,
                std::span<const size_t> kb, size_t rb, std::span<const SortKey> keys) {
  for (size_t i = 0; i < keys.size(); ++i) {
    const io::Column& ca = a.column(ka[i]);
    const io::Column& cb = b.column(kb[i]);
    const bool ma = IsMissing(ca, ra), mb = IsMissing(cb, rb);
    if (ma || mb) {
      if (ma == mb) continue;
      return (ma != keys[i].missing_first) ? 1 : -1;
    }
    int c = 0;
    if (ca.categorical() && cb.categorical()) {
      const std::string& sa = (*ca.dictionary())[static_cast<size_t>(ca.values<int32_t>()[ra])];
      const std::string& sb = (*cb.dictionary())[static_cast<size_t>(cb.values<int32_t>()[rb])];
      c = sa.compare(sb);
    } else if (ca.dtype() == cb.dtype() && ca.dtype() == ElementType::kInt64) {
      // Exact past 2^53, where a double would call two ids equal.
      const int64_t x = ca.values<int64_t>()[ra], y = cb.values<int64_t>()[rb];
      c = x < y ? -1 : (y < x ? 1 : 0);
    } else if (ca.dtype() == cb.dtype() && ca.dtype() == ElementType::kDatetime64) {
      const int64_t x = ca.values<int64_t>()[ra], y = cb.values<int64_t>()[rb];
      c = x < y ? -1 : (y < x ? 1 : 0);
    } else {
      const double x = NumberAt(ca, ra), y = NumberAt(cb, rb);
      c = x < y ? -1 : (y < x ? 1 : 0);
    }
    if (c != 0) return (c < 0) != keys[i].descending ? -1 : 1;
  }
  return 0;
}

std::vector<uint64_t> KeyWords(const io::Column& column) {
  std::vector<uint64_t> words(column.size());
  if (column.categorical()) {
    const std::span<const int32_t> codes = column.values<int32_t>();
    for (size_t r = 0; r < words.size(); ++r) {
      words[r] = codes[r] < 0 ? kMissingWord : static_cast<uint64_t>(codes[r]);
    }
    return words;
  }
  VisitValues(column, [&](auto in) {
    using T = std::remove_const_t<typename decltype(in)::element_type>;
    for (size_t r = 0; r < words.size(); ++r) {
      if constexpr (std::is_floating_point_v<T>) {
        words[r] = DoubleWord(static_cast<double>(in[r]));
      } else if constexpr (std::is_same_v<T, int64_t>) {
        words[r] = in[r] == io::kMissingInt64 ? kMissingWord : static_cast<uint64_t>(in[r]);
      } else {
        words[r] = static_cast<uint64_t>(static_cast<int64_t>(in[r]));
      }
    }
  });
  return words;
}

std::vector<uint64_t> KeyHashWords(const io::Column& column) {
  if (!column.categorical()) return KeyWords(column);
  // By the string, not the code: another shard's dictionary numbers it differently.
  const io::Column::Dictionary* dict = column.dictionary().get();
  std::vector<uint64_t> by_code(dict != nullptr ? dict->size() : 0);
  for (size_t c = 0; c < by_code.size(); ++c) by_code[c] = HashBytes((*dict)[c]);
  const std::span<const int32_t> codes = column.values<int32_t>();
  std::vector<uint64_t> words(codes.size());
  for (size_t r = 0; r < codes.size(); ++r) {
    words[r] = codes[r] >= 0 && static_cast<size_t>(codes[r]) < by_code.size() ? by_code[codes[r]]
                                                                                : kMissingWord;
  }
  return words;
}

std::vector<uint64_t> HashKeys(const io::Table& table, std::span<const size_t> keys) {
  std::vector<uint64_t> hashes(table.rows(), kKeyHashSeed);
  for (const size_t k : keys) {
    const std::vector<uint64_t> words = KeyHashWords(table.column(k));
    for (size_t r = 0; r < hashes.size(); ++r) hashes[r] = KeyHashStep(hashes[r], words[r]);
  }
  return hashes;
}

bool AnyKeyMissing(const io::Table& table, std::span<const size_t> keys, size_t r) {
  for (const size_t k : keys) {
    if (IsMissing(table.column(k), r)) return true;
  }
  return false;
}

int CompareKeys(const io::Table& table, std::span<const size_t> keys, size_t a, size_t b) {
  for (const size_t k : keys) {
    const io::Column& column = table.column(k);
    const bool ma = IsMissing(column, a), mb = IsMissing(column, b);
    if (ma || mb) {
      if (ma != mb) return ma ? 1 : -1;
      continue;
    }
    int c = 0;
    if (column.categorical()) {
      const auto codes = column.values<int32_t>();
      const io::Column::Dictionary& dict = *column.dictionary();
      c = codes[a] == codes[b] ? 0 : dict[codes[a]].compare(dict[codes[b]]);
    } else {
      VisitValues(column, [&](auto in) {
        c = in[a] < in[b] ? -1 : (in[b] < in[a] ? 1 : 0);
      });
    }
    if (c != 0) return c < 0 ? -1 : 1;
  }
  return 0;
}

RowGroups GroupRows(const io::Table& table, std::span<const size_t> keys, bool drop_missing) {
  const size_t n = table.rows();
  std::vector<std::vector<uint64_t>> words;
  words.reserve(keys.size());
  for (const size_t k : keys) words.push_back(KeyWords(table.column(k)));
  RowGroups g;
  g.of_row.assign(n, kMissingRow);
  // Open addressing over the rows' key words: no allocation per row.
  size_t capacity = 16;
  while (capacity < n * 2) capacity <<= 1;
  std::vector<uint32_t> slot_row(capacity, kMissingRow);  // a group's first row
  std::vector<uint32_t> slot_group(capacity, 0);
  const uint64_t mask = capacity - 1;
  for (size_t r = 0; r < n; ++r) {
    if (drop_missing && AnyKeyMissing(table, keys, r)) continue;
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (const auto& w : words) h = Mix(h ^ w[r]);
    for (uint64_t s = h & mask;; s = (s + 1) & mask) {
      const uint32_t other = slot_row[s];
      if (other == kMissingRow) {
        slot_row[s] = static_cast<uint32_t>(r);
        slot_group[s] = static_cast<uint32_t>(g.first_row.size());
        g.of_row[r] = slot_group[s];
        g.first_row.push_back(static_cast<uint32_t>(r));
        break;
      }
      bool same = true;
      for (const auto& w : words) same = same && w[other] == w[r];
      if (same) {
        g.of_row[r] = slot_group[s];
        break;
      }
    }
  }
  return g;
}

std::vector<uint32_t> StableOrder(const io::Table& table, std::span<const size_t> k,
                                  std::span<const SortKey> keys) {
  std::vector<uint32_t> order(table.rows());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return CompareRows(table, k, a, table, k, b, keys) < 0;
  });
  return order;
}

}  // namespace coupler::relational
