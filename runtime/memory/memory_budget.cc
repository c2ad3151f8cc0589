#include "runtime/memory/memory_budget.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "runtime/check.h"

namespace coupler::memory {
namespace {

size_t Index(MemoryKind kind) { return static_cast<size_t>(kind); }

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A unit is a base (1000 or 1024) raised to a power; kept apart rather than as one number so
// that fractions can be scaled one small factor at a time without overflowing (see below).
struct Unit {
  size_t base = 1;
  int power = 0;
};

// "", "b" -> bytes; "k", "ki", "kib" -> 1024; "kb" -> 1000; likewise m, g, t.
bool ParseUnit(const std::string& unit, Unit* out) {
  if (unit.empty() || unit == "b") {
    *out = Unit{1, 0};
    return true;
  }
  static constexpr std::string_view kPrefixes = "kmgt";
  const size_t prefix = kPrefixes.find(unit[0]);
  if (prefix == std::string_view::npos) return false;
  const std::string_view rest = std::string_view(unit).substr(1);
  const int power = static_cast<int>(prefix) + 1;
  if (rest.empty() || rest == "i" || rest == "ib") {
    *out = Unit{1024, power};
    return true;
  }
  if (rest == "b") {
    *out = Unit{1000, power};
    return true;
  }
  return false;
}

Status BadSize(std::string_view text, std::string_view why) {
  return InvalidArgument("invalid byte size \"" + std::string(text) + "\": " + std::string(why) +
                         " (expected a number and an optional unit, e.g. 512MiB, 2GiB, 1.5GB, "
                         "64k or 4096)");
}

}  // namespace

std::string_view MemoryKindName(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kMaster: return "master weights";
    case MemoryKind::kGradient: return "gradients";
    case MemoryKind::kOptimizer: return "optimizer state";
    case MemoryKind::kComputeCopy: return "compute copies";
    case MemoryKind::kActivation: return "activations";
    case MemoryKind::kWorkspace: return "workspace";
    case MemoryKind::kData: return "input data";
  }
  return "unknown";
}

// --- DeviceBuffer -------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      kind_(other.kind_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = std::exchange(other.budget_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    kind_ = other.kind_;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { Release(); }

void DeviceBuffer::Release() noexcept {
  if (budget_ != nullptr) {
    if (data_ != nullptr) budget_->store_->Free(data_, bytes_);
    budget_->Return(bytes_, kind_);
  }
  budget_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

// --- MemoryBudget -------------------------------------------------------------------------

MemoryBudget::MemoryBudget(size_t limit_bytes, BufferStore* store)
    : limit_(limit_bytes), store_(store != nullptr ? store : &HostBufferStore::Instance()) {}

Result<DeviceBuffer> MemoryBudget::Allocate(size_t bytes, MemoryKind kind, std::string_view what) {
  DeviceBuffer buffer;
  buffer.kind_ = kind;
  if (bytes == 0) return buffer;  // nothing to charge or free; data() stays null

  // Written as a subtraction so a huge request cannot wrap around and pass.
  if (limit_ != 0 && bytes > limit_ - in_use_) {
    return ResourceExhausted("out of device memory: " + std::string(what) + " needs " +
                             FormatBytes(bytes) + ", " + FormatBytes(in_use_) + " of " +
                             FormatBytes(limit_) + " in use");
  }
  Result<void*> data = store_->Allocate(bytes, what);
  if (!data.ok()) {
    if (data.status().code() != StatusCode::kResourceExhausted) return data.status();
    // The store cannot back the request even though the budget allows it: still out of
    // memory, so callers back off the same way.
    std::string message = "out of device memory: allocating " + FormatBytes(bytes) + " for ";
    message += what;
    message += " failed ";
    message += store_->where();
    message += " (" + FormatBytes(in_use_) + " already in use)";
    return ResourceExhausted(message);
  }

  buffer.budget_ = this;
  buffer.data_ = *data;
  buffer.bytes_ = bytes;
  in_use_ += bytes;
  in_use_by_kind_[Index(kind)] += bytes;
  UpdatePeaks();
  return buffer;
}

size_t MemoryBudget::in_use(MemoryKind kind) const { return in_use_by_kind_[Index(kind)]; }

size_t MemoryBudget::peak(MemoryKind kind) const { return peak_by_kind_[Index(kind)]; }

void MemoryBudget::ResetPeaks() {
  peak_ = 0;
  peak_working_ = 0;
  peak_by_kind_.fill(0);
  UpdatePeaks();  // the peaks restart from what is held now, not from zero
}

void MemoryBudget::Return(size_t bytes, MemoryKind kind) noexcept {
  COUPLER_CHECK(in_use_by_kind_[Index(kind)] >= bytes && in_use_ >= bytes)
      << "returning " << bytes << " bytes of " << MemoryKindName(kind) << " never charged";
  in_use_ -= bytes;
  in_use_by_kind_[Index(kind)] -= bytes;
}

void MemoryBudget::UpdatePeaks() {
  peak_ = std::max(peak_, in_use_);
  for (size_t i = 0; i < kMemoryKindCount; ++i) {
    peak_by_kind_[i] = std::max(peak_by_kind_[i], in_use_by_kind_[i]);
  }
  const size_t working = in_use_by_kind_[Index(MemoryKind::kActivation)] +
                         in_use_by_kind_[Index(MemoryKind::kComputeCopy)] +
                         in_use_by_kind_[Index(MemoryKind::kWorkspace)];
  peak_working_ = std::max(peak_working_, working);
}

// --- Byte sizes ---------------------------------------------------------------------------

Result<size_t> ParseByteSize(std::string_view text) {
  constexpr size_t kMax = std::numeric_limits<size_t>::max();
  // Fraction digits are kept as numerator / 10^digits; 15 digits keeps numerator x 1024 below
  // 2^64 in the exact scaling below, and nobody writes a memory limit more precisely.
  constexpr size_t kMaxFractionDigits = 15;

  const std::string_view s = Trim(text);
  if (s.empty()) return BadSize(text, "empty");
  size_t pos = 0;
  if (!IsDigit(s[0])) {
    return BadSize(text, s[0] == '-' ? "negative" : "does not start with a digit");
  }

  size_t whole = 0;
  for (; pos < s.size() && IsDigit(s[pos]); ++pos) {
    const size_t digit = static_cast<size_t>(s[pos] - '0');
    if (whole > (kMax - digit) / 10) return BadSize(text, "too large");
    whole = whole * 10 + digit;
  }
  size_t numerator = 0;
  size_t denominator = 1;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    const size_t first = pos;
    for (; pos < s.size() && IsDigit(s[pos]); ++pos) {
      if (pos - first == kMaxFractionDigits) return BadSize(text, "too many decimal places");
      numerator = numerator * 10 + static_cast<size_t>(s[pos] - '0');
      denominator *= 10;
    }
    if (pos == first) return BadSize(text, "no digits after the decimal point");
  }
  while (pos < s.size() && IsSpace(s[pos])) ++pos;

  Unit unit;
  if (!ParseUnit(Lower(s.substr(pos)), &unit)) {
    return BadSize(text, "unknown unit \"" + std::string(s.substr(pos)) + "\"");
  }

  // whole x base^power, checked one factor at a time.
  size_t result = whole;
  for (int i = 0; i < unit.power; ++i) {
    if (result > kMax / unit.base) return BadSize(text, "too large");
    result *= unit.base;
  }
  // floor(numerator / denominator x base^power) exactly: carry quotient and remainder through
  // each factor, so "1.1GB" is 1100000000 and not one byte less from binary rounding.
  size_t quotient = 0;
  size_t remainder = numerator;  // value = quotient + remainder / denominator
  for (int i = 0; i < unit.power; ++i) {
    const size_t scaled = remainder * unit.base;
    quotient = quotient * unit.base + scaled / denominator;
    remainder = scaled % denominator;
  }
  if (result > kMax - quotient) return BadSize(text, "too large");
  return result + quotient;
}

std::string FormatBytes(size_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  constexpr size_t kUnitCount = sizeof(kUnits) / sizeof(kUnits[0]);
  double value = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  // Move up while the value would print as 1024.0 or more, so 1048575 B reads "1.0 MiB".
  while (value >= 1023.95 && unit + 1 < kUnitCount) {
    value /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f %s", value, kUnits[unit]);
  return buf;
}

}  // namespace coupler::memory
