// The state of one rank's training run, shared by trainer_setup.cc (setup, resume,
// checkpoints) and trainer.cc (the step loop). Private to train/.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernels/train_kernels.h"
#include "train/comm/counting_communicator.h"
#include "train/comm/gradient_reducer.h"
#include "runtime/logging.h"
#include "train/memory/memory_budget.h"
#include "train/loss_scaler.h"
#include "train/backend/backend_bucket_math.h"
#include "train/backend/train_backend.h"
#include "train/memory/micro_batch_plan.h"
#include "train/metrics_history.h"
#include "train/model/checkpoint.h"
#include "train/model/mlp.h"
#include "train/model/optimizer.h"
#include "train/trainer.h"

namespace coupler::train::internal {

using Clock = std::chrono::steady_clock;

// Everything one rank holds for the run; the loop methods read like the algorithm.
class Trainer {
 public:
  Trainer(const TrainerOptions& options, const Split& data, TrainCommunicators comms)
      : options_(options),
        config_(options.config),
        data_(data),
        comm_(comms.gradients),
        host_comm_(comms.host),
        backend_(options.backend != nullptr ? *options.backend : cpu_backend_),
        budget_(options.device_memory_limit != 0 ? options.device_memory_limit
                                                 : backend_.memory_capacity(),
                &backend_.store()),
        scaler_(config_.precision == ElementType::kFloat16),
        log_(Logger("train")) {}

  Result<TrainReport> Run();

 private:
  Status Setup();
  Status CheckCommunicators() const;
  Status Resume();
  // Rank 0: where a run started afresh keeps its checkpoints (checkpoint_folder_).
  void ChooseFreshFolder();
  // Rank 0: the newest checkpoint of this run (SameRun) under checkpoint_dir and its folder;
  // nullopt when the folder holds no checkpoint at all; InvalidArgument naming how they differ
  // when it holds only other runs'.
  Result<std::optional<std::pair<std::string, CheckpointState>>> FindRunCheckpoint() const;
  // Rank 0: the checkpoint --resume-from names and the folder this run goes on writing to (the
  // file's own for this run's file; a fresh one when --force takes another run's).
  Result<std::pair<std::string, CheckpointState>> ReadNamedCheckpoint();
  Status RunStep(int64_t step);
  Status ReserveMicroBatch();
  Status BackOff(int64_t step, const Status& local_error);
  Status Evaluate();
  // A dataset's accuracy and mean loss, all ranks' rows together (a collective).
  struct Score {
    double accuracy = 0;
    double loss = 0;
  };
  Result<Score> ScoreOn(const Dataset& data);
  // At an epoch's end: scores the validation rows, keeps the best checkpoint, and decides early
  // stopping (early_stop_).
  Status Validate(int64_t next_step);
  // Scales the gradients to the config's clip_grad_norm when their norm is past it.
  Status ClipGradients();
  std::string GemmLabel() const;  // TrainReport::gemm
  // Rank 0: this run's state at `next_step` into `folder` (default: checkpoint_folder_),
  // keeping its newest `keep` files.
  Status SaveCheckpoint(int64_t next_step, const std::string& folder = {}, int keep = 3);
  Status OpenHistory();
  Status StopAt(int64_t next_step, bool checkpoint_written);
  // Rows of `split` into stage_x_/stage_y_, through host memory when the backend is a device.
  Status StageRows(const Dataset& split, std::span<const uint32_t> rows);
  void Progress(int64_t step, double loss, bool force);
  std::span<const uint32_t> EpochOrderFor(int64_t epoch);

  TrainerOptions options_;
  TrainConfig config_;
  const Split& data_;
  comm::CountingCommunicator comm_;  // the gradient communicator, its all-reduces counted
  comm::Communicator& host_comm_;
  TrainBackend cpu_backend_;  // used when options.backend is null
  TrainBackend& backend_;
  memory::MemoryBudget budget_;
  std::optional<BackendBucketMath> bucket_math_;
  precision::LossScaler scaler_;
  std::shared_ptr<spdlog::logger> log_;
  std::optional<Mlp> model_;
  std::optional<ParameterOptimizer> optimizer_;
  std::optional<comm::GradientReducer> reducer_;

  size_t micro_batch_ = 0;
  size_t accumulate_ = 0;
  size_t per_rank_ = 0;  // micro_batch x accumulate: this rank's share of a global batch
  // The division by the ranks rides in the loss gradient's scale, so the all-reduce's sum is
  // already the mean and no pass over the gradients divides them. Only where that gives the
  // same bits as dividing the sum: a power-of-two group (scaling by 2^-k is exact in binary
  // floating point, subnormals aside) and not fp16, whose narrow range would lose the low bits
  // of small gradients.
  bool mean_in_grad_scale_ = false;
  int64_t steps_per_epoch_ = 0;
  int64_t total_steps_ = 0;
  int64_t first_step_ = 0;
  // Rank 0: the folder this run's checkpoints go to, checkpoint_dir or, when that holds
  // another run's, a "run-*" folder of its own in it; retention counts only its files.
  std::string checkpoint_folder_;
  int64_t saved_step_ = -1;
  double grad_norm_ = -1;  // the last step's gradient norm when clipping (-1: not computed)
  StepRecord last_record_;  // the last step's history line, until Run appends it
  // The run's progress beyond its weights, checkpointed and restored by a resume: training-loop
  // seconds of earlier attempts, the best validation score so far and the epochs since.
  double train_seconds_before_ = 0;
  double best_val_loss_ = 0;
  double best_val_accuracy_ = 0;
  int64_t best_epoch_ = 0;
  int64_t epochs_since_best_ = 0;
  bool early_stop_ = false;  // every rank's Validate decided the run has stopped improving  // rank 0: the step of the newest checkpoint this process wrote
  // The config's split when it did not fit this rank count: on --resume the checkpoint's split
  // replaces it, so it is an error only when there is no checkpoint.
  Status split_error_ = Status::Ok();
  bool stop_agreed_ = false;  // every rank learnt in this step's all-reduce that one asked to stop
  std::optional<MetricsHistory> history_;  // rank 0's, when options_.metrics_history is set
  memory::DeviceBuffer stage_x_;
  memory::DeviceBuffer stage_y_;
  std::vector<float> host_x_;  // host staging of a device backend's micro-batches
  std::vector<int32_t> host_y_;
  // After the gradients, in their buffer: this rank's out-of-memory flag and loss sum. The
  // step's all-reduce averages them with the gradients, so every rank learns whether any rank
  // ran out of memory, and the global loss, without a collective of their own.
  static constexpr size_t kExtras = kGradientTail;
  int64_t cached_epoch_ = -1;
  std::vector<uint32_t> order_;

  TrainReport report_;
  double epoch_loss_sum_ = 0;
  int64_t epoch_loss_steps_ = 0;
  Clock::time_point last_progress_{};
  Clock::time_point loop_start_{};
  int64_t loop_steps_ = 0;
};

}  // namespace coupler::train::internal
