// store_push_bench: the shard's push path without the network, CPU time per
// call: ParameterStore::PushDense of a 16 MiB gradient in 1 MiB slices (as
// the client cuts it) and PushSparse of 65,536 distinct uniform keys x 16
// (rows created by a pull first), next to a memcpy of the same bytes.
//
//   store_push_bench [calls]       # default 21; the first is not counted
//
// It uses only ParameterStore's public calls, so the same file builds
// against an older commit's libraries and two builds can run alternately
// (docs/BENCHMARKS.md shows the command). CPU ms = this process's CPU time
// (all threads: a large push is applied on up to 4) per call, median of the
// calls: steadier than wall time on a loaded machine. Like ps_server, it
// keeps large freed buffers mapped (KeepLargeBuffersMapped). A benchmark,
// not a test: it reports.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "common/malloc_tuning.h"
#include "server/parameter_store.h"

namespace taups {
namespace {

constexpr uint64_t kDenseFloats = uint64_t{4} << 20;  // 16 MiB
constexpr uint32_t kSlices = 16;                      // 1 MiB each
constexpr size_t kKeys = 65536;
constexpr uint32_t kDim = 16;

double CpuMs() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<float> Normal(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// Median CPU ms of a memcpy of `bytes`.
double MemcpyMs(size_t bytes, int calls) {
  std::vector<char> src(bytes, 1), dst(bytes);
  std::vector<double> ms;
  for (int i = 0; i < calls; ++i) {
    const double t0 = CpuMs();
    std::memcpy(dst.data(), src.data(), bytes);
    asm volatile("" : : "r"(dst.data()) : "memory");
    ms.push_back(CpuMs() - t0);
  }
  return Median(ms);
}

int Run(int calls) {
  ParameterStore store(0, 1);
  bool created = false;
  if (!store.CreateTable(TableConfig::Dense("w", kDenseFloats), false, &created).ok() ||
      !store.CreateTable(TableConfig::Sparse("emb", kDim), false, &created).ok()) {
    std::fprintf(stderr, "store_push_bench: cannot create the tables\n");
    return 1;
  }
  std::mt19937_64 rng(1);
  const std::vector<float> dense = Normal(kDenseFloats, rng);
  absl::flat_hash_set<uint64_t> seen;
  std::vector<uint64_t> keys;
  while (keys.size() < kKeys) {
    const uint64_t key = rng() % (uint64_t{1} << 24);
    if (seen.insert(key).second) keys.push_back(key);
  }
  std::vector<float> rows(kKeys * kDim);
  if (!store.PullSparse("emb", keys, absl::MakeSpan(rows)).ok()) return 1;
  const std::vector<float> sparse = Normal(kKeys * kDim, rng);
  uint64_t seq = 0;
  std::vector<double> dense_ms, sparse_ms;
  for (int call = 0; call <= calls; ++call) {
    const double t0 = CpuMs();
    ++seq;
    const uint64_t count = kDenseFloats / kSlices;
    for (uint32_t s = 0; s < kSlices; ++s) {
      PushMeta meta;
      meta.origin = PushOrigin{1, 1, seq};
      meta.slices = kSlices;
      meta.slice_index = s;
      if (!store.PushDense("w", s * count,
                           absl::MakeConstSpan(dense.data() + s * count, count),
                           meta).ok()) {
        return 2;
      }
    }
    const double t1 = CpuMs();
    PushMeta meta;
    meta.origin = PushOrigin{1, 1, ++seq};
    if (!store.PushSparse("emb", keys, sparse, meta).ok()) return 3;
    const double t2 = CpuMs();
    if (call > 0) {  // the first call warms the allocator and caches
      dense_ms.push_back(t1 - t0);
      sparse_ms.push_back(t2 - t1);
    }
  }
  const double dense_bytes = 4.0 * kDenseFloats;
  const double sparse_bytes = (8.0 + 4.0 * kDim) * kKeys;  // key + row
  std::printf("| op | CPU ms/call | GB/cpu-s | memcpy CPU ms | ÷ memcpy |\n");
  std::printf("|:--|--:|--:|--:|--:|\n");
  const double dense_copy = MemcpyMs(static_cast<size_t>(dense_bytes), calls);
  const double sparse_copy = MemcpyMs(static_cast<size_t>(sparse_bytes), calls);
  std::printf("| PushDense 16 MiB (16 slices) | %.2f | %.3f | %.2f | %.3f× |\n",
              Median(dense_ms), dense_bytes / Median(dense_ms) / 1e6,
              dense_copy, dense_copy / Median(dense_ms));
  std::printf("| PushSparse 65,536 x 16 uniform | %.2f | %.3f | %.2f | %.3f× |\n",
              Median(sparse_ms), sparse_bytes / Median(sparse_ms) / 1e6,
              sparse_copy, sparse_copy / Median(sparse_ms));
  return 0;
}

}  // namespace
}  // namespace taups

int main(int argc, char** argv) {
  taups::KeepLargeBuffersMapped();  // as ps_server does
  const int calls = argc > 1 ? std::atoi(argv[1]) : 21;
  if (calls < 1) {
    std::fprintf(stderr, "usage: store_push_bench [calls >= 1]\n");
    return 1;
  }
  return taups::Run(calls);
}
