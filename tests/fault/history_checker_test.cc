// The history checker on small hand-written histories: each broken promise
// (a double apply, a lost acknowledged push, a restore of a version that
// never existed, a stale or early read, a version going back) is reported,
// and correct histories, with restores and unresolved pushes, pass. Also
// the history files' round trip, with a torn last line.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "tests/fault/fault_history.h"
#include "tests/fault/history_checker.h"

namespace taups::fault {
namespace {

constexpr uint64_t kSlots = 4;

// A push by worker 0 (incarnation 1) of slot `slot` at step `clock`,
// sent at t0 and answered at t1 with `version` (accepted unless told).
PushOp Push(uint64_t slot, int64_t t0, int64_t t1, uint64_t version, bool accepted = true) {
  PushOp p;
  p.incarnation = 1;
  p.seq = slot + 1;
  p.slot = slot;
  p.clock = slot;
  p.t0 = t0;
  p.t1 = t1;
  p.finished = true;
  p.status = "OK";
  p.shards = {{accepted, false, version}};
  return p;
}

PullOp Pull(int64_t t0, int64_t t1, uint64_t version, std::vector<bool> seen,
            uint64_t step = 0) {
  PullOp p;
  p.incarnation = 1;
  p.t0 = t0;
  p.t1 = t1;
  p.step = step;
  p.clock = step;
  p.status = "OK";
  p.versions = {version};
  p.seen = std::move(seen);
  return p;
}

// A shard's start (at t) and its ready event, restored from `restored`.
ProcessEvent Start(int64_t t, std::optional<uint64_t> restored) {
  ProcessEvent ready;
  ready.what = "ready";
  ready.t = t;
  ready.restored = restored.has_value();
  ready.restored_version = restored.value_or(0);
  return ready;
}

// The events of a shard started at each (t, restored) in turn.
std::vector<ProcessEvent> Lives(
    const std::vector<std::pair<int64_t, std::optional<uint64_t>>>& lives) {
  std::vector<ProcessEvent> events;
  for (const auto& [t, restored] : lives) {
    ProcessEvent start;
    start.what = "start";
    start.t = t;
    events.push_back(start);
    events.push_back(Start(t, restored));
  }
  return events;
}

FinalState Final(std::vector<float> values, uint64_t version) {
  return FinalState{std::move(values), {version}};
}

CheckReport Check(const History& h, const FinalState& f,
                  CheckOptions::Mode mode = CheckOptions::Mode::kAsync) {
  CheckOptions o;
  o.slots = kSlots;
  o.num_workers = 2;
  o.mode = mode;
  return CheckHistory(h, f, o);
}

bool Mentions(const CheckReport& r, const std::string& text) {
  for (const std::string& v : r.violations) {
    if (v.find(text) != std::string::npos) return true;
  }
  return false;
}

History TwoPushes() {
  History h;
  h.pushes = {Push(0, 10, 20, 1), Push(1, 30, 40, 2)};
  h.pulls = {Pull(21, 25, 1, {true, false, false, false})};
  return h;
}

TEST_CASE("a correct history passes and is counted") {
  const CheckReport r = Check(TwoPushes(), Final({1, 1, 0, 0}, 2));
  INFO(r.Summary());
  REQUIRE(r.violations.empty());
  REQUIRE(r.acknowledged == 2);
  REQUIRE(r.acknowledged_sum == 2);
  REQUIRE(r.final_sum == 2);
  REQUIRE(r.pulls_checked == 1);
}

TEST_CASE("a push applied twice is a double apply") {
  const CheckReport r = Check(TwoPushes(), Final({2, 1, 0, 0}, 3));
  REQUIRE(r.double_applies == 1);
  REQUIRE(Mentions(r, "more than once"));
}

TEST_CASE("an acknowledged push missing from the final table is reported") {
  const CheckReport r = Check(TwoPushes(), Final({1, 0, 0, 0}, 2));
  REQUIRE(Mentions(r, "not in the final table"));
  REQUIRE(Mentions(r, "counter check"));
}

TEST_CASE("a rejected push that was applied is reported") {
  History h = TwoPushes();
  h.pushes[1].shards[0].accepted = false;
  REQUIRE(Check(h, Final({1, 0, 0, 0}, 1)).violations.empty());
  REQUIRE(Mentions(Check(h, Final({1, 1, 0, 0}, 2)), "was rejected"));
}

TEST_CASE("a restore loses exactly the pushes above its version") {
  History h = TwoPushes();
  h.events = Lives({{0, std::nullopt}, {50, 1}});
  h.pushes.push_back(Push(2, 60, 70, 2));  // the restored shard counts on from 1
  CheckReport r = Check(h, Final({1, 0, 1, 0}, 2));
  INFO(r.Summary());
  REQUIRE(r.violations.empty());
  REQUIRE(r.restores == 1);
  REQUIRE(r.updates_lost == 1);
  REQUIRE(r.max_lost_in_one_restore == 1);
  // The lost push showing up again is a violation; so is a pull seeing it.
  REQUIRE(Mentions(Check(h, Final({1, 1, 1, 0}, 3)), "lost to a restore"));
  h.pulls.push_back(Pull(71, 72, 2, {true, true, true, false}));
  REQUIRE(Mentions(Check(h, Final({1, 0, 1, 0}, 2)), "after a restore lost it"));
}

TEST_CASE("a restore must be of a version the history reached") {
  History h = TwoPushes();
  h.events = Lives({{0, std::nullopt}, {50, 5}});
  REQUIRE(Mentions(Check(h, Final({1, 1, 0, 0}, 5)), "which no acknowledged push produced"));
}

TEST_CASE("a new push accepted at or below the restored version is reported") {
  History h = TwoPushes();
  h.events = Lives({{0, std::nullopt}, {50, 2}});
  h.pushes.push_back(Push(2, 60, 70, 2));
  REQUIRE(Mentions(Check(h, Final({1, 1, 1, 0}, 3)), "at or below the restored version"));
  // Answered as a duplicate (its first attempt made version 2, which the
  // checkpoint kept, and that answer was lost) it is fine.
  History retried = TwoPushes();
  retried.events = h.events;
  retried.pushes[1].t1 = 70;
  retried.pushes[1].shards[0].duplicate = true;
  const CheckReport r = Check(retried, Final({1, 1, 0, 0}, 2));
  INFO(r.Summary());
  REQUIRE(r.violations.empty());
  REQUIRE(r.duplicates == 1);
}

TEST_CASE("unresolved pushes may or may not be applied, within the counter bounds") {
  History h = TwoPushes();
  h.pushes[1].status = "UNAVAILABLE";
  h.pushes[1].shards.clear();
  REQUIRE(Check(h, Final({1, 0, 0, 0}, 1)).violations.empty());
  const CheckReport r = Check(h, Final({1, 1, 0, 0}, 2));
  REQUIRE(r.violations.empty());
  REQUIRE(r.unresolved == 1);
  REQUIRE(r.attempted_sum == 2);
  REQUIRE(r.acknowledged_sum == 1);
}

TEST_CASE("two accepted pushes with one version are reported") {
  History h = TwoPushes();
  h.pushes[1].shards[0].new_version = 1;
  REQUIRE(Mentions(Check(h, Final({1, 1, 0, 0}, 2)), "both got version 1"));
}

TEST_CASE("reads: stale, early and phantom pulls are reported") {
  History h = TwoPushes();
  h.pulls.push_back(Pull(45, 46, 2, {true, false, false, false}));  // misses push 1
  REQUIRE(Mentions(Check(h, Final({1, 1, 0, 0}, 2)), "missed acknowledged"));
  h.pulls.back() = Pull(26, 28, 1, {true, true, false, false});  // push 1 sent at 30
  REQUIRE(Mentions(Check(h, Final({1, 1, 0, 0}, 2)), "before it was sent"));
  h.pulls.back() = Pull(45, 46, 2, {true, true, false, true});  // slot 3 unused
  REQUIRE(Mentions(Check(h, Final({1, 1, 0, 0}, 2)), "which no push used"));
}

TEST_CASE("versions going back within a shard incarnation are reported") {
  History h = TwoPushes();
  h.pulls.push_back(Pull(45, 46, 1, {true, true, false, false}));
  REQUIRE(Mentions(Check(h, Final({1, 1, 0, 0}, 2)), "back to 1"));
  h.events = Lives({{0, std::nullopt}, {44, 1}});  // a new incarnation may
  const CheckReport r = Check(h, Final({1, 0, 0, 0}, 1));
  REQUIRE_FALSE(Mentions(r, "back to"));
}

TEST_CASE("sync: a pull of step p shows exactly the steps before p") {
  History h;
  h.pushes = {Push(0, 10, 20, 0), Push(1, 30, 40, 1)};  // steps 0 and 1
  h.pulls = {Pull(21, 29, 1, {true, false, false, false}, 1)};
  const CheckReport ok = Check(h, Final({0.5f, 0.5f, 0, 0}, 2), CheckOptions::Mode::kSync);
  INFO(ok.Summary());
  REQUIRE(ok.violations.empty());
  h.pulls.push_back(Pull(41, 45, 2, {true, false, false, false}, 2));
  REQUIRE(Mentions(Check(h, Final({0.5f, 0.5f, 0, 0}, 2), CheckOptions::Mode::kSync),
                   "step 1 was not complete"));
  h.pulls.back() = Pull(21, 29, 1, {true, true, false, false}, 1);
  REQUIRE(Mentions(Check(h, Final({0.5f, 0.5f, 0, 0}, 2), CheckOptions::Mode::kSync),
                   "a pull of step 1 saw"));
  // A value that is no push's share (2 workers: 1 or 1/2) is reported.
  REQUIRE(Mentions(Check(h, Final({0.25f, 0.5f, 0, 0}, 2), CheckOptions::Mode::kSync),
                   "not one share"));
}

TEST_CASE("history files round-trip and a torn last line is dropped") {
  const std::string path =
      (std::filesystem::temp_directory_path() / "taups_history_checker_test.history").string();
  std::filesystem::remove(path);
  {
    absl::StatusOr<HistoryWriter> w = HistoryWriter::Open(path);
    REQUIRE(w.ok());
    const History h = TwoPushes();
    w->PushSent(h.pushes[0]);
    w->PushDone(h.pushes[0]);
    w->Pulled(h.pulls[0]);
    w->PushSent(h.pushes[1]);  // killed before its answer
    ProcessEvent e = Start(5, 7);
    e.what = "ready";
    w->Event(e);
  }
  std::ofstream(path, std::ios::app) << "pushed w=0 inc=1 seq=2 t1=40 sta";  // torn
  absl::StatusOr<History> read = ReadHistory({path});
  REQUIRE(read.ok());
  REQUIRE(read->pushes.size() == 2);
  REQUIRE(read->pushes[0].finished);
  REQUIRE(read->pushes[0].shards.size() == 1);
  REQUIRE(read->pushes[0].shards[0].new_version == 1);
  REQUIRE_FALSE(read->pushes[1].finished);
  REQUIRE(read->pulls.size() == 1);
  REQUIRE(read->pulls[0].seen == std::vector<bool>{true, false, false, false});
  REQUIRE(read->events.size() == 1);
  REQUIRE(read->events[0].restored);
  REQUIRE(read->events[0].restored_version == 7);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace taups::fault
