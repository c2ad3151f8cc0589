// import_csv's parser before and after a change, in one run: bench/csv_parse_compare.sh builds
// this file twice with the same flags, once against the kernel of a given revision (the old
// API: every column float32 from the header names) and once against the working tree's
// (-DNEW_KERNEL: the layout InferCsvLayout types, as import_csv parses). It reports the best
// CPU time of N parses of 1M rows, so neighbours on a shared machine do not count. The new
// kernel also parses the real-file case: 1% missing values and a string column.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <string>
#include <vector>
#include "kernels/csv_import.h"
using namespace coupler;
static std::string Numeric(size_t rows) {
  std::string text = "a,b,c,d,label\n";
  uint64_t s = 9;
  for (size_t r = 0; r < rows; ++r) {
    for (int c = 0; c < 4; ++c) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const float v = static_cast<float>((s >> 40) % 2000000) / 1000.0f - 1000.0f;
      text += std::to_string(v).substr(0, 9) + ",";
    }
    text += std::to_string(r % 10) + "\n";
  }
  return text;
}
// 4 float columns with 1% missing (empty or NA), one string column of 50 distinct values with
// 1% missing, and the label.
static std::string Mixed(size_t rows) {
  std::string text = "a,b,c,d,city,label\n";
  uint64_t s = 9;
  for (size_t r = 0; r < rows; ++r) {
    for (int c = 0; c < 4; ++c) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const float v = static_cast<float>((s >> 40) % 2000000) / 1000.0f - 1000.0f;
      if ((s >> 20) % 100 == 0) text += (s >> 30) % 2 ? "," : "NA,";
      else text += std::to_string(v).substr(0, 9) + ",";
    }
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    if ((s >> 20) % 100 == 0) text += ",";
    else text += "city" + std::to_string((s >> 33) % 50) + ",";
    text += std::to_string(r % 10) + "\n";
  }
  return text;
}
template <typename F> static double BestMs(F f, int reps) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    // CPU time of this process: the machine is shared, wall time would measure the neighbours.
    const std::clock_t t0 = std::clock();
    f();
    const std::clock_t t1 = std::clock();
    best = std::min(best, 1000.0 * static_cast<double>(t1 - t0) / CLOCKS_PER_SEC);
  }
  return best;
}
int main(int argc, char** argv) {
  const size_t rows = 1000000;
  const int reps = argc > 1 ? std::atoi(argv[1]) : 7;
  const std::string text = Numeric(rows);
  kernels::CsvOptions options;
  options.label_column = "label";
  auto names = kernels::CsvColumnNames(text, options);
  const kernels::CsvRange range = kernels::CsvTaskRange(text, true, 0, 1);
#ifdef NEW_KERNEL
  auto layout = io::InferCsvLayout(std::string_view(text).substr(0, io::kCsvSchemaSampleBytes), options);
  if (!layout.ok()) { std::puts(layout.status().ToString().c_str()); return 1; }
  const char* tag = "new";
#else
  const char* tag = "old";
#endif
  size_t got = 0;
  const double ms = BestMs([&] {
#ifdef NEW_KERNEL
    auto t = kernels::ParseCsvRange(text, range, *layout, options);
#else
    auto t = kernels::ParseCsvRange(text, range, *names, options);
#endif
    if (!t.ok()) { std::puts(t.status().ToString().c_str()); std::exit(1); }
    got = t->rows();
  }, reps);
  std::printf("%s numeric: %zu rows, %.1f MB, best %.1f ms: %.2f M rows/s, %.0f MB/s\n", tag, got,
              text.size() / 1e6, ms, got / ms / 1e3, text.size() / ms / 1e3);
#ifdef NEW_KERNEL
  if (std::getenv("NUMERIC_ONLY")) return 0;
  const std::string mixed = Mixed(rows);
  auto mlayout = io::InferCsvLayout(std::string_view(mixed).substr(0, io::kCsvSchemaSampleBytes), options);
  if (!mlayout.ok()) { std::puts(mlayout.status().ToString().c_str()); return 1; }
  const kernels::CsvRange mrange = kernels::CsvTaskRange(mixed, true, 0, 1);
  const double mms = BestMs([&] {
    auto t = kernels::ParseCsvRange(mixed, mrange, *mlayout, options);
    if (!t.ok()) { std::puts(t.status().ToString().c_str()); std::exit(1); }
    got = t->rows();
  }, reps);
  std::printf("new strings+1%% missing: %zu rows, %.1f MB, best %.1f ms: %.2f M rows/s, %.0f MB/s\n",
              got, mixed.size() / 1e6, mms, got / mms / 1e3, mixed.size() / mms / 1e3);
#endif
}
