#include "runtime/job/raw_value.h"

#include <gtest/gtest.h>

#include <memory>

namespace coupler::job {
namespace {

// 300,000 levels, as a hand-built tree: freeing it must not recurse once per level.
TEST(RawValueTest, FreesATreeNestedHundredsOfThousandsDeep) {
  auto tree = std::make_unique<RawValue>();
  RawValue* leaf = tree.get();
  for (int i = 0; i < 300'000; ++i) {
    leaf->kind = i % 2 ? RawValue::Kind::kSequence : RawValue::Kind::kMap;
    if (i % 2) {
      leaf->items.emplace_back();
      leaf = &leaf->items.back();
    } else {
      leaf->entries.push_back(RawEntry{"k", {}, RawValue()});
      leaf = &leaf->entries.back().value;
    }
  }
  leaf->kind = RawValue::Kind::kScalar;
  leaf->text = "bottom";
  tree.reset();
  SUCCEED();
}

TEST(RawValueTest, MovedAndCopiedTreesKeepTheirValues) {
  RawValue list;
  list.kind = RawValue::Kind::kSequence;
  for (const char* s : {"a", "b"}) {
    RawValue item;
    item.kind = RawValue::Kind::kScalar;
    item.text = s;
    list.items.push_back(item);
  }
  RawValue copy = list;
  RawValue moved = std::move(list);
  ASSERT_EQ(copy.items.size(), 2u);
  ASSERT_EQ(moved.items.size(), 2u);
  EXPECT_EQ(copy.items[1].text, "b");
  EXPECT_EQ(moved.items[0].text, "a");
}

TEST(RawTreeBuilderTest, StopsAtTheFirstLevelPastItsDepth) {
  RawTreeBuilder b(/*max_depth=*/3);
  for (int i = 1; i <= 10; ++i) b.StartSequence({1, i});
  b.Scalar({1, 11}, "x", false);
  for (int i = 0; i < 10; ++i) b.End();
  ASSERT_TRUE(b.failed());
  EXPECT_EQ(b.error()->pos.column, 4);
  EXPECT_EQ(b.error()->message, NestingTooDeepMessage());
}

TEST(RawTreeBuilderTest, ChargesAliasesBeforeCopyingThem) {
  RawTreeBuilder b(kMaxSpecDepth, kMaxSpecValues, /*max_aliased=*/10);
  b.StartSequence({1, 1});
  b.StartSequence({1, 2}, /*anchor=*/1);
  for (int i = 0; i < 3; ++i) b.Scalar({1, 3 + i}, "x", false);
  b.End();                  // the anchored list: 4 values, copied once for later aliases
  EXPECT_TRUE(b.Alias({2, 1}, 1));
  EXPECT_FALSE(b.failed());  // 8 of 10
  EXPECT_TRUE(b.Alias({3, 1}, 1));
  ASSERT_TRUE(b.failed());   // 12 of 10
  EXPECT_EQ(b.error()->pos.line, 3);
}

}  // namespace
}  // namespace coupler::job
