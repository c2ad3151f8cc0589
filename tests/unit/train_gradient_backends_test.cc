// Choosing the gradient communicator: the real list's order for CPU and GPU ranks (decided from
// what the rank sees, nothing created), and the choice itself over fake backends — the first
// usable one wins, the others are never created, a creation error is not passed over.
#include "train/gradient_backends.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "train/backend/train_backend.h"
#include "train/comm/in_process_communicator.h"

namespace coupler::train {
namespace {

std::string ChosenWhat(const GradientRank& rank) {
  const GradientBackend* backend = FirstUsableGradientBackend(GradientBackends(), rank);
  if (backend == nullptr) return "none";
  return std::string(backend->name) + " / " + std::string(backend->what);
}

// What rank.cc does: the real list's first usable backend, created.
Result<GradientCommunicator> CreateChosen(const GradientRank& rank) {
  const GradientBackend* backend = FirstUsableGradientBackend(GradientBackends(), rank);
  if (backend == nullptr) return Internal("no backend is usable");
  return CreateGradientCommunicator(*backend, rank);
}

TEST(TrainGradientBackendsTest, CpuRankReducesOverMpiItself) {
  comm::InProcessGroup group(1);
  GradientRank rank{group.communicator(0)};
  rank.nccl_available = true;  // a visible GPU is no reason while the model is on the CPU
  EXPECT_EQ(ChosenWhat(rank), "mpi / the MPI communicator");
  auto created = CreateChosen(rank);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->owned, nullptr);
  EXPECT_EQ(created->communicator, &group.communicator(0));
}

TEST(TrainGradientBackendsTest, GpuRankPrefersNcclThenHostStaging) {
  comm::InProcessGroup group(1);
  TrainBackend model;  // stands in for the GPU: the choice only asks whether there is one
  GradientRank rank{group.communicator(0)};
  rank.gpu = &model;
  rank.gpu_device = 0;
  rank.nccl_available = true;
  EXPECT_EQ(ChosenWhat(rank), "nccl / the NCCL communicator");
  rank.nccl_available = false;
  EXPECT_EQ(ChosenWhat(rank), "mpi / the host-staged communicator");
  auto created = CreateChosen(rank);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_NE(created->owned, nullptr);
  EXPECT_EQ(created->communicator, created->owned.get());
  // Staging takes buffers where the backend keeps them: host memory for this stand-in.
  EXPECT_EQ(created->communicator->memory_space(), comm::MemorySpace::kHost);
}

TEST(TrainGradientBackendsTest, MpiIsLastAndAlwaysUsable) {
  const auto backends = GradientBackends();
  ASSERT_EQ(backends.size(), 3u);
  comm::InProcessGroup group(1);
  TrainBackend model;
  GradientRank gpu_rank{group.communicator(0)};
  gpu_rank.gpu = &model;
  gpu_rank.nccl_available = true;
  const GradientRank cpu_rank{group.communicator(0)};
  EXPECT_TRUE(backends.back().usable(gpu_rank));
  EXPECT_TRUE(backends.back().usable(cpu_rank));
  EXPECT_EQ(backends.back().name, "mpi");
}

// A one-rank communicator that does nothing: what a fake backend creates.
class IdleCommunicator final : public comm::Communicator {
 public:
  IdleCommunicator() : Communicator(comm::kDefaultCollectiveTimeout, comm::MemorySpace::kDevice) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status AllReduce(const void*, void*, size_t, ElementType, comm::ReduceOp) override {
    return Status::Ok();
  }
  Status Broadcast(void*, size_t, ElementType, int) override { return Status::Ok(); }
  Status Barrier() override { return Status::Ok(); }
};

// A backend that records whether it was asked and created.
struct Fake {
  bool usable = false;
  Status create_status = Status::Ok();
  int asked = 0;
  int created = 0;
  comm::Communicator* make = nullptr;  // what a successful create hands over (owned)

  GradientBackend Backend(std::string_view name) {
    return {name, name,
            [this](const GradientRank&) {
              ++asked;
              return usable;
            },
            [this](const GradientRank&) -> Result<std::unique_ptr<comm::Communicator>> {
              ++created;
              if (!create_status.ok()) return create_status;
              return std::unique_ptr<comm::Communicator>(make);
            }};
  }
};

TEST(TrainGradientBackendsTest, FirstUsableWinsAndOnlyItIsCreated) {
  comm::InProcessGroup group(2);
  Fake first, second, third;
  second.usable = true;
  third.usable = true;
  const std::vector<GradientBackend> backends = {first.Backend("first"), second.Backend("second"),
                                                 third.Backend("third")};
  const GradientRank rank{group.communicator(0)};
  const GradientBackend* chosen = FirstUsableGradientBackend(backends, rank);
  ASSERT_NE(chosen, nullptr);
  EXPECT_EQ(chosen->name, "second");
  EXPECT_EQ(first.asked, 1);
  EXPECT_EQ(second.asked, 1);
  EXPECT_EQ(third.asked, 0);
  // An owned communicator comes back as the one to use.
  second.make = new IdleCommunicator();
  auto created = CreateGradientCommunicator(*chosen, rank);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->communicator, second.make);
  EXPECT_EQ(created->communicator->memory_space(), comm::MemorySpace::kDevice);
  EXPECT_EQ(first.created + second.created + third.created, 1);
}

TEST(TrainGradientBackendsTest, CreationErrorIsReturnedNotPassedOver) {
  comm::InProcessGroup group(1);
  Fake failing, fallback;
  failing.usable = true;
  failing.create_status = Unavailable("no clique");
  fallback.usable = true;
  const std::vector<GradientBackend> backends = {failing.Backend("failing"),
                                                 fallback.Backend("fallback")};
  const GradientRank rank{group.communicator(0)};
  const GradientBackend* chosen = FirstUsableGradientBackend(backends, rank);
  ASSERT_NE(chosen, nullptr);
  auto created = CreateGradientCommunicator(*chosen, rank);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(fallback.asked + fallback.created, 0);
}

TEST(TrainGradientBackendsTest, NoneUsableIsNull) {
  comm::InProcessGroup group(1);
  Fake a;
  const std::vector<GradientBackend> backends = {a.Backend("a")};
  EXPECT_EQ(FirstUsableGradientBackend(backends, GradientRank{group.communicator(0)}), nullptr);
  EXPECT_EQ(FirstUsableGradientBackend({}, GradientRank{group.communicator(0)}), nullptr);
}

}  // namespace
}  // namespace coupler::train
