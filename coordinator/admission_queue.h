// AdmissionQueue: the intake thread. Submitted specs are parsed, validated, planned and their
// datasets listed on a thread of their own, so a large or slow spec never holds up the event
// loop (heartbeats, dispatch, results). The loop hands a submission in, is woken through an
// inproc socket when it is admitted (or refused), and takes the result out to store and
// schedule it: the store and the scheduler stay the loop's alone. The same thread records the
// nodes that succeeded in the reuse catalogue (a folder walk and a write), in the order they
// were handed in among the submissions: a job submitted after another finished finds its nodes.
// And it reads a retried job's rows (and rebuilds a job no longer in memory from them) through
// a read-only connection of its own, so a retry of a million-task job never stalls the loop.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "coordinator/job_intake.h"
#include "runtime/status.h"
#include "runtime/wire/messages.h"

namespace coupler::coordinator {

class AdmissionQueue {
 public:
  // Who asked, so the loop can answer when the admission is done.
  struct Ticket {
    std::string identity;  // the client's route
    std::string user;      // its key's name
    bool delimiter = false;
    std::string job_id;
    int64_t submitted_ms = 0;
    std::string submission_id;  // the client's, "" if none
  };
  struct Done {
    Ticket ticket;
    Result<AdmittedJob> admitted = Internal("not admitted");
  };
  // A `coupler retry` whose job's rows are read here (ticket.job_id), `rebuild`: the job is not
  // in memory, so it is rebuilt from them too.
  struct RetryDone {
    Ticket ticket;
    bool rebuild = false;
    Result<RetryLoad> load = Internal("not loaded");
  };

  // `wake_endpoint`: an inproc address the loop has bound a PULL socket to, in `ctx`.
  // `intake`'s pointees outlive the queue.
  AdmissionQueue(zmq::context_t& ctx, std::string wake_endpoint, size_t max_pending,
                 IntakeContext intake);
  ~AdmissionQueue();
  AdmissionQueue(const AdmissionQueue&) = delete;
  AdmissionQueue& operator=(const AdmissionQueue&) = delete;

  // Unavailable when `max_pending` submissions are waiting already (the client retries).
  Status Push(Ticket ticket, wire::SubmitJob submit);
  // Records a node that succeeded in the reuse catalogue (intake.reuse), after what was handed
  // in before it. Never refused; done before the queue is destroyed.
  void Record(ReuseRecord record);
  // Reads a retried job's rows on the intake thread (job_intake.h, LoadForRetry), in order with
  // what was handed in before. Never refused: the loop lets one retry per job in at a time.
  void PushRetry(Ticket ticket, bool rebuild);
  // Admissions finished since the last call.
  std::vector<Done> Take();
  // Retries loaded since the last call.
  std::vector<RetryDone> TakeRetries();
  size_t pending() const;

 private:
  void Loop();
  void RecordReusable(const ReuseRecord& record);
  RetryDone LoadRetry(Ticket ticket, bool rebuild);

  zmq::context_t& ctx_;
  std::string wake_endpoint_;
  size_t max_pending_;
  IntakeContext intake_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  // A submission to admit, a retry to load, or a node to record: in the order handed in.
  struct Item {
    std::optional<std::pair<Ticket, wire::SubmitJob>> submission;
    std::optional<std::pair<Ticket, bool>> retry;
    ReuseRecord record;
  };
  std::deque<Item> waiting_;
  size_t waiting_submissions_ = 0;
  size_t in_progress_ = 0;
  std::vector<Done> done_;
  std::vector<RetryDone> retries_done_;
  std::unique_ptr<store::StateStore> state_;  // the intake thread's, opened at the first retry
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace coupler::coordinator
