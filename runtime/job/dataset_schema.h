// The columns of the CSV an import_csv node reads, for the plan's column checks: the default
// ValidationEnv::dataset_schema of `coupler plan`, `coupler run` and the coordinator's intake.
#pragma once

#include <optional>
#include <string_view>

#include "runtime/io/column_schema.h"
#include "runtime/job/job_graph.h"

namespace coupler::job {

// Reads the start of the node's CSV. nullopt when the file cannot be read or has no first line
// (the import task reports that itself).
std::optional<io::TableSchema> CsvHeaderSchema(const NodeSpec& import_node);

// From the file's first bytes: the header's names (c0, c1, ... without a header), label_column
// int32, a column with text among its first 200 values categorical, every other float32.
std::optional<io::TableSchema> SchemaFromCsvPrefix(std::string_view prefix, bool header,
                                                   std::string_view label_column);

}  // namespace coupler::job
