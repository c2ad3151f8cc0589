// The dictionaries of categorical columns as JSON: in an .npz shard one member per column,
// "<column>.dictionary.json", a list ["a", "b", ...] whose index is the int32 code in
// "<column>.npy"; beside an .npy of records (a command's output, or a shard written by an
// earlier release), the sidecar "<shard>.dict.json", one object {"column": [...], ...}. Either
// way a numpy user maps codes back to strings with json alone. CSV text is bytes, not always
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

// One column's dictionary as a JSON list, and back (InvalidArgument with the byte offset).
std::string EncodeDictionary(const Column::Dictionary& dictionary);
Result<Column::Dictionary> DecodeDictionary(std::string_view json);

// InvalidArgument naming the column and the code when a code of the (int32, loaded) column is
// outside [-1, dictionary_size).
Status CheckCodes(const Column& column, size_t dictionary_size);

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
