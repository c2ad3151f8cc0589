// Readers from spec text to a RawValue tree. YAML goes through yaml-cpp's event parser (its
// node tree costs 3x more than the events); JSON, what generators of big graphs write, goes
// through rapidjson first, an order of magnitude faster, and falls back to YAML when the text
// is YAML in JSON-like clothing.
#pragma once

#include <optional>
#include <string_view>

#include "runtime/job/diagnostics.h"
#include "runtime/job/raw_value.h"

namespace coupler::job {

// nullopt, with a diagnostic, when the text is not one YAML (or JSON) document.
std::optional<RawValue> ReadSpecText(std::string_view text, Diagnostics& diags);

// Strict JSON only. nullopt without a diagnostic when the text is not JSON (the caller may try
// YAML), nullopt with one when it is JSON past a limit of spec_limits.h.
std::optional<RawValue> ReadJson(std::string_view text, Diagnostics& diags);

}  // namespace coupler::job
