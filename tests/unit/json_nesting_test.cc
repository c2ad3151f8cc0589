// The nesting check a JSON text passes before a recursive parser sees it (the HTTP API's
// submission bodies): the spec readers' depth bound, brackets inside strings not counted.
#include <string>

#include <gtest/gtest.h>

#include "runtime/job/json_nesting.h"

namespace coupler::job {
namespace {

std::string Arrays(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonNestingTest, AcceptsUpToTheSpecDepth) {
  EXPECT_TRUE(CheckJsonNesting("").ok());
  EXPECT_TRUE(CheckJsonNesting("{\"spec\": {\"name\": \"x\", \"nodes\": [{\"id\": \"a\"}]}}").ok());
  EXPECT_TRUE(CheckJsonNesting(Arrays(kMaxSpecDepth)).ok());
  // Siblings do not add up: depth is how far inside one another.
  std::string wide;
  for (int i = 0; i < 1000; ++i) wide += "[[]],";
  EXPECT_TRUE(CheckJsonNesting("[" + wide + "[]]").ok());
}

TEST(JsonNestingTest, RefusesDeeperWithTheSpecReadersMessage) {
  const Status s = CheckJsonNesting(Arrays(kMaxSpecDepth + 1));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), NestingTooDeepMessage());
  // Objects count as arrays do; a text that never closes is refused as soon as it passes.
  std::string objects;
  for (int i = 0; i < 200'000; ++i) objects += "{\"a\":";
  EXPECT_FALSE(CheckJsonNesting(objects).ok());
  EXPECT_FALSE(CheckJsonNesting(std::string(200'000, '[')).ok());
  // A caller's own bound.
  EXPECT_TRUE(CheckJsonNesting(Arrays(3), 3).ok());
  EXPECT_FALSE(CheckJsonNesting(Arrays(4), 3).ok());
}

TEST(JsonNestingTest, BracketsInStringsDoNotCount) {
  const std::string brackets(1000, '[');
  EXPECT_TRUE(CheckJsonNesting("{\"a\": \"" + brackets + "\"}").ok());
  // An escaped quote does not end the string; an escaped backslash does not escape the quote.
  EXPECT_TRUE(CheckJsonNesting("[\"\\\"" + brackets + "\"]").ok());
  EXPECT_FALSE(CheckJsonNesting("[\"\\\\\"" + brackets + "]").ok());
}

}  // namespace
}  // namespace coupler::job
