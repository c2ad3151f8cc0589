// import_csv's kernel: N tasks splitting one CSV by bytes read every row exactly once, in order,
// for every N (including more tasks than lines), with or without a trailing newline, header or
// not; bad rows fail with the line number and the column.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/csv_import.h"

namespace coupler::kernels {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Rows of uneven width so the byte ranges cut lines at every possible place.
std::string MakeCsv(int rows, bool header, bool trailing_newline, const char* eol = "\n") {
  std::string text = header ? std::string("x, \"y\" ,label") + eol : "";
  for (int r = 0; r < rows; ++r) {
    text += std::to_string(r) + "," + std::string(static_cast<size_t>(r % 13), '0') + "1.5," +
            std::to_string(r % 10);
    if (r + 1 < rows || trailing_newline) text += eol;
  }
  return text;
}

struct Parsed {
  std::vector<float> x;
  std::vector<float> y;
  std::vector<int32_t> label;
};

// Runs `count` tasks over the text and concatenates what they parsed, in task order.
Parsed ParseInTasks(const std::string& text, size_t count, const CsvOptions& options) {
  Parsed all;
  auto names = CsvColumnNames(text, options);
  EXPECT_TRUE(names.ok()) << names.status().ToString();
  size_t expected_begin = 0;
  for (size_t i = 0; i < count; ++i) {
    const CsvRange range = CsvTaskRange(text, options.header, i, count);
    if (i > 0) {
      EXPECT_EQ(range.begin, expected_begin) << "task " << i << " of " << count;
    }
    expected_begin = range.end;
    auto table = ParseCsvRange(text, range, *names, options);
    EXPECT_TRUE(table.ok()) << table.status().ToString();
    if (!table.ok()) return all;
    for (float v : table->column(0).values<float>()) all.x.push_back(v);
    for (float v : table->column(1).values<float>()) all.y.push_back(v);
    if (table->column(2).dtype() == ElementType::kInt32) {
      for (int32_t v : table->column(2).values<int32_t>()) all.label.push_back(v);
    } else {
      for (float v : table->column(2).values<float>()) all.label.push_back(static_cast<int32_t>(v));
    }
  }
  EXPECT_EQ(expected_begin, text.size());
  return all;
}

void ExpectEveryRowOnce(const Parsed& parsed, int rows) {
  ASSERT_EQ(parsed.x.size(), static_cast<size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    ASSERT_EQ(parsed.x[static_cast<size_t>(r)], static_cast<float>(r)) << "row " << r;
    ASSERT_EQ(parsed.y[static_cast<size_t>(r)], 1.5f);
    ASSERT_EQ(parsed.label[static_cast<size_t>(r)], r % 10);
  }
}

TEST(KernelsCsvTest, EveryRowReadExactlyOnceForOneToSevenTasks) {
  CsvOptions options;
  options.label_column = "label";
  for (bool trailing : {true, false}) {
    for (int rows : {0, 1, 2, 5, 97}) {
      const std::string text = MakeCsv(rows, /*header=*/true, trailing);
      for (size_t count = 1; count <= 7; ++count) {
        SCOPED_TRACE("rows=" + std::to_string(rows) + " tasks=" + std::to_string(count) +
                     " trailing newline=" + std::to_string(trailing));
        ExpectEveryRowOnce(ParseInTasks(text, count, options), rows);
      }
    }
  }
}

TEST(KernelsCsvTest, WithoutHeaderColumnsAreNumbered) {
  const std::string text = MakeCsv(50, /*header=*/false, /*trailing_newline=*/false);
  CsvOptions options;
  options.header = false;
  auto names = CsvColumnNames(text, options);
  ASSERT_TRUE(names.ok());
  EXPECT_THAT(*names, ElementsAre("c0", "c1", "c2"));
  for (size_t count = 1; count <= 7; ++count) {
    SCOPED_TRACE(count);
    ExpectEveryRowOnce(ParseInTasks(text, count, options), 50);
  }
}

TEST(KernelsCsvTest, CrlfLinesByteOrderMarkAndBlankLines) {
  std::string text = "\xEF\xBB\xBF" + MakeCsv(20, /*header=*/true, true, "\r\n") + "\r\n\n";
  CsvOptions options;
  options.label_column = "label";
  auto names = CsvColumnNames(text, options);
  ASSERT_TRUE(names.ok());
  EXPECT_THAT(*names, ElementsAre("x", "y", "label"));  // trimmed, quotes removed, no BOM
  for (size_t count = 1; count <= 7; ++count) ExpectEveryRowOnce(ParseInTasks(text, count, options), 20);
}

TEST(KernelsCsvTest, MoreTasksThanLinesLeavesSomeEmpty) {
  const std::string text = MakeCsv(3, /*header=*/true, true);
  CsvOptions options;
  ExpectEveryRowOnce(ParseInTasks(text, 64, options), 3);
}

TEST(KernelsCsvTest, NumbersInEveryUsualSpelling) {
  const std::string plain = "a,b\n +1.5 , -2e3\n\"7\",1e-50\n";
  const std::string specials = "nan,-inf\n";
  const std::string hex = "0x10,3\n";
  const std::string text = plain + specials + hex;
  CsvOptions options;
  auto names = CsvColumnNames(text, options);
  ASSERT_TRUE(names.ok());
  auto table = ParseCsvRange(text, {4, plain.size()}, *names, options);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_THAT(table->column(0).values<float>(), ElementsAre(1.5f, 7.0f));
  EXPECT_THAT(table->column(1).values<float>(), ElementsAre(-2000.0f, 0.0f));  // 1e-50 underflows
  auto odd = ParseCsvRange(text, {plain.size(), plain.size() + specials.size()}, *names, options);
  ASSERT_TRUE(odd.ok()) << odd.status().ToString();
  EXPECT_TRUE(std::isnan(odd->column(0).values<float>()[0]));
  EXPECT_EQ(odd->column(1).values<float>()[0], -INFINITY);
  // from_chars reads no hex prefix: "0x10" is not a number.
  auto bad = ParseCsvRange(text, {plain.size() + specials.size(), text.size()}, *names, options);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("line 5, column 'a' (field 1): '0x10' is not a number"));
}

TEST(KernelsCsvTest, LabelsAreInt32AndMustBeWhole) {
  const std::string text = "f,label\n1,3\n2,4.0\n3,4.5\n";
  CsvOptions options;
  options.label_column = "label";
  auto names = CsvColumnNames(text, options);
  ASSERT_TRUE(names.ok());
  auto good = ParseCsvRange(text, {8, 18}, *names, options);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->column(1).dtype(), ElementType::kInt32);
  EXPECT_THAT(good->column(1).values<int32_t>(), ElementsAre(3, 4));
  auto bad = ParseCsvRange(text, {8, text.size()}, *names, options);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("line 4, column 'label' (field 2): '4.5' is not an int32 label"));
}

TEST(KernelsCsvTest, BadRowsNameTheirLineEvenInALaterTask) {
  std::string text = MakeCsv(40, /*header=*/true, true);
  text += "1,2\n";                 // line 42: a field short
  text += MakeCsv(5, false, true);
  CsvOptions options;
  options.label_column = "label";
  auto names = CsvColumnNames(text, options);
  ASSERT_TRUE(names.ok());
  const CsvRange last = CsvTaskRange(text, true, 1, 2);
  auto table = ParseCsvRange(text, last, *names, options);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(table.status().message(), HasSubstr("line 42: expected 3 fields, found 2"));

  const std::string extra = "a,b\n1,2\n3,4,5\n";
  auto names2 = CsvColumnNames(extra, {});
  auto too_many = ParseCsvRange(extra, CsvTaskRange(extra, true, 0, 1), *names2, {});
  EXPECT_THAT(too_many.status().message(), HasSubstr("line 3: expected 2 fields, found 3"));

  const std::string words = "a,b\n1,2\n3,abc\n4,\n";
  auto not_number = ParseCsvRange(words, {4, 14}, *names2, {});
  EXPECT_THAT(not_number.status().message(),
              HasSubstr("line 3, column 'b' (field 2): 'abc' is not a number"));
  // An empty field is a missing value now, not an error: NaN in a float column.
  auto empty = ParseCsvRange(words, {14, words.size()}, *names2, {});
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(std::isnan(empty->column(1).values<float>()[0]));
  auto huge = ParseCsvRange(std::string("a,b\n1e39,1\n"), {4, 11}, *names2, {});
  EXPECT_THAT(huge.status().message(), HasSubstr("out of float32 range"));
}

TEST(KernelsCsvTest, HeaderProblems) {
  CsvOptions options;
  EXPECT_THAT(CsvColumnNames("", options).status().message(), HasSubstr("empty"));
  EXPECT_THAT(CsvColumnNames("a,,b\n", options).status().message(),
              HasSubstr("column 2 has an empty name"));
  EXPECT_THAT(CsvColumnNames("a,b,a\n", options).status().message(),
              HasSubstr("duplicate column name 'a'"));
  options.label_column = "target";
  EXPECT_THAT(CsvColumnNames("a,b\n", options).status().message(),
              HasSubstr("label_column 'target' is not a column (columns: a, b)"));
}

}  // namespace
}  // namespace coupler::kernels
