// Small string columns for the relational ops' tests: codes into a dictionary, read back as text.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/io/table.h"

namespace coupler::relational::testing {

inline io::Column Strings(std::string name, std::vector<int32_t> codes,
                          std::vector<std::string> dictionary) {
  io::Column c = io::Column::Int32(std::move(name), std::move(codes));
  c.set_dictionary(std::make_shared<io::Column::Dictionary>(std::move(dictionary)));
  return c;
}

// Row r's string, "<NA>" for a missing one.
inline std::string StringAt(const io::Column& c, size_t r) {
  const int32_t code = c.values<int32_t>()[r];
  return code < 0 ? "<NA>" : c.dictionary()->at(static_cast<size_t>(code));
}

}  // namespace coupler::relational::testing
