// How a gang's ranks are packed onto the workers that have room: the fewest hosts (most room
// first), slots the gang already holds next, then hosts whose GPUs run cooler, then a fast
// interconnect; a host of several workers is judged by all of them.
#include "coordinator/placement/rank_packing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace coupler::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(RankPackingTest, TheHostWithMostRoomIsFilledFirst) {
  EXPECT_THAT(PackRanks({{"a", "h1", 2, 0, false, 0}, {"b", "h2", 4, 0, false, 0}}, 4),
              ElementsAre(Pair("b", 4)));
  EXPECT_THAT(PackRanks({{"a", "h1", 2, 0, false, 0}, {"b", "h2", 3, 0, false, 0}}, 4),
              ElementsAre(Pair("b", 3), Pair("a", 1)));
}

TEST(RankPackingTest, OnATieTheHostWhoseGpusRunCoolerWinsBeforeAFastInterconnect) {
  // "a" comes first by name and has NVLink, but one of its GPUs is slowed for heat (2).
  EXPECT_THAT(PackRanks({{"a", "h1", 4, 0, true, 2}, {"b", "h2", 4, 0, false, 0}}, 4),
              ElementsAre(Pair("b", 4)));
  // Room still comes first: a gang on one hot host beats one split over two cool ones.
  EXPECT_THAT(PackRanks({{"a", "h1", 4, 0, false, 2}, {"b", "h2", 2, 0, false, 0},
                         {"c", "h3", 2, 0, false, 0}},
                        4),
              ElementsAre(Pair("a", 4)));
  // A host is as hot as its hottest worker.
  EXPECT_THAT(PackRanks({{"a1", "h1", 2, 0, false, 0}, {"a2", "h1", 2, 0, false, 1},
                         {"b1", "h2", 2, 0, false, 0}, {"b2", "h2", 2, 0, false, 0}},
                        4),
              ElementsAre(Pair("b1", 2), Pair("b2", 2)));
}

}  // namespace
}  // namespace coupler::coordinator
