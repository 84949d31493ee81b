// key_grouping_bench: the client's sparse-call preparation on its own (no
// network): GroupKeysByShard and the push's gradient merge, next to the
// implementation they replaced (tests/shard_router_reference.h: a
// flat_hash_map per shard per call, sums added into zero-filled rows), on
// the same keys in the same run.
//
//   key_grouping_bench [calls] [--flush]
//
// 65,536 keys x dim 16, uniform over 2^24 and Zipf(1.1) (bench/key_sampler),
// 1 and 2 shards. Also the shard's check that a push's keys are distinct:
// SparseTable::FirstRepeatedKey next to the one flat_hash_set of the whole
// request that ParameterStore used before, on the distinct keys of each set. Each figure is the median CPU time of `calls` calls
// (default 31). --flush reads 32 MiB between calls, as a real call's
// network and shard work would, so the tables start cold.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "bench/key_sampler.h"
#include "server/sparse_table.h"
#include "common/ownership_map.h"
#include "tests/shard_router_reference.h"
#include "worker/src/shard_router.h"

namespace taups::bench {
namespace {

double CpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

template <typename Fn>
double MedianMs(int calls, bool flush, std::vector<char>& junk, Fn&& fn) {
  std::vector<double> ms;
  for (int c = 0; c < calls; ++c) {
    if (flush) {
      for (size_t i = 0; i < junk.size(); i += 64) ++junk[i];
    }
    const double start = CpuSeconds();
    fn();
    ms.push_back(1e3 * (CpuSeconds() - start));
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

volatile size_t g_sink;

int Run(int calls, bool flush) {
  constexpr size_t kKeys = 65536;
  constexpr uint32_t kDim = 16;
  struct Set {
    const char* name;
    std::vector<uint64_t> keys;
  };
  const Set sets[] = {{"uniform", UniformKeys(kKeys, uint64_t{1} << 24, 1)},
                      {"zipf", ZipfKeys(kKeys, uint64_t{1} << 24, 1.1, 1)}};
  std::vector<float> gradients(kKeys * kDim);
  for (size_t i = 0; i < gradients.size(); ++i) {
    gradients[i] = static_cast<float>(i % 97) * 0.01f - 0.4f;
  }
  std::vector<char> junk(flush ? size_t{32} << 20 : 0, 1);
  std::printf("| keys | shards | group, before ms | group ms | ÷ | merge, before ms | merge ms | ÷ |\n");
  std::printf("|:--|--:|--:|--:|--:|--:|--:|--:|\n");
  for (const Set& set : sets) {
    for (uint32_t shards : {1u, 2u}) {
      const OwnershipMap map = OwnershipMap::Initial(shards);
      const double group_old = MedianMs(calls, flush, junk, [&] {
        g_sink = reference::GroupKeysByShard(set.keys, map)[0].keys.size();
      });
      const double group_new = MedianMs(calls, flush, junk, [&] {
        g_sink = GroupKeysByShard(set.keys, map)[0].keys.size();
      });
      const std::vector<ShardKeys> groups = GroupKeysByShard(set.keys, map);
      const double merge_old = MedianMs(calls, flush, junk, [&] {
        g_sink = reference::MergeSparseGradients(groups, gradients, kDim)[0].size();
      });
      // As the client now does: into a buffer it already holds.
      std::vector<std::vector<float>> out(shards);
      for (uint32_t s = 0; s < shards; ++s) out[s].resize(groups[s].keys.size() * kDim);
      const double merge_new = MedianMs(calls, flush, junk, [&] {
        for (uint32_t s = 0; s < shards; ++s) {
          MergeShardGradients(groups[s], gradients, kDim, absl::MakeSpan(out[s]));
        }
        g_sink = out[0].size();
      });
      std::printf("| %s | %u | %.3f | %.3f | %.2f× | %.3f | %.3f | %.2f× |\n",
                  set.name, shards, group_old, group_new, group_old / group_new,
                  merge_old, merge_new, merge_old / merge_new);
    }
  }
  std::printf("\n| distinct keys of | keys | repeat check, before ms | repeat check ms | ÷ |\n");
  std::printf("|:--|--:|--:|--:|--:|\n");
  for (const Set& set : sets) {
    const std::vector<uint64_t> distinct =
        GroupKeysByShard(set.keys, OwnershipMap::Initial(1))[0].keys;
    const double old_ms = MedianMs(calls, flush, junk, [&] {
      absl::flat_hash_set<uint64_t> seen;
      seen.reserve(distinct.size());
      size_t repeats = 0;
      for (uint64_t key : distinct) repeats += seen.insert(key).second ? 0 : 1;
      g_sink = repeats;
    });
    const double new_ms = MedianMs(calls, flush, junk, [&] {
      g_sink = SparseTable::FirstRepeatedKey(distinct).has_value();
    });
    std::printf("| %s | %zu | %.3f | %.3f | %.2f× |\n", set.name,
                distinct.size(), old_ms, new_ms, old_ms / new_ms);
  }
  return 0;
}

}  // namespace
}  // namespace taups::bench

int main(int argc, char** argv) {
  int calls = 31;
  bool flush = false;
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "--flush") == 0) {
      flush = true;
    } else {
      calls = std::max(1, std::atoi(argv[a]));
    }
  }
  return taups::bench::Run(calls, flush);
}
