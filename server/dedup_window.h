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
// row_taus vector), which would make the window as large as the pushes.
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
  // answers cover them with room. 1024 x 64 answers of ~150 bytes bound a
  // partition's window near 10 MB however many incarnations a client makes.
  static constexpr size_t kDefaultPerIncarnation = 64;
  static constexpr size_t kDefaultMaxIncarnations = 1024;

  explicit DedupWindow(size_t per_incarnation = kDefaultPerIncarnation,
                       size_t max_incarnations = kDefaultMaxIncarnations);

  enum class Verdict { kNew, kRepeat, kForgotten };
  struct Lookup {
    Verdict verdict = Verdict::kNew;
    const PushAnswer* answer = nullptr;  // kRepeat: valid until the next Record
    uint64_t forgotten_through = 0;      // kForgotten: the newest seq let go
  };
  Lookup Find(const PushOrigin& origin) const;
  // Remembers the answer to a push (no-op for seq 0).
  void Record(const PushOrigin& origin, PushAnswer answer);

  size_t incarnations() const { return windows_.size(); }
  size_t answers() const;

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

  const size_t per_incarnation_;
  const size_t max_incarnations_;
  uint64_t uses_ = 0;  // a logical clock for least-recently-used
  absl::flat_hash_map<Key, Window> windows_;
};

}  // namespace taups

#endif  // TAUPS_SERVER_DEDUP_WINDOW_H_
