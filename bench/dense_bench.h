// The dense half of throughput_bench: PushDense and PullDense of whole
// tables of several sizes against each cluster, and next to them the same
// bytes moved by raw gRPC (one call; ~slice-sized calls over the raw
// client's channels, mirroring the tauPS client; the same slices with no
// copy of our own, through gRPC's generic API) and by a local memcpy. The
// ÷ raw column and the raw CPU columns are of the fastest raw figure.
//
// With N clients (DenseBenchConfig::clients), N clients of each cluster,
// each with its own worker id and channels, call at once on the same
// table, and the raw reference runs N raw clients at once the same way;
// a row's GB/s and calls/s are of all N together (its size cell reads
// "16 MiB ×2").
#ifndef TAUPS_BENCH_DENSE_BENCH_H_
#define TAUPS_BENCH_DENSE_BENCH_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "bench/bench_cluster.h"
#include "bench/measure.h"
#include "bench/raw_transfer_client.h"
#include "bench/report_table.h"

namespace taups::bench {

struct DenseBenchConfig {
  std::vector<size_t> sizes_bytes;  // each a whole number of floats
  MeasureOptions measure;
  // The sliced raw reference cuts transfers like the tauPS client does;
  // pass ClientOptions::slice_bytes and channels_per_shard here.
  size_t slice_bytes = size_t{1} << 20;
  int raw_channels = 2;
  // The raw reference server's CPU seconds so far, when it is a process of
  // this benchmark (null otherwise: its CPU is then in the client's).
  std::function<double()> raw_server_cpu;
  // Table names are "<prefix>dense_<bytes>".
  std::string table_prefix = "bench_";
  // Client counts to measure, each >= 1.
  std::vector<int> clients = {1};
};

// One row per (op, size, client count). `raw` holds at least as many raw
// clients as the largest count. Progress lines go to stderr.
absl::StatusOr<ReportTable> RunDenseBench(
    const DenseBenchConfig& config, absl::Span<BenchCluster* const> clusters,
    absl::Span<RawTransferClient* const> raw);

}  // namespace taups::bench

#endif  // TAUPS_BENCH_DENSE_BENCH_H_
