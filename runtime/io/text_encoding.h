// The text encodings import_csv reads: UTF-8 (checked, so a dictionary or a column name never
// holds bytes a JSON reader or Python refuses) and Latin-1 (ISO-8859-1, converted to UTF-8, as
// older spreadsheet exports are written). Pure functions over bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace coupler::io {

enum class TextEncoding : uint8_t { kUtf8 = 0, kLatin1 = 1 };

// "utf-8" (also "utf8"), "latin-1" (also "latin1", "iso-8859-1"); nullopt for anything else.
std::optional<TextEncoding> ParseTextEncoding(std::string_view name);

// The offset of the first byte that does not belong to well-formed UTF-8 (overlong forms,
// surrogates and code points past U+10FFFF included); nullopt when all of `text` is UTF-8.
std::optional<size_t> FirstInvalidUtf8(std::string_view text);

// Latin-1 bytes as UTF-8 (every byte is the code point of its value).
std::string Latin1ToUtf8(std::string_view text);

// True when every byte is ASCII: nothing to check or convert.
bool IsAscii(std::string_view text);

}  // namespace coupler::io
