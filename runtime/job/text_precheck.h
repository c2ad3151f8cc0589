// A lexical pass over spec text before yaml-cpp sees it. yaml-cpp accepts some broken input
// (NUL bytes read as escapes, an unclosed quote swallowing the rest of the file) and words
// other errors in parser jargon at the wrong place; this pass catches those cases and records
// where brackets opened, so the error points at the cause.
#pragma once

#include <optional>
#include <string_view>

#include "runtime/job/diagnostics.h"

namespace coupler::job {

struct TextFacts {
  std::optional<SourcePos> unclosed_bracket;  // the innermost '[' or '{' never closed
  char unclosed_bracket_char = 0;
};

// Adds a diagnostic and returns false for binary or non-UTF-8 text.
bool CheckSpecBytes(std::string_view text, Diagnostics& diags);

// By YAML's lexical rules (quotes, comments, flow brackets, indentation and "- ", block
// scalars): adds a diagnostic and returns false for an unterminated quoted scalar or for lists
// and mappings, flow and block together, nested deeper than `max_depth` (yaml-cpp's parser
// recurses once per level, so this runs before it); records an unclosed bracket in `facts`
// for a better parser error later.
bool CheckYamlLexically(std::string_view text, Diagnostics& diags, TextFacts& facts,
                        int max_depth = 64);

}  // namespace coupler::job
