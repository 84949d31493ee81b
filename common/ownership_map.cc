#include "common/ownership_map.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace taups {
namespace {

// Checks a {index, shard} list: sorted, unique, in range, not the default.
absl::Status CheckMoves(const std::vector<std::pair<uint32_t, uint32_t>>& moves,
                        uint32_t size, uint32_t num_shards, const char* field,
                        bool modulo_default) {
  for (size_t i = 0; i < moves.size(); ++i) {
    const auto [index, shard] = moves[i];
    if (index >= size || shard >= num_shards) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ownership map: ", field, " entry {", index, ", ", shard,
          "} is out of range (", size, " entries, ", num_shards, " shards)"));
    }
    if (i > 0 && moves[i - 1].first >= index) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ownership map: ", field, " must be sorted and unique (entry ", i, ")"));
    }
    const uint32_t initial = modulo_default ? index % num_shards : index;
    if (shard == initial) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ownership map: ", field, " entry {", index, ", ", shard,
          "} repeats the initial owner"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

OwnershipMap OwnershipMap::Initial(uint32_t num_shards) {
  num_shards = std::clamp<uint32_t>(num_shards, 1, kMaxShards);
  OwnershipMap map;
  map.epoch_ = 1;
  map.num_shards_ = num_shards;
  map.piece_owner_.resize(num_shards);
  map.shard_piece_.resize(num_shards);
  for (uint32_t s = 0; s < num_shards; ++s) map.piece_owner_[s] = map.shard_piece_[s] = s;
  map.bucket_owner_.resize(size_t{num_shards} * kBucketsPerShard);
  for (uint32_t b = 0; b < map.bucket_owner_.size(); ++b) {
    map.bucket_owner_[b] = b % num_shards;
  }
  return map;
}

absl::StatusOr<OwnershipMap> OwnershipMap::FromValue(
    const OwnershipMapValue& value) {
  const uint32_t n = value.num_shards;
  if (n == 0 || n > kMaxShards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ownership map: num_shards ", n, " is not in [1, ", kMaxShards, "]"));
  }
  if (value.epoch == 0) {
    return absl::InvalidArgumentError("ownership map: epoch must be >= 1");
  }
  if (value.num_buckets == 0 || value.num_buckets % n != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ownership map: num_buckets ", value.num_buckets,
        " must be a positive multiple of num_shards ", n));
  }
  absl::Status status =
      CheckMoves(value.moved_pieces, n, n, "moved_pieces", false);
  if (status.ok()) {
    status = CheckMoves(value.moved_buckets, value.num_buckets, n,
                        "moved_buckets", true);
  }
  if (!status.ok()) return status;

  OwnershipMap map = Initial(n);
  map.epoch_ = value.epoch;
  for (const auto& [piece, shard] : value.moved_pieces) map.piece_owner_[piece] = shard;
  std::vector<bool> seen(n, false);
  for (uint32_t piece = 0; piece < n; ++piece) {
    const uint32_t shard = map.piece_owner_[piece];
    if (seen[shard]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ownership map: moved_pieces give shard ", shard,
          " two dense pieces (they must be a permutation)"));
    }
    seen[shard] = true;
    map.shard_piece_[shard] = piece;
  }
  map.bucket_owner_.resize(value.num_buckets);
  for (uint32_t b = 0; b < value.num_buckets; ++b) map.bucket_owner_[b] = b % n;
  for (const auto& [bucket, shard] : value.moved_buckets) {
    map.bucket_owner_[bucket] = shard;
  }
  return map;
}

Range OwnershipMap::DenseRangeOf(uint64_t table_size, uint32_t shard) const {
  if (shard >= num_shards_) return Range{};
  return DenseShardRange(table_size, num_shards_, shard_piece_[shard]);
}

uint32_t OwnershipMap::PieceOf(uint64_t table_size, uint64_t offset) const {
  const uint64_t base = table_size / num_shards_;
  const uint64_t extra = table_size % num_shards_;
  // The first `extra` pieces hold base + 1 elements, the others base.
  const uint64_t long_part = extra * (base + 1);
  if (offset < long_part) return static_cast<uint32_t>(offset / (base + 1));
  return static_cast<uint32_t>(extra + (offset - long_part) / base);
}

std::vector<DenseOwner> OwnershipMap::DenseOwnersOf(uint64_t table_size,
                                                    uint64_t offset,
                                                    uint64_t count) const {
  std::vector<DenseOwner> owners;
  if (count == 0 || offset >= table_size) return owners;
  const uint64_t end = offset + std::min(count, table_size - offset);
  for (uint32_t piece = PieceOf(table_size, offset);
       piece < num_shards_ && offset < end; ++piece) {
    const Range range = DenseShardRange(table_size, num_shards_, piece);
    if (range.size() == 0) continue;
    const uint64_t stop = std::min(range.end, end);
    owners.push_back(DenseOwner{piece_owner_[piece], Range{offset, stop}});
    offset = stop;
  }
  return owners;
}

OwnershipMap OwnershipMap::WithBucketMoved(uint32_t bucket,
                                           uint32_t shard) const {
  OwnershipMap next = *this;
  next.epoch_ = epoch_ + 1;
  if (bucket < next.bucket_owner_.size() && shard < num_shards_) {
    next.bucket_owner_[bucket] = shard;
  }
  return next;
}

OwnershipMapValue OwnershipMap::Value() const {
  OwnershipMapValue value;
  value.epoch = epoch_;
  value.num_shards = num_shards_;
  value.num_buckets = num_buckets();
  for (uint32_t piece = 0; piece < num_shards_; ++piece) {
    if (piece_owner_[piece] != piece) {
      value.moved_pieces.emplace_back(piece, piece_owner_[piece]);
    }
  }
  for (uint32_t b = 0; b < bucket_owner_.size(); ++b) {
    if (bucket_owner_[b] != b % num_shards_) {
      value.moved_buckets.emplace_back(b, bucket_owner_[b]);
    }
  }
  return value;
}

}  // namespace taups
