#include "runtime/job/spec_limits.h"

#include <fmt/format.h>

namespace coupler::job {

std::string NestingTooDeepMessage() {
  return fmt::format("nested more than {} levels deep (lists and mappings inside one another); "
                     "a spec may nest at most {}",
                     kMaxSpecDepth, kMaxSpecDepth);
}

Status CheckSpecSize(uint64_t bytes) {
  if (bytes <= kMaxSpecBytes) return Status::Ok();
  return InvalidArgument(fmt::format("spec is {:.1f} MiB, over the {} MiB limit",
                                     static_cast<double>(bytes) / (1 << 20), kMaxSpecBytes >> 20));
}

}  // namespace coupler::job
