// write_csv: each shard of its input as a CSV file beside where its shard would be
// (`part-00003.csv`), for the tools that read nothing else: a header line, then one line per
// row. Strings are decoded through their dictionary and quoted (RFC 4180) when they hold the
// delimiter, a quote, a line break or blanks at an end; a missing value (NaN, NaT, the int64
// minimum, code -1) is an empty field; floats are written in the shortest form that reads back
// to the same float32 or float64, datetimes as ISO 8601 in UTC, bools as True/False (pandas'
// to_csv spellings, so pd.read_csv reads the file back to the same values).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>

#include "runtime/io/atomic_file.h"
#include "runtime/io/unique_fd.h"
#include "runtime/precision/half.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"

namespace coupler::worker {
namespace {

// Text is written out in pieces of about this size.
constexpr size_t kFlushBytes = 4u << 20;

// All of `text` to `fd`; a full disk is ResourceExhausted, so it may succeed elsewhere.
Status WriteAll(int fd, std::string_view text, const std::string& path) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      const std::string what = path + ": write: " + std::strerror(e);
      return e == ENOSPC || e == EDQUOT ? ResourceExhausted(what) : Internal(what);
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

void AppendQuoted(std::string& out, std::string_view text, char delimiter) {
  const bool quote = text.find_first_of(std::string{delimiter} + "\"\r\n") != std::string::npos ||
                     (!text.empty() && (text.front() == ' ' || text.back() == ' ' ||
                                        text.front() == '\t' || text.back() == '\t'));
  if (!quote) {
    out.append(text);
    return;
  }
  out.push_back('"');
  for (const char c : text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}

template <typename T>
void AppendNumber(std::string& out, T value) {
  char buf[40];
  const auto r = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, r.ptr);
}

// Days since the epoch to a civil date (Howard Hinnant's civil_from_days).
void CivilFromDays(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2 ? 1 : 0;
}

// "2024-01-01 00:00:01", with ".123", ".123456" or ".123456789" when there is a fraction.
void AppendDatetime(std::string& out, int64_t ns) {
  int64_t seconds = ns / 1'000'000'000;
  int64_t fraction = ns % 1'000'000'000;
  if (fraction < 0) {
    fraction += 1'000'000'000;
    --seconds;
  }
  int64_t days = seconds / 86400;
  int64_t rest = seconds % 86400;
  if (rest < 0) {
    rest += 86400;
    --days;
  }
  int64_t y = 0;
  unsigned m = 0, d = 0;
  CivilFromDays(days, y, m, d);
  char buf[48];
  int n = std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u %02lld:%02lld:%02lld",
                        static_cast<long long>(y), m, d, static_cast<long long>(rest / 3600),
                        static_cast<long long>(rest / 60 % 60), static_cast<long long>(rest % 60));
  out.append(buf, static_cast<size_t>(n));
  if (fraction == 0) return;
  n = std::snprintf(buf, sizeof buf, ".%09lld", static_cast<long long>(fraction));
  size_t len = static_cast<size_t>(n);
  if (fraction % 1000 == 0) len -= 3;
  if (fraction % 1'000'000 == 0) len -= 3;
  out.append(buf, len);
}

void AppendField(std::string& out, const io::Column& c, size_t row, char delimiter) {
  switch (c.dtype()) {
    case ElementType::kFloat32: {
      const float v = c.values<float>()[row];
      if (!std::isnan(v)) AppendNumber(out, v);
      return;
    }
    case ElementType::kFloat64: {
      const double v = c.values<double>()[row];
      if (!std::isnan(v)) AppendNumber(out, v);
      return;
    }
    case ElementType::kFloat16:
    case ElementType::kBFloat16: {
      const uint16_t bits = c.values<uint16_t>()[row];
      const float v = c.dtype() == ElementType::kFloat16 ? precision::HalfBitsToFloat(bits)
                                                         : precision::Bf16BitsToFloat(bits);
      if (!std::isnan(v)) AppendNumber(out, v);
      return;
    }
    case ElementType::kInt32: {
      const int32_t v = c.values<int32_t>()[row];
      if (!c.categorical()) {
        AppendNumber(out, v);
      } else if (v >= 0 && static_cast<size_t>(v) < c.dictionary()->size()) {
        AppendQuoted(out, (*c.dictionary())[static_cast<size_t>(v)], delimiter);
      }
      return;
    }
    case ElementType::kInt64: {
      const int64_t v = c.values<int64_t>()[row];
      if (v != io::kMissingInt64) AppendNumber(out, v);
      return;
    }
    case ElementType::kDatetime64: {
      const int64_t v = c.values<int64_t>()[row];
      if (v != io::kMissingInt64) AppendDatetime(out, v);
      return;
    }
    case ElementType::kBool: out += c.values<uint8_t>()[row] != 0 ? "True" : "False"; return;
  }
}

}  // namespace

Status RunWriteCsv(const OpContext& context, OpReport& report) {
  COUPLER_ASSIGN_OR_RETURN(const std::string input, InputPath(context, 0, "[data shard]"));
  COUPLER_ASSIGN_OR_RETURN(const std::string shard_path, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(const std::string delimiter,
                           context.spec.params.Get<std::string>("delimiter"));
  if (delimiter.size() != 1 || delimiter == "\"" || delimiter == "\n" || delimiter == "\r") {
    return InvalidArgument("delimiter must be one character other than a quote or a line break");
  }
  COUPLER_ASSIGN_OR_RETURN(const io::Table table, ReadShard(input, report));
  // part-00003.npz -> part-00003.csv
  std::string output = shard_path;
  if (output.ends_with(".npz") || output.ends_with(".npy")) output.resize(output.size() - 4);
  output += ".csv";

  std::string text;
  for (size_t c = 0; c < table.num_columns(); ++c) {
    if (c > 0) text.push_back(delimiter[0]);
    AppendQuoted(text, table.column(c).name(), delimiter[0]);
  }
  text += "\n";
  // Written under a temporary name and renamed over the output: never half a file.
  COUPLER_RETURN_IF_ERROR(io::CreateParentDirectories(output));
  const std::string temp = io::TempPathFor(output);
  io::UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) return Internal(temp + ": cannot create: " + std::strerror(errno));
  auto fail = [&temp](Status s) {
    io::RemoveQuietly(temp);
    return s;
  };
  {
    KernelTimer timer(report.kernel_ms);
    for (size_t r = 0; r < table.rows(); ++r) {
      for (size_t c = 0; c < table.num_columns(); ++c) {
        if (c > 0) text.push_back(delimiter[0]);
        AppendField(text, table.column(c), r, delimiter[0]);
      }
      text.push_back('\n');
      if (text.size() >= kFlushBytes) {
        if (context.Cancelled()) return fail(Cancelled());
        if (Status s = WriteAll(fd.get(), text, output); !s.ok()) return fail(s);
        report.bytes_written += text.size();
        text.clear();
      }
    }
  }
  if (Status s = WriteAll(fd.get(), text, output); !s.ok()) return fail(s);
  report.bytes_written += text.size();
  if (::close(fd.Release()) != 0) return fail(Internal(output + ": close: " + std::strerror(errno)));
  COUPLER_RETURN_IF_ERROR(io::RenameOver(temp, output));
  report.output_paths.push_back(output);
  report.rows_in = report.rows_out = table.rows();
  return Status::Ok();
}

}  // namespace coupler::worker
