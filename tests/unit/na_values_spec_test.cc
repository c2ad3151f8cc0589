// na_values in a spec: a bare NULL (or null, ~) in the list is YAML's null, but in a list of
// tokens it can only mean the word, so it is kept as the word (it used to be refused as
// "got nothing in the list"). A null written as nothing is still refused.
#include <string>
#include <variant>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/spec_test_util.h"

namespace coupler::job {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Spec(const std::string& na_values) {
  return "name: j\nworkdir: /tmp/w\nnodes:\n"
         "  - id: import\n    op: import_csv\n    inputs: [/data/digits.csv]\n"
         "    params: {na_values: " + na_values + "}\n";
}

TEST(NaValuesSpecTest, BareNullSpellingsAreTheWordsTheyLookLike) {
  for (const std::string list : {"[NULL, -999, ~, null]", "[NULL,-999,~,null]"}) {
    SCOPED_TRACE(list);
    const LoadedJob j = testing::Load(Spec(list));
    ASSERT_TRUE(j.ok()) << testing::Errors(j);
    const auto& params = j.graph->nodes[0].params;
    const auto* tokens = std::get_if<std::vector<std::string>>(&params.at("na_values"));
    ASSERT_NE(tokens, nullptr);
    EXPECT_THAT(*tokens, ElementsAre("NULL", "-999", "~", "null"));
  }
  const LoadedJob block = testing::Load(
      "name: j\nworkdir: /tmp/w\nnodes:\n"
      "  - id: import\n    op: import_csv\n    inputs: [/data/digits.csv]\n"
      "    params:\n      na_values:\n        - NULL\n        - \"NA\"\n");
  ASSERT_TRUE(block.ok()) << testing::Errors(block);
  EXPECT_THAT(std::get<std::vector<std::string>>(block.graph->nodes[0].params.at("na_values")),
              ElementsAre("NULL", "NA"));
}

TEST(NaValuesSpecTest, ANullWrittenAsNothingIsStillRefused) {
  const LoadedJob j = testing::Load(Spec("[NA, , x]"));
  EXPECT_FALSE(j.ok());
  EXPECT_THAT(testing::Errors(j), HasSubstr("got nothing in the list"));
}

}  // namespace
}  // namespace coupler::job
