// StagedPushes: the slices of multi-slice pushes that have arrived while
// their push is incomplete. A push made of k slices is applied when its k-th
// distinct slice arrives, as one unit; until then its slices wait here, as
// copies, or (dense slices whose floats come with a holder, e.g. the
// received gRPC buffer) as references that keep those floats alive. So a
// push whose third slice is refused has changed nothing.
//
// Bounded: Add refuses (RESOURCE_EXHAUSTED, with the numbers) a slice that
// would take the bytes held past `max_bytes`, or that the shard's memory
// budget (when given) has no room for; staged bytes are charged to it until
// their push is taken or dropped, or this object is destroyed. A push whose other slices never
// come is dropped by the partition after a time limit (Older).
//
// Thread-compatible: the partition calls it from its ordered apply path.
#ifndef TAUPS_SERVER_STAGED_PUSHES_H_
#define TAUPS_SERVER_STAGED_PUSHES_H_

#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/memory_budget.h"
#include "server/push_types.h"
#include "server/table.h"

namespace taups {

// What all slices of one push to one partition share.
struct PushHeader {
  uint32_t slices = 1;
  uint64_t base_version = 0;
  uint64_t clock = 0;
  double push_norm_sq = 0.0;
  bool operator==(const PushHeader&) const = default;
};

// One staged slice: a dense slice's offset and values (or a sparse slice's
// keys and rows), copied into `values`, or (dense only) left where they lie
// in `held` or `held_pieces`, which `holder` keeps alive and unchanged.
struct StagedSlice {
  uint32_t index = 0;
  uint64_t offset = 0;
  std::vector<uint64_t> keys;
  std::vector<float> values;
  std::shared_ptr<const void> holder;
  absl::Span<const float> held;
  const FloatPieces* held_pieces = nullptr;
  float max_abs = -1.0f;
  GradientPart AsPart() const;
  // A copy of `part` as slice `index`.
  static StagedSlice CopyOf(uint32_t index, const GradientPart& part);
  // Slice `index` referring to `part`'s floats, which `holder` keeps alive
  // and unchanged for as long as the slice (or a copy) lives; a copy
  // (CopyOf) when `holder` is null or `part` has keys (sparse).
  static StagedSlice Holding(uint32_t index, const GradientPart& part,
                             std::shared_ptr<const void> holder);
  uint64_t bytes() const {
    const size_t floats = values.size() + held.size() +
                          (held_pieces != nullptr ? held_pieces->floats() : 0);
    return floats * sizeof(float) + keys.size() * sizeof(uint64_t);
  }
};

class StagedPushes {
 public:
  // `budget`, when not null, must outlive this object.
  explicit StagedPushes(uint64_t max_bytes, MemoryBudget* budget = nullptr)
      : max_bytes_(max_bytes), budget_(budget) {}
  StagedPushes(const StagedPushes&) = delete;
  StagedPushes& operator=(const StagedPushes&) = delete;
  StagedPushes& operator=(StagedPushes&& other) noexcept;  // gives ours back
  ~StagedPushes();

  enum class Added {
    kStaged,     // copied; more slices to come
    kDuplicate,  // this slice was staged before; nothing changed
    kComplete,   // the push's last slice: NOT copied; Take() the others
  };
  // Slice `index` of a push described by `header`, arriving at `now`.
  // INVALID_ARGUMENT if index >= header.slices or the header differs from
  // the push's first slice; RESOURCE_EXHAUSTED past max_bytes. With
  // `prepared` (StagedSlice::CopyOf(index, part), made by the caller before
  // it took its lock) a staged slice is moved in rather than copied here.
  absl::StatusOr<Added> Add(const PushOrigin& origin, uint32_t index,
                            const PushHeader& header, const GradientPart& part,
                            absl::Time now, StagedSlice* prepared = nullptr);
  // Whether Add(origin, index, header, ...) would answer kComplete now
  // (every other slice of the push is staged, this one is not); changes
  // nothing. Lets a caller skip copying a slice that will not be staged.
  bool WouldComplete(const PushOrigin& origin, uint32_t index,
                     const PushHeader& header) const;
  // Removes a push and returns its staged slices, ordered by index.
  std::vector<StagedSlice> Take(const PushOrigin& origin);
  // Removes a push, if staged.
  void Drop(const PushOrigin& origin);
  // Pushes whose first slice came before `cutoff`.
  std::vector<PushOrigin> Older(absl::Time cutoff) const;

  size_t pushes() const { return pushes_.size(); }
  uint64_t bytes() const { return bytes_; }

 private:
  using Key = std::tuple<uint32_t, uint64_t, uint64_t>;
  static Key KeyOf(const PushOrigin& o) {
    return {o.worker_id, o.worker_incarnation, o.seq};
  }
  struct Push {
    PushHeader header;
    absl::Time first_seen;
    std::vector<StagedSlice> slices;
    uint64_t bytes = 0;
  };

  uint64_t max_bytes_;
  MemoryBudget* budget_;
  uint64_t bytes_ = 0;
  absl::flat_hash_map<Key, Push> pushes_;
};

}  // namespace taups

#endif  // TAUPS_SERVER_STAGED_PUSHES_H_
