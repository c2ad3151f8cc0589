#include "runtime/job/command_placeholders.h"

namespace coupler::job {
namespace {

bool IsIdentifierStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsIdentifierChar(char c) { return IsIdentifierStart(c) || (c >= '0' && c <= '9'); }
bool IsShellBlank(char c) { return c == ' ' || c == '\t' || c == '\n'; }

// The end of the {identifier} starting at `open` (one past its '}'), or 0 when none does.
size_t PlaceholderEnd(std::string_view s, size_t open) {
  size_t i = open + 1;
  if (i >= s.size() || !IsIdentifierStart(s[i])) return 0;
  while (i < s.size() && IsIdentifierChar(s[i])) ++i;
  return i < s.size() && s[i] == '}' ? i + 1 : 0;
}

}  // namespace

std::vector<PlaceholderUse> FindPlaceholders(std::string_view command) {
  using Context = PlaceholderUse::Context;
  std::vector<PlaceholderUse> out;
  Context quoting = Context::kPlain;  // kPlain, kSingleQuotes, kDoubleQuotes or kComment
  bool escaped = false;               // the previous character was an unquoted backslash
  for (size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    // The worker substitutes every {name} whatever surrounds it, so look for one first.
    if (c == '{') {
      if (const size_t end = PlaceholderEnd(command, i); end != 0) {
        out.push_back({std::string(command.substr(i + 1, end - i - 2)), i,
                       escaped ? Context::kAfterBackslash : quoting});
        escaped = false;
        i = end - 1;
        continue;
      }
    }
    if (escaped) {
      escaped = false;
      continue;
    }
    switch (quoting) {
      case Context::kSingleQuotes:
        if (c == '\'') quoting = Context::kPlain;
        break;
      case Context::kDoubleQuotes:
        if (c == '\\') {
          escaped = true;
        } else if (c == '"') {
          quoting = Context::kPlain;
        }
        break;
      case Context::kComment:
        if (c == '\n') quoting = Context::kPlain;
        break;
      case Context::kPlain:
      case Context::kAfterBackslash:
        if (c == '\\') {
          escaped = true;
        } else if (c == '\'') {
          quoting = Context::kSingleQuotes;
        } else if (c == '"') {
          quoting = Context::kDoubleQuotes;
        } else if (c == '#' && (i == 0 || IsShellBlank(command[i - 1]))) {
          quoting = Context::kComment;
        }
        break;
    }
  }
  return out;
}

std::string_view ContextName(PlaceholderUse::Context context) {
  switch (context) {
    case PlaceholderUse::Context::kPlain: return "unquoted";
    case PlaceholderUse::Context::kSingleQuotes: return "inside single quotes";
    case PlaceholderUse::Context::kDoubleQuotes: return "inside double quotes";
    case PlaceholderUse::Context::kAfterBackslash: return "right after a backslash";
    case PlaceholderUse::Context::kComment: return "inside a shell comment";
  }
  return "unquoted";
}

std::string ShellQuote(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string SubstituteSpecDir(std::string_view command, std::string_view spec_dir) {
  std::string out;
  size_t copied = 0;
  for (const PlaceholderUse& use : FindPlaceholders(command)) {
    if (use.name != kSpecDirPlaceholder) continue;
    out.append(command.substr(copied, use.offset - copied));
    out += ShellQuote(spec_dir);
    copied = use.offset + use.name.size() + 2;
  }
  out.append(command.substr(copied));
  return out;
}

}  // namespace coupler::job
