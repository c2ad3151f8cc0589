// Matching node `requires` against worker labels, and the reason a node waits.
#include "coordinator/placement/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace coupler::coordinator {
namespace {

TEST(PlacementTest, WorkerMustHaveEveryRequiredPair) {
  const Labels worker = {{"interconnect", "nvlink"}, {"zone", "a"}};
  EXPECT_TRUE(LabelsMatch({}, worker));
  EXPECT_TRUE(LabelsMatch({}, {}));
  EXPECT_TRUE(LabelsMatch({{"zone", "a"}}, worker));
  EXPECT_TRUE(LabelsMatch({{"zone", "a"}, {"interconnect", "nvlink"}}, worker));
  EXPECT_FALSE(LabelsMatch({{"zone", "b"}}, worker));
  EXPECT_FALSE(LabelsMatch({{"zone", "a"}, {"rack", "1"}}, worker));
  EXPECT_FALSE(LabelsMatch({{"interconnect", "NVLink"}}, worker));
  EXPECT_FALSE(LabelsMatch({{"zone", "a"}}, {}));
}

TEST(PlacementTest, ReasonNamesTheLabelsAndCountsTheAliveWorkers) {
  const Labels a = {{"zone", "a"}};
  const Labels b = {{"zone", "b"}, {"interconnect", "infiniband"}};
  EXPECT_EQ(UnmatchedReason({{"interconnect", "infiniband"}}, {&a, &a}),
            "waiting for a worker with interconnect=infiniband (2 alive workers, none match)");
  EXPECT_EQ(UnmatchedReason({{"zone", "b"}, {"rack", "1"}}, {&b}),
            "waiting for a worker with rack=1,zone=b (1 alive worker, none match)");
  EXPECT_EQ(UnmatchedReason({{"zone", "b"}}, {}),
            "waiting for a worker with zone=b (0 alive workers, none match)");
  EXPECT_EQ(UnmatchedReason({{"zone", "b"}}, {&a, &b}), "");
  EXPECT_EQ(UnmatchedReason({}, {}), "");
}

}  // namespace
}  // namespace coupler::coordinator
