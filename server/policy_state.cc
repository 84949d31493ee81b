#include "server/policy_state.h"

#include <algorithm>
#include <limits>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log_rate_limiter.h"
#include "spdlog/spdlog.h"

namespace taups {

PolicyState::PolicyState(Table* table, const Clock* clock)
    : table(table),
      clock(clock),
      consistency(table->config().consistency),
      staleness(table->config().staleness),
      step_opened(clock->Now()),
      step_sum(table->NewBuffer()) {}

std::vector<uint32_t> PolicyState::KnownWorkers() const {
  std::vector<uint32_t> known;
  known.reserve(workers.clocks().size());
  for (const auto& [w, c] : workers.clocks()) known.push_back(w);
  std::sort(known.begin(), known.end());
  return known;
}

void PolicyState::AdvanceClock(uint32_t worker, uint64_t pushed_for_step) {
  workers.Raise(worker, pushed_for_step + 1);
}

void PolicyState::Record(const PushArgs& args, const PushOutcome& stamp) {
  WorkerTableStats& w = stats.workers[args.origin.worker_id];
  ++stats.pushes;
  stats.tau.Add(static_cast<double>(stamp.tau));
  w.tau.Add(static_cast<double>(stamp.tau));
  if (!stamp.accepted) {
    ++stats.rejected;
    ++w.rejected;
    // One line per table per interval of the shared limiter; the others are
    // counted and reported ("... repeated N times") by the shard's ticker.
    LogRateLimited(DefaultLogRateLimiter(), spdlog::level::warn,
                   absl::StrCat("table '", name(), "': push rejected"),
                   "table '{}': push {} from worker {} rejected (tau {}): {}",
                   name(), args.origin.seq, args.origin.worker_id, stamp.tau,
                   stamp.reject_reason);
  } else if (stamp.downweighted) {
    ++stats.downweighted;
    ++w.downweighted;
  }
}

bool PolicyState::StaysFinite(absl::Span<const GradientPart> parts,
                              float lr_factor, uint32_t worker) const {
  for (const GradientPart& part : parts) {
    if (!table->UpdateStaysFinite(part, lr_factor, worker)) return false;
  }
  return true;
}

absl::Status PolicyState::NonFiniteError(const PushArgs& args) {
  ++stats.nonfinite_refused;
  return absl::InvalidArgumentError(absl::StrCat(
      "table '", name(), "': the update of push ", args.origin.seq,
      " from worker ", args.origin.worker_id,
      " would make parameters or optimizer state non-finite (gradient too "
      "large for the values it meets); nothing was applied"));
}

void PolicyState::Apply(absl::Span<const GradientPart> parts, float lr_factor,
                        uint32_t worker) {
  // The slices of one large push touch disjoint elements (a multi-slice push
  // is dense), so they are applied on several threads: the partition's apply
  // path holds its lock, so nothing else runs on the table meanwhile.
  constexpr size_t kParallelValues = size_t{1} << 20;
  size_t values = 0;
  for (const GradientPart& part : parts) values += part.size();
  const size_t threads = std::min<size_t>(
      {parts.size(), std::max(1u, std::thread::hardware_concurrency()), 4});
  if (threads < 2 || values < kParallelValues) {
    for (const GradientPart& part : parts) table->Apply(part, lr_factor, worker);
    return;
  }
  auto run = [&](size_t first) {
    for (size_t i = first; i < parts.size(); i += threads) {
      table->Apply(parts[i], lr_factor, worker);
    }
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(run, t);
  run(0);
  for (std::thread& helper : helpers) helper.join();
}

StepBuffer& PolicyState::BufferOf(BufferMap& map, uint32_t worker) {
  std::unique_ptr<StepBuffer>& slot = map[worker];
  if (!slot) slot = table->NewBuffer();
  return *slot;
}

}  // namespace taups
