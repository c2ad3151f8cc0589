// Unguessable tokens (128 bits from the kernel's CSPRNG, as hex): a gang's launch secret, a
// workdir marker's contents.
#pragma once

#include <string>

namespace coupler::util {

// 32 lowercase hex digits. Aborts only if the kernel cannot give randomness at all.
std::string RandomToken();

}  // namespace coupler::util
