// The dictionary sidecar of a shard with categorical columns: "<shard>.dict.json", one JSON
// object {"column": ["a", "b", ...], ...} whose list index is the int32 code in the .npy, so a
// numpy user maps codes back to strings with json.load alone. CSV text is bytes, not always
// UTF-8: valid UTF-8 is written as is (control characters, '"' and '\' escaped), and each byte
// that is not valid UTF-8 as the lone surrogate \udc80..\udcff, Python's "surrogateescape",
// so s.encode("utf-8", "surrogateescape") gives the original bytes back. Pure: text in, text out.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/io/table.h"
#include "runtime/status.h"

namespace coupler::io {

// "<shard>.dict.json" beside the shard.
std::string DictionarySidecarPath(std::string_view shard_path);

// True when some column of `table` is categorical (it then needs a sidecar).
bool HasDictionaries(const Table& table);

// The sidecar's text for every categorical column of `table`, in column order.
std::string EncodeDictionaries(const Table& table);

using NamedDictionary = std::pair<std::string, Column::Dictionary>;

// Parses a sidecar's text. InvalidArgument (with the byte offset) for anything but an object of
// string lists, or a name given twice.
Result<std::vector<NamedDictionary>> DecodeDictionaries(std::string_view json);

// Gives each named column its dictionary. InvalidArgument when a name is not an int32 column of
// `table` or a code is outside [-1, size): the sidecar does not belong to this shard.
Status AttachDictionaries(Table& table, std::vector<NamedDictionary> dictionaries);

}  // namespace coupler::io
