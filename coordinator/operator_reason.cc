#include "coordinator/operator_reason.h"

#include <string>

namespace coupler::coordinator {

Status CheckOperatorReason(std::string_view reason, std::string_view what) {
  if (reason.empty()) {
    return InvalidArgument(std::string(what) +
                           " needs a reason (--reason TEXT): it is what the next operator reads");
  }
  if (reason.size() > kMaxOperatorReasonBytes) {
    return InvalidArgument(std::string(what) + "'s reason is " + std::to_string(reason.size()) +
                           " bytes; at most " + std::to_string(kMaxOperatorReasonBytes));
  }
  for (const char c : reason) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      return InvalidArgument(std::string(what) +
                             "'s reason must be one line of text (it holds a control character)");
    }
  }
  return Status::Ok();
}

}  // namespace coupler::coordinator
