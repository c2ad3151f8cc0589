// Exact column types from a CSV: integers as int64 (never a float32 that rounds ids past 2^24),
// bool, ISO 8601 timestamps as datetime64[ns], float64 for numbers past float32's range; pandas'
// default missing-value tokens (NULL among them) and how na_values adds to them; and errors that
// name the line, the column, the token and the fix.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/csv_import.h"
#include "runtime/io/csv_schema.h"
#include "runtime/io/iso_datetime.h"

namespace coupler::kernels {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Result<io::Table> ParseTask(const std::string& text, const CsvOptions& options,
                            std::vector<CsvCoerced>* coerced = nullptr) {
  COUPLER_ASSIGN_OR_RETURN(
      const io::CsvLayout layout,
      io::InferCsvLayout(std::string_view(text).substr(0, io::kCsvSchemaSampleBytes), options));
  return ParseCsvRange(text, CsvTaskRange(text, options.header, 0, 1), layout, options, coerced);
}

constexpr int64_t kNs = 1'000'000'000;

TEST(CsvTypesTest, EachColumnGetsTheNarrowestExactType) {
  const std::string text =
      "id,x,big,flag,ts,name,gap\n"
      "16777217,1.5,1e39,True,2024-01-01T00:00:00Z,a,\n"
      "9007199254740993,NA,2,false,2024-01-02,b,NULL\n";
  auto schema = io::InferCsvSchema(text, {});
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  const std::vector<io::ColumnSchema> want = {
      {"id", ElementType::kInt64, false},    {"x", ElementType::kFloat32, false},
      {"big", ElementType::kFloat64, false}, {"flag", ElementType::kBool, false},
      {"ts", ElementType::kDatetime64, false}, {"name", ElementType::kInt32, true},
      {"gap", ElementType::kFloat32, false}};
  EXPECT_EQ(schema->columns, want);
  EXPECT_TRUE(schema->Find("id")->nullable());
  EXPECT_FALSE(schema->Find("flag")->nullable());

  auto table = ParseTask(text, {});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  // Neither id is a float32 (or float64) value: both come back exactly.
  EXPECT_THAT(table->Find("id")->values<int64_t>(), ElementsAre(16777217, 9007199254740993));
  EXPECT_THAT(table->Find("flag")->values<uint8_t>(), ElementsAre(1, 0));
  EXPECT_THAT(table->Find("ts")->values<int64_t>(),
              ElementsAre(1704067200 * kNs, 1704153600 * kNs));
  EXPECT_EQ(table->Find("big")->values<double>()[0], 1e39);
  EXPECT_TRUE(std::isnan(table->Find("x")->values<float>()[1]));
}

TEST(CsvTypesTest, MissingIntegersAndTimestampsAreTheInt64MinimumNumpyShowsAsNaT) {
  auto table = ParseTask("n,ts\n1,2024-03-01 12:00:00.5\nNULL,\n#N/A,nan\n4,NA\n", {});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->Find("n")->dtype(), ElementType::kInt64);
  EXPECT_THAT(table->Find("n")->values<int64_t>(),
              ElementsAre(1, io::kMissingInt64, io::kMissingInt64, 4));
  EXPECT_THAT(table->Find("ts")->values<int64_t>(),
              ElementsAre(1709294400 * kNs + kNs / 2, io::kMissingInt64, io::kMissingInt64,
                          io::kMissingInt64));
}

// A timestamp that does not parse is NaT and counted (as pd.to_datetime(errors="coerce")); the
// count and the first value reach the task's log.
TEST(CsvTypesTest, AnUnparseableTimestampBecomesNaTAndIsCounted) {
  std::vector<CsvCoerced> coerced;
  CsvOptions options;
  options.dtypes = {{"ts", "datetime"}};  // inferred, a sampled "yesterday" makes it text
  auto table = ParseTask("ts\n2024-01-01\nyesterday\n2023-02-29\nNA\n", options, &coerced);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_THAT(table->column(0).values<int64_t>(),
              ElementsAre(1704067200 * kNs, io::kMissingInt64, io::kMissingInt64,
                          io::kMissingInt64));
  ASSERT_EQ(coerced.size(), 1u);
  EXPECT_EQ(coerced[0].column, "ts");
  EXPECT_EQ(coerced[0].count, 2u);  // NA is missing, not coerced
  EXPECT_EQ(coerced[0].first_value, "yesterday");
  EXPECT_EQ(coerced[0].first_row, 1u);
}

// Past the sample, a value the column cannot hold fails the task naming the line, the column,
// the token and the dtypes fix; it is never rounded or dropped.
TEST(CsvTypesTest, ALaterValueThatDoesNotFitFailsWithLineColumnTokenAndFix) {
  std::string ints = "id\n";
  for (int r = 0; r < 10100; ++r) ints += std::to_string(r) + "\n";
  ints += "17.5\n";  // line 10102
  auto frac = ParseTask(ints, {});
  ASSERT_FALSE(frac.ok());
  EXPECT_THAT(frac.status().message(),
              HasSubstr("line 10102, column 'id' (field 1): '17.5' is not an integer"));
  EXPECT_THAT(frac.status().message(), HasSubstr("dtypes: {id: float64}"));

  std::string flags = "ok\n";
  for (int r = 0; r < 10100; ++r) flags += r % 2 ? "True\n" : "False\n";
  auto yes = ParseTask(flags + "yes\n", {});
  EXPECT_THAT(yes.status().message(),
              HasSubstr("line 10102, column 'ok' (field 1): 'yes' is not true or false"));
  EXPECT_THAT(yes.status().message(), HasSubstr("dtypes: {ok: string}"));
  auto gap = ParseTask(flags + "NULL\n", {});
  EXPECT_THAT(gap.status().message(),
              HasSubstr("column 'ok' (field 1): 'NULL' is a missing value, which a bool column "
                        "cannot hold"));
}

TEST(CsvTypesTest, ASampledValueThatIsNoTimestampMakesTheColumnText) {
  auto schema = io::InferCsvSchema("ts\n2024-01-01\nyesterday\n", {});
  ASSERT_TRUE(schema.ok());
  EXPECT_TRUE(schema->columns[0].categorical);
}

TEST(CsvTypesTest, BoolsWithMissingValuesAreStringsAsInPandas) {
  auto schema = io::InferCsvSchema("b\nTrue\n\nFalse\n", {});
  ASSERT_TRUE(schema.ok());
  // An empty line is skipped, not a missing value; an empty field is.
  EXPECT_EQ(schema->columns[0].dtype, ElementType::kBool);
  schema = io::InferCsvSchema("a,b\n1,True\n2,\n3,False\n", {});
  ASSERT_TRUE(schema.ok());
  EXPECT_TRUE(schema->columns[1].categorical);
}

TEST(CsvTypesTest, NaValuesAddToPandasDefaultsUnlessTheyAreToReplaceThem) {
  EXPECT_THAT(io::DefaultCsvNaValues(),
              testing::IsSupersetOf({"NULL", "null", "NA", "N/A", "n/a", "#N/A", "nan", "NaN",
                                     "-nan", "<NA>", "#NA"}));
  const std::vector<std::string> added = io::CsvNaTokens({"-999"}, true);
  EXPECT_THAT(added, testing::Contains("NULL"));
  EXPECT_THAT(added, testing::Contains("-999"));
  EXPECT_THAT(io::CsvNaTokens({"-999"}, false), ElementsAre("-999"));

  const std::string text = "v\n1\nNULL\n-999\n";
  CsvOptions options;
  options.na_values = io::CsvNaTokens({"-999"}, true);
  auto both = ParseTask(text, options);
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_THAT(both->column(0).values<int64_t>(),
              ElementsAre(1, io::kMissingInt64, io::kMissingInt64));
  options.na_values = io::CsvNaTokens({"-999"}, false);
  auto only = ParseTask(text, options);
  ASSERT_TRUE(only.ok()) << only.status().ToString();
  EXPECT_TRUE(only->column(0).categorical());  // "NULL" is text now
}

TEST(CsvTypesTest, DtypesForceInt64BoolAndDatetime) {
  CsvOptions options;
  options.dtypes = {{"a", "int64"}, {"b", "bool"}, {"c", "datetime"}, {"d", "float64"}};
  auto table = ParseTask("a,b,c,d\n3.0,TRUE,2000-01-01T00:00:00+01:00,16777217\n", options);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_THAT(table->Find("a")->values<int64_t>(), ElementsAre(3));
  EXPECT_THAT(table->Find("b")->values<uint8_t>(), ElementsAre(1));
  EXPECT_THAT(table->Find("c")->values<int64_t>(), ElementsAre((946684800 - 3600) * kNs));
  EXPECT_THAT(table->Find("d")->values<double>(), ElementsAre(16777217.0));
}

TEST(CsvTypesTest, SemicolonsAndTabsSeparateFieldsAsCommasDo) {
  CsvOptions semi;
  ASSERT_TRUE(io::SetCsvDialect(semi, ";", "utf-8").ok());
  auto table = ParseTask("id;name;x\n1;\"a;b\";1.5\n2;c,d;\n", semi);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_THAT(table->Find("id")->values<int64_t>(), ElementsAre(1, 2));
  EXPECT_THAT(*table->Find("name")->dictionary(), ElementsAre("a;b", "c,d"));
  EXPECT_TRUE(std::isnan(table->Find("x")->values<float>()[1]));

  CsvOptions tsv;
  ASSERT_TRUE(io::SetCsvDialect(tsv, "\t", "utf-8").ok());
  // An empty field before a quoted one stays empty: the tab is a delimiter, not a blank.
  auto tabs = ParseTask("a\tb\tc\n1\t\t\"q\"\n2\tz\t\"r\"\n", tsv);
  ASSERT_TRUE(tabs.ok()) << tabs.status().ToString();
  EXPECT_THAT(tabs->Find("b")->values<int32_t>(), ElementsAre(-1, 0));
  EXPECT_THAT(*tabs->Find("c")->dictionary(), ElementsAre("q", "r"));

  CsvOptions bad;
  EXPECT_THAT(io::SetCsvDialect(bad, ";;", "utf-8").message(), HasSubstr("one character"));
  EXPECT_THAT(io::SetCsvDialect(bad, ",", "cp1252").message(),
              HasSubstr("encoding must be utf-8 or latin-1"));
}

// UTF-8 is checked where non-ASCII bytes can be (strings, names) and the error names the line,
// the column and the fix without echoing the bad bytes raw; Latin-1 is converted.
TEST(CsvTypesTest, Latin1IsConvertedAndBadUtf8NamesItsLineAndTheFix) {
  const std::string text = "id,city\n1,S\xE3o Paulo\n2,Z\xFCrich\n";
  auto utf8 = ParseTask(text, {});
  ASSERT_FALSE(utf8.ok());
  EXPECT_THAT(utf8.status().message(),
              HasSubstr("line 2, column 'city' (field 2): 'S\\xE3o Paulo' is not UTF-8 (if the "
                        "file is Latin-1, set encoding: latin-1)"));
  CsvOptions latin1;
  ASSERT_TRUE(io::SetCsvDialect(latin1, ",", "latin-1").ok());
  auto converted = ParseTask(text, latin1);
  ASSERT_TRUE(converted.ok()) << converted.status().ToString();
  EXPECT_THAT(*converted->Find("city")->dictionary(), ElementsAre("São Paulo", "Zürich"));

  auto header = ParseTask("id,pre\xE7o\n1,2\n", {});
  EXPECT_THAT(header.status().message(), HasSubstr("the name of column 2 ('pre\\xE7o') is not UTF-8"));
  auto named = ParseTask("id,pre\xE7o\n1,2\n", latin1);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->column(1).name(), "preço");
  // Valid UTF-8 passes as it is.
  auto fine = ParseTask("id,city\n1,São Paulo\n", {});
  ASSERT_TRUE(fine.ok());
  EXPECT_THAT(*fine->Find("city")->dictionary(), ElementsAre("São Paulo"));
}

TEST(IsoDatetimeTest, SpellingsPandasReadsGiveTheSameNanoseconds) {
  int64_t ns = 0;
  ASSERT_TRUE(io::ParseIsoDatetime("1970-01-01", ns));
  EXPECT_EQ(ns, 0);
  ASSERT_TRUE(io::ParseIsoDatetime("1969-12-31T23:59:59.999999999", ns));
  EXPECT_EQ(ns, -1);
  ASSERT_TRUE(io::ParseIsoDatetime("2024-02-29 23:59", ns));
  EXPECT_EQ(ns, (1709251140) * kNs);
  ASSERT_TRUE(io::ParseIsoDatetime(" \"2024-01-01T02:00:00.25+02:00\" ", ns));
  EXPECT_EQ(ns, 1704067200 * kNs + kNs / 4);
  ASSERT_TRUE(io::ParseIsoDatetime("2024-01-01T00:00:00-0530", ns));
  EXPECT_EQ(ns, (1704067200 + 5 * 3600 + 30 * 60) * kNs);
  ASSERT_TRUE(io::ParseIsoDatetime("1677-12-31", ns) == false);  // outside int64 nanoseconds
  ASSERT_TRUE(io::ParseIsoDatetime("2262-04-12", ns) == false);
  for (const char* bad : {"2023-02-29", "2024-13-01", "2024-01-01T24:00", "2024-01-01T12:60",
                          "2024-01-01T00:00:00.1234567891", "2024-1-01", "20240101",
                          "2024-01-01T", "2024-01-01 12:00:00 UTC", "", "NaT"}) {
    EXPECT_FALSE(io::ParseIsoDatetime(bad, ns)) << bad;
  }
}

}  // namespace
}  // namespace coupler::kernels
