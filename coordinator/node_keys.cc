#include "coordinator/node_keys.h"

#include <cstdio>
#include <map>
#include <type_traits>

#include "runtime/io/content_hash.h"

namespace coupler::coordinator {
namespace {

// Length-prefixed fields, so no two different inputs can write the same bytes.
void Put(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
}

void PutParam(std::string& out, const job::ParamValue& value) {
  out += std::to_string(value.index());  // the type is part of the value: 1 is not "1"
  std::visit(
      [&out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          Put(out, v ? "true" : "false");
        } else if constexpr (std::is_same_v<T, int64_t>) {
          Put(out, std::to_string(v));
        } else if constexpr (std::is_same_v<T, double>) {
          char buf[40];
          std::snprintf(buf, sizeof buf, "%.17g", v);
          Put(out, buf);
        } else if constexpr (std::is_same_v<T, std::string>) {
          Put(out, v);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          Put(out, std::to_string(v.size()));
          for (const auto& s : v) Put(out, s);
        } else {
          Put(out, std::to_string(v.size()));
          for (const auto& e : v) {
            Put(out, e.key);
            Put(out, e.value);
          }
        }
      },
      value);
}

// The command's words with shell quoting undone: '...' literal, "..." with \" and \\, and a
// backslash outside quotes escaping the next character. Operators (; | &) end a word.
std::vector<std::string> ShellWords(std::string_view command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  auto end_word = [&] {
    if (in_word) words.push_back(std::move(word));
    word.clear();
    in_word = false;
  };
  for (size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (c == '\'' ) {
      const size_t close = command.find('\'', i + 1);
      if (close == std::string_view::npos) break;
      word.append(command.substr(i + 1, close - i - 1));
      in_word = true;
      i = close;
    } else if (c == '"') {
      in_word = true;
      for (++i; i < command.size() && command[i] != '"'; ++i) {
        if (command[i] == '\\' && i + 1 < command.size()) ++i;
        word.push_back(command[i]);
      }
    } else if (c == '\\' && i + 1 < command.size()) {
      word.push_back(command[++i]);
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '|' || c == '&' ||
               c == '(' || c == ')' || c == '<' || c == '>') {
      end_word();
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  end_word();
  return words;
}

}  // namespace

std::vector<std::string> CommandFilesUnder(std::string_view command, std::string_view folder) {
  std::vector<std::string> files;
  if (folder.empty()) return files;
  const std::string prefix = folder.ends_with('/') ? std::string(folder) : std::string(folder) + "/";
  for (std::string& word : ShellWords(command)) {
    // `--config=/spec/dir/x.yaml`: the path after the '='.
    const size_t eq = word.find('=');
    if (!word.starts_with(prefix) && eq != std::string::npos) word.erase(0, eq + 1);
    if (word.size() > prefix.size() && word.starts_with(prefix) &&
        word.find("/../") == std::string::npos && !word.ends_with("/..")) {
      files.push_back(std::move(word));
    }
  }
  return files;
}

Result<std::vector<std::string>> NodeKeys(const job::JobGraph& graph, const plan::Plan& plan,
                                          const DatasetListing& datasets, const FileHasher& hash) {
  std::map<size_t, std::string> by_graph_node;  // graph node index -> key
  std::vector<std::string> keys(plan.nodes.size());
  // Plan nodes come by stage: every node's inputs have their keys before it.
  for (size_t p = 0; p < plan.nodes.size(); ++p) {
    const plan::PlanNode& pn = plan.nodes[p];
    const job::NodeSpec& node = graph.nodes[pn.node_index];
    std::string text = "coupler-node-key-1";
    Put(text, pn.op);
    Put(text, job::CouplingName(pn.coupling));
    Put(text, std::to_string(pn.ranks));
    Put(text, std::to_string(node.params.size()));
    for (const auto& [name, value] : node.params) {  // a std::map: sorted by name
      Put(text, name);
      PutParam(text, value);
    }
    Put(text, std::to_string(node.resolved_inputs.size()));
    for (const job::InputRef& in : node.resolved_inputs) {
      if (in.kind == job::InputRef::Kind::kNode) {
        Put(text, "node");
        Put(text, by_graph_node[in.node_index]);
        continue;
      }
      std::vector<std::string> files;
      if (in.kind == job::InputRef::Kind::kFile) {
        Put(text, "file");
        files.push_back(in.path);
      } else {
        Put(text, "dir");
        if (auto it = datasets.find(in.path); it != datasets.end()) files = it->second;
      }
      Put(text, std::to_string(files.size()));
      for (const std::string& f : files) {
        Result<uint64_t> h = hash(f);
        if (!h.ok()) return h.status().WithContext("node '" + node.id + "': input " + f);
        // The name inside a dataset folder counts (shard order); the folder's own path does
        // not: the same bytes copied elsewhere are the same input.
        Put(text, in.kind == job::InputRef::Kind::kFile ? std::string() : f.substr(f.rfind('/') + 1));
        Put(text, io::HashHex(*h));
      }
    }
    // The files a command names in the spec's folder: its scripts and configs.
    if (pn.op == "exec" || pn.op == "mpi_exec") {
      const auto command = node.params.find("command");
      const std::string* line =
          command == node.params.end() ? nullptr : std::get_if<std::string>(&command->second);
      for (const std::string& f : line ? CommandFilesUnder(*line, graph.base_dir)
                                       : std::vector<std::string>{}) {
        Result<uint64_t> h = hash(f);
        if (!h.ok()) continue;  // not a file to hash: an output, a folder, a flag
        Put(text, "command file");
        Put(text, f.substr(graph.base_dir.size()));
        Put(text, io::HashHex(*h));
      }
    }
    keys[p] = io::HashHex(io::Xxh64(text, 0)) + io::HashHex(io::Xxh64(text, 0x636f75706c6572ULL));
    by_graph_node[pn.node_index] = keys[p];
  }
  return keys;
}

}  // namespace coupler::coordinator
