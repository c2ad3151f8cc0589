// Strict parsing of the scalars users write in specs: "8" is an int, "8.5" is not; "4GiB" is a
// size. Strict so a typo fails validation instead of silently becoming a default.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace coupler::job {

std::optional<int64_t> ParseInt(std::string_view s);
// True for text made of an optional sign and digits, however many: "a number too large for
// an int" must not be reported as "not a number".
bool LooksLikeInteger(std::string_view s);
std::optional<double> ParseFloat(std::string_view s);  // finite numbers only
std::optional<bool> ParseBool(std::string_view s);     // true/false/yes/no/on/off

// Levenshtein distance, for "did you mean" hints.
size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace coupler::job

namespace coupler::job {

// The candidate closest to `word` when close enough to be a plausible typo, else "".
std::string NearestName(std::string_view word, const std::vector<std::string>& candidates);
// "did you mean 'x'?" or "" — ready for Diagnostic::hint.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace coupler::job
