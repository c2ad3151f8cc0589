// A CSV dataset of several files, plain or compressed: .gz (several members too) and .zst read
// as streams (runtime/io/compressed_text.h), corrupt or truncated data refused naming the file,
// and CsvTaskFiles splitting any mix of files among any number of tasks so that every line is
// parsed exactly once, in order, with one dictionary per string column.
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/csv_import.h"
#include "runtime/io/compressed_text.h"
#include "runtime/io/csv_schema.h"
#include "runtime/io/temp_dir.h"
#include "runtime/job/job_loader.h"

namespace coupler::kernels {
namespace {

using ::testing::HasSubstr;

std::string Gzip(const std::string& text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, text.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Zstd(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

Result<std::string> ReadAll(const std::string& path) {
  COUPLER_ASSIGN_OR_RETURN(io::TextReader reader, io::TextReader::Open(path));
  std::string text;
  while (true) {
    COUPLER_ASSIGN_OR_RETURN(const size_t n, reader.Read(text, 1000));  // small reads on purpose
    if (n == 0) return text;
  }
}

class CsvDatasetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = io::TempDir::Create("csv-datasets-");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(dir).value());
  }
  std::string Path(const std::string& name) const { return dir_->File(name); }
  std::optional<io::TempDir> dir_;
};

TEST_F(CsvDatasetsTest, GzipAndZstdReadBackAsTheirText) {
  std::string text;
  for (int r = 0; r < 20000; ++r) text += std::to_string(r) + ",x" + std::to_string(r % 7) + "\n";
  Write(Path("a.csv.gz"), Gzip(text.substr(0, 50000)) + Gzip(text.substr(50000)));  // 2 members
  Write(Path("a.csv.zst"), Zstd(text.substr(0, 70000)) + Zstd(text.substr(70000)));  // 2 frames
  Write(Path("a.csv"), text);
  for (const char* name : {"a.csv.gz", "a.csv.zst", "a.csv"}) {
    SCOPED_TRACE(name);
    Result<std::string> got = ReadAll(Path(name));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, text);
  }
  Result<std::string> prefix = io::ReadTextPrefix(Path("a.csv.gz"), 100);
  ASSERT_TRUE(prefix.ok());
  EXPECT_EQ(*prefix, text.substr(0, 100));
}

TEST_F(CsvDatasetsTest, CorruptOrTruncatedCompressedDataIsRefusedNamingTheFile) {
  const std::string text(100000, 'a');
  const std::string gz = Gzip(text);
  const std::string zst = Zstd(text + "b");
  Write(Path("cut.csv.gz"), gz.substr(0, gz.size() / 2));
  Write(Path("cut.csv.zst"), zst.substr(0, zst.size() - 3));
  Write(Path("plain.csv.gz"), "x,y\n1,2\n");  // not gzip at all
  Write(Path("junk.csv.zst"), "not zstd at all, just text\n");
  for (const char* name : {"cut.csv.gz", "cut.csv.zst", "plain.csv.gz", "junk.csv.zst"}) {
    SCOPED_TRACE(name);
    Result<std::string> got = ReadAll(Path(name));
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << got.status().ToString();
    EXPECT_THAT(got.status().message(), HasSubstr(Path(name) + ": "));
  }
}

// Any mix of plain and compressed files, any number of tasks: the tasks' rows, in task order,
// are the files' rows in file order, each once.
TEST_F(CsvDatasetsTest, TaskFilesReadEveryLineOnceInOrder) {
  std::mt19937 rng(7);
  const std::string header = "id,name\n";
  std::vector<std::string> files;
  std::vector<uint64_t> sizes;
  std::vector<bool> compressed;
  std::vector<int64_t> want;
  int64_t next = 0;
  for (int f = 0; f < 7; ++f) {
    std::string text = header;
    const int rows = f == 3 ? 0 : static_cast<int>(rng() % 400);  // file 3: header only
    for (int r = 0; r < rows; ++r) {
      want.push_back(next);
      text += std::to_string(next++) + ",n" + std::to_string(rng() % 9) + "\n";
    }
    const bool zip = f % 3 == 1;
    const std::string path = Path("part-" + std::to_string(f) + (zip ? ".csv.gz" : ".csv"));
    const std::string bytes = zip ? Gzip(text) : text;
    Write(path, bytes);
    files.push_back(path);
    sizes.push_back(bytes.size());
    compressed.push_back(zip);
  }
  CsvOptions options;
  Result<std::string> sample = io::ReadTextPrefix(files[0], io::kCsvSchemaSampleBytes);
  ASSERT_TRUE(sample.ok());
  Result<io::CsvLayout> layout = io::InferCsvLayout(*sample, options);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  for (const size_t count : {size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{16}, size_t{40}}) {
    SCOPED_TRACE(count);
    std::vector<int64_t> got;
    size_t whole_reads = 0;
    for (size_t index = 0; index < count; ++index) {
      CsvRowParser parser(*layout, options);
      for (const CsvFilePart& part : CsvTaskFiles(sizes, compressed, index, count)) {
        Result<std::string> text = ReadAll(files[part.file]);
        ASSERT_TRUE(text.ok());
        whole_reads += part.whole;
        const CsvRange range = part.whole ? CsvRangeBetween(*text, true, 0, text->size())
                                          : CsvRangeBetween(*text, true, part.begin, part.end);
        ASSERT_TRUE(parser.Parse(*text, range).ok());
      }
      Result<io::Table> table = parser.Finish();
      ASSERT_TRUE(table.ok()) << table.status().ToString();
      if (table->rows() == 0) continue;
      for (const int64_t v : table->Find("id")->values<int64_t>()) got.push_back(v);
    }
    EXPECT_EQ(got, want);
    EXPECT_EQ(whole_reads, 2u) << "each compressed file is read whole by exactly one task";
  }
}

// Pieces fed to one parser share its columns: string codes stay one dictionary, and errors in
// a later piece name the line of its own file.
TEST_F(CsvDatasetsTest, PiecesShareOneDictionaryAndErrorsNameTheirLine) {
  CsvOptions options;
  const std::string a = "id,city\n1,Paris\n2,Lyon\n";
  const std::string b = "3,Lyon\n4,Nice\n";
  Result<io::CsvLayout> layout = io::InferCsvLayout(a, options);
  ASSERT_TRUE(layout.ok());
  CsvRowParser parser(*layout, options);
  ASSERT_TRUE(parser.Parse(a, CsvRangeBetween(a, true, 0, a.size())).ok());
  ASSERT_TRUE(parser.Parse(b, {0, b.size()}, 3).ok());
  Result<io::Table> table = parser.Finish();
  ASSERT_TRUE(table.ok());
  EXPECT_THAT(table->Find("city")->values<int32_t>(), ::testing::ElementsAre(0, 1, 1, 2));
  EXPECT_THAT(*table->Find("city")->dictionary(), ::testing::ElementsAre("Paris", "Lyon", "Nice"));
  CsvRowParser bad(*layout, options);
  const std::string c = "5,Rome\nsix,Oslo\n";
  const Status s = bad.Parse(c, {0, c.size()}, 40);
  EXPECT_THAT(s.message(), HasSubstr("line 42, column 'id'"));
}

// RFC 4180 line breaks inside quoted fields: refused by default (tasks split files at newlines)
// with the option named; with quoted_newlines they are data, in the sample and in the parse,
// and a stream's chunk that ends inside such a field hands the record to the next chunk.
TEST_F(CsvDatasetsTest, QuotedLineBreaksAreDataWithQuotedNewlines) {
  const std::string text = "id,note\r\n1,\"two\r\nlines\"\r\n2,plain\r\n3,\"a, \"\"b\"\"\n\nc\"\r\n";
  CsvOptions strict;
  Result<io::CsvLayout> refused = io::InferCsvLayout(text, strict);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("line 2, column 'note'"));
  EXPECT_THAT(refused.status().message(), HasSubstr("quoted_newlines: true"));

  CsvOptions options;
  options.quoted_newlines = true;
  Result<io::CsvLayout> layout = io::InferCsvLayout(text, options);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_TRUE(layout->schema.Find("note")->categorical);
  EXPECT_EQ(layout->schema.Find("id")->dtype, ElementType::kInt64);
  CsvRowParser whole(*layout, options);
  ASSERT_TRUE(whole.Parse(text, CsvRangeBetween(text, true, 0, text.size())).ok());
  Result<io::Table> table = whole.Finish();
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_THAT(table->Find("id")->values<int64_t>(), ::testing::ElementsAre(1, 2, 3));
  EXPECT_THAT(*table->Find("note")->dictionary(),
              ::testing::ElementsAre("two\r\nlines", "plain", "a, \"b\"\n\nc"));

  // In two pieces cut inside the first record's quoted field: it waits for the second piece.
  const size_t cut = text.find("lines");
  const std::string first = text.substr(0, cut);
  CsvRowParser stream(*layout, options);
  size_t done = 0;
  ASSERT_TRUE(stream.Parse(first, CsvRangeBetween(first, true, 0, 0).begin == 0
                                      ? CsvRange{0, first.size()}
                                      : CsvRange{CsvRangeBetween(first, true, 0, 0).begin,
                                                 first.size()},
                           0, &done)
                  .ok());
  EXPECT_EQ(done, text.find("1,"));  // nothing complete yet: the record starts there
  const std::string rest = text.substr(done);
  ASSERT_TRUE(stream.Parse(rest, {0, rest.size()}, 1).ok());
  Result<io::Table> streamed = stream.Finish();
  ASSERT_TRUE(streamed.ok());
  EXPECT_EQ(streamed->Find("id")->values<int64_t>().size(), 3u);
  EXPECT_EQ(*streamed->Find("note")->dictionary(), *table->Find("note")->dictionary());
}

}  // namespace
}  // namespace coupler::kernels

namespace coupler::job {
namespace {

// import_csv's inputs as users have them: a glob, a folder of CSV files or a list, each file one
// input in name order; a glob that matches nothing and a folder without CSVs are errors at the
// spec's line.
TEST(CsvDatasetInputsTest, GlobsFoldersAndListsBecomeOneInputPerFileInNameOrder) {
  auto dir = io::TempDir::Create("csv-inputs-");
  ASSERT_TRUE(dir.ok());
  std::string root = dir->File("");
  while (root.ends_with('/')) root.pop_back();
  std::filesystem::create_directories(root + "/events");
  std::filesystem::create_directories(root + "/empty");
  for (const char* name : {"events/b.csv.gz", "events/a.csv", "events/c.csv.zst",
                           "events/notes.txt", "events/.hidden.csv"}) {
    std::ofstream(root + "/" + name) << "x\n1\n";
  }
  ValidationEnv env;
  env.probe = ProbePath;
  env.list_files = ListDatasetFiles;
  auto load = [&](const std::string& inputs) {
    return LoadJobText("name: j\nworkdir: " + root + "/w\nnodes:\n"
                       "  - {id: import, op: import_csv, inputs: " + inputs + "}\n",
                       "job.yaml", root, env);
  };
  auto paths = [](const LoadedJob& j) {
    std::vector<std::string> out;
    for (const InputRef& in : j.graph->nodes[0].resolved_inputs) out.push_back(in.path);
    return out;
  };
  const std::vector<std::string> all = {root + "/events/a.csv", root + "/events/b.csv.gz",
                                        root + "/events/c.csv.zst"};
  LoadedJob folder = load("[events]");
  ASSERT_TRUE(folder.ok()) << folder.diags.ToString();
  EXPECT_EQ(paths(folder), all);
  LoadedJob pattern = load("[\"events/*.csv*\"]");
  ASSERT_TRUE(pattern.ok()) << pattern.diags.ToString();
  EXPECT_EQ(paths(pattern), all);
  LoadedJob list = load("[events/c.csv.zst, events/a.csv]");  // a list keeps its order
  ASSERT_TRUE(list.ok()) << list.diags.ToString();
  EXPECT_EQ(paths(list), (std::vector<std::string>{all[2], all[0]}));

  EXPECT_THAT(load("[\"events/*.parquet\"]").diags.ToString(),
              ::testing::HasSubstr("no file matches 'events/*.parquet'"));
  EXPECT_THAT(load("[empty]").diags.ToString(),
              ::testing::HasSubstr("folder 'empty' holds no .csv, .csv.gz or .csv.zst file"));
}

}  // namespace
}  // namespace coupler::job
