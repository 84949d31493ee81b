#include "worker/src/shard_router.h"

#include <algorithm>
#include <thread>

#include "common/row_copy.h"
#include "common/stamped_key_table.h"


namespace taups {

std::vector<DenseSlice> PlanDenseSlices(const OwnershipMap& map, uint64_t size,
                                        uint64_t slice_elements) {
  std::vector<DenseSlice> slices;
  slice_elements = std::max<uint64_t>(slice_elements, 1);
  for (uint32_t shard = 0; shard < map.num_shards(); ++shard) {
    const Range range = map.DenseRangeOf(size, shard);
    if (range.size() == 0) continue;
    const uint64_t pieces = (range.size() + slice_elements - 1) / slice_elements;
    // Even pieces: no tiny tail slice.
    const uint64_t base = range.size() / pieces;
    const uint64_t extra = range.size() % pieces;
    uint64_t offset = range.begin;
    for (uint64_t p = 0; p < pieces; ++p) {
      const uint64_t count = base + (p < extra ? 1 : 0);
      slices.push_back(DenseSlice{shard, offset, count,
                                  static_cast<uint32_t>(pieces),
                                  static_cast<uint32_t>(p)});
      offset += count;
    }
  }
  return slices;
}

namespace {

// Calls of more keys than this get a table of their own, freed at the end,
// so a thread does not keep a huge one for one large call (2^20 keys: 32 MiB
// of slots).
constexpr size_t kMaxRetainedKeys = size_t{1} << 20;

// How far ahead of the key being grouped its table slot is prefetched:
// far enough to cover a miss to memory at a few ns of work per key
// (key_grouping_bench: 8 ahead took 0.67-0.70 ms a call of 65,536 Zipf
// keys, 32 ahead 0.41, 64 ahead 0.38).
constexpr size_t kPrefetchAhead = 64;

// How often Group tells its on_done how far it got (OneShardGroupMerge's
// merge follows that far); the default on_done ignores it.
constexpr size_t kPublishEvery = 2048;
struct NoProgress {
  void operator()(size_t) const {}
};

// Groups the keys at request positions index_at(0 .. n-1) (ascending) by
// owner_of(key) into `groups`: keys in first-seen order, positions in
// request order (see ShardKeys). on_done(j) is called with the count of
// positions grouped so far after every kPublishEvery of them and after the
// last: the first j entries of the groups' positions are final then.
template <typename IndexAt, typename OwnerOf, typename OnDone = NoProgress>
void Group(absl::Span<const uint64_t> keys, size_t n, IndexAt index_at,
           OwnerOf owner_of, StampedKeyTable& index, ShardKeys* groups,
           OnDone on_done = {}) {
  index.Reset(n);
  for (size_t j = 0; j < std::min(n, kPrefetchAhead); ++j) {
    index.Prefetch(keys[index_at(j)]);
  }
  for (size_t j = 0; j < n; ++j) {
    if (j + kPrefetchAhead < n) index.Prefetch(keys[index_at(j + kPrefetchAhead)]);
    const uint32_t i = index_at(j);
    ShardKeys& group = groups[owner_of(keys[i])];
    bool added = false;
    const uint32_t k = index.FindOrAdd(
        keys[i], static_cast<uint32_t>(group.keys.size()), &added);
    if (added) group.keys.push_back(keys[i]);
    group.positions.emplace_back(i, k);
    if ((j + 1) % kPublishEvery == 0) on_done(j + 1);
  }
  if (n % kPublishEvery != 0) on_done(n);
}

// Runs fn(table) with a key table for a call of `n` keys: the thread's own,
// reused from call to call, or for a call too large to keep one for, a
// table of the call's own.
template <typename Fn>
void WithKeyTable(size_t n, Fn fn) {
  if (n > kMaxRetainedKeys) {
    StampedKeyTable own;
    fn(own);
  } else {
    thread_local StampedKeyTable retained;
    fn(retained);
  }
}

uint32_t Identity(size_t i) { return static_cast<uint32_t>(i); }

void GroupWith(absl::Span<const uint64_t> keys, const OwnershipMap& map,
               StampedKeyTable& index, std::vector<ShardKeys>& groups) {
  if (groups.size() == 1) {
    Group(keys, keys.size(), Identity, [](uint64_t) { return 0u; }, index,
          groups.data());
  } else {
    Group(keys, keys.size(), Identity,
          [&map](uint64_t key) { return map.SparseOwnerOf(key); }, index,
          groups.data());
  }
}

// A share of `keys` worth reserving for each of `shards` groups: an even
// share and a quarter more, which the hash of a key's bucket makes enough
// for all but skewed keys (a group that needs more grows); none for a call
// of a few keys over many shards, so that it allocates only what it uses.
size_t ReservedShare(size_t keys, uint32_t shards) {
  constexpr size_t kMinReservedShare = 256;
  const size_t share = keys / shards;
  return shards == 1                     ? keys
         : share >= kMinReservedShare ? share + share / 4
                                      : 0;
}

// out[k * dim ...] = the sum, in request order, of the gradients of the
// positions with key index k. A key's first position (its index is the next
// new one, as Group numbers keys) stores 0.0f + g, the rest add: exactly
// the sums of a zero-filled buffer, without filling it first. kDim > 0 fixes
// the row width at compile time, so the row loops are straight vector code.
//
// MergeRowsOf does it for positions [begin, end) of a group's positions,
// `next_new` being the count of keys the positions before `begin` have
// already started; it returns that count after `end`. Before a new key's
// row is written, rows_for(next_new + 1) is called when next_new reaches
// `*rows_ready`, and must make out's rows up to the returned count
// writable (out itself stays where it is).
template <uint32_t kDim, typename RowsFor>
uint32_t MergeRowsOf(const std::pair<uint32_t, uint32_t>* positions,
                     size_t begin, size_t end,
                     const float* __restrict gradients, uint32_t runtime_dim,
                     float* __restrict out, uint32_t next_new,
                     uint32_t* rows_ready, RowsFor rows_for) {
  const size_t dim = kDim > 0 ? kDim : runtime_dim;
  for (size_t p = begin; p < end; ++p) {
    const auto [request_index, key_index] = positions[p];
    const float* __restrict src = gradients + size_t{request_index} * dim;
    float* __restrict dst = out + size_t{key_index} * dim;
    if (key_index == next_new) {
      if (next_new == *rows_ready) *rows_ready = rows_for(next_new + 1);
      ++next_new;
      for (size_t j = 0; j < dim; ++j) dst[j] = 0.0f + src[j];
    } else {
      for (size_t j = 0; j < dim; ++j) dst[j] += src[j];
    }
  }
  return next_new;
}

template <uint32_t kDim>
void MergeRows(const ShardKeys& group, const float* __restrict gradients,
               uint32_t runtime_dim, float* __restrict out) {
  uint32_t rows_ready = static_cast<uint32_t>(group.keys.size());
  MergeRowsOf<kDim>(group.positions.data(), 0, group.positions.size(),
                    gradients, runtime_dim, out, 0, &rows_ready,
                    [](uint32_t rows) { return rows; });
}

}  // namespace

std::vector<ShardKeys> GroupKeysByShard(absl::Span<const uint64_t> keys,
                                        const OwnershipMap& map) {
  const uint32_t shards = map.num_shards();
  std::vector<ShardKeys> groups(shards);
  if (keys.empty()) return groups;
  // Owners are found as the keys are grouped, in one pass.
  if (const size_t reserve = ReservedShare(keys.size(), shards); reserve > 0) {
    for (ShardKeys& group : groups) {
      group.keys.reserve(reserve);
      group.positions.reserve(reserve);
    }
  }
  WithKeyTable(keys.size(), [&](StampedKeyTable& index) {
    GroupWith(keys, map, index, groups);
  });
  return groups;
}

std::vector<std::vector<uint32_t>> PositionsByShard(
    absl::Span<const uint64_t> keys, const OwnershipMap& map) {
  return PositionsByShard(keys, map, 0, keys.size());
}

std::vector<std::vector<uint32_t>> PositionsByShard(
    absl::Span<const uint64_t> keys, const OwnershipMap& map, size_t begin,
    size_t end) {
  const uint32_t shards = map.num_shards();
  std::vector<std::vector<uint32_t>> positions(shards);
  if (const size_t reserve = ReservedShare(end - begin, shards); reserve > 0) {
    for (std::vector<uint32_t>& p : positions) p.reserve(reserve);
  }
  for (size_t i = begin; i < end; ++i) {
    positions[map.SparseOwnerOf(keys[i])].push_back(static_cast<uint32_t>(i));
  }
  return positions;
}

ShardKeys GroupShardKeys(absl::Span<const uint64_t> keys,
                         absl::Span<const uint32_t> positions) {
  ShardKeys group;
  if (positions.empty()) return group;
  group.keys.reserve(positions.size());
  group.positions.reserve(positions.size());
  WithKeyTable(positions.size(), [&](StampedKeyTable& index) {
    Group(keys, positions.size(),
          [positions](size_t j) { return positions[j]; },
          [](uint64_t) { return 0u; }, index, &group);
  });
  return group;
}

void MergeShardGradients(const ShardKeys& group,
                         absl::Span<const float> gradients, uint32_t dim,
                         absl::Span<float> out) {
  WithRowWidth(dim, [&](auto width) {
    MergeRows<width()>(group, gradients.data(), dim, out.data());
  });
}

std::vector<std::vector<float>> MergeSparseGradients(
    const std::vector<ShardKeys>& groups, absl::Span<const float> gradients,
    uint32_t dim) {
  std::vector<std::vector<float>> merged(groups.size());
  for (size_t s = 0; s < groups.size(); ++s) {
    merged[s].resize(groups[s].keys.size() * dim);
    MergeShardGradients(groups[s], gradients, dim, absl::MakeSpan(merged[s]));
  }
  return merged;
}

OneShardGroupMerge::OneShardGroupMerge(absl::Span<const uint64_t> keys,
                                       absl::Span<const float> gradients,
                                       uint32_t dim)
    : keys_(keys), gradients_(gradients), dim_(dim) {
  // Reserved for every key: the vectors never move while Merge reads.
  group_.keys.reserve(keys.size());
  group_.positions.reserve(keys.size());
  positions_ = group_.positions.data();
}

void OneShardGroupMerge::Group() {
  WithKeyTable(keys_.size(), [&](StampedKeyTable& index) {
    taups::Group(keys_, keys_.size(), Identity, [](uint64_t) { return 0u; },
                 index, &group_, [this](size_t done) {
                   grouped_.store(done, std::memory_order_release);
                 });
  });
}

void OneShardGroupMerge::Merge(std::string* bytes) {
  const size_t n = keys_.size();
  const size_t row_bytes = size_t{dim_} * sizeof(float);
  // Room for every key's row at once, so the bytes never move: each new
  // key's row is then sized (zero-filled by the string, overwritten here)
  // a few rows at a time, and the string ends as long as the unique keys'
  // rows.
  bytes->clear();
  bytes->reserve(n * row_bytes);
  float* const out = reinterpret_cast<float*>(bytes->data());
  uint32_t rows_ready = 0;
  const auto rows_for = [&](uint32_t needed) {
    constexpr size_t kMinGrowth = 1024;
    const size_t rows = std::min<size_t>(
        n, std::max<size_t>({needed, 2 * size_t{rows_ready}, kMinGrowth}));
    bytes->resize(rows * row_bytes);
    return static_cast<uint32_t>(rows);
  };
  uint32_t next_new = 0;
  for (size_t merged = 0; merged < n;) {
    const size_t ready = grouped_.load(std::memory_order_acquire);
    if (ready == merged) {
      std::this_thread::yield();
      continue;
    }
    next_new = WithRowWidth(dim_, [&](auto width) {
      return MergeRowsOf<width()>(positions_, merged, ready,
                                  gradients_.data(), dim_, out, next_new,
                                  &rows_ready, rows_for);
    });
    merged = ready;
  }
  bytes->resize(size_t{next_new} * row_bytes);
}

}  // namespace taups
