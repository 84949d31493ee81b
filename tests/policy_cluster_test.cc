// The barrier and bounded-staleness policies as a user runs them: 2
// ps_server processes and ps_worker processes training the DLRM CTR model
// (synthetic data: no dataset needed) on 127.0.0.1, with one worker made
// slow. Each case checks what its policy promises (docs/CONSISTENCY.md) from
// the shards' own counters (the Stats RPC, which `ps_admin stats` prints) and
// the workers' summaries, and a policy change through `ps_admin set-policy`
// takes effect on a cluster that is training.
#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "taups/client.h"
#include "tests/ctr_cluster.h"
#include "tests/process_harness.h"

namespace taups::testing {
namespace {

constexpr int kShards = CtrCluster::kShards;
constexpr const char* kDense = kCtrDense;
constexpr const char* kSparse = kCtrSparse;
// How late a shard may notice a deadline: its tick is 5 ms; the rest is
// scheduling on a loaded 2-core machine (CI runs two tests at once; with the
// cores 3x oversubscribed a timeout close was measured 0.163 s late).
constexpr double kTickSlackS = 0.25;

const std::vector<TableShardStats>& NoStats() {
  static const std::vector<TableShardStats> none;
  return none;
}

const WorkerShardStats* WorkerIn(const TableShardStats& s, uint32_t id) {
  for (const WorkerShardStats& w : s.workers) {
    if (w.worker_id == id) return &w;
  }
  return nullptr;
}

bool AllExited(std::vector<std::unique_ptr<Process>>& workers) {
  for (auto& w : workers) {
    if (!Exited(*w)) return false;
  }
  return true;
}

// The "steps closed N" that `ps_admin stats` printed for `shard`.
std::optional<uint64_t> StepsClosedShown(const std::string& shown, int shard) {
  const size_t at = shown.find(absl::StrCat("shard ", shard, " table "));
  if (at == std::string::npos) return std::nullopt;
  const std::string key = "steps closed ";
  const size_t steps = shown.find(key, at);
  if (steps == std::string::npos) return std::nullopt;
  const size_t begin = steps + key.size();
  uint64_t value = 0;
  if (!absl::SimpleAtoi(shown.substr(begin, shown.find(' ', begin) - begin),
                        &value)) {
    return std::nullopt;
  }
  return value;
}

// Polls until worker `id` has reached `clock` in the dense table on every
// shard, then reads both tables: a cut taken while every worker still
// trains (checks that count live workers must not see one that is done).
struct Cut {
  std::vector<TableShardStats> dense, sparse;
};
Cut CutAtClock(CtrCluster& cluster,
               std::vector<std::unique_ptr<Process>>& workers, uint32_t id,
               uint64_t clock) {
  REQUIRE(PollUntil(
      [&] {
        RequireTraining(*workers[id]);
        auto stats = cluster.observer->Stats(kDense);
        if (!stats.ok()) return false;
        for (const TableShardStats& s : *stats) {
          const WorkerShardStats* w = WorkerIn(s, id);
          if (w == nullptr || w->clock < clock) return false;
        }
        return true;
      },
      absl::Minutes(3)));
  return {cluster.Stats(kDense), cluster.Stats(kSparse)};
}

double Field(const WorkerRun& run, const std::string& key) {
  INFO(run.output);
  const auto value = JsonNumber(run.json, key);
  REQUIRE(value.has_value());
  return *value;
}

void RequireFinished(const std::vector<WorkerRun>& runs) {
  for (const WorkerRun& run : runs) {
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
  }
}

TEST_CASE("ssp(1) across real processes: clocks and staleness stay bounded") {
  constexpr int kWorkers = 2;
  constexpr uint64_t kBound = 1;
  constexpr int kSteps = 120;
  CtrCluster cluster;
  // Worker 1 takes 4x as long per step; unbounded (async) the fast one would
  // finish far ahead and worker 1's pushes would see tau of about 4.
  auto workers = cluster.StartWorkers(
      kWorkers,
      CtrArgs(kSteps,
              {"--consistency=ssp", absl::StrCat("--ssp_bound=", kBound)}),
      {{}, {"--slowdown=4"}});
  // The shards' view of the worker clocks while they train. A pull at clock
  // c waits until every live worker reached c - s, and the shard counts a
  // worker's clock up when it pushes, so no two clocks differ by more than
  // s + 1 (the fast worker's push of the step it was let into).
  uint64_t widest_gap = 0;
  int samples = 0;
  while (!AllExited(workers)) {
    auto stats = cluster.observer->Stats(kDense);  // NOT_FOUND until created
    for (const TableShardStats& s : stats.ok() ? *stats : NoStats()) {
      const WorkerShardStats* w0 = WorkerIn(s, 0);
      const WorkerShardStats* w1 = WorkerIn(s, 1);
      if (w0 == nullptr || w1 == nullptr || !w0->live || !w1->live) continue;
      widest_gap = std::max(widest_gap, std::max(w0->clock, w1->clock) -
                                            std::min(w0->clock, w1->clock));
      ++samples;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  const std::vector<WorkerRun> runs = WaitForWorkers(workers);
  RequireFinished(runs);
  CHECK(samples >= 20);
  CHECK(widest_gap <= kBound + 1);
  // Between a worker's pull at clock c and its push, another worker can push
  // at most its steps c - s .. c + s: tau <= (workers - 1) * (2s + 1).
  const double tau_bound = (kWorkers - 1) * (2 * kBound + 1);
  for (const WorkerRun& run : runs) CHECK(Field(run, "tau_max") <= tau_bound);
  // Held back by the bound, the fast worker ran at the slow one's pace: it
  // finished at most s + 1 of the slow worker's steps earlier (plus start-up
  // skew, hence 20%), not ~4x faster.
  CHECK(Field(runs[0], "samples_per_sec") <
        1.2 * Field(runs[1], "samples_per_sec"));
  // SSP applies every push at once: one version per push, every step of
  // every worker, on both tables of both shards.
  for (const std::string table : {kDense, kSparse}) {
    for (const TableShardStats& s : cluster.Stats(table)) {
      INFO("shard " << s.shard << " table " << table);
      CHECK(s.pushes == uint64_t{kWorkers * kSteps});
      CHECK(s.version == s.pushes);
      CHECK(s.rejected == 0);
      CHECK(s.tau_max <= tau_bound);
      // Every step counted (a worker that registers after the other ran
      // ahead alone joins at that one's clock, so it may end above kSteps).
      for (uint32_t w = 0; w < kWorkers; ++w) {
        REQUIRE(WorkerIn(s, w) != nullptr);
        CHECK(WorkerIn(s, w)->clock >= uint64_t{kSteps});
        CHECK(WorkerIn(s, w)->pushes == uint64_t{kSteps});
      }
    }
  }
  cluster.StopShards();
}

TEST_CASE("semi_sync across real processes: a quorum closes steps without "
          "the straggler") {
  constexpr int kWorkers = 3;
  constexpr int kSteps = 80;
  constexpr uint64_t kCutClock = 60;
  CtrCluster cluster;
  // quorum 0.5 of 3 live workers: ceil(1.5) = 2 arrivals close a step, so
  // the two fast workers need not wait for worker 2 (8x slower), whose
  // pushes for steps already closed are dropped. Worker 2 trains until it is
  // stopped; the checks read the shards at worker 0's clock kCutClock, while
  // all three train.
  auto workers = cluster.StartWorkers(
      kWorkers,
      CtrArgs(kSteps,
              {"--consistency=semi_sync", "--quorum=0.5", "--late=drop"}),
      {{}, {}, {"--slowdown=8", "--steps=100000"}});
  const Cut cut = CutAtClock(cluster, workers, 0, kCutClock);
  for (const std::vector<TableShardStats>* table : {&cut.dense, &cut.sparse}) {
    for (const TableShardStats& s : *table) {
      INFO("shard " << s.shard << (table == &cut.dense ? " dense" : " sparse"));
      REQUIRE(s.live_workers == uint32_t{kWorkers});
      // One mean update per closed step, each closed by its quorum (there
      // is no timeout); late pushes changed nothing (late=drop).
      CHECK(s.steps_closed + 1 >= kCutClock);
      CHECK(s.version == s.steps_closed);
      CHECK(s.timeout_closes == 0);
      CHECK(s.rejected == 0);  // no tau_max: nothing refused for staleness
      // Every closed step had at least 2 of the 3 workers on time (each at
      // most once per step, the open step included).
      const uint64_t on_time = s.pushes - s.late;
      CHECK(on_time >= 2 * s.steps_closed);
      CHECK(on_time <= 3 * (s.steps_closed + 1));
      // The straggler missed steps and its late pushes were refused; the
      // fast workers kept their own pace, not its.
      const WorkerShardStats* fast = WorkerIn(s, 0);
      const WorkerShardStats* slow = WorkerIn(s, 2);
      REQUIRE(fast != nullptr);
      REQUIRE(slow != nullptr);
      CHECK(s.late > 0);
      CHECK(slow->missed_steps > 0);
      CHECK(fast->pushes + 1 >= kCutClock);
      CHECK(2 * slow->pushes < fast->pushes);
    }
  }
  std::vector<WorkerRun> runs;
  {
    std::vector<std::unique_ptr<Process>> fast;
    fast.push_back(std::move(workers[0]));
    fast.push_back(std::move(workers[1]));
    runs = WaitForWorkers(fast);
  }
  RequireFinished(runs);
  RequireTraining(*workers[2]);
  workers[2]->Stop();
  cluster.StopShards();
}

// (step, seconds from open to close, reason) of every step a shard logged
// closing for `table` (ps_server --log_level=debug).
struct StepClose {
  uint64_t step = 0;
  double wait_s = 0;
  std::string reason;
};
std::vector<StepClose> StepCloses(const std::string& log,
                                  const std::string& table) {
  std::vector<StepClose> closes;
  const std::string marker = "table '" + table + "': step ";
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    const size_t at = line.find(marker);
    if (at == absl::string_view::npos) continue;
    line.remove_prefix(at + marker.size());
    const size_t after = line.find(" closed after ");
    const size_t open = line.find(" (");
    const size_t close = line.find(')');
    if (after == absl::string_view::npos || open == absl::string_view::npos ||
        close == absl::string_view::npos || open < after) {
      continue;
    }
    StepClose c;
    absl::Duration wait;
    const absl::string_view wait_text =
        line.substr(after + 14, open - after - 14);
    if (!absl::SimpleAtoi(line.substr(0, after), &c.step) ||
        !absl::ParseDuration(wait_text, &wait)) {
      FAIL("unreadable step line: " << line);
    }
    c.wait_s = absl::ToDoubleSeconds(wait);
    c.reason = std::string(line.substr(open + 2, close - open - 2));
    closes.push_back(c);
  }
  return closes;
}

TEST_CASE("semi_sync across real processes: a step closes at its timeout") {
  constexpr int kWorkers = 2;
  constexpr int kSteps = 40;
  constexpr uint64_t kCutClock = 30;
  constexpr double kTimeoutS = 0.2;
  CtrCluster cluster({"--log_level=debug"});
  // quorum 1: a step needs both workers or the timeout. Worker 1's steps
  // take 40x the compute (hundreds of ms), so steps close by timeout; it
  // trains until it is stopped.
  auto workers = cluster.StartWorkers(
      kWorkers,
      CtrArgs(kSteps, {"--consistency=semi_sync", "--quorum=1", "--late=drop",
                       absl::StrCat("--step_timeout_s=", kTimeoutS)}),
      {{}, {"--slowdown=40", "--steps=100000"}});
  const Cut cut = CutAtClock(cluster, workers, 0, kCutClock);
  REQUIRE(workers[0]->Wait(absl::Minutes(2)).value_or(-1000) == 0);
  RequireTraining(*workers[1]);
  workers[1]->Stop();
  const std::vector<WorkerRun> runs = WaitForWorkers(workers);
  for (const TableShardStats& s : cut.dense) {
    INFO("shard " << s.shard);
    REQUIRE(s.live_workers == uint32_t{kWorkers});
    CHECK(s.steps_closed + 1 >= kCutClock);
    CHECK(s.version == s.steps_closed);
    CHECK(s.timeout_closes * 2 >= s.steps_closed);  // most: worker 1 is slow
    REQUIRE(WorkerIn(s, 1) != nullptr);
    CHECK(WorkerIn(s, 1)->missed_steps > 0);
    CHECK(s.late > 0);
  }
  CHECK(Field(runs[0], "rejected_pushes") == 0);
  cluster.StopShards();
  // Step by step, over the steps closed while both trained. A timeout close
  // comes at the later of kTimeoutS after the step opened and worker 0's
  // arrival (a step with no arrival waits), plus the shard's 5 ms tick: never
  // before kTimeoutS, and, worker 0 arriving within the timeout nearly
  // always, mostly within the slack of it. (With the experiment harness
  // running beside this test, some of worker 0's arrivals came 0.5-1.0 s
  // after the step opened, so the slack bounds the median, not every step.)
  // Step 0 opened when the table was created, before worker 1 had
  // registered (the start-up gate), so it is left out.
  for (int s = 0; s < kShards; ++s) {
    const std::string log = cluster.shards[s].process->Output();
    const std::vector<StepClose> closes = StepCloses(log, kDense);
    INFO("shard " << s);
    const uint64_t both_live = cut.dense[s].steps_closed;
    CHECK(closes.size() >= both_live);
    std::vector<double> timeout_waits;
    for (const StepClose& c : closes) {
      if (c.step == 0 || c.step >= both_live) continue;
      INFO("step " << c.step << " closed after " << c.wait_s << " s ("
                   << c.reason << ")");
      if (c.reason == "timeout") {
        timeout_waits.push_back(c.wait_s);
        CHECK(c.wait_s >= kTimeoutS);
      } else {
        CHECK(c.reason == "all arrived");
      }
    }
    REQUIRE(2 * timeout_waits.size() >= both_live);
    std::sort(timeout_waits.begin(), timeout_waits.end());
    CHECK(timeout_waits[timeout_waits.size() / 2] <= kTimeoutS + kTickSlackS);
  }
}

TEST_CASE("ps_admin set-policy turns a training cluster from async to sync") {
  constexpr int kWorkers = 2;
  constexpr int kSteps = 300;
  CtrCluster cluster;
  auto workers =
      cluster.StartWorkers(kWorkers, CtrArgs(kSteps, {"--consistency=async"}));
  // Let them train asynchronously for a while (a quarter of their pushes).
  REQUIRE(PollUntil(
      [&] {
        for (auto& w : workers) RequireTraining(*w);
        auto stats = cluster.observer->Stats(kDense);
        return stats.ok() && !stats->empty() &&
               (*stats)[0].version >= uint64_t{kWorkers * kSteps / 4};
      },
      absl::Seconds(60)));
  for (const std::string table : {kDense, kSparse}) {
    cluster.SetPolicy(table, kWorkers, "sync");
  }
  const std::vector<TableShardStats> at_switch = cluster.Stats(kDense);
  for (auto& w : workers) RequireTraining(*w);  // the change met training
  for (const std::string table : {kDense, kSparse}) {
    auto config = cluster.observer->OpenTable(table);
    REQUIRE(config.ok());
    CHECK(config->consistency.kind == ConsistencyKind::kSync);
    CHECK(config->consistency.num_workers == uint32_t{kWorkers});
  }
  // Read the shards again after a quarter of the steps under sync, while
  // both still train. Every shard must be that far: a step closes on each
  // shard when both workers' parts reach it, so one shard can trail another
  // by a step (CI saw shard 1 at 74 when shard 0 read 75).
  REQUIRE(PollUntil(
      [&] {
        RequireTraining(*workers[0]);
        RequireTraining(*workers[1]);
        auto stats = cluster.observer->Stats(kDense);
        if (!stats.ok() || stats->size() != at_switch.size()) return false;
        for (size_t s = 0; s < stats->size(); ++s) {
          if ((*stats)[s].steps_closed <
              at_switch[s].steps_closed + uint64_t{kSteps / 4}) {
            return false;
          }
        }
        return true;
      },
      absl::Minutes(3)));
  const std::vector<TableShardStats> end = cluster.Stats(kDense);
  // What an operator sees: ps_admin stats reports the closed steps (as
  // many as the shards had closed between the two reads around it).
  const std::string shown =
      RunAdmin(cluster.dir, cluster.shards,
               {"--table=" + std::string(kDense), "stats"});
  const std::vector<TableShardStats> after_admin = cluster.Stats(kDense);
  for (int s = 0; s < kShards; ++s) {
    INFO("shard " << s);
    REQUIRE(end[s].live_workers == uint32_t{kWorkers});
    // Before the switch async applied every push (no steps); after it each
    // closed step applied exactly one update, the mean of both workers.
    CHECK(at_switch[s].version > at_switch[s].steps_closed);
    const uint64_t versions = end[s].version - at_switch[s].version;
    const uint64_t steps = end[s].steps_closed - at_switch[s].steps_closed;
    const uint64_t pushes = end[s].pushes - at_switch[s].pushes;
    CHECK(steps >= uint64_t{kSteps / 4});
    CHECK(versions == steps);
    // Both workers pushed for every step closed since (but one of them may
    // have pushed for the first before the switch was read).
    CHECK(pushes + (kWorkers - 1) >= kWorkers * steps);
    const std::optional<uint64_t> printed = StepsClosedShown(shown, s);
    REQUIRE(printed.has_value());
    CHECK(*printed >= end[s].steps_closed);
    CHECK(*printed <= after_admin[s].steps_closed);
  }
  const std::vector<WorkerRun> runs = WaitForWorkers(workers);
  RequireFinished(runs);
  cluster.StopShards();
}

TEST_CASE("a killed worker leaves the sync barrier within its lease") {
  constexpr int kWorkers = 2;
  constexpr int kSteps = 150;
  // Short enough for a short test, long enough that a live worker's
  // heartbeats (every lease/4) keep it alive on a loaded machine: with 2 s,
  // one timed out and the shards declared a training worker dead.
  constexpr double kLeaseS = 3.0;
  CtrCluster cluster({absl::StrCat("--lease_s=", kLeaseS)});
  auto workers =
      cluster.StartWorkers(kWorkers, CtrArgs(kSteps, {"--consistency=sync"}));
  CutAtClock(cluster, workers, 1, 20);
  // SIGKILL: no Leave, no more heartbeats. Worker 0's next step waits for it.
  REQUIRE(kill(workers[1]->pid(), SIGKILL) == 0);
  const absl::Time killed = absl::Now();
  REQUIRE(PollUntil(
      [&] {
        for (const TableShardStats& s : cluster.Stats(kDense)) {
          if (s.dead_workers == 0) return false;
        }
        return true;
      },
      absl::Seconds(20)));
  const double dead_after_s = absl::ToDoubleSeconds(absl::Now() - killed);
  // Heartbeats come every lease/4, so the last one was at most that long
  // before the kill (give or take scheduling: measured 0.76 s with the cores
  // 3x oversubscribed); the lease runs out a lease after it and the next
  // 5 ms tick declares the worker dead. The poll adds up to 20 ms and an RPC.
  CHECK(dead_after_s >= kLeaseS - kLeaseS / 4 - kTickSlackS);
  CHECK(dead_after_s <= kLeaseS + kTickSlackS);
  // Worker 0 trains on alone: the barrier no longer waits for worker 1.
  REQUIRE(workers[0]->Wait(absl::Minutes(2)).value_or(-1000) == 0);
  for (const TableShardStats& s : cluster.Stats(kDense)) {
    INFO("shard " << s.shard);
    CHECK(s.lease_expirations == 1);
    CHECK(s.version == s.steps_closed);
    REQUIRE(WorkerIn(s, 1) != nullptr);
    CHECK_FALSE(WorkerIn(s, 1)->live);
  }
  cluster.StopShards();
}

}  // namespace
}  // namespace taups::testing
