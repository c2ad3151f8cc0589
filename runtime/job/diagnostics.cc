#include "runtime/job/diagnostics.h"

#include <algorithm>

namespace coupler::job {

namespace {

// Spec text can hold anything; the terminal gets printable text only.
std::string Printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7F) {
      static const char kHex[] = "0123456789ABCDEF";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string Diagnostic::ToString() const {
  std::string out = file.empty() ? std::string("<spec>") : file;
  if (pos.line > 0) {
    out += ":" + std::to_string(pos.line);
    if (pos.column > 0) out += ":" + std::to_string(pos.column);
  }
  out += ": error: ";
  if (!node.empty()) out += "node '" + node + "': ";
  if (!field.empty()) out += "field '" + field + "': ";
  out += message;
  if (!hint.empty()) out += "; " + hint;
  return Printable(out);
}

void Diagnostics::Add(SourcePos pos, std::string node, std::string field, std::string message,
                      std::string hint) {
  ++total_;
  if (items_.size() >= cap_) return;
  items_.push_back(Diagnostic{file_, pos, std::move(node), std::move(field), std::move(message),
                              std::move(hint)});
}

std::string Diagnostics::ToString() const {
  // In file order, whichever check found them first.
  std::vector<const Diagnostic*> sorted;
  for (const auto& d : items_) sorted.push_back(&d);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Diagnostic* a, const Diagnostic* b) {
    return std::pair(a->pos.line, a->pos.column) < std::pair(b->pos.line, b->pos.column);
  });
  std::string out;
  for (const auto* d : sorted) out += d->ToString() + "\n";
  if (total_ > items_.size()) {
    out += file_ + ": ... and " + std::to_string(total_ - items_.size()) + " more errors\n";
  }
  return out;
}

}  // namespace coupler::job
