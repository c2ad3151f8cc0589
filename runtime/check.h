// COUPLER_CHECK: for bugs, not for bad input. A failed check logs where and why, then aborts;
// input errors go through Status instead.
#pragma once

#include <sstream>

namespace coupler::internal {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;

  template <typename T>
  CheckFailure& operator<<(const T& v) {
    stream_ << v;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

// Lets the macro below be used as an expression that accepts `<< extra`.
struct CheckVoidify {
  void operator&(CheckFailure&) {}
};

}  // namespace coupler::internal

#define COUPLER_CHECK(cond)                    \
  (cond) ? (void)0                             \
         : ::coupler::internal::CheckVoidify() & \
               ::coupler::internal::CheckFailure(__FILE__, __LINE__, #cond)

#define COUPLER_CHECK_OK(status_expr)                                          \
  do {                                                                        \
    const auto& coupler_check_status_ = (status_expr);                        \
    COUPLER_CHECK(coupler_check_status_.ok()) << coupler_check_status_.ToString(); \
  } while (0)
