// store_push_bench: the shard's push path without the network, CPU time per
// call: ParameterStore::PushDense of a 16 MiB gradient in 1 MiB slices (as
// the client cuts it) and in one slice, PullDense of the 16 MiB, and
// PushSparse of 65,536 distinct uniform keys x 16 (rows created by a pull
// first), next to a memcpy of the same bytes; wall ms beside the CPU ms
// (a parallel apply shows in the wall time, not the CPU time).
//
//   store_push_bench [calls] [apply_threads]
//     calls: default 21, the first is not counted; apply_threads: the
//     shard's --apply_threads (0 = auto; only for a tree with TaskPool)
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
#if __has_include("common/task_pool.h")
#include "common/task_pool.h"
#define TAUPS_HAS_APPLY_POOL 1
#endif

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

double WallMs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
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
  // CPU and wall ms per call of each operation.
  constexpr int kOps = 4;
  std::vector<double> cpu[kOps], wall[kOps];
  std::vector<float> pulled(kDenseFloats);
  for (int call = 0; call <= calls; ++call) {
    double c[kOps + 1], w[kOps + 1];
    c[0] = CpuMs();
    w[0] = WallMs();
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
    c[1] = CpuMs();
    w[1] = WallMs();
    PushMeta whole;
    whole.origin = PushOrigin{1, 1, ++seq};
    if (!store.PushDense("w", 0, dense, whole).ok()) return 2;
    c[2] = CpuMs();
    w[2] = WallMs();
    if (!store.PullDense("w", 0, absl::MakeSpan(pulled)).ok()) return 4;
    c[3] = CpuMs();
    w[3] = WallMs();
    PushMeta meta;
    meta.origin = PushOrigin{1, 1, ++seq};
    if (!store.PushSparse("emb", keys, sparse, meta).ok()) return 3;
    c[4] = CpuMs();
    w[4] = WallMs();
    if (call > 0) {  // the first call warms the allocator and caches
      for (int op = 0; op < kOps; ++op) {
        cpu[op].push_back(c[op + 1] - c[op]);
        wall[op].push_back(w[op + 1] - w[op]);
      }
    }
  }
  const double dense_bytes = 4.0 * kDenseFloats;
  const double sparse_bytes = (8.0 + 4.0 * kDim) * kKeys;  // key + row
  const double dense_copy = MemcpyMs(static_cast<size_t>(dense_bytes), calls);
  const double sparse_copy = MemcpyMs(static_cast<size_t>(sparse_bytes), calls);
  std::printf("| op | CPU ms/call | wall ms/call | GB/cpu-s | memcpy CPU ms | "
              "÷ memcpy |\n");
  std::printf("|:--|--:|--:|--:|--:|--:|\n");
  const char* names[kOps] = {"PushDense 16 MiB (16 slices)",
                             "PushDense 16 MiB (1 slice)", "PullDense 16 MiB",
                             "PushSparse 65,536 x 16 uniform"};
  for (int op = 0; op < kOps; ++op) {
    const double bytes = op == 3 ? sparse_bytes : dense_bytes;
    const double copy = op == 3 ? sparse_copy : dense_copy;
    const double ms = Median(cpu[op]);
    std::printf("| %s | %.2f | %.2f | %.3f | %.2f | %.3f× |\n", names[op], ms,
                Median(wall[op]), bytes / ms / 1e6, copy, copy / ms);
  }
  return 0;
}

}  // namespace
}  // namespace taups

int main(int argc, char** argv) {
  taups::KeepLargeBuffersMapped();  // as ps_server does
  const int calls = argc > 1 ? std::atoi(argv[1]) : 21;
  if (calls < 1) {
    std::fprintf(stderr, "usage: store_push_bench [calls >= 1] [apply_threads]\n");
    return 1;
  }
#ifdef TAUPS_HAS_APPLY_POOL
  if (argc > 2) taups::TaskPool::SetSharedThreads(std::atoi(argv[2]));
  std::printf("apply threads: %d\n", taups::TaskPool::Shared().threads());
#endif
  return taups::Run(calls);
}
