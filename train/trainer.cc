#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "kernels/cpu/onednn_gemm.h"
#include "runtime/io/atomic_file.h"
#include "train/memory/memory_budget.h"
#include "runtime/util/json_writer.h"
#include "train/memory/micro_batch_plan.h"
#include "train/model/checkpoint.h"
#include "train/trainer_impl.h"

namespace coupler::train {
namespace internal {

Status Trainer::ReserveMicroBatch() {
  if (model_->reserved_micro_batch() == micro_batch_ && stage_x_.data() != nullptr) {
    return Status::Ok();
  }
  stage_x_ = {};
  stage_y_ = {};
  COUPLER_RETURN_IF_ERROR(model_->ReserveActivations(micro_batch_));
  const size_t features = data_.train.features;
  COUPLER_ASSIGN_OR_RETURN(stage_x_, budget_.Allocate(micro_batch_ * features * sizeof(float),
                                                      memory::MemoryKind::kData, "input batch"));
  COUPLER_ASSIGN_OR_RETURN(stage_y_, budget_.Allocate(micro_batch_ * sizeof(int32_t),
                                                      memory::MemoryKind::kData, "labels"));
  return Status::Ok();
}

Status Trainer::StageRows(const Dataset& split, std::span<const uint32_t> rows) {
  if (!backend_.on_device()) {
    GatherRows(split, rows, stage_x_.as<float>(), stage_y_.as<int32_t>());
    return Status::Ok();
  }
  host_x_.resize(rows.size() * split.features);
  host_y_.resize(rows.size());
  GatherRows(split, rows, host_x_.data(), host_y_.data());
  COUPLER_RETURN_IF_ERROR(
      backend_.CopyFromHost(stage_x_.data(), host_x_.data(), host_x_.size() * sizeof(float)));
  return backend_.CopyFromHost(stage_y_.data(), host_y_.data(), host_y_.size() * sizeof(int32_t));
}

// Every rank reached the same verdict through the step's all-reduce, so every rank changes the
// same way here; the effective batch (micro_batch x accumulate) stays per_rank_.
Status Trainer::BackOff(int64_t step, const Status& local_error) {
  const size_t next = BackOffMicroBatch(per_rank_, micro_batch_);
  const std::string why = local_error.ok() ? std::string("another rank ran out of device memory")
                                           : local_error.message();
  if (next == 0) {
    return ResourceExhausted("out of device memory even at micro_batch 1: " + why +
                             "; raise --device-memory-limit or shrink the model");
  }
  if (comm_.rank() == 0) {
    log_->warn("step {}: micro_batch {} -> {}, accumulate {} -> {} (effective batch {} per rank "
               "unchanged) because {}",
               step, micro_batch_, next, accumulate_, per_rank_ / next, per_rank_, why);
  }
  micro_batch_ = next;
  accumulate_ = per_rank_ / next;
  stage_x_ = {};
  stage_y_ = {};
  model_->ReleaseActivations();
  return Status::Ok();
}

Status Trainer::RunStep(int64_t step) {
  const auto step_start = Clock::now();
  const std::span<const uint32_t> order = EpochOrderFor(step / steps_per_epoch_);
  const size_t base = static_cast<size_t>(step % steps_per_epoch_) * config_.global_batch +
                      static_cast<size_t>(comm_.rank()) * per_rank_;
  const std::span<const uint32_t> mine = order.subspan(base, per_rank_);
  const comm::GradientTensor gradients = model_->GradientsWithTail();
  // The step's verdicts on the host; they travel in the gradients' tail (see kExtras).
  float extras[kExtras] = {};

  for (;;) {
    ++report_.step_attempts;
    COUPLER_RETURN_IF_ERROR(model_->ZeroGrads());
    Status local = ReserveMicroBatch();
    if (!local.ok() && local.code() != StatusCode::kResourceExhausted) return local;
    double loss = 0;
    if (local.ok()) {
      // Each micro-batch adds scale x (its loss sum) / per_rank_: after accumulation the buffer
      // holds scale x this rank's mean gradient, whatever the micro-batch size (divided by the
      // ranks too when the mean rides in the scale).
      float grad_scale = scaler_.scale() / static_cast<float>(per_rank_);
      if (mean_in_grad_scale_) grad_scale /= static_cast<float>(comm_.size());
      for (size_t k = 0; k < accumulate_; ++k) {
        COUPLER_RETURN_IF_ERROR(
            StageRows(data_.train, mine.subspan(k * micro_batch_, micro_batch_)));
        Result<double> part = model_->ForwardBackward(
            stage_x_.as<float>(), stage_y_.as<int32_t>(), micro_batch_, grad_scale);
        if (!part.ok()) {
          // A GPU library (cuBLAS) can run out of memory mid-pass: the same back-off as a
          // buffer that did not fit, once every rank has heard of it through the all-reduce.
          if (part.status().code() != StatusCode::kResourceExhausted) return part.status();
          local = part.status();
          break;
        }
        loss += *part;
      }
    }
    if (comm_.rank() == 0 && step >= options_.inject_inf_first &&
        step <= options_.inject_inf_last) {
      const float inf = std::numeric_limits<float>::infinity();
      COUPLER_RETURN_IF_ERROR(backend_.CopyFromHost(model_->grads(), &inf, sizeof(float)));
    }
    extras[0] = local.ok() ? 0.0f : 1.0f;
    extras[1] = static_cast<float>(loss);
    // A signal may reach the ranks at different steps (or only one of them): the all-reduce
    // makes one verdict, so every rank stops after the same step.
    extras[2] = options_.stop_requested != nullptr &&
                        options_.stop_requested->load(std::memory_order_relaxed)
                    ? 1.0f
                    : 0.0f;
    COUPLER_RETURN_IF_ERROR(backend_.CopyFromHost(model_->grad_tail(), extras, sizeof(extras)));
    const size_t before = comm_.allreduces();
    auto buckets = mean_in_grad_scale_ ? reducer_->AllReduceSum({&gradients, 1})
                                       : reducer_->AllReduceMean({&gradients, 1});
    if (!buckets.ok()) return buckets.status();
    const size_t counted = comm_.allreduces() - before;
    if (counted != *buckets || counted != report_.buckets_per_step) {
      return Internal("step " + std::to_string(step) + " issued " + std::to_string(counted) +
                      " all-reduces for " + std::to_string(report_.buckets_per_step) +
                      " buckets");
    }
    report_.step_allreduces += counted;
    COUPLER_RETURN_IF_ERROR(backend_.CopyToHost(extras, model_->grad_tail(), sizeof(extras)));
    if (mean_in_grad_scale_) {
      // The verdicts were summed, not averaged: the division AllReduceMean would have made.
      for (float& extra : extras) extra /= static_cast<float>(comm_.size());
    }
    if (extras[0] > 0) {
      COUPLER_RETURN_IF_ERROR(BackOff(step, local));
      continue;
    }
    stop_agreed_ = extras[2] > 0;
    break;
  }

  const double step_loss = static_cast<double>(extras[1]) * comm_.size() /
                           static_cast<double>(config_.global_batch);
  bool finite = true;
  COUPLER_RETURN_IF_ERROR(
      scaler_.enabled()
          ? backend_.kernels().unscale_all_finite(model_->grads(), model_->num_params(),
                                                  scaler_.inv_scale(), &finite)
          : backend_.kernels().all_finite(model_->grads(), model_->num_params(), &finite));
  const float scale_before = scaler_.scale();
  COUPLER_ASSIGN_OR_RETURN(const bool apply, scaler_.Update(finite));
  // The schedule's rate for this step: a function of the step alone, so a resume takes it too.
  const auto lr = static_cast<float>(
      LearningRateAt(config_.schedule, config_.lr, step, total_steps_, steps_per_epoch_));
  grad_norm_ = -1;  // a skipped step computes none
  if (apply) {
    if (config_.clip_grad_norm > 0) COUPLER_RETURN_IF_ERROR(ClipGradients());
    COUPLER_RETURN_IF_ERROR(optimizer_->Step(model_->params(), model_->grads(), lr));
    COUPLER_RETURN_IF_ERROR(model_->RefreshComputeCopies());
  } else {
    ++report_.skipped_steps;
    if (comm_.rank() == 0) {
      log_->warn("step {}: non-finite gradients, step skipped; loss scale {} -> {}", step,
                 scale_before, scaler_.scale());
    }
  }
  if (step % steps_per_epoch_ == 0) {
    epoch_loss_sum_ = 0;
    epoch_loss_steps_ = 0;
  }
  epoch_loss_sum_ += step_loss;
  ++epoch_loss_steps_;
  Progress(step, step_loss, step + 1 == total_steps_);
  if (history_) {
    const double seconds = std::chrono::duration<double>(Clock::now() - step_start).count();
    StepRecord record;
    record.step = step + 1;
    record.epoch = step / steps_per_epoch_ + 1;
    record.loss = step_loss;
    record.loss_scale = scale_before;
    record.lr = lr;
    record.grad_norm = grad_norm_;
    record.time =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    record.samples_per_s = seconds > 0 ? static_cast<double>(config_.global_batch) / seconds : 0;
    // Applied updates are counted (and checkpointed) by the optimizer, so this holds across
    // resumes.
    record.skipped_steps = step + 1 - optimizer_->steps_taken();
    last_record_ = record;  // appended by Run, after any validation of this step's epoch
  }
  return Status::Ok();
}

// PyTorch's clip_grad_norm_: the global L2 norm of the averaged gradients; past the limit,
// every gradient is scaled by limit / (norm + 1e-6). Every rank holds the same reduced
// gradients, so each computes the same norm: no collective of its own.
Status Trainer::ClipGradients() {
  double sum = 0;
  COUPLER_RETURN_IF_ERROR(backend_.kernels().sum_squares(model_->grads(), model_->num_params(), &sum));
  grad_norm_ = std::sqrt(sum);
  if (grad_norm_ > config_.clip_grad_norm) {
    const auto factor = static_cast<float>(config_.clip_grad_norm / (grad_norm_ + 1e-6));
    COUPLER_RETURN_IF_ERROR(backend_.kernels().scale(model_->grads(), model_->num_params(), factor));
  }
  return Status::Ok();
}

std::string Trainer::GemmLabel() const {
  if (backend_.name() != "cpu") return "cublas";
  const bool onednn = kernels::OneDnnBuilt() &&
                      (config_.precision == ElementType::kFloat32 ||
                       (config_.precision == ElementType::kBFloat16 && kernels::OneDnnRunsBf16()));
  return onednn ? "onednn " + std::string(kernels::OneDnnIsa()) : "openblas";
}

void Trainer::Progress(int64_t step, double loss, bool force) {
  if (comm_.rank() != 0) return;
  const auto now = Clock::now();
  const double since = std::chrono::duration<double>(now - last_progress_).count();
  if (!force && since < options_.progress_interval_s) return;
  last_progress_ = now;
  const double elapsed = std::chrono::duration<double>(now - loop_start_).count();
  const double samples = static_cast<double>(loop_steps_ + 1) * config_.global_batch;
  log_->info("epoch {}/{} step {}/{} loss {:.4f} {:.0f} samples/s loss_scale {} micro_batch {} "
             "x accumulate {}",
             step / steps_per_epoch_ + 1, config_.epochs, step + 1, total_steps_, loss,
             elapsed > 0 ? samples / elapsed : 0.0, scaler_.scale(), micro_batch_, accumulate_);
}

Result<Trainer::Score> Trainer::ScoreOn(const Dataset& data) {
  const size_t world = static_cast<size_t>(comm_.size());
  const size_t rank = static_cast<size_t>(comm_.rank());
  const size_t begin = data.rows * rank / world;
  const size_t end = data.rows * (rank + 1) / world;
  std::vector<uint32_t> rows(end - begin);
  std::iota(rows.begin(), rows.end(), static_cast<uint32_t>(begin));
  size_t correct = 0;
  double loss = 0;
  for (size_t at = 0; at < rows.size(); at += micro_batch_) {
    const size_t m = std::min(micro_batch_, rows.size() - at);
    COUPLER_RETURN_IF_ERROR(StageRows(data, std::span(rows).subspan(at, m)));
    COUPLER_ASSIGN_OR_RETURN(
        const double part,
        model_->Evaluate(stage_x_.as<float>(), stage_y_.as<int32_t>(), m, &correct));
    loss += part;
  }
  double sums[3] = {static_cast<double>(correct), static_cast<double>(rows.size()), loss};
  COUPLER_RETURN_IF_ERROR(host_comm_.AllReduce(sums, sums, 3, ElementType::kFloat64,
                                          comm::ReduceOp::kSum));
  return Score{sums[1] > 0 ? sums[0] / sums[1] : 0.0, sums[1] > 0 ? sums[2] / sums[1] : 0.0};
}

// Every rank scores the validation rows (the same all-reduced score on each), so every rank
// takes the same early-stopping decision; rank 0 keeps the best weights in <folder>/best/.
Status Trainer::Validate(int64_t next_step) {
  COUPLER_ASSIGN_OR_RETURN(const Score score, ScoreOn(data_.validation));
  const int64_t epoch = next_step / steps_per_epoch_;
  last_record_.val_loss = score.loss;
  last_record_.val_accuracy = score.accuracy;
  report_.val_loss = score.loss;
  report_.val_accuracy = score.accuracy;
  if (best_epoch_ == 0 || score.loss < best_val_loss_) {
    best_val_loss_ = score.loss;
    best_val_accuracy_ = score.accuracy;
    best_epoch_ = epoch;
    epochs_since_best_ = 0;
    if (!config_.checkpoint_dir.empty()) {
      const std::string folder = (std::filesystem::path(checkpoint_folder_) / "best").string();
      COUPLER_RETURN_IF_ERROR(SaveCheckpoint(next_step, folder, /*keep=*/1));
      report_.best_checkpoint = CheckpointPath(folder, next_step);
    }
    return Status::Ok();
  }
  ++epochs_since_best_;
  if (config_.early_stop_patience > 0 && epochs_since_best_ >= config_.early_stop_patience) {
    early_stop_ = true;
    if (comm_.rank() == 0) {
      log_->info("early stop after epoch {}: val_loss {:.4f} has not beaten epoch {}'s {:.4f} for "
                 "{} epochs",
                 epoch, score.loss, best_epoch_, best_val_loss_, epochs_since_best_);
    }
  }
  return Status::Ok();
}

Status Trainer::Evaluate() {
  COUPLER_RETURN_IF_ERROR(ReserveMicroBatch());
  auto scored = ScoreOn(data_.test);
  if (!scored.ok()) return scored.status().WithContext("evaluation");
  const Score score = *scored;
  double peaks[2] = {static_cast<double>(budget_.peak()),
                     static_cast<double>(budget_.peak_compute_working_set())};
  COUPLER_RETURN_IF_ERROR(host_comm_.AllReduce(peaks, peaks, 2, ElementType::kFloat64,
                                          comm::ReduceOp::kMax)
                              .WithContext("peak memory"));
  report_.test_accuracy = score.accuracy;
  report_.peak_device_bytes = static_cast<size_t>(peaks[0]);
  report_.peak_working_set_bytes = static_cast<size_t>(peaks[1]);
  report_.peak_activation_bytes = budget_.peak(memory::MemoryKind::kActivation);
  report_.workspace_bytes = budget_.peak(memory::MemoryKind::kWorkspace);
  report_.compute_weight_bytes = config_.precision == ElementType::kFloat32
                                     ? model_->num_weights() * sizeof(float)
                                     : budget_.peak(memory::MemoryKind::kComputeCopy);
  return Status::Ok();
}

Result<TrainReport> Trainer::Run() {
  COUPLER_RETURN_IF_ERROR(Setup());
  COUPLER_RETURN_IF_ERROR(Resume());
  const size_t wire_bytes = options_.wire == ElementType::kFloat32 ? 4 : 2;
  const size_t capacity =
      std::max<size_t>(1, static_cast<size_t>(config_.bucket_mb * 1024 * 1024) / wire_bytes);
  report_.buckets_per_step = (model_->num_params() + kExtras + capacity - 1) / capacity;
  if (comm_.rank() == 0) {
    log_->info("training {} parameters on {} ranks: {} steps ({} epochs x {}), global batch {} "
               "= micro_batch {} x accumulate {} x {} ranks, {}, {} all-reduce bucket(s)/step",
               model_->num_params(), comm_.size(), total_steps_, config_.epochs,
               steps_per_epoch_, config_.global_batch, micro_batch_, accumulate_, comm_.size(),
               PrecisionName(config_.precision), report_.buckets_per_step);
  }
  loop_start_ = Clock::now();
  last_progress_ = loop_start_;
  COUPLER_RETURN_IF_ERROR(OpenHistory());
  int64_t step = first_step_;
  for (; step < total_steps_; ++step, ++loop_steps_) {
    if (options_.stop_after_steps >= 0 && loop_steps_ >= options_.stop_after_steps) break;
    COUPLER_RETURN_IF_ERROR(RunStep(step).WithContext("step " + std::to_string(step)));
    if (data_.validation.rows > 0 && (step + 1) % steps_per_epoch_ == 0) {
      COUPLER_RETURN_IF_ERROR(Validate(step + 1).WithContext("validation after step " +
                                                             std::to_string(step + 1)));
    }
    if (history_) history_->Append(last_record_);
    if (early_stop_) {
      // Ends as a finished run: the final checkpoint, the test score, the outputs.
      ++step;
      ++loop_steps_;
      break;
    }
    const bool periodic = config_.checkpoint_every > 0 && !config_.checkpoint_dir.empty() &&
                          (step + 1) % config_.checkpoint_every == 0;
    if (periodic) {
      COUPLER_RETURN_IF_ERROR(SaveCheckpoint(step + 1));
      // The history on disk reaches at least the newest checkpoint, which a resume starts from.
      if (history_) COUPLER_RETURN_IF_ERROR(history_->Flush());
    }
    // A stop asked during the last step changes nothing: the run ends normally.
    if (stop_agreed_ && step + 1 < total_steps_) {
      ++loop_steps_;
      COUPLER_RETURN_IF_ERROR(StopAt(step + 1, periodic));
      return std::move(report_);
    }
  }
  // The end of a finished run is on disk whatever checkpoint_every says: the last steps are
  // never lost to a crash while writing the outputs, and a --resume of the finished run
  // evaluates the final model without training.
  const bool finished = step == total_steps_ || early_stop_;
  if (finished && step > first_step_ && !config_.checkpoint_dir.empty() && saved_step_ != step) {
    COUPLER_RETURN_IF_ERROR(SaveCheckpoint(step));
  }
  if (!config_.checkpoint_dir.empty() && finished) {
    report_.checkpoint = CheckpointPath(checkpoint_folder_, step);
  }
  if (history_) COUPLER_RETURN_IF_ERROR(history_->Flush());
  const double elapsed = std::chrono::duration<double>(Clock::now() - loop_start_).count();
  COUPLER_RETURN_IF_ERROR(Evaluate());
  report_.steps = loop_steps_;
  report_.completed_steps = step;
  report_.total_steps = total_steps_;
  report_.epoch = step > 0 ? (step - 1) / steps_per_epoch_ + 1 : 0;
  report_.samples_per_s =
      elapsed > 0 ? static_cast<double>(loop_steps_) * config_.global_batch / elapsed : 0.0;
  report_.run_seconds = train_seconds_before_ + elapsed;
  report_.run_samples_per_s = report_.run_seconds > 0 ? static_cast<double>(step) *
                                                            config_.global_batch / report_.run_seconds
                                                      : 0.0;
  report_.early_stopped = early_stop_;
  if (best_epoch_ > 0) {
    if (report_.best_checkpoint.empty() && !config_.checkpoint_dir.empty()) {
      // Written by an earlier attempt of this run.
      report_.best_checkpoint = CheckpointPath(
          (std::filesystem::path(checkpoint_folder_) / "best").string(), best_epoch_ * steps_per_epoch_);
    }
    report_.best_val_loss = best_val_loss_;
    report_.best_val_accuracy = best_val_accuracy_;
    report_.best_epoch = best_epoch_;
  }
  report_.final_loss = epoch_loss_steps_ > 0 ? epoch_loss_sum_ / epoch_loss_steps_ : 0.0;
  report_.precision = config_.precision;
  report_.micro_batch = micro_batch_;
  report_.accumulate = accumulate_;
  report_.world_size = comm_.size();
  report_.loss_scale = scaler_.scale();
  report_.device = backend_.name();
  report_.communicator = options_.communicator_name;
  report_.gemm = GemmLabel();
  report_.weights.resize(model_->num_params());
  COUPLER_RETURN_IF_ERROR(model_->ParamsToHost(report_.weights.data()));
  return std::move(report_);
}

Status Trainer::StopAt(int64_t next_step, bool checkpoint_written) {
  if (!config_.checkpoint_dir.empty()) {
    if (!checkpoint_written) COUPLER_RETURN_IF_ERROR(SaveCheckpoint(next_step));
    report_.checkpoint = CheckpointPath(checkpoint_folder_.empty() ? config_.checkpoint_dir
                                                                   : checkpoint_folder_,
                                        next_step);
  }
  if (history_) COUPLER_RETURN_IF_ERROR(history_->Flush());
  // Under mpirun the first rank to exit with a non-zero code gets the others killed: none may
  // leave before rank 0's checkpoint is on disk.
  COUPLER_RETURN_IF_ERROR(host_comm_.Barrier().WithContext("the stop's barrier"));
  report_.stopped = true;
  report_.completed_steps = next_step;
  report_.total_steps = total_steps_;
  report_.epoch = (next_step - 1) / steps_per_epoch_ + 1;
  report_.steps = loop_steps_;
  report_.world_size = comm_.size();
  report_.micro_batch = micro_batch_;
  report_.accumulate = accumulate_;
  report_.loss_scale = scaler_.scale();
  report_.precision = config_.precision;
  report_.device = backend_.name();
  report_.communicator = options_.communicator_name;
  report_.gemm = GemmLabel();
  return Status::Ok();
}

}  // namespace internal

Result<TrainReport> RunTraining(const TrainerOptions& options, const Split& data,
                                TrainCommunicators comms) {
  internal::Trainer trainer(options, data, comms);
  return trainer.Run();
}

Status WriteMetricsJson(const std::string& path, const TrainReport& r) {
  json::Writer w;
  w.BeginObject();
  w.Field("test_accuracy", r.test_accuracy);
  w.Field("final_loss", r.final_loss);
  w.Field("steps", r.steps);
  w.Field("samples_per_s", r.samples_per_s);
  w.Field("precision", PrecisionName(r.precision));
  w.Field("micro_batch", uint64_t{r.micro_batch});
  w.Field("accumulate", uint64_t{r.accumulate});
  w.Field("world_size", r.world_size);
  w.Field("peak_device_bytes", uint64_t{r.peak_device_bytes});
  w.Field("peak_working_set_bytes", uint64_t{r.peak_working_set_bytes});
  w.Field("skipped_steps", r.skipped_steps);
  w.Field("loss_scale", static_cast<double>(r.loss_scale));
  w.Field("allreduce_buckets_per_step", uint64_t{r.buckets_per_step});
  w.Field("step_allreduces", uint64_t{r.step_allreduces});
  w.Field("step_attempts", r.step_attempts);
  w.Field("device", r.device);
  w.Field("communicator", r.communicator);
  w.Field("gemm", r.gemm);
  w.Field("run_steps", r.completed_steps);
  w.Field("run_seconds", r.run_seconds);
  w.Field("run_samples_per_s", r.run_samples_per_s);
  if (r.best_epoch > 0) {
    w.Field("val_loss", r.val_loss);
    w.Field("val_accuracy", r.val_accuracy);
    w.Field("best_val_loss", r.best_val_loss);
    w.Field("best_val_accuracy", r.best_val_accuracy);
    w.Field("best_epoch", r.best_epoch);
    w.Field("best_checkpoint", r.best_checkpoint);
    w.Field("early_stopped", r.early_stopped);
  }
  w.EndObject();
  const std::string text = w.Finish();
  const std::span<const std::byte> parts[] = {std::as_bytes(std::span(text))};
  return io::WriteFileAtomic(path, parts, /*durable=*/false);
}

}  // namespace coupler::train
