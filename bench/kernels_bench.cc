// Batch kernels on whole in-memory columns (CPU twins), in bytes of input per second, beside a
// memcpy of the same bytes in the same run: the kernels are memory-bound, so memcpy is the
// ceiling to compare with (DESIGN.md, "Limits measured"), not a FLOP rate.
//   bench_kernels --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cast.h"
#include "kernels/clip.h"
#include "kernels/column_stats.h"
#include "kernels/csv_import.h"
#include "kernels/filter_map.h"
#include "kernels/standardize.h"
#include "worker/task_runner.h"

namespace {

using namespace coupler;

constexpr size_t kRows = size_t{1} << 22;  // 4,194,304 rows: 16 MiB per float32 column

// Uniform in [-4, 4), deterministic, touched once so page faults stay out of the timings.
std::vector<float> Column(uint64_t seed) {
  std::vector<float> column(kRows);
  uint64_t state = seed;
  for (float& v : column) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<float>(static_cast<double>(state >> 40) * 0x1p-24 * 8.0 - 4.0);
  }
  return column;
}

void SetBytes(benchmark::State& state, size_t bytes_per_iteration) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(bytes_per_iteration));
}

void Check(benchmark::State& state, const Status& status) {
  if (!status.ok()) state.SkipWithError(status.ToString().c_str());
}

// The reference: the same 16 MiB read and written by memcpy.
void BM_Memcpy(benchmark::State& state) {
  const std::vector<float> in = Column(1);
  std::vector<float> out(kRows, 1.0f);
  for (auto _ : state) {
    std::memcpy(out.data(), in.data(), kRows * sizeof(float));
    benchmark::ClobberMemory();
  }
  SetBytes(state, kRows * sizeof(float));
}
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMicrosecond);

void BM_Standardize(benchmark::State& state) {
  const std::vector<float> in = Column(2);
  std::vector<float> out(kRows, 1.0f);
  for (auto _ : state) {
    Check(state, kernels::Standardize(in, out, 0.25, 2.5, kernels::Backend::kCpu));
    benchmark::ClobberMemory();
  }
  SetBytes(state, kRows * sizeof(float));
}
BENCHMARK(BM_Standardize)->Unit(benchmark::kMicrosecond);

// Two input columns per row: bytes count both. Threshold 0 keeps a random half of the rows.
void BM_FilterMap(benchmark::State& state) {
  const std::vector<float> a = Column(3);
  const std::vector<float> b = Column(4);
  std::vector<uint8_t> keep(kRows, 1);
  std::vector<float> value(kRows, 1.0f);
  size_t kept = 0;
  for (auto _ : state) {
    auto n = kernels::FilterMap(a, b, 0.0, keep, value, kernels::Backend::kCpu);
    if (!n.ok()) state.SkipWithError(n.status().ToString().c_str());
    kept = n.ok() ? *n : 0;
    benchmark::ClobberMemory();
  }
  state.counters["kept"] = static_cast<double>(kept) / kRows;
  SetBytes(state, 2 * kRows * sizeof(float));
}
BENCHMARK(BM_FilterMap)->Unit(benchmark::kMicrosecond);

// Carrying one other float32 column through filter_map's selection.
void BM_FilterMapCompact(benchmark::State& state) {
  const std::vector<float> in = Column(5);
  std::vector<uint8_t> keep(kRows);
  for (size_t i = 0; i < kRows; ++i) keep[i] = in[i] > 0;
  std::vector<float> out(kRows, 1.0f);
  for (auto _ : state) {
    auto n = kernels::Compact<float>(in, keep, out, kernels::Backend::kCpu);
    if (!n.ok()) state.SkipWithError(n.status().ToString().c_str());
    benchmark::ClobberMemory();
  }
  SetBytes(state, kRows * sizeof(float));
}
BENCHMARK(BM_FilterMapCompact)->Unit(benchmark::kMicrosecond);

void BM_Clip(benchmark::State& state) {
  const std::vector<float> in = Column(6);
  std::vector<float> out(kRows, 1.0f);
  for (auto _ : state) {
    Check(state, kernels::Clip(in, out, -1.0f, 1.0f, kernels::Backend::kCpu));
    benchmark::ClobberMemory();
  }
  SetBytes(state, kRows * sizeof(float));
}
BENCHMARK(BM_Clip)->Unit(benchmark::kMicrosecond);

// range(0): 0 = fp16, 1 = bf16.
void BM_Cast(benchmark::State& state) {
  const std::vector<float> in = Column(7);
  std::vector<uint16_t> out(kRows, 1);
  const auto format = state.range(0) == 0 ? precision::HalfFormat::kFp16
                                          : precision::HalfFormat::kBf16;
  state.SetLabel(precision::HalfFormatName(format));
  for (auto _ : state) {
    Check(state, kernels::Cast(in, out, format, kernels::Backend::kCpu));
    benchmark::ClobberMemory();
  }
  SetBytes(state, kRows * sizeof(float));
}
BENCHMARK(BM_Cast)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// column_stats' per-shard partial: reads only.
void BM_ColumnStatsPartial(benchmark::State& state) {
  const std::vector<float> in = Column(8);
  for (auto _ : state) {
    auto moments = kernels::ComputeMoments(in, kernels::Backend::kCpu);
    if (!moments.ok()) state.SkipWithError(moments.status().ToString().c_str());
    benchmark::DoNotOptimize(moments);
  }
  SetBytes(state, kRows * sizeof(float));
}
BENCHMARK(BM_ColumnStatsPartial)->Unit(benchmark::kMicrosecond);

// import_csv's parser: bytes of CSV text (4 float columns + an int label, ~40 bytes a row).
void BM_ImportCsvParse(benchmark::State& state) {
  const std::vector<float> values = Column(9);
  std::string text = "a,b,c,d,label\n";
  constexpr size_t kCsvRows = 1'000'000;
  for (size_t r = 0; r < kCsvRows; ++r) {
    for (size_t c = 0; c < 4; ++c) text += std::to_string(values[(r * 4 + c) % kRows]).substr(0, 9) + ",";
    text += std::to_string(r % 10) + "\n";
  }
  kernels::CsvOptions options;
  options.label_column = "label";
  auto names = kernels::CsvColumnNames(text, options);
  const kernels::CsvRange range = kernels::CsvTaskRange(text, true, 0, 1);
  for (auto _ : state) {
    auto table = kernels::ParseCsvRange(text, range, *names, options);
    if (!table.ok()) state.SkipWithError(table.status().ToString().c_str());
    benchmark::DoNotOptimize(table);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kCsvRows));
  SetBytes(state, text.size());
}
BENCHMARK(BM_ImportCsvParse)->Unit(benchmark::kMillisecond);

// Not a kernel: what one noop task costs on a worker (RunTask's dispatch, outcome building),
// the floor under the coordinator's tasks-per-second figures.
void BM_RunTaskNoop(benchmark::State& state) {
  wire::TaskSpec spec;
  spec.job_id = "bench";
  spec.op = "noop";
  spec.params = {{"sleep_ms", "0"}, {"__kind", "map"}, {"__shards", "1000"}};
  for (auto _ : state) {
    wire::TaskOutcome outcome = worker::RunTask(spec);
    if (!outcome.ok) state.SkipWithError(outcome.error.c_str());
    benchmark::DoNotOptimize(outcome);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_RunTaskNoop);

}  // namespace

BENCHMARK_MAIN();
