// A parser for the small subset of Python literals a .npy header dict uses: dicts with string
// keys, lists, tuples, strings, ints, True/False/None. Input is untrusted (any file a user points
// at), so it is bounded in depth and reports the offset of the first problem.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/status.h"

namespace coupler::io {

struct PyEntry;

struct PyValue {
  enum class Kind { kNone, kBool, kInt, kString, kTuple, kList, kDict };

  Kind kind = Kind::kNone;
  bool boolean = false;
  int64_t integer = 0;
  std::string text;                                      // kString
  std::vector<PyValue> items;                            // kTuple, kList
  std::vector<PyEntry> entries;                          // kDict, in source order

  // nullptr when a dict has no such key.
  const PyValue* Get(std::string_view key) const;
};

// A named struct, not std::pair: a pair of an incomplete PyValue does not compile with clang
// over libstdc++ 12 (the fuzz build).
struct PyEntry {
  std::string key;
  PyValue value;
};

// "dict", "string", ...: for messages such as "'shape' must be a tuple, got a string".
std::string_view PyKindName(PyValue::Kind kind);

// The whole text must be one literal (surrounding whitespace allowed). InvalidArgument says
// what was expected and at which byte offset.
Result<PyValue> ParsePyLiteral(std::string_view text);

// Python's repr() of a str whose bytes are UTF-8, as numpy writes field names: single quotes
// unless the text holds ' and no ", backslash escapes for quotes and control characters.
std::string PyRepr(std::string_view text);

}  // namespace coupler::io
