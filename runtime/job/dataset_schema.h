// The columns of the CSV an import_csv node reads, for the plan's column checks: the default
// ValidationEnv::dataset_schema of `coupler plan`, `coupler run` and the coordinator's intake.
#pragma once

#include <optional>

#include "runtime/io/column_schema.h"
#include "runtime/job/job_graph.h"

namespace coupler::job {

// Reads the start of the node's CSV and decides its columns as every import task will
// (io::InferCsvSchema with the node's header, label_column, columns, dtypes and na_values).
// nullopt when the file cannot be read or the inference refuses it: the import task then
// reports the problem itself, with its line and column.
std::optional<io::TableSchema> CsvHeaderSchema(const NodeSpec& import_node);

}  // namespace coupler::job
