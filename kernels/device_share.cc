#include "kernels/device_share.h"

#include <algorithm>
#include <string>

#include "runtime/util/byte_size.h"

namespace coupler::kernels {
namespace {

thread_local uint64_t share_limit = 0;  // 0: no share
thread_local uint64_t share_used = 0;

}  // namespace

ScopedDeviceShare::ScopedDeviceShare(uint64_t limit_bytes)
    : saved_limit_(share_limit), saved_used_(share_used) {
  share_limit = limit_bytes;
  share_used = 0;
}

ScopedDeviceShare::~ScopedDeviceShare() {
  share_limit = saved_limit_;
  share_used = saved_used_;
}

Status ChargeDeviceShare(size_t bytes) {
  if (share_limit == 0) return Status::Ok();
  if (bytes > share_limit - std::min(share_used, share_limit)) {
    return ResourceExhausted("out of this task's GPU share: allocating " +
                             util::FormatBytes(bytes) + " with " +
                             util::FormatBytes(share_used) + " held, of the " +
                             util::FormatBytes(share_limit) +
                             " it asked for (resources.gpu_memory); ask for more");
  }
  share_used += bytes;
  return Status::Ok();
}

void ReturnDeviceShare(size_t bytes) noexcept {
  if (share_limit == 0) return;
  share_used -= std::min<uint64_t>(bytes, share_used);
}

uint64_t DeviceShareUsed() { return share_limit == 0 ? 0 : share_used; }

}  // namespace coupler::kernels
