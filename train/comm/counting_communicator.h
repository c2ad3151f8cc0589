// A Communicator decorator that counts the collectives passing through it, so a trainer (and its
// tests) can prove how many all-reduces a step really issued rather than trust a reducer's word.
#pragma once

#include <cstddef>

#include "train/comm/communicator.h"

namespace coupler::comm {

class CountingCommunicator final : public Communicator {
 public:
  // inner is borrowed and must outlive this object.
  explicit CountingCommunicator(Communicator& inner)
      : Communicator(inner.timeout(), inner.memory_space()), inner_(inner) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  Status AllReduce(const void* send, void* recv, size_t count, ElementType type,
                   ReduceOp op) override {
    ++allreduces_;
    return inner_.AllReduce(send, recv, count, type, op);
  }
  Status Broadcast(void* buf, size_t count, ElementType type, int root) override {
    ++broadcasts_;
    return inner_.Broadcast(buf, count, type, root);
  }
  Status Barrier() override {
    ++barriers_;
    return inner_.Barrier();
  }

  size_t allreduces() const { return allreduces_; }
  size_t broadcasts() const { return broadcasts_; }
  size_t barriers() const { return barriers_; }

 private:
  Communicator& inner_;
  size_t allreduces_ = 0;
  size_t broadcasts_ = 0;
  size_t barriers_ = 0;
};

}  // namespace coupler::comm
