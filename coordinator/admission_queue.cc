#include "coordinator/admission_queue.h"

#include <malloc.h>

#include <algorithm>

#include "runtime/logging.h"

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
    if (waiting_submissions_ + in_progress_ >= max_pending_) {
      return Unavailable("the coordinator is admitting " + std::to_string(max_pending_) +
                         " jobs already: submit again in a moment");
    }
    Item item;
    item.submission.emplace(std::move(ticket), std::move(submit));
    waiting_.push_back(std::move(item));
    ++waiting_submissions_;
  }
  cv_.notify_one();
  return Status::Ok();
}

void AdmissionQueue::Record(ReuseRecord record) {
  if (intake_.reuse == nullptr) return;
  {
    std::lock_guard lock(mu_);
    Item item;
    item.record = std::move(record);
    waiting_.push_back(std::move(item));
  }
  cv_.notify_one();
}

void AdmissionQueue::RecordReusable(const ReuseRecord& r) {
  Status s = intake_.reuse->Record(r.root, r.key, r.run_dir, r.job_id, r.node);
  if (!s.ok()) {
    // Only a later --reuse loses: it runs the node again.
    Logger("coordinator")->warn("job {} node {}: not recorded for reuse: {}", r.job_id, r.node,
                                s.message());
  }
}

void AdmissionQueue::PushRetry(Ticket ticket, bool rebuild) {
  {
    std::lock_guard lock(mu_);
    Item item;
    item.retry.emplace(std::move(ticket), rebuild);
    waiting_.push_back(std::move(item));
  }
  cv_.notify_one();
}

AdmissionQueue::RetryDone AdmissionQueue::LoadRetry(Ticket ticket, bool rebuild) {
  RetryDone d;
  d.ticket = std::move(ticket);
  d.rebuild = rebuild;
  if (state_ == nullptr) {
    if (intake_.state_dir.empty()) {
      d.load = Internal("retries are not loaded by this coordinator's intake");
      return d;
    }
    Result<std::unique_ptr<store::StateStore>> opened =
        store::StateStore::Open(intake_.state_dir, store::OpenMode::kReadOnly);
    if (!opened.ok()) {
      d.load = opened.status().WithContext("cannot read the state");
      return d;
    }
    state_ = std::move(*opened);
  }
  d.load = LoadForRetry(*state_, d.ticket.job_id, rebuild);
  return d;
}

std::vector<AdmissionQueue::RetryDone> AdmissionQueue::TakeRetries() {
  std::lock_guard lock(mu_);
  std::vector<RetryDone> out;
  out.swap(retries_done_);
  return out;
}

std::vector<AdmissionQueue::Done> AdmissionQueue::Take() {
  std::lock_guard lock(mu_);
  std::vector<Done> out;
  out.swap(done_);
  return out;
}

size_t AdmissionQueue::pending() const {
  std::lock_guard lock(mu_);
  return waiting_submissions_ + in_progress_;
}

void AdmissionQueue::Loop() {
  zmq::socket_t wake(ctx_, zmq::socket_type::push);
  wake.set(zmq::sockopt::linger, 0);
  wake.connect(wake_endpoint_);
  for (;;) {
    Item item;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
      // Stopping: nobody waits for admissions or retries any more, but what succeeded is
      // still recorded.
      if (stopping_) {
        std::erase_if(waiting_, [](const Item& i) { return i.submission || i.retry; });
      }
      if (waiting_.empty()) return;
      item = std::move(waiting_.front());
      waiting_.pop_front();
      if (item.retry) {
        lock.unlock();
        RetryDone d = LoadRetry(std::move(item.retry->first), item.retry->second);
        {
          std::lock_guard relock(mu_);
          retries_done_.push_back(std::move(d));
        }
        (void)wake.send(zmq::str_buffer("!"), zmq::send_flags::dontwait);
        continue;
      }
      if (!item.submission) {
        lock.unlock();
        RecordReusable(item.record);
        continue;
      }
      --waiting_submissions_;
      ++in_progress_;
    }
    auto& next = *item.submission;
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
