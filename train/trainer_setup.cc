#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "train/model/checkpoint.h"
#include "train/memory/micro_batch_plan.h"
#include "train/resume_plan.h"
#include "train/trainer_impl.h"

namespace coupler::train::internal {

Status Trainer::CheckCommunicators() const {
  COUPLER_RETURN_IF_ERROR(
      comm::CheckMemorySpace(host_comm_, comm::MemorySpace::kHost, "the host communicator"));
  COUPLER_RETURN_IF_ERROR(comm::CheckMemorySpace(
      comm_, backend_.on_device() ? comm::MemorySpace::kDevice : comm::MemorySpace::kHost,
      "the gradient communicator of a " + backend_.name() + " model"));
  if (host_comm_.rank() != comm_.rank() || host_comm_.size() != comm_.size()) {
    return InvalidArgument("the host communicator is rank " + std::to_string(host_comm_.rank()) +
                           " of " + std::to_string(host_comm_.size()) +
                           ", the gradient communicator rank " + std::to_string(comm_.rank()) +
                           " of " + std::to_string(comm_.size()) + ": not one group");
  }
  return Status::Ok();
}

Status Trainer::Setup() {
  COUPLER_RETURN_IF_ERROR(CheckCommunicators());
  const size_t world = static_cast<size_t>(comm_.size());
  if (data_.train.rows == 0) return InvalidArgument("the training split is empty");
  if (config_.layers.front() != data_.train.features) {
    return InvalidArgument("layers[0] is " + std::to_string(config_.layers.front()) +
                           " but the data has " + std::to_string(data_.train.features) +
                           " feature columns");
  }
  if (config_.layers.back() < data_.train.num_classes) {
    return InvalidArgument("the last layer has " + std::to_string(config_.layers.back()) +
                           " outputs but the labels go up to " +
                           std::to_string(data_.train.num_classes - 1));
  }
  if (config_.global_batch % world != 0) {
    // A resume keeps the checkpoint's global batch (the fingerprint insists), so the only way
    // on is another rank count.
    return InvalidArgument(
        "global_batch " + std::to_string(config_.global_batch) + " is not divisible by the " +
        std::to_string(world) + " ranks" +
        (options_.resume ? "; a resumed run keeps its checkpoint's global batch: resume on " +
                               RankCountsFor(config_.global_batch) + " ranks"
                         : std::string()));
  }
  per_rank_ = config_.global_batch / world;
  mean_in_grad_scale_ = (world & (world - 1)) == 0 && config_.precision != ElementType::kFloat16;
  steps_per_epoch_ = static_cast<int64_t>(data_.train.rows / config_.global_batch);
  if (steps_per_epoch_ == 0) {
    return InvalidArgument("global_batch " + std::to_string(config_.global_batch) +
                           " is larger than the " + std::to_string(data_.train.rows) +
                           " training rows");
  }
  total_steps_ = steps_per_epoch_ * config_.epochs;

  const ElementType storage = config_.precision;
  COUPLER_ASSIGN_OR_RETURN(
      auto model,
      Mlp::Create(config_.layers, storage, budget_, backend_, config_.seed, kExtras));
  model_.emplace(std::move(model));
  OptimizerSettings settings{config_.optimizer, config_.momentum, config_.weight_decay};
  COUPLER_ASSIGN_OR_RETURN(auto opt,
                           ParameterOptimizer::Create(settings, model_->num_params(), budget_,
                                                      backend_));
  optimizer_.emplace(std::move(opt));
  comm::GradientReducerOptions reducer_options;
  reducer_options.bucket_bytes = static_cast<size_t>(config_.bucket_mb * 1024 * 1024);
  reducer_options.wire_type = options_.wire;
  if (backend_.on_device()) {
    // The gradients are in device memory: the reducer's bucket math must run there too.
    bucket_math_.emplace(backend_, budget_);
    reducer_options.math = &*bucket_math_;
  }
  reducer_.emplace(comm_, reducer_options);

  Result<MicroBatchChoice> choice = ChooseMicroBatch(config_, world, budget_.limit());
  if (!choice.ok()) {
    // The config's split for another rank count: a checkpoint's split may stand in (Resume).
    if (!options_.resume || choice.status().code() != StatusCode::kInvalidArgument) {
      return choice.status();
    }
    split_error_ = choice.status();
    return Status::Ok();
  }
  micro_batch_ = choice->micro_batch;
  accumulate_ = choice->accumulate;
  if (comm_.rank() == 0) {
    if (!choice->reason.empty()) log_->info("{}", choice->reason);
    if (!choice->notice.empty()) log_->warn("{}", choice->notice);
  }
  return Status::Ok();
}

void Trainer::ChooseFreshFolder() {
  checkpoint_folder_ = config_.checkpoint_dir;
  if (comm_.rank() != 0 || config_.checkpoint_dir.empty() || !HasCheckpoints(config_.checkpoint_dir)) {
    return;
  }
  // Another run's checkpoints are there: this run never writes among them (its retention would
  // count theirs, and a resume could take theirs for its own). It keeps its own beside them.
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &utc);
  checkpoint_folder_ = (std::filesystem::path(config_.checkpoint_dir) /
                        fmt::format("run-{}-{:04x}", stamp, static_cast<unsigned>(::getpid()) & 0xFFFF))
                           .string();
  log_->warn("{} holds another run's checkpoints: this run keeps its own in {} (--resume finds "
             "each run's by its settings)",
             config_.checkpoint_dir, checkpoint_folder_);
}

Result<std::optional<std::pair<std::string, CheckpointState>>> Trainer::FindRunCheckpoint() const {
  using Found = std::optional<std::pair<std::string, CheckpointState>>;
  Found best, other;
  std::filesystem::file_time_type best_time{}, other_time{};
  for (const std::string& folder : CheckpointFolders(config_.checkpoint_dir)) {
    COUPLER_ASSIGN_OR_RETURN(std::optional<CheckpointState> state, ReadNewestCheckpoint(folder));
    if (!state) continue;
    std::error_code ec;
    const auto time = std::filesystem::last_write_time(CheckpointPath(folder, state->step), ec);
    Found& slot = SameRun(config_, state->fingerprint, state->run) ? best : other;
    std::filesystem::file_time_type& slot_time = &slot == &best ? best_time : other_time;
    if (!slot || time > slot_time) {
      slot.emplace(folder, std::move(*state));
      slot_time = time;
    }
  }
  if (best || !other) return best;
  const CheckpointState& theirs = other->second;
  const std::string mine = Fingerprint(config_, comm_.size());
  const std::string differs =
      SameRun(config_, theirs.fingerprint, "")
          ? IdentityDifferences(theirs.run, RunIdentity(config_))
          : "it was written by '" + theirs.fingerprint + "', this run is '" + mine + "'";
  return InvalidArgument("no checkpoint in " + config_.checkpoint_dir + " is of this run: the newest, " +
                         CheckpointPath(other->first, theirs.step) + ", differs (" + differs +
                         "); resume with the settings it was written with, or start this run "
                         "afresh without --resume (it then keeps its checkpoints beside those)");
}

Result<std::pair<std::string, CheckpointState>> Trainer::ReadNamedCheckpoint() {
  const std::string& path = options_.resume_from;
  COUPLER_ASSIGN_OR_RETURN(CheckpointState state, ReadCheckpoint(path));
  if (!SameRun(config_, state.fingerprint, "")) {
    // Not even --force: the tensors would not fit the model.
    return InvalidArgument(path + " was written by '" + state.fingerprint + "', this run is '" +
                           Fingerprint(config_, comm_.size()) + "'");
  }
  if (SameRun(config_, state.fingerprint, state.run)) {
    // This run's file: the run goes on where it lies, as --resume would.
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    return std::make_pair(folder.empty() ? std::string(".") : folder.string(), std::move(state));
  }
  const std::string differs = IdentityDifferences(state.run, RunIdentity(config_));
  if (!options_.force) {
    return InvalidArgument(path + " is another run's checkpoint (" + differs +
                           "); resume with the settings it was written with, or add --force to "
                           "start this run from its weights");
  }
  log_->warn("--force: starting from {}, a checkpoint written with other settings ({}); this run "
             "keeps its own checkpoints apart from it",
             path, differs);
  ChooseFreshFolder();
  return std::make_pair(checkpoint_folder_, std::move(state));
}

// Rank 0 reads the newest checkpoint of this run (or the one --resume-from names) and broadcasts
// it, so ranks on other hosts need no shared filesystem.
Status Trainer::Resume() {
  if (!options_.resume && options_.resume_from.empty()) {
    ChooseFreshFolder();
    return Status::Ok();
  }
  checkpoint_folder_ = config_.checkpoint_dir;
  if (config_.checkpoint_dir.empty() && options_.resume_from.empty()) {
    return InvalidArgument("--resume needs checkpoint_dir in the config");
  }
  CheckpointState state;
  std::string notice;  // rank 0's, when the run does not use the config's split
  // header: found (1), error (-1) or none (0); step; micro_batch; accumulate; clean; opt steps;
  // loss scale; the run's progress (training seconds, best val loss and accuracy, best epoch,
  // epochs since), which every rank needs to take the same early-stopping decision.
  constexpr int kHeader = 12;
  double header[kHeader] = {0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
  Status local = Status::Ok();
  if (comm_.rank() == 0) {
    auto found = [this]() -> Result<std::optional<std::pair<std::string, CheckpointState>>> {
      if (options_.resume_from.empty()) return FindRunCheckpoint();
      COUPLER_ASSIGN_OR_RETURN(auto named, ReadNamedCheckpoint());
      return std::optional(std::move(named));
    }();
    if (!found.ok()) {
      local = found.status();
    } else if (found->has_value()) {
      checkpoint_folder_ = (*found)->first;  // the run goes on where its checkpoints are
      state = std::move((*found)->second);
      auto split = PlanResumeSplit(config_, comm_.size(), state.fingerprint, state.micro_batch,
                                   state.accumulate, micro_batch_, accumulate_);
      if (!split.ok()) {
        local = split.status().WithContext("the checkpoint in " + checkpoint_folder_);
      } else if (state.params.size() != model_->num_params() ||
                 state.optimizer_state.size() != optimizer_->state_size()) {
        local = InvalidArgument("the checkpoint's tensors do not match the model");
      } else {
        state.micro_batch = split->micro_batch;
        state.accumulate = split->accumulate;
        notice = split->notice;
      }
    }
    header[0] = !local.ok() ? -1 : (state.fingerprint.empty() ? 0 : 1);
    header[1] = static_cast<double>(state.step);
    header[2] = static_cast<double>(state.micro_batch);
    header[3] = static_cast<double>(state.accumulate);
    header[4] = static_cast<double>(state.clean_steps);
    header[5] = static_cast<double>(state.optimizer_steps);
    header[6] = state.loss_scale;
    header[7] = state.train_seconds;
    header[8] = state.best_val_loss;
    header[9] = state.best_val_accuracy;
    header[10] = static_cast<double>(state.best_epoch);
    header[11] = static_cast<double>(state.epochs_since_best);
  }
  COUPLER_RETURN_IF_ERROR(host_comm_.Broadcast(header, kHeader, ElementType::kFloat64, 0));
  if (header[0] < 0) {
    return comm_.rank() == 0 ? local : Aborted("rank 0 could not read the checkpoint");
  }
  if (header[0] == 0) {
    if (!split_error_.ok()) return split_error_;
    if (comm_.rank() == 0) {
      log_->info("--resume: no checkpoint in {} yet, starting from step 0", config_.checkpoint_dir);
    }
    return Status::Ok();
  }
  // Broadcast on the host, then copied to wherever the model lives.
  state.params.resize(model_->num_params());
  state.optimizer_state.resize(optimizer_->state_size());
  COUPLER_RETURN_IF_ERROR(host_comm_.Broadcast(state.params.data(), state.params.size(),
                                               ElementType::kFloat32, 0));
  COUPLER_RETURN_IF_ERROR(host_comm_.Broadcast(state.optimizer_state.data(),
                                               state.optimizer_state.size(),
                                               ElementType::kFloat32, 0));
  COUPLER_RETURN_IF_ERROR(model_->ParamsFromHost(state.params.data()));
  COUPLER_RETURN_IF_ERROR(optimizer_->StateFromHost(state.optimizer_state));
  first_step_ = static_cast<int64_t>(header[1]);
  micro_batch_ = static_cast<size_t>(header[2]);
  accumulate_ = static_cast<size_t>(header[3]);
  scaler_.Restore(static_cast<float>(header[6]), static_cast<int64_t>(header[4]));
  optimizer_->RestoreSteps(static_cast<int64_t>(header[5]));
  train_seconds_before_ = header[7];
  best_val_loss_ = header[8];
  best_val_accuracy_ = header[9];
  best_epoch_ = static_cast<int64_t>(header[10]);
  epochs_since_best_ = static_cast<int64_t>(header[11]);
  COUPLER_RETURN_IF_ERROR(model_->RefreshComputeCopies());
  if (comm_.rank() == 0) {
    if (!notice.empty()) log_->warn("{}", notice);
    log_->info("resumed from {} at step {}/{} (micro_batch {} x accumulate {})",
               CheckpointPath(checkpoint_folder_, first_step_), first_step_, total_steps_,
               micro_batch_, accumulate_);
  }
  return Status::Ok();
}

Status Trainer::SaveCheckpoint(int64_t next_step, const std::string& folder, int keep) {
  if (comm_.rank() != 0) return Status::Ok();
  CheckpointState s;
  s.step = next_step;
  s.seed = config_.seed;
  s.micro_batch = micro_batch_;
  s.accumulate = accumulate_;
  s.loss_scale = scaler_.scale();
  s.clean_steps = scaler_.clean_steps();
  s.optimizer_steps = optimizer_->steps_taken();
  s.fingerprint = Fingerprint(config_, comm_.size());
  s.run = RunIdentity(config_);
  s.train_seconds =
      train_seconds_before_ + std::chrono::duration<double>(Clock::now() - loop_start_).count();
  s.best_val_loss = best_val_loss_;
  s.best_val_accuracy = best_val_accuracy_;
  s.best_epoch = best_epoch_;
  s.epochs_since_best = epochs_since_best_;
  s.params.resize(model_->num_params());
  COUPLER_RETURN_IF_ERROR(model_->ParamsToHost(s.params.data()));
  COUPLER_ASSIGN_OR_RETURN(s.optimizer_state, optimizer_->StateToHost());
  if (!folder.empty()) return WriteCheckpoint(folder, s, keep);  // the best, apart
  COUPLER_RETURN_IF_ERROR(WriteCheckpoint(checkpoint_folder_, s, keep));
  saved_step_ = next_step;
  return Status::Ok();
}

Status Trainer::OpenHistory() {
  if (comm_.rank() != 0 || options_.metrics_history.empty()) return Status::Ok();
  COUPLER_ASSIGN_OR_RETURN(auto history,
                           MetricsHistory::Open(options_.metrics_history, first_step_));
  history_.emplace(std::move(history));
  return Status::Ok();
}

std::span<const uint32_t> Trainer::EpochOrderFor(int64_t epoch) {
  if (epoch != cached_epoch_) {
    order_ = EpochOrder(data_.train.rows, config_.seed, epoch);
    cached_epoch_ = epoch;
  }
  return order_;
}

}  // namespace coupler::train::internal
