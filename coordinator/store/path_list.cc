#include "coordinator/store/path_list.h"

namespace coupler::store {

void EncodePathList(const std::vector<std::string>& paths, std::string* out) {
  out->clear();
  for (const std::string& path : paths) {
    for (char c : path) {
      if (c == '\\') {
        out->append("\\\\");
      } else if (c == '\n') {
        out->append("\\n");
      } else {
        out->push_back(c);
      }
    }
    out->push_back('\n');
  }
}

Result<std::vector<std::string>> DecodePathList(std::string_view text) {
  std::vector<std::string> paths;
  std::string current;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      paths.push_back(std::move(current));
      current.clear();
    } else if (c == '\\') {
      if (i + 1 == text.size() || (text[i + 1] != '\\' && text[i + 1] != 'n')) {
        return InvalidArgument("malformed path list: bad escape at byte " + std::to_string(i));
      }
      current.push_back(text[i + 1] == 'n' ? '\n' : '\\');
      ++i;
    } else {
      current.push_back(c);
    }
  }
  if (!text.empty() && text.back() != '\n') {
    return InvalidArgument("malformed path list: last path is not terminated");
  }
  return paths;
}

}  // namespace coupler::store
