#include "server/consistency_controller.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/staleness.h"
#include "common/status_macros.h"
#include "common/vector_math.h"
#include "spdlog/spdlog.h"

namespace taups {

ConsistencyController::ConsistencyController(Table* table, const Clock* clock)
    : state_(table, clock) {}

uint64_t ConsistencyController::version() const {
  absl::ReaderMutexLock lock(&mu_);
  return state_.version;
}

uint64_t ConsistencyController::open_step() const {
  absl::ReaderMutexLock lock(&mu_);
  return policy().OpenStep(state_);
}

ConsistencyConfig ConsistencyController::consistency() const {
  absl::ReaderMutexLock lock(&mu_);
  return state_.consistency;
}

StalenessConfig ConsistencyController::staleness() const {
  absl::ReaderMutexLock lock(&mu_);
  return state_.staleness;
}

absl::StatusOr<PushOutcome> ConsistencyController::Push(const PushArgs& args) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const PushStamp stamp,
                   StampPush(state_.staleness, state_.version,
                             args.base_version, state_.name()));
  PushOutcome outcome;
  outcome.tau = stamp.tau;
  outcome.accepted = stamp.decision.accepted;
  outcome.lr_factor = stamp.decision.lr_factor;
  outcome.reject_reason = stamp.decision.reject_reason;
  outcome.downweighted = stamp.decision.downweighted;
  outcome.new_version = state_.version;

  // Norm clipping scales the gradient itself (not the learning rate), so it
  // means the same under every optimizer.
  const float clip_norm = state_.staleness.clip_norm;
  if (clip_norm <= 0.0f) return policy().Push(state_, args, std::move(outcome));
  double norm_sq = args.push_norm_sq;
  if (norm_sq <= 0.0) {
    std::vector<float> gathered;
    for (const GradientPart& part : args.parts) {
      norm_sq += SquaredNorm(part.Contiguous(&gathered));
    }
  }
  const float scale = ClipScale(clip_norm, norm_sq);
  if (scale >= 1.0f) return policy().Push(state_, args, std::move(outcome));
  std::vector<std::vector<float>> clipped;
  std::vector<GradientPart> parts;
  clipped.reserve(args.parts.size());  // parts point into its vectors
  for (const GradientPart& part : args.parts) {
    std::vector<float>& copy = clipped.emplace_back();
    part.CopyInto(&copy);
    for (float& v : copy) v *= scale;
    GradientPart& p = parts.emplace_back(part);
    p.values = copy;
    p.pieces = nullptr;
    if (p.max_abs >= 0.0f) p.max_abs *= scale;
  }
  PushArgs treated = args;
  treated.parts = parts;
  return policy().Push(state_, treated, std::move(outcome));
}

bool ConsistencyController::PullReady(uint32_t worker, uint64_t clock) const {
  absl::ReaderMutexLock lock(&mu_);
  return policy().PullReady(state_, worker, clock);
}

absl::Status ConsistencyController::AwaitPullReady(uint32_t worker,
                                                   uint64_t clock,
                                                   absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto ready = [this, worker, clock]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return policy().PullReady(state_, worker, clock);
  };
  if (mu_.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
    return absl::OkStatus();
  }
  return absl::DeadlineExceededError(policy().WaitingFor(state_, clock));
}

void ConsistencyController::SetLiveWorkers(const MembershipView& view) {
  absl::MutexLock lock(&mu_);
  state_.workers.SetLive(view.live);
  state_.awaited =
      absl::flat_hash_set<uint32_t>(view.awaited.begin(), view.awaited.end());
  state_.ever_registered = view.ever_registered;
  policy().OnMembership(state_);
}

std::vector<uint32_t> ConsistencyController::KnownWorkers() const {
  absl::ReaderMutexLock lock(&mu_);
  return state_.KnownWorkers();
}

uint64_t ConsistencyController::JoinClock(uint32_t worker) {
  absl::MutexLock lock(&mu_);
  const uint64_t start = policy().JoinClock(state_, worker);
  return state_.workers.Raise(worker, start);
}

void ConsistencyController::Tick() {
  absl::MutexLock lock(&mu_);
  policy().OnTick(state_);
}

absl::Status ConsistencyController::SetConfig(
    const ConsistencyConfig& consistency, const StalenessConfig& staleness) {
  absl::MutexLock lock(&mu_);
  const ConsistencyPolicy& before = policy();
  before.OnLeave(state_);
  state_.consistency = consistency;
  state_.staleness = staleness;
  if (&policy() != &before) policy().OnEnter(state_);
  state_.table->SetStaleness(staleness);
  spdlog::info("table '{}': consistency now {} (num_workers={} quorum={} "
               "timeout={}s late={} s={}), downweight={} tau_max={}",
               state_.name(), ConsistencyKindName(consistency.kind),
               consistency.num_workers, consistency.quorum,
               consistency.step_timeout_s, LatePolicyName(consistency.late),
               consistency.staleness_bound,
               DownweightKindName(staleness.downweight),
               staleness.reject_above_tau_max
                   ? absl::StrCat(staleness.tau_max)
                   : std::string("none"));
  return absl::OkStatus();
}

TableStats ConsistencyController::Stats() const {
  absl::ReaderMutexLock lock(&mu_);
  TableStats stats = state_.stats;
  for (const auto& [w, c] : state_.workers.clocks()) stats.workers[w].clock = c;
  stats.version = state_.version;
  stats.open_step = state_.open_step;
  return stats;
}

PolicySnapshot ConsistencyController::Export() const {
  absl::ReaderMutexLock lock(&mu_);
  PolicySnapshot snapshot;
  snapshot.consistency = state_.consistency;
  snapshot.staleness = state_.staleness;
  snapshot.version = state_.version;
  snapshot.open_step = state_.open_step;
  snapshot.clocks.insert(state_.workers.clocks().begin(),
                         state_.workers.clocks().end());
  snapshot.arrivals.assign(state_.arrivals.begin(), state_.arrivals.end());
  std::sort(snapshot.arrivals.begin(), snapshot.arrivals.end());
  snapshot.contributed = state_.contributed;
  snapshot.step_sum = state_.step_sum->Export();
  for (const auto& [w, buffer] : state_.current) {
    if (!buffer->empty()) snapshot.current[w] = buffer->Export();
  }
  for (const auto& [w, buffer] : state_.last) {
    if (!buffer->empty()) snapshot.last[w] = buffer->Export();
  }
  return snapshot;
}

absl::Status ConsistencyController::Import(const PolicySnapshot& snapshot) {
  Table* const table = state_.table;  // const after construction
  // Load the buffers first, so a misfit changes nothing.
  std::unique_ptr<StepBuffer> step_sum = table->NewBuffer();
  RETURN_IF_ERROR(step_sum->Import(snapshot.step_sum));
  auto load = [table](const std::map<uint32_t, BufferSnapshot>& from,
                      BufferMap* to) -> absl::Status {
    for (const auto& [w, contents] : from) {
      std::unique_ptr<StepBuffer> buffer = table->NewBuffer();
      RETURN_IF_ERROR(buffer->Import(contents));
      (*to)[w] = std::move(buffer);
    }
    return absl::OkStatus();
  };
  BufferMap current, last;
  RETURN_IF_ERROR(load(snapshot.current, &current));
  RETURN_IF_ERROR(load(snapshot.last, &last));
  absl::MutexLock lock(&mu_);
  state_.consistency = snapshot.consistency;
  state_.staleness = snapshot.staleness;
  state_.version = snapshot.version;
  state_.open_step = snapshot.open_step;
  state_.workers.ReplaceClocks(snapshot.clocks);
  state_.arrivals = absl::flat_hash_set<uint32_t>(snapshot.arrivals.begin(),
                                                  snapshot.arrivals.end());
  state_.contributed = snapshot.contributed;
  state_.step_sum = std::move(step_sum);
  state_.current = std::move(current);
  state_.last = std::move(last);
  state_.step_opened = state_.clock->Now();
  // A shard restored from a checkpoint lost the steps after it, while the
  // workers (and the other shards) went on: their next push is for a later
  // step. As after a switch to sync, let it catch this shard up until a step
  // closes normally, instead of refusing every push (the workers would stop).
  state_.just_switched = true;
  state_.table->SetStaleness(state_.staleness);
  return absl::OkStatus();
}

}  // namespace taups
