// AdmissionQueue: submitted specs are parsed, validated, planned and their datasets listed on
// a thread of their own, so a large or slow spec never holds up the event loop (heartbeats,
// dispatch, results). The loop hands a submission in, is woken through an inproc socket when
// it is admitted (or refused), and takes the result out to store and schedule it: the store
// and the scheduler stay the loop's alone.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
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

  // `wake_endpoint`: an inproc address the loop has bound a PULL socket to, in `ctx`.
  // `intake`'s pointees outlive the queue.
  AdmissionQueue(zmq::context_t& ctx, std::string wake_endpoint, size_t max_pending,
                 IntakeContext intake);
  ~AdmissionQueue();
  AdmissionQueue(const AdmissionQueue&) = delete;
  AdmissionQueue& operator=(const AdmissionQueue&) = delete;

  // Unavailable when `max_pending` submissions are waiting already (the client retries).
  Status Push(Ticket ticket, wire::SubmitJob submit);
  // Admissions finished since the last call.
  std::vector<Done> Take();
  size_t pending() const;

 private:
  void Loop();

  zmq::context_t& ctx_;
  std::string wake_endpoint_;
  size_t max_pending_;
  IntakeContext intake_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<Ticket, wire::SubmitJob>> waiting_;
  size_t in_progress_ = 0;
  std::vector<Done> done_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace coupler::coordinator
