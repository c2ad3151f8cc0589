#include "runtime/plan/broadcast_choice.h"

#include <sys/stat.h>

#include <filesystem>
#include <set>
#include <system_error>

#include "runtime/ops/op_def.h"
#include "runtime/ops/op_registry.h"
#include "runtime/util/byte_size.h"

namespace coupler::plan {
namespace {

namespace fs = std::filesystem;

// Producers whose output is no bigger than what they read (as bytes on disk: a CSV's text is at
// least its columns' values).
const std::set<std::string, std::less<>> kNotBigger = {"import_csv", "filter", "select",
                                                       "dedup", "sort", "group_by"};

std::optional<uint64_t> PathBytes(const std::string& path) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (error) return std::nullopt;
  if (fs::is_regular_file(status)) {
    const uintmax_t size = fs::file_size(path, error);
    return error ? std::nullopt : std::optional<uint64_t>(size);
  }
  if (!fs::is_directory(status)) return std::nullopt;
  uint64_t total = 0;
  for (fs::directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
    if (it->is_regular_file(error)) total += it->file_size(error);
  }
  return error ? std::nullopt : std::optional<uint64_t>(total);
}

std::optional<uint64_t> InputBytes(const job::JobGraph& graph, const job::InputRef& in, int depth) {
  if (in.kind != job::InputRef::Kind::kNode) return PathBytes(in.path);
  if (depth > 64 || in.node_index >= graph.nodes.size()) return std::nullopt;
  const job::NodeSpec& producer = graph.nodes[in.node_index];
  if (kNotBigger.count(producer.op) == 0 || producer.resolved_inputs.empty()) return std::nullopt;
  uint64_t total = 0;
  // A node that maps every input (a join's both sides) is not in kNotBigger: the first input
  // is what the others read, and import_csv reads all its files.
  for (const job::InputRef& from : producer.resolved_inputs) {
    const std::optional<uint64_t> bytes = InputBytes(graph, from, depth + 1);
    if (!bytes) return std::nullopt;
    total += *bytes;
    if (producer.op != "import_csv") break;
  }
  return total;
}

template <typename T>
const T* ParamOf(const job::NodeSpec& node, const std::string& name) {
  const auto it = node.params.find(name);
  return it == node.params.end() ? nullptr : std::get_if<T>(&it->second);
}

}  // namespace

std::vector<BroadcastChoice> ChooseBroadcasts(job::JobGraph& graph) {
  std::vector<BroadcastChoice> choices;
  const ops::OpRegistry& registry = ops::OpRegistry::Builtin();
  for (job::NodeSpec& node : graph.nodes) {
    const ops::OpDef* op = registry.Find(node.op);
    if (op == nullptr || op->broadcast_param.empty()) continue;
    const std::string* value = ParamOf<std::string>(node, op->broadcast_param);
    if (value == nullptr || *value != "auto") continue;
    BroadcastChoice choice;
    choice.node = node.id;
    const std::string* how = ParamOf<std::string>(node, "how");
    const std::string* partitions = ParamOf<std::string>(node, std::string(ops::kPartitionsParam));
    if (how != nullptr && (*how == "right" || *how == "outer")) {
      choice.why = "a " + *how + " join cannot broadcast";
    } else if (partitions == nullptr) {
      choice.why = "`partitions` is set";
    } else if (node.resolved_inputs.size() < 2) {
      choice.why = "no right input";
    } else {
      choice.right_bytes = InputBytes(graph, node.resolved_inputs[1], 0);
      if (!choice.right_bytes) {
        choice.why = "the right input's size is not known before it runs";
      } else {
        choice.broadcast = *choice.right_bytes <= kAutoBroadcastBytes;
        choice.why = "right input about " + util::FormatBytes(*choice.right_bytes) +
                     (choice.broadcast ? ", at most " : ", more than ") +
                     util::FormatBytes(kAutoBroadcastBytes);
      }
    }
    node.params[op->broadcast_param] = job::ParamValue(choice.broadcast);
    choices.push_back(std::move(choice));
  }
  return choices;
}

}  // namespace coupler::plan
