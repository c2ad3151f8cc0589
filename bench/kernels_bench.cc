// Batch kernels on whole in-memory columns (CPU twins), in bytes of input per second, beside a
// memcpy of the same bytes in the same run: the kernels are memory-bound, so memcpy is the
// ceiling to compare with (DESIGN.md, "Limits measured"), not a FLOP rate. The *Cuda benchmarks
// do the same on the GPU against a device-to-device copy, on columns already on the device; they
// skip (with an error line) where there is no CUDA device or no CUDA in the build.
//   bench_kernels --benchmark_min_time=0.5
//   bench_kernels --benchmark_filter=[Cc]uda
#include <benchmark/benchmark.h>

#include "bench/device_buffer.h"
#include "bench/kernels_on_device.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cast.h"
#include "kernels/clip.h"
#include "kernels/column_stats.h"
#include "kernels/csv_import.h"
#include "kernels/device.h"
#include "kernels/expression.h"
#include "kernels/filter_map.h"
#include "kernels/group_fold.h"
#include "kernels/hash_partition.h"
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

// The expression engine (kernels/expression.h) on two float32 columns a, b.
expr::Program CompileOrDie(const std::string& text) {
  io::TableSchema schema;
  schema.columns = {{"a", ElementType::kFloat32, false}, {"b", ElementType::kFloat32, false}};
  expr::ExprResult<expr::Program> p = expr::Compile(text, schema);
  if (!p.ok()) std::abort();
  return std::move(p.value());
}

// filter's condition pass: a keep flag per row.
void BM_ExpressionFilter(benchmark::State& state) {
  const std::vector<float> a = Column(3);
  const std::vector<float> b = Column(4);
  const expr::Program program = CompileOrDie("a * b > 0 and not isnan(a)");
  const kernels::ExpressionInput in[] = {{a.data(), ElementType::kFloat32, nullptr},
                                         {b.data(), ElementType::kFloat32, nullptr}};
  std::vector<uint8_t> keep(kRows, 1);
  for (auto _ : state) {
    Check(state, kernels::EvaluateExpression(program, in, kRows, keep.data(), kernels::Backend::kCpu));
    benchmark::ClobberMemory();
  }
  SetBytes(state, 2 * kRows * sizeof(float));
}
BENCHMARK(BM_ExpressionFilter)->Unit(benchmark::kMicrosecond);

// derive's column pass.
void BM_ExpressionDerive(benchmark::State& state) {
  const std::vector<float> a = Column(3);
  const std::vector<float> b = Column(4);
  const expr::Program program = CompileOrDie("a * b + 1");
  const kernels::ExpressionInput in[] = {{a.data(), ElementType::kFloat32, nullptr},
                                         {b.data(), ElementType::kFloat32, nullptr}};
  std::vector<float> out(kRows, 1.0f);
  for (auto _ : state) {
    Check(state, kernels::EvaluateExpression(program, in, kRows, out.data(), kernels::Backend::kCpu));
    benchmark::ClobberMemory();
  }
  SetBytes(state, 2 * kRows * sizeof(float));
}
BENCHMARK(BM_ExpressionDerive)->Unit(benchmark::kMicrosecond);

// The filter_map op's kernel work on a two-column shard, as its runner did it (one fused
// FilterMap pass, then both columns compacted) ...
void BM_FilterMapOpFused(benchmark::State& state) {
  const std::vector<float> a = Column(3);
  const std::vector<float> b = Column(4);
  std::vector<uint8_t> keep(kRows, 1);
  std::vector<float> value(kRows, 1.0f), ka(kRows), kb(kRows);
  for (auto _ : state) {
    auto n = kernels::FilterMap(a, b, 0.0, keep, value, kernels::Backend::kCpu);
    if (!n.ok()) state.SkipWithError(n.status().ToString().c_str());
    Check(state, kernels::Compact<float>(a, keep, ka, kernels::Backend::kCpu).status());
    Check(state, kernels::Compact<float>(b, keep, kb, kernels::Backend::kCpu).status());
    benchmark::ClobberMemory();
  }
  SetBytes(state, 2 * kRows * sizeof(float));
}
BENCHMARK(BM_FilterMapOpFused)->Unit(benchmark::kMicrosecond);

// ... and as it does now on the expression engine: the condition a * b > t, both columns
// compacted, then sqrt(a * b) over the kept rows.
void BM_FilterMapOpExpression(benchmark::State& state) {
  const std::vector<float> a = Column(3);
  const std::vector<float> b = Column(4);
  const expr::Program cond = CompileOrDie("a * b > 0");
  const expr::Program root = CompileOrDie("sqrt(a * b)");
  const kernels::ExpressionInput in[] = {{a.data(), ElementType::kFloat32, nullptr},
                                         {b.data(), ElementType::kFloat32, nullptr}};
  std::vector<uint8_t> keep(kRows, 1);
  std::vector<float> value(kRows, 1.0f), ka(kRows), kb(kRows);
  for (auto _ : state) {
    Check(state, kernels::EvaluateExpression(cond, in, kRows, keep.data(), kernels::Backend::kCpu));
    auto n = kernels::Compact<float>(a, keep, ka, kernels::Backend::kCpu);
    Check(state, n.status());
    Check(state, kernels::Compact<float>(b, keep, kb, kernels::Backend::kCpu).status());
    const kernels::ExpressionInput kept[] = {{ka.data(), ElementType::kFloat32, nullptr},
                                             {kb.data(), ElementType::kFloat32, nullptr}};
    Check(state, kernels::EvaluateExpression(root, kept, n.ok() ? *n : 0, value.data(),
                                             kernels::Backend::kCpu));
    benchmark::ClobberMemory();
  }
  SetBytes(state, 2 * kRows * sizeof(float));
}
BENCHMARK(BM_FilterMapOpExpression)->Unit(benchmark::kMicrosecond);

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
  const auto format = state.range(0) == 0 ? ElementType::kFloat16
                                          : ElementType::kBFloat16;
  state.SetLabel(precision::HalfFormatName(format));
  for (auto _ : state) {
    Check(state, kernels::Cast(in, out, format, kernels::Backend::kCpu));
    benchmark::ClobberMemory();
  }
  SetBytes(state, kRows * sizeof(float));
}
BENCHMARK(BM_Cast)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// column_stats' per-shard partial: reads only.
// range(0): every k-th value missing (NaN), 0 for a complete column.
void BM_ColumnStatsPartial(benchmark::State& state) {
  std::vector<float> in = Column(8);
  const auto every = static_cast<size_t>(state.range(0));
  if (every > 0) {
    for (size_t i = 0; i < in.size(); i += every) in[i] = std::numeric_limits<float>::quiet_NaN();
  }
  for (auto _ : state) {
    auto moments = kernels::ComputeMoments(in, kernels::Backend::kCpu);
    if (!moments.ok()) state.SkipWithError(moments.status().ToString().c_str());
    benchmark::DoNotOptimize(moments);
  }
  SetBytes(state, kRows * sizeof(float));
}
BENCHMARK(BM_ColumnStatsPartial)->Arg(0)->Arg(100)->Unit(benchmark::kMicrosecond);

// --- CUDA twins on device-resident columns -------------------------------------------------
// 64 Mi rows (256 MiB a float32 column): a 16 MiB column passes through an H200 in a few
// microseconds, which the per-call launch, scratch allocation and synchronize would dominate.
constexpr size_t kGpuRows = size_t{1} << 26;

// Uniform in [-4, 4) like Column, kGpuRows long.
std::vector<float> GpuColumn(uint64_t seed) {
  std::vector<float> column(kGpuRows);
  uint64_t state = seed;
  for (float& v : column) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<float>(static_cast<double>(state >> 40) * 0x1p-24 * 8.0 - 4.0);
  }
  return column;
}

// False (and the benchmark marked skipped) without a usable device.
bool HaveDevice(benchmark::State& state) {
  if (kernels::HaveCudaDevice()) return true;
  state.SkipWithError("no CUDA device");
  return false;
}

// A device copy of `host`, or nothing with the benchmark skipped and the reason given.
template <typename T>
std::optional<bench::BenchDeviceBuffer> ToDevice(benchmark::State& state,
                                                   const std::vector<T>& host) {
  auto buffer = bench::BenchDeviceBuffer::CopyOf(host.data(), host.size() * sizeof(T));
  if (!buffer.ok()) {
    state.SkipWithError(buffer.status().ToString().c_str());
    return std::nullopt;
  }
  return std::move(*buffer);
}

std::optional<bench::BenchDeviceBuffer> DeviceScratch(benchmark::State& state, size_t bytes) {
  auto buffer = bench::BenchDeviceBuffer::Allocate(bytes);
  if (!buffer.ok()) {
    state.SkipWithError(buffer.status().ToString().c_str());
    return std::nullopt;
  }
  return std::move(*buffer);
}

// The GPU ceiling: the same bytes read and written by a device-to-device copy.
void BM_D2DCopyCuda(benchmark::State& state) {
  if (!HaveDevice(state)) return;
  auto in = ToDevice(state, GpuColumn(1));
  auto out = DeviceScratch(state, kGpuRows * sizeof(float));
  if (!in || !out) return;
  for (auto _ : state) {
    Check(state, bench::CopyDeviceToDevice(out->as<void>(), in->as<const void>(),
                                             kGpuRows * sizeof(float)));
  }
  SetBytes(state, kGpuRows * sizeof(float));
}
BENCHMARK(BM_D2DCopyCuda)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_StandardizeCuda(benchmark::State& state) {
  if (!HaveDevice(state)) return;
  auto in = ToDevice(state, GpuColumn(2));
  auto out = DeviceScratch(state, kGpuRows * sizeof(float));
  if (!in || !out) return;
  for (auto _ : state) {
    Check(state, bench::StandardizeOnDevice(in->as<const float>(), out->as<float>(), kGpuRows,
                                            0.25, 1.0 / 2.5));
  }
  SetBytes(state, kGpuRows * sizeof(float));
}
BENCHMARK(BM_StandardizeCuda)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Reads only. The timing includes what a caller pays per call besides the kernel: allocating
// the block partials, copying them back and merging them on the host.
void BM_ColumnStatsPartialCuda(benchmark::State& state) {
  if (!HaveDevice(state)) return;
  auto in = ToDevice(state, GpuColumn(8));
  if (!in) return;
  for (auto _ : state) {
    auto moments = bench::MomentsOnDevice(in->as<const float>(), kGpuRows);
    if (!moments.ok()) state.SkipWithError(moments.status().ToString().c_str());
    benchmark::DoNotOptimize(moments);
  }
  SetBytes(state, kGpuRows * sizeof(float));
}
BENCHMARK(BM_ColumnStatsPartialCuda)->Unit(benchmark::kMicrosecond)->UseRealTime();

// As BM_FilterMap: both input columns count, threshold 0 keeps a random half. The timing
// includes CUB's compaction pass, its per-call temp allocation and reading back the kept count.
void BM_FilterMapCuda(benchmark::State& state) {
  if (!HaveDevice(state)) return;
  auto a = ToDevice(state, GpuColumn(3));
  auto b = ToDevice(state, GpuColumn(4));
  auto keep = DeviceScratch(state, kGpuRows);
  auto value = DeviceScratch(state, kGpuRows * sizeof(float));
  if (!a || !b || !keep || !value) return;
  const float threshold = kernels::FloatThresholdFor(0.0);
  size_t kept = 0;
  for (auto _ : state) {
    auto n = bench::FilterMapOnDevice(a->as<const float>(), b->as<const float>(), kGpuRows,
                                      threshold, keep->as<uint8_t>(), value->as<float>());
    if (!n.ok()) state.SkipWithError(n.status().ToString().c_str());
    kept = n.ok() ? *n : 0;
  }
  state.counters["kept"] = static_cast<double>(kept) / kGpuRows;
  SetBytes(state, 2 * kGpuRows * sizeof(float));
}
BENCHMARK(BM_FilterMapCuda)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_ClipCuda(benchmark::State& state) {
  if (!HaveDevice(state)) return;
  auto in = ToDevice(state, GpuColumn(6));
  auto out = DeviceScratch(state, kGpuRows * sizeof(float));
  if (!in || !out) return;
  for (auto _ : state) {
    Check(state, bench::ClipOnDevice(in->as<const float>(), out->as<float>(), kGpuRows, -1.0f,
                                     1.0f));
  }
  SetBytes(state, kGpuRows * sizeof(float));
}
BENCHMARK(BM_ClipCuda)->Unit(benchmark::kMicrosecond)->UseRealTime();

// range(0): 0 = fp16, 1 = bf16.
void BM_CastCuda(benchmark::State& state) {
  if (!HaveDevice(state)) return;
  auto in = ToDevice(state, GpuColumn(7));
  auto out = DeviceScratch(state, kGpuRows * sizeof(uint16_t));
  if (!in || !out) return;
  const auto format = state.range(0) == 0 ? ElementType::kFloat16
                                          : ElementType::kBFloat16;
  state.SetLabel(precision::HalfFormatName(format));
  for (auto _ : state) {
    Check(state, bench::CastOnDevice(in->as<const float>(), out->as<uint16_t>(), kGpuRows,
                                     format));
  }
  SetBytes(state, kGpuRows * sizeof(float));
}
BENCHMARK(BM_CastCuda)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

// --- The shuffle's kernels (group_by, join, dedup), host columns in and out ------------------
// Both twins take host columns, so the *Cuda rows include the copies to and from the device:
// what a map task on a GPU pays, not the device's own rate.
constexpr size_t kShuffleRows = size_t{1} << 22;

std::vector<uint64_t> KeyWords(uint64_t seed) {
  std::vector<uint64_t> words(kShuffleRows);
  uint64_t state = seed;
  for (uint64_t& w : words) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    w = state >> 44;  // ~1M distinct ids
  }
  return words;
}

// hash_partition over two int64 key columns into range(1) partitions; range(0): 1 for CUDA.
void BM_HashPartition(benchmark::State& state) {
  const auto backend = state.range(0) == 1 ? kernels::Backend::kCuda : kernels::Backend::kCpu;
  if (backend == kernels::Backend::kCuda && !HaveDevice(state)) return;
  const std::vector<uint64_t> a = KeyWords(1), b = KeyWords(2);
  const std::vector<std::span<const uint64_t>> columns = {a, b};
  std::vector<uint32_t> out(kShuffleRows);
  for (auto _ : state) {
    Check(state, kernels::HashPartition(columns, static_cast<uint32_t>(state.range(1)), out, backend));
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kShuffleRows));
  SetBytes(state, kShuffleRows * 2 * sizeof(uint64_t));
}
BENCHMARK(BM_HashPartition)->Args({0, 64})->Unit(benchmark::kMicrosecond)->UseRealTime();
void BM_HashPartitionCuda(benchmark::State& state) { BM_HashPartition(state); }
BENCHMARK(BM_HashPartitionCuda)->Args({1, 64})->Unit(benchmark::kMicrosecond)->UseRealTime();

// group_fold's moments (mean/std/var) of one double column into range(1) groups, a tenth of
// the rows skipped; range(0): 1 for CUDA.
void BM_GroupFold(benchmark::State& state) {
  const auto backend = state.range(0) == 1 ? kernels::Backend::kCuda : kernels::Backend::kCpu;
  if (backend == kernels::Backend::kCuda && !HaveDevice(state)) return;
  const auto groups = static_cast<uint32_t>(state.range(1));
  const std::vector<uint64_t> words = KeyWords(3);
  std::vector<uint32_t> group(kShuffleRows);
  std::vector<double> x(kShuffleRows);
  for (size_t r = 0; r < kShuffleRows; ++r) {
    group[r] = words[r] % 10 == 0 ? 0xFFFFFFFFu : static_cast<uint32_t>(words[r] % groups);
    x[r] = static_cast<double>(words[r] & 0xFFFF) * 0.25;
  }
  for (auto _ : state) {
    relational::GroupMoments moments(groups);
    Check(state, kernels::FoldMoments(group, x, moments, backend));
    benchmark::DoNotOptimize(moments.m2.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kShuffleRows));
  SetBytes(state, kShuffleRows * (sizeof(uint32_t) + sizeof(double)));
}
BENCHMARK(BM_GroupFold)->Args({0, 100})->Args({0, 100'000})->Unit(benchmark::kMicrosecond)->UseRealTime();
void BM_GroupFoldCuda(benchmark::State& state) { BM_GroupFold(state); }
BENCHMARK(BM_GroupFoldCuda)->Args({1, 100})->Args({1, 100'000})->Unit(benchmark::kMicrosecond)->UseRealTime();

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

// The same parser on what real files hold: the 4 float columns with 1% missing (empty or NA),
// a string column of 50 distinct values (1% missing) and the label, typed by InferCsvLayout as
// import_csv does.
void BM_ImportCsvParseStringsAndGaps(benchmark::State& state) {
  const std::vector<float> values = Column(9);
  std::string text = "a,b,c,d,city,label\n";
  constexpr size_t kCsvRows = 1'000'000;
  for (size_t r = 0; r < kCsvRows; ++r) {
    for (size_t c = 0; c < 4; ++c) {
      const size_t k = (r * 4 + c) % kRows;
      if (k % 100 == 7) {
        text += k % 2 == 0 ? "," : "NA,";
      } else {
        text += std::to_string(values[k]).substr(0, 9) + ",";
      }
    }
    text += r % 100 == 3 ? std::string(",") : "city" + std::to_string(r * 7 % 50) + ",";
    text += std::to_string(r % 10) + "\n";
  }
  kernels::CsvOptions options;
  options.label_column = "label";
  auto layout =
      io::InferCsvLayout(std::string_view(text).substr(0, io::kCsvSchemaSampleBytes), options);
  if (!layout.ok()) {
    state.SkipWithError(layout.status().ToString().c_str());
    return;
  }
  const kernels::CsvRange range = kernels::CsvTaskRange(text, true, 0, 1);
  for (auto _ : state) {
    auto table = kernels::ParseCsvRange(text, range, *layout, options);
    if (!table.ok()) state.SkipWithError(table.status().ToString().c_str());
    benchmark::DoNotOptimize(table);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kCsvRows));
  SetBytes(state, text.size());
}
BENCHMARK(BM_ImportCsvParseStringsAndGaps)->Unit(benchmark::kMillisecond);

// Not a kernel: what one noop task costs on a worker (RunTask's dispatch, outcome building),
// the floor under the coordinator's tasks-per-second figures.
void BM_RunTaskNoop(benchmark::State& state) {
  wire::TaskSpec spec;
  spec.job_id = "bench";
  spec.op = "noop";
  spec.shards = 1000;
  spec.params = {{"sleep_ms", int64_t{0}}, {"tasks", int64_t{1000}}};
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
