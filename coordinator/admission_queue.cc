#include "coordinator/admission_queue.h"

#include <malloc.h>

namespace coupler::coordinator {
namespace {

// After a spec this big, give the parse's memory back to the system at once: a refused
// 16 MiB spec must not leave the coordinator hundreds of MiB larger.
constexpr size_t kTrimAfterBytes = 1 << 20;
constexpr int kMmapThresholdBytes = 128 << 10;

}  // namespace

AdmissionQueue::AdmissionQueue(zmq::context_t& ctx, std::string wake_endpoint, size_t max_pending,
                               IntakeContext intake)
    : ctx_(ctx), wake_endpoint_(std::move(wake_endpoint)), max_pending_(max_pending), intake_(intake) {
  // A fixed threshold (glibc's own default): a spec's big blocks (its text, the per-node
  // arrays of a 200,000-node job) are mapped on their own and go back to the system when
  // freed. Left dynamic, glibc raises it to 32 MiB after the first big block is freed, and
  // the next ones stay in the arena heaps, whose tops malloc_trim does not return.
  mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes);
  thread_ = std::thread([this] { Loop(); });
}

AdmissionQueue::~AdmissionQueue() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Status AdmissionQueue::Push(Ticket ticket, wire::SubmitJob submit) {
  {
    std::lock_guard lock(mu_);
    if (waiting_.size() + in_progress_ >= max_pending_) {
      return Unavailable("the coordinator is admitting " + std::to_string(max_pending_) +
                         " jobs already: submit again in a moment");
    }
    waiting_.emplace_back(std::move(ticket), std::move(submit));
  }
  cv_.notify_one();
  return Status::Ok();
}

std::vector<AdmissionQueue::Done> AdmissionQueue::Take() {
  std::lock_guard lock(mu_);
  std::vector<Done> out;
  out.swap(done_);
  return out;
}

size_t AdmissionQueue::pending() const {
  std::lock_guard lock(mu_);
  return waiting_.size() + in_progress_;
}

void AdmissionQueue::Loop() {
  zmq::socket_t wake(ctx_, zmq::socket_type::push);
  wake.set(zmq::sockopt::linger, 0);
  wake.connect(wake_endpoint_);
  for (;;) {
    std::pair<Ticket, wire::SubmitJob> next;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
      if (stopping_) return;
      next = std::move(waiting_.front());
      waiting_.pop_front();
      ++in_progress_;
    }
    const size_t bytes = next.second.spec_text.size();
    Done d{next.first, AdmitJob(next.second, next.first.job_id, next.first.submitted_ms,
                                next.first.user, intake_)};
    next.second = {};
    if (bytes >= kTrimAfterBytes) malloc_trim(0);
    {
      std::lock_guard lock(mu_);
      --in_progress_;
      done_.push_back(std::move(d));
    }
    (void)wake.send(zmq::str_buffer("!"), zmq::send_flags::dontwait);
  }
}

}  // namespace coupler::coordinator
