// Finds the {name} placeholders of an op's command and how the shell would read each one.
// One pass over the text, no backtracking: a command is user input, and its length must cost
// time in proportion, never stack.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace coupler::job {

struct PlaceholderUse {
  // Where sh would read the placeholder. Values are substituted already shell-quoted, and
  // only kPlain keeps that quoting intact: inside '...' or "..." the value's own quotes end
  // the user's, after a backslash its opening quote is taken literally, and in a comment a
  // newline in the value ends the comment.
  enum class Context { kPlain, kSingleQuotes, kDoubleQuotes, kAfterBackslash, kComment };
  std::string name;   // "input" for {input}
  size_t offset = 0;  // of the '{' in the command
  Context context = Context::kPlain;
};

// Every {identifier} in `command` (a letter or '_', then letters, digits or '_'), as the
// worker substitutes them, with the shell's reading at that point: '...' and "..." as sh
// quotes, a backslash escaping the next character outside single quotes, and a '#' that
// starts a word making the rest of the line a comment.
std::vector<PlaceholderUse> FindPlaceholders(std::string_view command);

// "inside double quotes", "right after a backslash", ... for messages.
std::string_view ContextName(PlaceholderUse::Context context);

}  // namespace coupler::job
