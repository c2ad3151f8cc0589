#include "runtime/job/scalars.h"

#include <gtest/gtest.h>

namespace coupler::job {
namespace {

TEST(ScalarsTest, ParsesStrictIntegers) {
  EXPECT_EQ(ParseInt("8"), 8);
  EXPECT_EQ(ParseInt("-3"), -3);
  EXPECT_EQ(ParseInt("+5"), 5);
  EXPECT_FALSE(ParseInt("8.0"));
  EXPECT_FALSE(ParseInt("eight"));
  EXPECT_FALSE(ParseInt(""));
  EXPECT_FALSE(ParseInt("99999999999999999999"));
}

TEST(ScalarsTest, ParsesFiniteFloatsOnly) {
  EXPECT_EQ(ParseFloat("0.5"), 0.5);
  EXPECT_EQ(ParseFloat("1e-3"), 1e-3);
  EXPECT_EQ(ParseFloat("16"), 16.0);
  EXPECT_FALSE(ParseFloat("inf"));
  EXPECT_FALSE(ParseFloat("nan"));
  EXPECT_FALSE(ParseFloat("1.5x"));
}

TEST(ScalarsTest, ParsesBooleansInYamlSpellings) {
  EXPECT_EQ(ParseBool("true"), true);
  EXPECT_EQ(ParseBool("No"), false);
  EXPECT_EQ(ParseBool("on"), true);
  EXPECT_FALSE(ParseBool("maybe"));
}

TEST(ScalarsTest, SuggestsNearestNameOnlyWhenClose) {
  const std::vector<std::string> ops = {"column_stats", "clip", "cast", "standardize"};
  EXPECT_EQ(NearestName("colum_stats", ops), "column_stats");
  EXPECT_EQ(NearestName("standardise", ops), "standardize");
  EXPECT_EQ(NearestName("transformer", ops), "");
  EXPECT_EQ(DidYouMean("clpi", ops), "did you mean 'clip'?");
}

}  // namespace
}  // namespace coupler::job
