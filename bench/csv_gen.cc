// Writes the benchmark CSV of the pipeline comparison (bench/pipeline/): `rows` lines of four
// float columns, a string column and an int label, with a fraction of the floats and strings
// missing (empty fields and NA, as exports have them), from a fixed seed so every run, and
// every tool the pipeline is compared with, reads the same bytes.
//   build/bin/bench_csv_gen ROWS OUT.csv [--missing 0.01] [--seed 7]
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>

namespace {

constexpr const char* kCities[] = {"Lisbon", "Porto", "Madrid", "Paris", "Lyon", "Berlin",
                                   "Hamburg", "Rome", "Milan", "Vienna", "Prague", "Oslo"};

int Usage() {
  std::fprintf(stderr, "usage: bench_csv_gen ROWS OUT.csv [--missing FRACTION] [--seed N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage();
  const long long rows = std::atoll(argv[1]);
  const char* out_path = argv[2];
  double missing = 0.01;
  unsigned seed = 7;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--missing") {
      missing = std::atof(argv[i + 1]);
    } else if (flag == "--seed") {
      seed = static_cast<unsigned>(std::atol(argv[i + 1]));
    } else {
      return Usage();
    }
  }
  if (rows < 1 || missing < 0 || missing > 1) return Usage();
  std::FILE* out = std::fopen(out_path, "wb");
  if (out == nullptr) {
    std::perror(out_path);
    return 1;
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int> city(0, static_cast<int>(std::size(kCities)) - 1);
  std::uniform_int_distribution<int> label(0, 4);
  static char buffer[1 << 20];
  std::setvbuf(out, buffer, _IOFBF, sizeof(buffer));
  std::fputs("x0,x1,x2,x3,city,label\n", out);
  std::string line;
  char number[32];
  for (long long r = 0; r < rows; ++r) {
    line.clear();
    const float scale[] = {1.0f, 2.0f, 0.5f, 3.0f};
    const float shift[] = {0.0f, 1.0f, -2.0f, 5.0f};
    for (int c = 0; c < 4; ++c) {
      const float value = normal(rng) * scale[c] + shift[c];
      if (unit(rng) < missing) {
        if (r % 2 == 0) line += "NA";  // half the gaps spelled NA, half left empty
      } else {
        const auto result = std::to_chars(number, number + sizeof(number), value,
                                          std::chars_format::fixed, 4);
        line.append(number, result.ptr);
      }
      line += ',';
    }
    if (unit(rng) >= missing) line += kCities[city(rng)];
    line += ',';
    line += static_cast<char>('0' + label(rng));
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), out);
  }
  if (std::fclose(out) != 0) {
    std::perror(out_path);
    return 1;
  }
  return 0;
}
