// DedupWindow: the answers a partition gave to the latest pushes of each
// worker incarnation, so a push that arrives twice (a client retrying after
// UNAVAILABLE, a network that duplicates) is answered again, not applied
// again.
//
// A push is named by (worker_id, worker_incarnation, seq). seq 0 means the
// pusher does not take part (a client that never fills PushOrigin); such
// pushes are never remembered and always new. For each incarnation the window
// keeps the answers to its newest `per_incarnation` seqs; a seq at or below
// the newest one it let go is "forgotten": it may have been applied, so the
// partition refuses it instead of guessing. At most `max_incarnations`
// incarnations are kept; the one used least recently is dropped first (its
// late duplicates would then be taken as new: keep the limit above the
// number of workers).
//
// Duplicate answers carry everything but per-key row taus (a sparse push's
// row_taus vector), which would make the window as large as the pushes, and
// their messages (an error's, a rejection's reason) are cut to
// kMaxRememberedMessage bytes, so that a window has a size bound.
//
// Budget: with a MemoryBudget (the shard's), every incarnation's window is
// charged its bound, WindowBytes(per_incarnation), as worker state
// (BudgetUse::kWorkerState) when it is made, and the charge is given back
// when the window is dropped (least recently used, Import, destruction). A
// worker can push under any incarnation without registering, so the charge
// is made where the window is, not at Register: the partition calls Admit
// before it applies a push, and a push whose new window the budget cannot
// take is refused RESOURCE_EXHAUSTED with the numbers and changes nothing.
// At max_incarnations the least recently used window is dropped and its
// charge serves the new one, so a full window set needs no more budget.
//
// Thread-compatible: the partition calls it from its ordered apply path.
#ifndef TAUPS_SERVER_DEDUP_WINDOW_H_
#define TAUPS_SERVER_DEDUP_WINDOW_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "server/memory_budget.h"
#include "server/push_types.h"

namespace taups {

// What a push was answered: an error, or OK with `outcome`.
struct PushAnswer {
  absl::Status status;
  PushOutcome outcome;
};

// The window's contents, for a partition snapshot.
struct DedupSnapshot {
  struct Incarnation {
    uint32_t worker_id = 0;
    uint64_t worker_incarnation = 0;
    uint64_t forgotten_through = 0;  // newest seq let go (0 = none)
    uint64_t last_use = 0;
    std::map<uint64_t, PushAnswer> answers;  // by seq
  };
  std::vector<Incarnation> incarnations;
  uint64_t uses = 0;
};

class DedupWindow {
 public:
  // A worker rarely has more than a few pushes of one table in flight; 64
  // answers cover them with room. The windows of at most 1024 incarnations
  // are kept per partition, and with a budget no more than it can take.
  static constexpr size_t kDefaultPerIncarnation = 64;
  static constexpr size_t kDefaultMaxIncarnations = 1024;
  static constexpr size_t kMaxRememberedMessage = 256;

  // `budget` may be null (nothing charged); otherwise it must outlive this.
  explicit DedupWindow(size_t per_incarnation = kDefaultPerIncarnation,
                       size_t max_incarnations = kDefaultMaxIncarnations,
                       MemoryBudget* budget = nullptr);
  DedupWindow(const DedupWindow&) = delete;
  DedupWindow& operator=(const DedupWindow&) = delete;
  ~DedupWindow();

  // The bound charged for one incarnation's window: `per_incarnation`
  // answers, each its map node, the PushAnswer and its two messages at
  // their longest, plus the window's hash-map slot (about 40 KiB at 64).
  static uint64_t WindowBytes(size_t per_incarnation);

  enum class Verdict { kNew, kRepeat, kForgotten };
  struct Lookup {
    Verdict verdict = Verdict::kNew;
    const PushAnswer* answer = nullptr;  // kRepeat: valid until the next Record
    uint64_t forgotten_through = 0;      // kForgotten: the newest seq let go
  };
  Lookup Find(const PushOrigin& origin) const;
  // Makes sure `origin`'s incarnation has a window before its push is
  // applied (OK at once for seq 0 or a window that exists): makes one,
  // dropping the least recently used at max_incarnations, else charging the
  // budget. RESOURCE_EXHAUSTED naming the numbers when the budget cannot
  // take it; nothing changes then.
  absl::Status Admit(const PushOrigin& origin);
  // Remembers the answer to a push (no-op for seq 0). An incarnation
  // without a window gets one as Admit would; if the budget cannot take
  // it, the answer is not remembered.
  void Record(const PushOrigin& origin, PushAnswer answer);

  size_t incarnations() const { return windows_.size(); }
  size_t answers() const;
  // What the windows hold of the budget now (0 without one).
  uint64_t charged_bytes() const { return charged_; }

  DedupSnapshot Export() const;
  void Import(const DedupSnapshot& snapshot);

 private:
  struct Key {
    uint32_t worker_id;
    uint64_t incarnation;
    bool operator==(const Key&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.worker_id, k.incarnation);
    }
  };
  struct Window {
    uint64_t forgotten_through = 0;
    uint64_t last_use = 0;
    std::map<uint64_t, PushAnswer> answers;
  };

  // Makes `key`'s window (see Admit); false when the budget refused it.
  bool MakeWindow(const Key& key);
  void ReleaseAll();

  const size_t per_incarnation_;
  const size_t max_incarnations_;
  MemoryBudget* const budget_;
  const uint64_t window_bytes_;
  uint64_t charged_ = 0;
  uint64_t uses_ = 0;  // a logical clock for least-recently-used
  absl::flat_hash_map<Key, Window> windows_;
};

}  // namespace taups

#endif  // TAUPS_SERVER_DEDUP_WINDOW_H_
