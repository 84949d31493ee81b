// OwnershipMap: which shard owns which part of every table, with an epoch.
//
// A dense table of `size` elements is cut into num_shards contiguous pieces
// by DenseShardRange; piece i belongs to shard dense_owner(i) (a
// permutation, so every shard owns exactly one piece). A sparse key hashes
// to one of num_buckets() buckets (MixKey(key) % num_buckets), and each
// bucket has an owning shard.
//
// Epoch 1 (Initial) is the layout tauPS always had: piece i on shard i, and
// bucket b on shard b % num_shards. Because num_buckets is a multiple of
// num_shards, the owner of a key is MixKey(key) % num_shards, exactly what
// SparseShardOf computes. Later epochs may move buckets (and swap pieces);
// the client's router and the server's ownership check both read one map,
// so they cannot disagree about who owns what at a given epoch.
//
// OwnershipMapValue is the compact, canonical form (what goes on the wire and
// what two views compare): only what differs from the epoch-1 layout is
// listed.
//
// An OwnershipMap is an immutable value: thread-compatible, and safe to
// share between threads as a shared_ptr<const OwnershipMap>.
#ifndef TAUPS_COMMON_OWNERSHIP_MAP_H_
#define TAUPS_COMMON_OWNERSHIP_MAP_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/shard_map.h"

namespace taups {

struct OwnershipMapValue {
  uint64_t epoch = 0;
  uint32_t num_shards = 0;
  uint32_t num_buckets = 0;
  // Dense pieces not on their own shard: {piece, shard}, sorted by piece.
  std::vector<std::pair<uint32_t, uint32_t>> moved_pieces;
  // Sparse buckets not on bucket % num_shards: {bucket, shard}, sorted.
  std::vector<std::pair<uint32_t, uint32_t>> moved_buckets;
  bool operator==(const OwnershipMapValue&) const = default;
};

// One shard's part of a dense element range.
struct DenseOwner {
  uint32_t shard = 0;
  Range range;  // global element offsets
  bool operator==(const DenseOwner& o) const {
    return shard == o.shard && range.begin == o.range.begin &&
           range.end == o.range.end;
  }
};

class OwnershipMap {
 public:
  // Sparse buckets per shard in an epoch-1 map.
  static constexpr uint32_t kBucketsPerShard = 64;
  // Largest cluster a map describes (so num_buckets fits 32 bits).
  static constexpr uint32_t kMaxShards = 1u << 20;

  // The epoch-1 layout for `num_shards` shards (1..kMaxShards).
  static OwnershipMap Initial(uint32_t num_shards);
  // Rebuilds a map from its value form. INVALID_ARGUMENT, naming the field,
  // when the value is not a valid map (no shards, a bucket count that is not
  // a multiple of the shard count, an owner out of range, entries unsorted or
  // repeated, dense pieces that are not a permutation).
  static absl::StatusOr<OwnershipMap> FromValue(const OwnershipMapValue& value);

  uint64_t epoch() const { return epoch_; }
  uint32_t num_shards() const { return num_shards_; }
  uint32_t num_buckets() const { return static_cast<uint32_t>(bucket_owner_.size()); }

  // Dense tables. The range `shard` holds of a table of `table_size`.
  Range DenseRangeOf(uint64_t table_size, uint32_t shard) const;
  // The owners of [offset, offset + count) of a table of `table_size`, in
  // offset order, one entry per piece it touches. Requires
  // offset + count <= table_size; empty for count 0.
  std::vector<DenseOwner> DenseOwnersOf(uint64_t table_size, uint64_t offset,
                                        uint64_t count) const;
  // Whether `shard` holds all of [offset, offset + count) (overflow-safe).
  bool OwnsDense(uint32_t shard, uint64_t table_size, uint64_t offset,
                 uint64_t count) const {
    return DenseRangeOf(table_size, shard).Contains(offset, count);
  }

  // Sparse tables.
  uint32_t BucketOf(uint64_t key) const {
    // A power-of-two bucket count (64 per shard on 1, 2, 4, ... shards)
    // takes a mask: the same remainder without a division per key.
    const uint64_t hash = MixKey(key);
    const uint64_t n = bucket_owner_.size();
    return static_cast<uint32_t>((n & (n - 1)) == 0 ? hash & (n - 1) : hash % n);
  }
  uint32_t SparseOwnerOf(uint64_t key) const { return bucket_owner_[BucketOf(key)]; }
  uint32_t BucketOwner(uint32_t bucket) const { return bucket_owner_[bucket]; }
  bool OwnsKey(uint32_t shard, uint64_t key) const {
    return SparseOwnerOf(key) == shard;
  }

  // A new map, epoch + 1, with `bucket` owned by `shard` (both in range).
  OwnershipMap WithBucketMoved(uint32_t bucket, uint32_t shard) const;

  // The canonical compact form: equal maps give equal values.
  OwnershipMapValue Value() const;

  bool operator==(const OwnershipMap&) const = default;

 private:
  OwnershipMap() = default;
  // Index of the dense piece holding `offset` (offset < table_size).
  uint32_t PieceOf(uint64_t table_size, uint64_t offset) const;

  uint64_t epoch_ = 0;
  uint32_t num_shards_ = 0;
  std::vector<uint32_t> piece_owner_;  // piece -> shard
  std::vector<uint32_t> shard_piece_;  // shard -> piece (the inverse)
  std::vector<uint32_t> bucket_owner_;
};

}  // namespace taups

#endif  // TAUPS_COMMON_OWNERSHIP_MAP_H_
