// import_csv on real files: string columns as per-shard dictionary codes, missing values, RFC
// 4180 quotes (and the refusal of quoted line breaks), `columns`, `dtypes`, header errors, and
// the type inference every task and the planner share (io::InferCsvSchema).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/csv_import.h"
#include "runtime/io/csv_schema.h"

namespace coupler::kernels {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// What import_csv does in task `index` of `count`.
Result<io::Table> ParseTask(const std::string& text, const CsvOptions& options, size_t index = 0,
                            size_t count = 1) {
  COUPLER_ASSIGN_OR_RETURN(
      const io::CsvLayout layout,
      io::InferCsvLayout(std::string_view(text).substr(0, io::kCsvSchemaSampleBytes), options));
  return ParseCsvRange(text, CsvTaskRange(text, options.header, index, count), layout, options);
}

// The strings a categorical column stands for ("<NA>" for -1).
std::vector<std::string> Decode(const io::Column& column) {
  std::vector<std::string> out;
  EXPECT_TRUE(column.categorical()) << column.name();
  if (!column.categorical()) return out;
  for (const int32_t code : column.values<int32_t>()) {
    out.push_back(code < 0 ? "<NA>" : column.dictionary()->at(static_cast<size_t>(code)));
  }
  return out;
}

TEST(CsvStringsTest, StringColumnsBecomeCodesInFirstSeenOrder) {
  const std::string text = "city,x\nParis,1\nLyon,2\nParis,3\nNice,4\nLyon,5\n";
  auto table = ParseTask(text, {});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  const io::Column& city = table->column(0);
  EXPECT_EQ(city.dtype(), ElementType::kInt32);
  EXPECT_THAT(city.values<int32_t>(), ElementsAre(0, 1, 0, 2, 1));
  EXPECT_THAT(*city.dictionary(), ElementsAre("Paris", "Lyon", "Nice"));
  EXPECT_FALSE(table->column(1).categorical());
  EXPECT_EQ(table->column(1).dtype(), ElementType::kInt64);  // integers stay integers
  EXPECT_THAT(table->column(1).values<int64_t>(), ElementsAre(1, 2, 3, 4, 5));
}

// Many distinct values (the code table grows several times while the range is read), values
// that share a hash bucket's prefix, and a missing token beside them: every field keeps its
// value and codes stay in first-seen order.
TEST(CsvStringsTest, ManyDistinctStringsKeepTheirCodes) {
  std::string text = "name,x\n";
  std::vector<std::string> expected;
  std::vector<std::string> first_seen;
  for (int r = 0; r < 5000; ++r) {
    const int value = (r * 7919) % 1500;
    const std::string name = r % 97 == 0 ? "NA" : "v" + std::to_string(value);
    text += name + "," + std::to_string(r) + "\n";
    expected.push_back(r % 97 == 0 ? "<NA>" : name);
    if (r % 97 != 0 && std::find(first_seen.begin(), first_seen.end(), name) == first_seen.end()) {
      first_seen.push_back(name);
    }
  }
  CsvOptions options;
  options.dtypes = {{"name", "string"}};
  auto table = ParseTask(text, options);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(Decode(table->column(0)), expected);
  EXPECT_EQ(*table->column(0).dictionary(), first_seen);  // NA is not a value
  EXPECT_GT(first_seen.size(), 1000u);
}

// Each task's dictionary is its own (first-seen order within its rows), yet every task agrees
// that the column is a string column, even a task whose rows hold only missing values.
TEST(CsvStringsTest, DictionariesArePerShardAndEveryShardKnowsTheColumnIsAString) {
  std::string text = "k,v\n";
  for (int r = 0; r < 30; ++r) {
    text += std::string(r < 15 ? "b" : "a") + "," + std::to_string(r) + "\n";
  }
  for (int r = 0; r < 30; ++r) text += ",9\n";  // the last task sees only missing strings
  std::vector<std::string> all;
  for (size_t t = 0; t < 3; ++t) {
    auto table = ParseTask(text, {}, t, 3);
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    const std::vector<std::string> strings = Decode(table->column(0));
    all.insert(all.end(), strings.begin(), strings.end());
    if (t == 2) {
      EXPECT_TRUE(table->column(0).dictionary()->empty());
    }
  }
  ASSERT_EQ(all.size(), 60u);
  for (int r = 0; r < 60; ++r) {
    EXPECT_EQ(all[static_cast<size_t>(r)], r < 15 ? "b" : r < 30 ? "a" : "<NA>") << r;
  }
}

TEST(CsvStringsTest, EveryDefaultMissingTokenIsMissing) {
  const std::vector<std::string> tokens = {"", "NA", "nan", "NaN", "N/A", "null", " NA "};
  std::string text = "s,f\n";
  for (const std::string& t : tokens) text += t + "," + t + "\n";
  text += "word,2.5\n";  // makes s a string column
  auto table = ParseTask(text, {});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  const auto codes = table->column(0).values<int32_t>();
  const auto floats = table->column(1).values<float>();
  for (size_t i = 0; i < tokens.size(); ++i) {
    SCOPED_TRACE("token '" + tokens[i] + "'");
    EXPECT_EQ(codes[i], -1);
    EXPECT_TRUE(std::isnan(floats[i]));
  }
  EXPECT_EQ(codes[tokens.size()], 0);
  EXPECT_EQ(floats[tokens.size()], 2.5f);
  EXPECT_THAT(*table->column(0).dictionary(), ElementsAre("word"));
}

TEST(CsvStringsTest, NaValuesReplaceTheDefaultAndMayBeNumbers) {
  const std::string text = "s,f\nNA,-999\n?,1\nx,NA\n";
  CsvOptions options;
  options.na_values = {"?", "-999"};
  auto table = ParseTask(text, options);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  // "NA" is an ordinary string now; "?" is missing. In f, -999 is missing though it is a number.
  EXPECT_THAT(Decode(table->column(0)), ElementsAre("NA", "<NA>", "x"));
  // f's "NA" is not missing any more and not a number: the sample made f a string column.
  EXPECT_THAT(Decode(table->column(1)), ElementsAre("<NA>", "1", "NA"));
  options.dtypes = {{"f", "float32"}};
  auto forced = ParseTask(text, options);
  EXPECT_THAT(forced.status().message(),
              HasSubstr("line 4, column 'f' (field 2): 'NA' is not a number"));
  const std::string numbers = "f\n-999\n1\n";
  auto gaps = ParseTask(numbers, options);
  ASSERT_TRUE(gaps.ok()) << gaps.status().ToString();
  EXPECT_TRUE(std::isnan(gaps->column(0).values<float>()[0]));
  EXPECT_EQ(gaps->column(0).values<float>()[1], 1.0f);
}

TEST(CsvStringsTest, QuotedFieldsWithCommasAndDoubledQuotes) {
  const std::string text =
      "name,x,note\n"
      "\"New York, NY\",\"1.5\",plain\n"
      "\"say \"\"hi\"\"\", 2 ,\"\"\n"
      "  \"padded\"  ,3,\"a,b,c\"\n"
      "O\"Brien,4,\"\"\"\"\n";
  auto table = ParseTask(text, {});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_THAT(Decode(table->column(0)),
              ElementsAre("New York, NY", "say \"hi\"", "padded", "O\"Brien"));
  EXPECT_THAT(table->column(1).values<float>(), ElementsAre(1.5f, 2.0f, 3.0f, 4.0f));
  // A quoted empty field is the empty field: missing.
  EXPECT_THAT(Decode(table->column(2)), ElementsAre("plain", "<NA>", "a,b,c", "\""));
}

// Decision: a quoted field must not span lines (tasks split the file at newlines); it is
// refused with the line and column, by the parser and by the schema pass alike.
TEST(CsvStringsTest, AQuotedLineBreakIsRefusedWithLineAndColumn) {
  const std::string text = "id,note\n1,ok\n2,\"two\nlines\"\n3,fine\n";
  auto table = ParseTask(text, {});
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(table.status().message(), HasSubstr("line 3, column 'note' (field 2)"));
  EXPECT_THAT(table.status().message(), HasSubstr("set quoted_newlines: true"));
  // The schema pass refuses it too (the planner calls it).
  EXPECT_THAT(io::InferCsvSchema(text, {}).status().message(), HasSubstr("line 3"));
  // A task whose range starts inside the quoted field is not the one that must catch it; the
  // task holding the opening quote is, for every split.
  for (size_t count = 1; count <= 6; ++count) {
    bool refused = false;
    for (size_t t = 0; t < count; ++t) {
      const CsvRange range = CsvTaskRange(text, true, t, count);
      io::CsvLayout layout;
      layout.header = {"id", "note"};
      layout.fields = {0, 1};
      layout.schema.columns = {{"id", ElementType::kFloat32, false},
                               {"note", ElementType::kInt32, true}};
      if (!ParseCsvRange(text, range, layout, {}).ok()) refused = true;
    }
    EXPECT_TRUE(refused) << count << " tasks";
  }
}

TEST(CsvStringsTest, ColumnsKeepsASubsetInTheListsOrder) {
  const std::string text = "a,b,c,d\n1,x,3,4\n5,y,7,8\n";
  CsvOptions options;
  options.columns = {"d", "b"};
  auto table = ParseTask(text, options);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(table->num_columns(), 2u);
  EXPECT_EQ(table->column(0).name(), "d");
  EXPECT_THAT(table->column(0).values<int64_t>(), ElementsAre(4, 8));
  EXPECT_EQ(table->column(1).name(), "b");
  EXPECT_THAT(Decode(table->column(1)), ElementsAre("x", "y"));
  // Skipped fields are not parsed: text in a dropped numeric-looking column is no error.
  const std::string odd = "a,b\n1,2\n3,not-a-number-but-dropped\n";
  CsvOptions only_a;
  only_a.columns = {"a"};
  only_a.dtypes = {};
  auto skipped = ParseTask(odd, only_a);
  ASSERT_TRUE(skipped.ok()) << skipped.status().ToString();
  EXPECT_THAT(skipped->column(0).values<int64_t>(), ElementsAre(1, 3));

  options.columns = {"a", "zz"};
  EXPECT_THAT(ParseTask(text, options).status().message(),
              HasSubstr("columns: entry 'zz' is not a column (the header has: a, b, c, d)"));
}

TEST(CsvStringsTest, DtypesOverrideTheInferredTypes) {
  const std::string text = "zip,price,count,label\n01234,1.25,7,1\n75001,2.5,8,0\n";
  CsvOptions options;
  options.label_column = "label";
  options.dtypes = {{"zip", "string"}, {"price", "float64"}, {"count", "int32"}};
  auto table = ParseTask(text, options);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_THAT(Decode(table->column(0)), ElementsAre("01234", "75001"));  // leading zero kept
  EXPECT_EQ(table->column(1).dtype(), ElementType::kFloat64);
  EXPECT_THAT(table->column(1).values<double>(), ElementsAre(1.25, 2.5));
  EXPECT_EQ(table->column(2).dtype(), ElementType::kInt32);
  EXPECT_FALSE(table->column(2).categorical());
  EXPECT_THAT(table->column(2).values<int32_t>(), ElementsAre(7, 8));
  EXPECT_THAT(table->column(3).values<int32_t>(), ElementsAre(1, 0));

  CsvOptions bad = options;
  bad.dtypes = {{"price", "decimal"}};
  EXPECT_THAT(ParseTask(text, bad).status().message(),
              HasSubstr("dtypes: 'price': unknown type 'decimal' (expected float32, float64, "
                        "int32, int64, bool, datetime or string)"));
  bad.dtypes = {{"prize", "float32"}};
  EXPECT_THAT(ParseTask(text, bad).status().message(),
              HasSubstr("dtypes: column 'prize' is not a column (the header has: zip, price, "
                        "count, label)"));
  bad.dtypes = {{"label", "string"}};
  EXPECT_THAT(ParseTask(text, bad).status().message(), HasSubstr("is the label_column"));
}

TEST(CsvStringsTest, MissingValuesInInt32ColumnsAreErrorsSuggestingFloat32) {
  CsvOptions options;
  options.label_column = "label";
  auto label = ParseTask("x,label\n1,2\n2,NA\n", options);
  EXPECT_THAT(label.status().message(),
              HasSubstr("line 3, column 'label' (field 2): 'NA' is a missing value, which an "
                        "int32 column cannot hold"));
  options.label_column.clear();
  options.dtypes = {{"n", "int32"}};
  auto forced = ParseTask("n,x\n1,1\n,2\n", options);
  EXPECT_THAT(forced.status().message(), HasSubstr("line 3, column 'n' (field 1)"));
  EXPECT_THAT(forced.status().message(), HasSubstr("dtypes: {n: float32}"));
}

// Types come from the first 10,000 data lines: text after them in a numeric column fails the
// task with the line, the column, the value and both fixes (na_values for a missing-value
// token, dtypes for text).
TEST(CsvStringsTest, TextAfterTheSampleInANumericColumnNamesLineColumnAndHint) {
  std::string text = "id,amount\n";
  for (int r = 0; r < 10200; ++r) text += std::to_string(r) + "," + std::to_string(r) + ".5\n";
  text += "10200,lots\n";  // line 10202
  auto schema = io::InferCsvSchema(text, {});
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  EXPECT_FALSE(schema->Find("amount")->categorical);
  auto table = ParseTask(text, {});
  ASSERT_FALSE(table.ok());
  EXPECT_THAT(table.status().message(),
              HasSubstr("line 10202, column 'amount' (field 2): 'lots' is not a number"));
  EXPECT_THAT(table.status().message(), HasSubstr("add it to na_values"));
  EXPECT_THAT(table.status().message(), HasSubstr("set dtypes: {amount: string}"));
}

TEST(CsvStringsTest, HeaderAndFieldCountErrorsNameLineAndColumn) {
  EXPECT_THAT(ParseTask("a,,b\n1,2,3\n", {}).status().message(),
              HasSubstr("line 1: column 2 has an empty name"));
  EXPECT_THAT(ParseTask("a,b,a\n1,2,3\n", {}).status().message(),
              HasSubstr("line 1: duplicate column name 'a' in the header (columns 1 and 3)"));
  // Found early by the schema pass, and by the parser past the sample.
  EXPECT_THAT(ParseTask("a,b\n1,2\n1,2,3\n", {}).status().message(),
              HasSubstr("line 3: expected 2 fields, found 3"));
  EXPECT_THAT(ParseTask("a,b\n1,2\n\"x,y\"\n", {}).status().message(),
              HasSubstr("line 3: expected 2 fields, found 1"));
  std::string late = "a,b\n";
  for (int r = 0; r < 1100; ++r) late += "1,2\n";
  late += "3\n";
  EXPECT_THAT(ParseTask(late, {}).status().message(), HasSubstr("line 1102: expected 2 fields, found 1"));
}

TEST(CsvStringsTest, ByteOrderMarkAndCrlfWithStrings) {
  const std::string text = "\xEF\xBB\xBF\"city\",x\r\nParis,1\r\n\"Le Mans\",2\r\n,3\r\n";
  auto table = ParseTask(text, {});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->column(0).name(), "city");
  EXPECT_THAT(Decode(table->column(0)), ElementsAre("Paris", "Le Mans", "<NA>"));
  EXPECT_THAT(table->column(1).values<int64_t>(), ElementsAre(1, 2, 3));
}

TEST(CsvSchemaTest, InfersFloat32StringsAndTheLabel) {
  const std::string text = "x,city,gap,label\n1.5,Paris,,1\n2,Lyon,NA,0\n";
  CsvOptions options;
  options.label_column = "label";
  auto schema = io::InferCsvSchema(text, options);
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  const std::vector<io::ColumnSchema> want = {
      {"x", ElementType::kFloat32, false},
      {"city", ElementType::kInt32, true},
      {"gap", ElementType::kFloat32, false},  // only missing values: a float column of NaN
      {"label", ElementType::kInt32, false}};
  EXPECT_EQ(schema->columns, want);
  options.columns = {"label", "city"};
  auto subset = io::InferCsvSchema(text, options);
  ASSERT_TRUE(subset.ok());
  EXPECT_EQ(subset->columns, (std::vector<io::ColumnSchema>{want[3], want[1]}));
  options.columns = {"x"};
  EXPECT_THAT(io::InferCsvSchema(text, options).status().message(),
              HasSubstr("label_column 'label' is not among the columns: kept"));
}

// The sample is the first 1 MiB whatever the caller passes, and a line cut at 1 MiB is left
// out, so a task passing its mmap's prefix and one passing the whole text agree. (Lines of 128
// bytes, so the byte limit comes before the 10,000-line one.)
TEST(CsvSchemaTest, TheSampleIsTheSameForAPrefixAndTheWholeText) {
  const std::string pad(123, 'p');
  std::string text = "a,b,c\n";
  while (text.size() < io::kCsvSchemaSampleBytes - 6 - 128) text += "1,2," + pad + "\n";
  text += "1,2," + std::string(io::kCsvSchemaSampleBytes - 6 - text.size(), 'p') + "\n";
  text += "3,4xyz,q\n";  // crosses the 1 MiB mark: not sampled, so b stays a number
  for (int r = 0; r < 100; ++r) text += "5,6,q\n";
  ASSERT_GT(text.size(), io::kCsvSchemaSampleBytes);
  auto whole = io::InferCsvSchema(text, {});
  auto prefix = io::InferCsvSchema(std::string_view(text).substr(0, io::kCsvSchemaSampleBytes), {});
  ASSERT_TRUE(whole.ok() && prefix.ok());
  EXPECT_EQ(*whole, *prefix);
  EXPECT_EQ(whole->Find("b")->dtype, ElementType::kInt64);
  EXPECT_FALSE(whole->Find("b")->categorical);
  // A short file is all sample, its unterminated last line included.
  auto small = io::InferCsvSchema("a,b\n1,2\n3,x", {});
  ASSERT_TRUE(small.ok());
  EXPECT_TRUE(small->Find("b")->categorical);
}

TEST(CsvSchemaTest, UnknownLabelColumnListsTheHeader) {
  CsvOptions options;
  options.label_column = "target";
  EXPECT_THAT(io::InferCsvSchema("a,b\n1,2\n", options).status().message(),
              HasSubstr("label_column 'target' is not a column (the header has: a, b)"));
  EXPECT_THAT(io::InferCsvSchema("", {}).status().message(), HasSubstr("empty"));
}

}  // namespace
}  // namespace coupler::kernels
