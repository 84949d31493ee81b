#include "bench/sim/simulation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/sim/event_queue.h"
#include "common/clock.h"
#include "common/shard_map.h"
#include "server/limits.h"
#include "common/status_macros.h"
#include "server/parameter_store.h"
#include "server/shard_calls.h"
#include "worker/src/client_core.h"
#include "worker/src/inprocess_transport.h"
#include "worker/src/shard_router.h"
#include "worker/trainer/cpu_math_backend.h"
#include "worker/trainer/shard_sampler.h"

namespace taups::sim {
namespace {

constexpr char kTable[] = "model";
// The evaluator reads as a worker id no simulated worker has: the highest a
// shard serves by default (ids past ServerLimits::max_workers are refused).
const uint32_t kEvaluatorId = static_cast<uint32_t>(ServerLimits().max_workers - 1);
constexpr uint64_t kIncarnation = 1;

// What a simulated worker's client core compresses its pushes with. The
// client encodes, keeps the error-feedback residual (committed per shard
// only when the shard accepts) and counts the bytes, as over gRPC.
// Accumulation stays the simulator's: it sums the k gradients of one compute
// on the parameters it pulled, decays the sum and pushes once, so the
// client's own buffer is off. The client draws stochastic rounding from
// MixKey(push.seed ^ MixKey((worker << 40) ^ push number)); a push seed of
// run seed ^ MixKey(codec seed) makes every run and codec seed draw
// differently, and draws what the simulator drew before it used the client.
CompressionConfig ClientCompression(const SimConfig& config) {
  CompressionConfig c = config.compression;
  c.accumulate_steps = 1;
  c.push.seed = config.seed ^ MixKey(config.compression.push.seed);
  return c;
}

bool IsBarrier(ConsistencyKind kind) {
  return kind == ConsistencyKind::kSync || kind == ConsistencyKind::kSemiSync;
}

enum class EventKind { kPush, kHeartbeat, kStepTimeout, kDeath };
struct EventPayload {
  EventKind kind = EventKind::kPush;
  uint32_t worker = 0;
};

enum class WorkerState { kBlocked, kComputing, kDead };

struct Worker {
  uint32_t id = 0;
  WorkerState state = WorkerState::kBlocked;
  // The worker's client: the real client core, in process. It plans the
  // slices, keeps the versions the last pull read (the next push's base),
  // numbers the pushes and keeps the clock.
  std::unique_ptr<ClientCore> client;
  uint64_t clock = 0;  // the client's, as of its last pull or push
  uint64_t steps_started = 0;
  std::vector<float> grad;  // what the next push sends, before encoding
  double grad_norm_sq = 0.0;
  absl::Time blocked_since;
  double wait_s = 0.0;
  int64_t pushes = 0;
  int64_t not_applied = 0;
  double tau_sum = 0.0;
  uint64_t tau_max = 0;
  std::optional<trainer::ShardSampler> sampler;
};

class Simulator {
 public:
  Simulator(const SimConfig& config, const trainer::ImageDataset& train,
            const trainer::ImageDataset& test)
      : config_(config),
        train_(train),
        test_(test),
        timing_(config.compute, config.seed) {}

  absl::StatusOr<SimResult> Run();

 private:
  absl::Status Setup();
  absl::Status TryPull(Worker& w);
  absl::Status Push(Worker& w);
  absl::Status RetryBlocked();
  absl::Status Evaluate();
  absl::Status MaybeEvaluate();
  void AdvanceTo(absl::Time t);
  void TickStores();
  void ScheduleStepTimeouts();
  void ObserveSteps();
  uint64_t StepsClosed() const;
  double Progress() const;
  bool Stalled() const;
  SimResult Finish();

  const SimConfig& config_;
  const trainer::ImageDataset& train_;
  const trainer::ImageDataset& test_;
  const ComputeTimeModel timing_;
  int train_n_ = 0;
  int eval_n_ = 0;
  bool barrier_ = false;
  uint64_t steps_target_ = 0;

  ManualClock clock_{absl::UnixEpoch()};
  std::vector<std::unique_ptr<ParameterStore>> stores_;
  // The stores' RPCs as plain calls: what the workers' clients reach.
  std::vector<std::unique_ptr<ShardCalls>> shard_calls_;
  std::vector<DenseSlice> plan_;
  trainer::CpuMathBackend backend_;
  std::unique_ptr<ClassifierModel> model_;
  EventQueue<EventPayload> queue_;
  std::vector<Worker> workers_;
  uint32_t gradients_per_push_ = 1;  // accumulate_steps
  std::vector<float> params_;   // scratch: what a pull read
  std::vector<float> grad_scratch_;  // scratch: one of k accumulated gradients
  std::vector<float> batch_x_;  // scratch: one mini-batch
  std::vector<uint8_t> batch_y_;
  std::vector<int> batch_idx_;
  std::vector<uint64_t> timeout_scheduled_for_;  // per shard: open step
  uint64_t observed_step_ = 0;  // shard 0's open step at the last look
  absl::Time step_opened_;
  int computing_ = 0;
  double norm_sum_ = 0.0;
  absl::Time last_activity_;
  int next_eval_ = 1;
  double train_loss_sum_ = 0.0;
  int64_t train_loss_count_ = 0;
  SimResult result_;
};

absl::Status Simulator::Setup() {
  RETURN_IF_ERROR(config_.Validate());
  train_n_ = config_.train_examples > 0
                 ? std::min(config_.train_examples, train_.num_examples)
                 : train_.num_examples;
  eval_n_ = config_.eval_examples > 0
                ? std::min(config_.eval_examples, test_.num_examples)
                : test_.num_examples;
  barrier_ = IsBarrier(config_.consistency.kind);
  gradients_per_push_ = config_.compression.accumulate_steps;
  steps_target_ = std::max<uint64_t>(
      1, static_cast<uint64_t>(config_.budget_gradients) /
             (uint64_t{config_.num_workers} * gradients_per_push_));
  model_ = MakeClassifierModel(config_.model, &backend_);
  const uint64_t n = model_->num_params();

  TableConfig table = TableConfig::Dense(kTable, n);
  table.optimizer.kind = OptimizerKind::kSgd;
  table.optimizer.learning_rate = config_.learning_rate;
  if (config_.init_scale > 0.0f) {
    table.initializer.kind = InitializerKind::kUniform;
    table.initializer.scale = config_.init_scale;
  } else {
    table.initializer.kind = InitializerKind::kZeros;
  }
  table.initializer.seed = config_.seed;
  table.consistency = config_.consistency;
  if (table.consistency.num_workers == 0) {
    table.consistency.num_workers = config_.num_workers;
  }
  table.staleness = config_.staleness;

  const absl::Duration lease = absl::Seconds(config_.lease_s);
  for (uint32_t s = 0; s < config_.num_shards; ++s) {
    stores_.push_back(std::make_unique<ParameterStore>(s, config_.num_shards,
                                                       &clock_, lease));
    bool created = false;
    RETURN_IF_ERROR(stores_.back()->CreateTable(table, false, &created).status());
    shard_calls_.push_back(
        std::make_unique<ShardCalls>(stores_.back().get(), kIncarnation));
  }
  std::vector<ShardCalls*> shards;
  for (const auto& calls : shard_calls_) shards.push_back(calls.get());
  plan_ = PlanDenseSlices(n, config_.num_shards, config_.slice_elements);
  timeout_scheduled_for_.assign(config_.num_shards,
                                std::numeric_limits<uint64_t>::max());

  params_.resize(n);
  if (gradients_per_push_ > 1) grad_scratch_.resize(n);
  batch_x_.resize(static_cast<size_t>(config_.batch_size) * train_.feature_dim());
  batch_y_.resize(config_.batch_size);
  workers_.resize(config_.num_workers);
  for (uint32_t i = 0; i < config_.num_workers; ++i) {
    Worker& w = workers_[i];
    w.id = i;
    // Membership (leases, heartbeats in simulated time) stays the
    // simulator's; the client only pulls and pushes, and never waits: a
    // pull is sent once PullReady says it would be served.
    ClientOptions options;
    options.worker_id = i;
    options.worker_incarnation = kIncarnation;
    options.register_worker = false;
    options.slice_bytes = config_.slice_elements * sizeof(float);
    options.max_attempts = 1;  // nothing in process is worth a retry
    ASSIGN_OR_RETURN(w.client,
                     ClientCore::Open(options, InProcessTransports(shards)));
    RETURN_IF_ERROR(w.client->SetCompression(kTable, ClientCompression(config_)));
    w.grad.resize(n);
    ASSIGN_OR_RETURN(trainer::ShardSampler sampler,
                     trainer::ShardSampler::Create(train_n_, i,
                                                   config_.num_workers,
                                                   config_.seed));
    w.sampler.emplace(std::move(sampler));
    for (auto& store : stores_) {
      const Registration reg = store->Register(i, kIncarnation, lease);
      auto it = reg.start_clock.find(kTable);
      if (it != reg.start_clock.end()) w.clock = std::max(w.clock, it->second);
    }
    w.blocked_since = clock_.Now();
  }
  last_activity_ = clock_.Now();
  step_opened_ = clock_.Now();
  queue_.Schedule(clock_.Now() + lease / 4, {EventKind::kHeartbeat, 0});
  if (config_.dead_worker >= 0) {
    queue_.Schedule(clock_.Now() + absl::Seconds(config_.dead_at_s),
                    {EventKind::kDeath, static_cast<uint32_t>(config_.dead_worker)});
  }
  result_.config = config_;
  return absl::OkStatus();
}

uint64_t Simulator::StepsClosed() const {
  auto info = stores_[0]->GetTable(kTable);
  return info.ok() ? info->open_step : 0;
}

double Simulator::Progress() const {
  if (barrier_) {
    return static_cast<double>(StepsClosed()) / static_cast<double>(steps_target_);
  }
  return static_cast<double>(result_.pushes) * gradients_per_push_ /
         static_cast<double>(config_.budget_gradients);
}

void Simulator::TickStores() {
  for (auto& store : stores_) store->Tick();
}

void Simulator::AdvanceTo(absl::Time t) {
  if (t > clock_.Now()) {
    clock_.Set(t);
    TickStores();
  }
}

void Simulator::ObserveSteps() {
  if (!barrier_) return;
  const uint64_t step = StepsClosed();
  while (observed_step_ < step) {
    result_.step_durations_s.push_back(
        absl::ToDoubleSeconds(clock_.Now() - step_opened_));
    step_opened_ = clock_.Now();
    ++observed_step_;
  }
}

void Simulator::ScheduleStepTimeouts() {
  if (config_.consistency.kind != ConsistencyKind::kSemiSync ||
      config_.consistency.step_timeout_s <= 0.0) {
    return;
  }
  for (uint32_t s = 0; s < stores_.size(); ++s) {
    auto info = stores_[s]->GetTable(kTable);
    if (!info.ok() || info->open_step == timeout_scheduled_for_[s]) continue;
    timeout_scheduled_for_[s] = info->open_step;
    queue_.Schedule(
        clock_.Now() + absl::Seconds(config_.consistency.step_timeout_s),
        {EventKind::kStepTimeout, s});
  }
}

absl::Status Simulator::TryPull(Worker& w) {
  PullContext ctx;
  ctx.worker = w.id;
  ctx.clock = w.clock;
  ctx.deadline = absl::InfinitePast();
  for (auto& store : stores_) {
    ASSIGN_OR_RETURN(bool ready, store->PullReady(kTable, ctx));
    if (!ready) return absl::OkStatus();  // stays blocked
  }
  // The client reads every slice, keeps each shard's oldest version as
  // the next push's base, and catches its clock up to the open step.
  RETURN_IF_ERROR(w.client->PullDense(kTable, absl::MakeSpan(params_)).status());
  w.clock = w.client->clock();
  const double waited = absl::ToDoubleSeconds(clock_.Now() - w.blocked_since);
  w.wait_s += waited;
  result_.pull_wait_s.Add(waited);

  // Compute: the gradients of the next k mini-batches on what was just
  // read, summed.
  const int dim = train_.feature_dim();
  for (uint32_t j = 0; j < gradients_per_push_; ++j) {
    w.sampler->NextBatch(config_.batch_size, batch_idx_);
    for (int i = 0; i < config_.batch_size; ++i) {
      std::copy_n(train_.features(batch_idx_[i]), dim,
                  batch_x_.data() + static_cast<size_t>(i) * dim);
      batch_y_[i] = train_.labels[batch_idx_[i]];
    }
    std::vector<float>& out = j == 0 ? w.grad : grad_scratch_;
    ASSIGN_OR_RETURN(ClassifierStats stats,
                     model_->LossAndGradient(params_, batch_x_.data(),
                                             batch_y_.data(), config_.batch_size,
                                             absl::MakeSpan(out)));
    if (j > 0) {
      for (size_t i = 0; i < w.grad.size(); ++i) w.grad[i] += grad_scratch_[i];
    }
    if (std::isfinite(stats.mean_loss)) {
      train_loss_sum_ += stats.mean_loss;
      ++train_loss_count_;
    }
  }
  const double decay =
      1.0 - (1.0 - config_.final_lr_fraction) * std::min(1.0, Progress());
  const float scale = static_cast<float>(decay);
  for (float& g : w.grad) g *= scale;
  // The norm of what the worker pushes, before its client encodes it.
  double norm_sq = 0.0;
  for (float g : w.grad) norm_sq += static_cast<double>(g) * g;
  w.grad_norm_sq = std::isfinite(norm_sq) ? norm_sq : 0.0;
  norm_sum_ += std::sqrt(w.grad_norm_sq);

  StepDuration d;
  for (uint32_t j = 0; j < gradients_per_push_; ++j) {
    const StepDuration part = timing_.Draw(w.id, w.steps_started++);
    d.seconds += part.seconds;
    if (part.spiked) ++result_.spiked_steps;
  }
  w.state = WorkerState::kComputing;
  ++computing_;
  last_activity_ = clock_.Now();
  queue_.Schedule(clock_.Now() + absl::Seconds(d.seconds),
                  {EventKind::kPush, w.id});
  return absl::OkStatus();
}

absl::Status Simulator::Push(Worker& w) {
  --computing_;
  if (w.state == WorkerState::kDead) return absl::OkStatus();
  uint64_t tau = 0;
  bool accepted = true;
  // The client encodes each slice (when the run compresses), sends it and
  // takes each shard's answer from its last slice. A push it cannot encode
  // (NaN/Inf under a scaled codec) or that a shard refuses with an error
  // fails as a whole.
  absl::StatusOr<PushResult> pushed = w.client->PushDense(kTable, w.grad, nullptr);
  const bool refused = !pushed.ok();
  if (pushed.ok()) {
    tau = pushed->max_tau();
    accepted = pushed->all_accepted();
  }
  ++result_.pushes;
  ++w.pushes;
  if (refused) {
    ++result_.refused_errors;
  } else {
    result_.tau.Add(static_cast<double>(tau));
    w.tau_sum += static_cast<double>(tau);
    w.tau_max = std::max(w.tau_max, tau);
    if (!accepted) {
      ++result_.not_applied;
      ++w.not_applied;
    }
    if (config_.staleness.reject_above_tau_max &&
        tau > config_.staleness.tau_max) {
      ++result_.over_tau_max;
    }
  }
  w.client->Clock();
  w.clock = w.client->clock();
  w.state = WorkerState::kBlocked;
  w.blocked_since = clock_.Now();
  last_activity_ = clock_.Now();
  // The server ticks every few milliseconds: a semi-sync step whose timeout
  // passed closes right after this arrival.
  TickStores();
  return absl::OkStatus();
}

absl::Status Simulator::RetryBlocked() {
  for (Worker& w : workers_) {
    if (w.state == WorkerState::kBlocked) RETURN_IF_ERROR(TryPull(w));
  }
  return absl::OkStatus();
}

absl::Status Simulator::Evaluate() {
  PullContext ctx;
  ctx.worker = kEvaluatorId;
  ctx.clock = 0;
  ctx.deadline = absl::InfinitePast();
  CurvePoint point;
  for (const DenseSlice& slice : plan_) {
    ASSIGN_OR_RETURN(
        PullResult pulled,
        stores_[slice.shard]->PullDense(
            kTable, slice.offset,
            absl::MakeSpan(params_.data() + slice.offset, slice.count), ctx));
    if (slice.shard == 0) point.version = pulled.version;
  }
  ASSIGN_OR_RETURN(ClassifierStats stats,
                   model_->Evaluate(params_, test_.pixels.data(),
                                    test_.labels.data(), eval_n_));
  point.time_s = absl::ToDoubleSeconds(clock_.Now() - absl::UnixEpoch());
  point.progress = std::min(1.0, Progress());
  point.pushes = result_.pushes;
  point.test_accuracy = stats.accuracy();
  point.test_loss = stats.mean_loss;
  point.train_loss = train_loss_count_ > 0
                         ? train_loss_sum_ / static_cast<double>(train_loss_count_)
                         : std::numeric_limits<double>::quiet_NaN();
  train_loss_sum_ = 0.0;
  train_loss_count_ = 0;
  if (!std::isfinite(point.test_loss)) result_.diverged = true;
  result_.curve.push_back(point);
  return absl::OkStatus();
}

absl::Status Simulator::MaybeEvaluate() {
  const double progress = Progress();
  while (next_eval_ < config_.eval_points &&
         progress * config_.eval_points >= next_eval_) {
    RETURN_IF_ERROR(Evaluate());
    ++next_eval_;
  }
  return absl::OkStatus();
}

bool Simulator::Stalled() const {
  if (computing_ > 0) return false;
  const absl::Duration patience =
      absl::Seconds(3 * config_.lease_s + config_.consistency.step_timeout_s);
  return clock_.Now() - last_activity_ > patience;
}

SimResult Simulator::Finish() {
  result_.sim_time_s = absl::ToDoubleSeconds(clock_.Now() - absl::UnixEpoch());
  const StoreStats stats = stores_[0]->Stats(kTable);
  result_.lease_expirations = stats.lease_expirations;
  if (!stats.tables.empty()) result_.table_stats = stats.tables[0].second;
  for (const Worker& w : workers_) {
    WorkerSummary s;
    s.id = w.id;
    s.pushes = w.pushes;
    s.not_applied = w.not_applied;
    s.tau_mean = w.pushes > 0 ? w.tau_sum / static_cast<double>(w.pushes) : 0.0;
    s.tau_max = w.tau_max;
    s.wait_s = w.wait_s;
    auto it = result_.table_stats.workers.find(w.id);
    if (it != result_.table_stats.workers.end()) {
      s.closed_steps_as_last = it->second.closed_steps_as_last;
      s.missed_steps = it->second.missed_steps;
    }
    result_.workers.push_back(s);
    // The bytes of the pushes it sent, as its client counted them.
    absl::StatusOr<TransferCounters> moved = w.client->Transfers(kTable);
    if (moved.ok()) {
      result_.push_bytes.raw += moved->push_raw_bytes;
      result_.push_bytes.wire += moved->push_wire_bytes;
    }
  }
  if (result_.pushes > 0) {
    result_.push_norm_mean = norm_sum_ / static_cast<double>(result_.pushes);
  }
  if (!result_.curve.empty()) {
    result_.final_accuracy = result_.curve.back().test_accuracy;
    result_.final_loss = result_.curve.back().test_loss;
  }
  return std::move(result_);
}

absl::StatusOr<SimResult> Simulator::Run() {
  const absl::Time wall_start = absl::Now();
  RETURN_IF_ERROR(Setup());
  RETURN_IF_ERROR(Evaluate());
  RETURN_IF_ERROR(RetryBlocked());
  ScheduleStepTimeouts();
  while (Progress() < 1.0) {
    if (queue_.empty()) {
      return absl::InternalError("simulation ran out of events");
    }
    const auto event = queue_.Pop();
    AdvanceTo(event.time);
    switch (event.payload.kind) {
      case EventKind::kPush:
        RETURN_IF_ERROR(Push(workers_[event.payload.worker]));
        break;
      case EventKind::kHeartbeat:
        for (const Worker& w : workers_) {
          if (w.state == WorkerState::kDead) continue;
          for (auto& store : stores_) store->Heartbeat(w.id, kIncarnation);
        }
        TickStores();
        if (Stalled()) {
          result_.stalled = true;
          break;
        }
        queue_.Schedule(clock_.Now() + absl::Seconds(config_.lease_s / 4),
                        {EventKind::kHeartbeat, 0});
        break;
      case EventKind::kStepTimeout:
        TickStores();
        break;
      case EventKind::kDeath: {
        Worker& w = workers_[event.payload.worker];
        w.state = WorkerState::kDead;
        break;
      }
    }
    if (result_.stalled) break;
    ObserveSteps();
    RETURN_IF_ERROR(MaybeEvaluate());
    RETURN_IF_ERROR(RetryBlocked());
    ScheduleStepTimeouts();
  }
  RETURN_IF_ERROR(Evaluate());
  SimResult result = Finish();
  result.wall_s = absl::ToDoubleSeconds(absl::Now() - wall_start);
  return result;
}

}  // namespace

double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(q * static_cast<double>(values.size()));
  const size_t index = rank < 1.0 ? 0 : static_cast<size_t>(rank) - 1;
  return values[std::min(index, values.size() - 1)];
}

absl::Status SimConfig::Validate() const {
  if (num_workers == 0 || num_shards == 0) {
    return absl::InvalidArgumentError("need at least one worker and one shard");
  }
  if (batch_size <= 0 || budget_gradients <= 0 || eval_points <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch_size, budget_gradients and eval_points must be > 0 (got ",
        batch_size, ", ", budget_gradients, ", ", eval_points, ")"));
  }
  if (!(learning_rate > 0.0f) || !(final_lr_fraction >= 0.0f) ||
      final_lr_fraction > 1.0f || !(lease_s > 0.0)) {
    return absl::InvalidArgumentError(
        "need learning_rate > 0, final_lr_fraction in [0, 1], lease_s > 0");
  }
  if (absl::Status s = compression.Validate(); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("compression: ", s.message()));
  }
  if (compression.pull != CodecKind::kNone) {
    return absl::InvalidArgumentError(
        "compression.pull: compressed pulls are not simulated (must be none)");
  }
  if (dead_worker >= static_cast<int>(num_workers)) {
    return absl::InvalidArgumentError(
        absl::StrCat("dead_worker ", dead_worker, " is not one of ",
                     num_workers, " workers"));
  }
  return compute.Validate();
}

absl::StatusOr<SimResult> RunSimulation(const SimConfig& config,
                                        const trainer::ImageDataset& train,
                                        const trainer::ImageDataset& test) {
  Simulator simulator(config, train, test);
  return simulator.Run();
}

}  // namespace taups::sim
