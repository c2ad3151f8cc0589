#include "runtime/job/text_precheck.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/job/spec_limits.h"

namespace coupler::job {
namespace {

// Length of the UTF-8 sequence starting at text[i], or 0 when it is not valid UTF-8.
size_t Utf8Length(std::string_view text, size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || (len == 2 && c < 0xC2) || i + len > text.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return 0;
  }
  return len;
}

struct Open {
  char ch;
  SourcePos pos;
};

}  // namespace

bool CheckSpecBytes(std::string_view text, Diagnostics& diags) {
  // A spec is UTF-8 text without control characters other than tab, newline and CR.
  int line = 1, col = 1;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {  // printable ASCII: the common case, kept cheap
      ++i;
      ++col;
      continue;
    }
    if (c == '\n') {
      ++line;
      col = 1;
      ++i;
      continue;
    }
    if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7F) {
      diags.Add({line, col}, "", "",
                fmt::format("not valid YAML or JSON: control byte 0x{:02X} (is this a binary "
                            "file?)",
                            c));
      return false;
    }
    size_t len = Utf8Length(text, i);
    if (len == 0) {
      diags.Add({line, col}, "", "",
                fmt::format("not valid YAML or JSON: byte 0x{:02X} is not UTF-8 text (is this a "
                            "binary file?)",
                            c));
      return false;
    }
    i += len;
    ++col;
  }
  return true;
}

bool CheckYamlLexically(std::string_view text, Diagnostics& diags, TextFacts& facts,
                        int max_depth) {
  std::vector<Open> flow;
  // The block collections open around the current line, innermost last: the column (0-based)
  // their entries start at, and whether they are sequences. Columns only grow along the
  // stack, except that a mapping's value may be a sequence at the key's own column.
  struct Block {
    int column;
    bool sequence;
  };
  std::vector<Block> block;
  int line = 1, col = 1;
  char quote = 0;
  SourcePos quote_pos;
  char prev_significant = '\n';  // last non-space character on this line ('\n' = none yet)
  bool in_comment = false;
  int block_indent = -1;         // inside a | or > block scalar: its parent's indentation
  int line_indent = 0;
  bool at_line_start = true;
  bool block_line = false;       // this line starts in block context (not in quotes or flow)
  bool at_node_start = false;    // nothing yet since the line's indentation or the last "- "
  int node_col = -1;             // where the node after the last "- " starts (-1: not yet)
  bool line_has_key = false;
  auto too_deep = [&](SourcePos pos) {
    if (static_cast<int>(block.size() + flow.size()) <= max_depth) return false;
    diags.Add(pos, "", "", NestingTooDeepMessage());
    return true;
  };
  // An entry of a block collection starting at `column`: a new collection, or the next entry
  // of the innermost one.
  auto open_block = [&](int column, bool sequence) {
    // A key at a column where a mapping holds a sequence as its value ends that sequence.
    if (!sequence && block.size() >= 2 && block.back().sequence && block.back().column == column &&
        block[block.size() - 2].column == column) {
      block.pop_back();
    }
    const bool nested = block.empty() || block.back().column < column ||
                        (block.back().column == column && sequence && !block.back().sequence);
    if (!nested) return false;
    block.push_back({column, sequence});
    return too_deep({line, column + 1});
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      in_comment = false;
      // A block scalar header ("key: |", "key: >-") makes the following deeper lines text.
      if (quote == 0 && flow.empty() && (prev_significant == '|' || prev_significant == '>')) {
        block_indent = line_indent;
      }
      ++line;
      col = 1;
      prev_significant = '\n';
      at_line_start = true;
      line_indent = 0;
      continue;
    }
    if (at_line_start) {
      if (c == ' ') {
        ++line_indent;
        ++col;
        continue;
      }
      at_line_start = false;
      if (block_indent >= 0) {
        if (line_indent > block_indent || c == '\r') {
          // Still inside the block scalar: skip the line.
          while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
          continue;
        }
        block_indent = -1;
      }
      block_line = quote == 0 && flow.empty() && c != '#' && c != '\r';
      if (block_line) {
        // A line closes the block collections indented deeper than itself.
        while (!block.empty() && block.back().column > line_indent) block.pop_back();
        at_node_start = true;
        node_col = line_indent;
        line_has_key = false;
      }
    }
    if (in_comment) continue;
    if (quote != 0) {
      if (quote == '"' && c == '\\') {
        ++i;  // the escaped character cannot close the string
        col += 2;
        continue;
      }
      if (c == quote) {
        if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
          ++i;  // '' is an escaped quote inside single quotes
          col += 2;
          continue;
        }
        quote = 0;
        prev_significant = c;
      }
      ++col;
      continue;
    }
    const bool blank_next = i + 1 >= text.size() || text[i + 1] == ' ' || text[i + 1] == '\t' ||
                            text[i + 1] == '\n' || text[i + 1] == '\r';
    if (block_line && flow.empty() && c != ' ' && c != '\t') {
      if (node_col < 0) node_col = col - 1;
      if (at_node_start && (c == '-' || c == '?') && blank_next) {
        // "- " (a sequence entry) or "? " (an explicit key): a collection at this column, and
        // the entry's own node starts after it.
        if (open_block(col - 1, /*sequence=*/true)) return false;
        node_col = -1;
      } else {
        at_node_start = false;
        if (c == ':' && blank_next && !line_has_key) {
          line_has_key = true;  // "key: ": a mapping whose keys start where this node starts
          if (open_block(node_col, /*sequence=*/false)) return false;
        }
      }
    }
    // Quotes and brackets open a scalar or collection only where a value starts: first on
    // the line, after "key: " or "- ", or after [ { , : inside a flow collection.
    const bool after_space = i > 0 && (text[i - 1] == ' ' || text[i - 1] == '\t');
    const bool value_start =
        prev_significant == '\n' ||
        ((prev_significant == ':' || prev_significant == '-') && after_space) ||
        (!flow.empty() && (prev_significant == '[' || prev_significant == '{' ||
                           prev_significant == ',' || prev_significant == ':'));
    if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n')) {
      in_comment = true;
    } else if ((c == '"' || c == '\'') && value_start) {
      quote = c;
      quote_pos = {line, col};
    } else if ((c == '[' || c == '{') && (value_start || !flow.empty())) {
      // Inside a flow collection a bracket is always a bracket: plain scalars there cannot
      // hold one.
      flow.push_back({c, {line, col}});
      if (too_deep({line, col})) return false;
    } else if ((c == ']' || c == '}') && !flow.empty()) {
      flow.pop_back();
    }
    if (c != ' ' && c != '\t' && c != '\r' && !in_comment) prev_significant = c;
    ++col;
  }
  if (quote != 0) {
    diags.Add(quote_pos, "", "",
              fmt::format("not valid YAML or JSON: the {} string opened here is never closed",
                          quote == '"' ? "double-quoted" : "single-quoted"));
    return false;
  }
  if (!flow.empty()) {
    facts.unclosed_bracket = flow.back().pos;
    facts.unclosed_bracket_char = flow.back().ch;
  }
  return true;
}

}  // namespace coupler::job
