// The history checker (what it asserts: history_checker.h).
#include "tests/fault/history_checker.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace taups::fault {
namespace {

// What became of one push on one shard.
enum class Outcome { kUnknown, kApplied, kNotApplied, kLost };

// One life of a shard process: from its start to the next one's.
struct Incarnation {
  int64_t start = 0;
  bool restored = false;
  uint64_t restored_version = 0;
};

class Checker {
 public:
  Checker(const History& h, const FinalState& f, const CheckOptions& o)
      : h_(h), f_(f), o_(o) {}

  CheckReport Run() {
    IndexPushes();
    ReadIncarnations();
    for (uint32_t s = 0; s < o_.num_shards; ++s) {
      BuildChain(s);
      CheckFinal(s);
      CheckPulls(s);
    }
    CheckWorkerVersions();
    const double applied = r_.acknowledged_sum, unknown = r_.attempted_sum - applied;
    if (counted_ < applied - 1e-6 || counted_ > applied + unknown + 1e-6) {
      Violate(absl::StrCat("counter check: ", counted_, " pushes applied, expected between ",
                           applied, " acknowledged and ", applied + unknown, " attempted"));
    }
    return r_;
  }

 private:
  void Violate(std::string what) {
    if (r_.violations.size() < 40) r_.violations.push_back(std::move(what));
  }
  static std::string Name(const PushOp& p) {
    return absl::StrCat("push (w", p.worker, ", inc ", p.incarnation, ", seq ", p.seq,
                        ", slot ", p.slot, ", clock ", p.clock, ")");
  }
  bool Answered(const PushOp& p) const {
    return p.finished && p.status == "OK" && p.shards.size() == o_.num_shards;
  }
  bool SyncWithRestarts(uint32_t s) const {
    return o_.mode == CheckOptions::Mode::kSync && inc_[s].size() > 1;
  }

  void IndexPushes() {
    std::set<std::tuple<uint32_t, uint64_t, uint64_t>> keys;
    slot_push_.assign(o_.slots, -1);
    for (size_t i = 0; i < h_.pushes.size(); ++i) {
      const PushOp& p = h_.pushes[i];
      ++r_.pushes;
      if (!keys.insert({p.worker, p.incarnation, p.seq}).second) {
        Violate(absl::StrCat(Name(p), " sent twice by the drivers"));
      }
      if (p.slot >= o_.slots || slot_push_[p.slot] >= 0) {
        Violate(absl::StrCat(Name(p), ": slot outside the table or used twice"));
        continue;
      }
      slot_push_[p.slot] = static_cast<int64_t>(i);
    }
    if (f_.values.size() != o_.num_shards * o_.slots || f_.versions.size() != o_.num_shards) {
      Violate("final state has the wrong size");
    }
  }

  void ReadIncarnations() {
    inc_.assign(o_.num_shards, {});
    std::vector<ProcessEvent> events = h_.events;
    std::stable_sort(events.begin(), events.end(),
                     [](const ProcessEvent& a, const ProcessEvent& b) { return a.t < b.t; });
    for (const ProcessEvent& e : events) {
      if (e.shard) {
        if (e.index >= o_.num_shards) continue;
        if (e.what == "start") inc_[e.index].push_back({e.t, false, 0});
        if (e.what == "ready" && !inc_[e.index].empty()) {
          inc_[e.index].back().restored = e.restored;
          inc_[e.index].back().restored_version = e.restored_version;
        }
      } else if (e.what == "kill" || e.what == "stop") {
        unsteady_workers_.insert(e.index);
      }
    }
    for (auto& list : inc_) {
      if (list.empty()) list.push_back({INT64_MIN, false, 0});
    }
  }

  size_t IncarnationOf(uint32_t s, int64_t t) const {
    size_t i = 0;
    while (i + 1 < inc_[s].size() && inc_[s][i + 1].start <= t) ++i;
    return i;
  }

  // Replays shard s's accepted pushes, incarnation by incarnation: each
  // restore keeps the pushes at or below its version.
  void BuildChain(uint32_t s) {
    outcome_[s].assign(h_.pushes.size(), Outcome::kUnknown);
    lost_at_[s].assign(h_.pushes.size(), 0);
    std::vector<std::vector<std::pair<uint64_t, size_t>>> accepted(inc_[s].size());
    for (size_t i = 0; i < h_.pushes.size(); ++i) {
      const PushOp& p = h_.pushes[i];
      if (!Answered(p)) {
        ++r_.unresolved;
        continue;
      }
      const ShardAnswer& a = p.shards[s];
      r_.duplicates += a.duplicate ? 1 : 0;
      if (!a.accepted) {
        ++r_.rejected;
        outcome_[s][i] = Outcome::kNotApplied;
        continue;
      }
      ++r_.acknowledged;
      accepted[IncarnationOf(s, p.t1)].push_back({a.new_version, i});
    }
    for (size_t n = 1; n < inc_[s].size(); ++n) r_.restores += inc_[s][n].restored ? 1 : 0;
    if (SyncWithRestarts(s)) return;  // outcomes of accepted pushes stay unknown
    std::map<uint64_t, size_t> chain;  // version -> push, the state's history
    const bool versions_distinct = o_.mode != CheckOptions::Mode::kSync;
    for (size_t n = 0; n < inc_[s].size(); ++n) {
      const Incarnation& life = inc_[s][n];
      const uint64_t floor = life.restored ? life.restored_version : 0;
      if (n > 0) {
        if (floor > 0 && versions_distinct && !chain.contains(floor) &&
            !AnsweredLaterAsDuplicate(s, accepted, n, floor)) {
          Violate(absl::StrCat("shard ", s, " incarnation ", n, " restored version ",
                               floor, ", which no acknowledged push produced"));
        }
        uint64_t lost = 0;
        for (auto it = chain.upper_bound(floor); it != chain.end();) {
          lost_at_[s][it->second] = n;
          outcome_[s][it->second] = Outcome::kLost;
          ++lost;
          it = chain.erase(it);
        }
        r_.updates_lost += lost;
        r_.max_lost_in_one_restore = std::max(r_.max_lost_in_one_restore, lost);
      }
      std::sort(accepted[n].begin(), accepted[n].end());
      for (const auto& [version, push] : accepted[n]) {
        const PushOp& p = h_.pushes[push];
        if (n > 0 && version <= floor && !p.shards[s].duplicate) {
          Violate(absl::StrCat(Name(p), " accepted at version ", version, " on shard ", s,
                               ", at or below the restored version ", floor));
        }
        if (versions_distinct && chain.contains(version)) {
          Violate(absl::StrCat(Name(p), " and another push both got version ", version,
                               " on shard ", s));
        }
        chain[version] = push;
        outcome_[s][push] = Outcome::kApplied;
      }
    }
  }

  // Whether a retry answered in incarnation >= n as a duplicate carries
  // `version`: its first attempt made it, and that answer was lost.
  bool AnsweredLaterAsDuplicate(
      uint32_t s, const std::vector<std::vector<std::pair<uint64_t, size_t>>>& accepted,
      size_t n, uint64_t version) const {
    for (size_t m = n; m < accepted.size(); ++m) {
      for (const auto& [v, push] : accepted[m]) {
        if (v == version && h_.pushes[push].shards[s].duplicate) return true;
      }
    }
    return false;
  }

  // Whether `value` is one push's share (1 async, 1/k sync).
  bool IsShare(float value) const {
    if (o_.mode != CheckOptions::Mode::kSync) return value == 1.0f;
    for (uint32_t k = 1; k <= o_.num_workers; ++k) {
      if (value == 1.0f / static_cast<float>(k)) return true;
    }
    return false;
  }

  void CheckFinal(uint32_t s) {
    for (uint64_t g = 0; g < o_.slots && s * o_.slots + g < f_.values.size(); ++g) {
      const float value = f_.values[s * o_.slots + g];
      const int64_t push = slot_push_[g];
      if (value > 1.0f + 1e-6f) {
        ++r_.double_applies;
        Violate(absl::StrCat("slot ", g, " on shard ", s, " is ", value,
                             ": a push applied more than once"));
      }
      if (push < 0) {
        if (value != 0) Violate(absl::StrCat("slot ", g, " on shard ", s, " changed but no push used it"));
        continue;
      }
      const PushOp& p = h_.pushes[push];
      const Outcome outcome = outcome_[s][push];
      const bool applied = value != 0;
      counted_ += applied ? 1 : 0;
      r_.final_sum += value;
      if (outcome == Outcome::kApplied) r_.acknowledged_sum += 1;
      if (outcome == Outcome::kApplied || outcome == Outcome::kUnknown) r_.attempted_sum += 1;
      if (applied && !IsShare(value)) {
        Violate(absl::StrCat(Name(p), " left ", value, " on shard ", s, ", not one share"));
      }
      if (outcome == Outcome::kApplied && !applied) {
        Violate(absl::StrCat(Name(p), " was acknowledged by shard ", s,
                             " and not lost to a restore, but is not in the final table"));
      }
      if ((outcome == Outcome::kNotApplied || outcome == Outcome::kLost) && applied) {
        Violate(absl::StrCat(Name(p), outcome == Outcome::kLost ? " was lost to a restore"
                                                                : " was rejected",
                             " by shard ", s, " but is in the final table"));
      }
    }
  }

  // Whether shard s, in incarnation n, must show push i to a pull sent at t.
  bool MustSee(uint32_t s, size_t n, size_t i, int64_t t) const {
    const PushOp& q = h_.pushes[i];
    if (!Answered(q) || !q.shards[s].accepted || q.t1 >= t) return false;
    const size_t lost_at = lost_at_.at(s)[i];
    return lost_at == 0 || lost_at > n;
  }

  void CheckPulls(uint32_t s) {
    const bool sync = o_.mode == CheckOptions::Mode::kSync;
    if (sync && SyncWithRestarts(s)) return;
    for (const PullOp& pull : h_.pulls) {
      if (pull.status != "OK") continue;
      if (pull.seen.size() != o_.num_shards * o_.slots) {
        Violate("a pull recorded the wrong number of elements");
        continue;
      }
      ++r_.pulls_checked;
      const size_t n = IncarnationOf(s, pull.t1);
      for (uint64_t g = 0; g < o_.slots; ++g) {
        const bool seen = pull.seen[s * o_.slots + g];
        const int64_t push = slot_push_[g];
        if (push < 0) {
          if (seen) Violate(absl::StrCat("a pull saw slot ", g, ", which no push used"));
          continue;
        }
        const PushOp& q = h_.pushes[push];
        const std::string where = absl::StrCat(" (pull by w", pull.worker, " at clock ",
                                               pull.clock, ", step ", pull.step, ", shard ", s, ")");
        if (seen && q.t0 > pull.t1) Violate(absl::StrCat("a pull saw ", Name(q), " before it was sent", where));
        if (seen && outcome_[s][push] == Outcome::kNotApplied) {
          Violate(absl::StrCat("a pull saw rejected ", Name(q), where));
        }
        if (seen && lost_at_[s][push] != 0 && lost_at_[s][push] <= n) {
          Violate(absl::StrCat("a pull saw ", Name(q), " after a restore lost it", where));
        }
        const bool accepted = Answered(q) && q.shards[s].accepted;
        if (sync) {
          if (accepted && q.clock < pull.step && !seen) {
            Violate(absl::StrCat("step ", q.clock, " was not complete: missing ", Name(q), where));
          }
          if (accepted && q.clock >= pull.step && seen) {
            Violate(absl::StrCat("a pull of step ", pull.step, " saw ", Name(q), where));
          }
          continue;
        }
        if (!seen && MustSee(s, n, push, pull.t0)) {
          Violate(absl::StrCat("a pull missed acknowledged ", Name(q), where));
        }
        if (o_.mode == CheckOptions::Mode::kSsp && !seen && accepted && inc_[s].size() == 1 &&
            q.worker != pull.worker && !unsteady_workers_.contains(q.worker) &&
            q.clock + o_.staleness_bound < pull.clock) {
          Violate(absl::StrCat("SSP bound ", o_.staleness_bound, " broken: missing ", Name(q), where));
        }
      }
    }
  }

  // Each worker incarnation's view of each shard's version never goes back
  // within a shard incarnation.
  void CheckWorkerVersions() {
    struct Seen {
      int64_t t;
      std::vector<uint64_t> versions;
      std::string what;
    };
    std::map<std::pair<uint32_t, uint64_t>, std::vector<Seen>> by_worker;
    for (const PushOp& p : h_.pushes) {
      if (!Answered(p)) continue;
      std::vector<uint64_t> v;
      for (const ShardAnswer& a : p.shards) v.push_back(a.new_version);
      by_worker[{p.worker, p.incarnation}].push_back({p.t1, v, Name(p)});
    }
    for (const PullOp& p : h_.pulls) {
      if (p.status != "OK" || p.versions.size() != o_.num_shards) continue;
      by_worker[{p.worker, p.incarnation}].push_back(
          {p.t1, p.versions, absl::StrCat("pull at clock ", p.clock)});
    }
    for (auto& [worker, seen] : by_worker) {
      std::stable_sort(seen.begin(), seen.end(),
                       [](const Seen& a, const Seen& b) { return a.t < b.t; });
      for (uint32_t s = 0; s < o_.num_shards; ++s) {
        for (size_t i = 1; i < seen.size(); ++i) {
          if (IncarnationOf(s, seen[i].t) != IncarnationOf(s, seen[i - 1].t)) continue;
          if (seen[i].versions[s] < seen[i - 1].versions[s]) {
            Violate(absl::StrCat("worker ", worker.first, " saw shard ", s, "'s version go from ",
                                 seen[i - 1].versions[s], " (", seen[i - 1].what, ") back to ",
                                 seen[i].versions[s], " (", seen[i].what, ")"));
          }
        }
      }
    }
  }

  const History& h_;
  const FinalState& f_;
  const CheckOptions& o_;
  CheckReport r_;
  std::vector<int64_t> slot_push_;  // slot -> push index, -1 unused
  std::vector<std::vector<Incarnation>> inc_;  // per shard
  std::set<uint32_t> unsteady_workers_;
  std::map<uint32_t, std::vector<Outcome>> outcome_;  // shard -> per push
  std::map<uint32_t, std::vector<size_t>> lost_at_;   // shard -> incarnation that lost it, 0 none
  double counted_ = 0;  // elements applied in the final table
};

}  // namespace

std::string CheckReport::Summary() const {
  return absl::StrCat("pushes=", pushes, " acknowledged=", acknowledged, " duplicates=", duplicates,
                      " rejected=", rejected, " unresolved=", unresolved, " restores=", restores,
                      " lost=", updates_lost, " max_lost_in_one_restore=", max_lost_in_one_restore,
                      " double_applies=", double_applies, " pulls_checked=", pulls_checked,
                      " final_sum=", final_sum, " acknowledged_sum=", acknowledged_sum,
                      " attempted_sum=", attempted_sum, " violations=", violations.size());
}

CheckReport CheckHistory(const History& history, const FinalState& final_state,
                         const CheckOptions& options) {
  return Checker(history, final_state, options).Run();
}

}  // namespace taups::fault
