// The reason an admin gives for a ban or a GPU fence: kept in the state, shown in `coupler
// workers`, on the page and in the log. One line of text, so it can neither forge log lines
// nor grow the state without bound.
#pragma once

#include <string_view>

#include "runtime/status.h"

namespace coupler::coordinator {

inline constexpr size_t kMaxOperatorReasonBytes = 512;

// InvalidArgument naming `what` ("a ban", "a fence") when the reason is empty, longer than
// kMaxOperatorReasonBytes or holds a control character (a newline included).
Status CheckOperatorReason(std::string_view reason, std::string_view what);

}  // namespace coupler::coordinator
