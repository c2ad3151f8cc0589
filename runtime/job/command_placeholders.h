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

// 'text' for /bin/sh: single quotes, with each ' written as '\''.
std::string ShellQuote(std::string_view text);

// The placeholder the validator itself replaces: the folder holding the spec, known where the
// spec is read and nowhere else (a worker sees only resolved paths), so a command can name a
// script kept beside the spec.
inline constexpr std::string_view kSpecDirPlaceholder = "spec_dir";

// `command` with every {spec_dir} replaced by `spec_dir`, shell-quoted.
std::string SubstituteSpecDir(std::string_view command, std::string_view spec_dir);

}  // namespace coupler::job
