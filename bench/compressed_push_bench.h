// The compression half of throughput_bench: pushes one dense gradient (16 MiB
// of float32 by default) with each codec through the client library to each
// cluster, and reports the bytes that really went on the wire (the client's
// Transfers counters) and the wall time per push, encoding and the server's
// decode included. The fp32 push (codec none) of the same run is the
// reference, and raw gRPC moving each codec's wire bytes shows what the
// transfer alone costs.
#ifndef TAUPS_BENCH_COMPRESSED_PUSH_BENCH_H_
#define TAUPS_BENCH_COMPRESSED_PUSH_BENCH_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "bench/bench_cluster.h"
#include "bench/measure.h"
#include "bench/raw_transfer_client.h"
#include "bench/report_table.h"

namespace taups::bench {

struct CompressedPushBenchConfig {
  size_t gradient_bytes = size_t{16} << 20;
  MeasureOptions measure;
  size_t slice_bytes = size_t{1} << 20;  // as the client slices
  std::string table_prefix = "bench_";
};

// One row per codec; columns per cluster. Progress lines go to stderr.
absl::StatusOr<ReportTable> RunCompressedPushBench(
    const CompressedPushBenchConfig& config,
    absl::Span<BenchCluster* const> clusters, RawTransferClient* raw);

}  // namespace taups::bench

#endif  // TAUPS_BENCH_COMPRESSED_PUSH_BENCH_H_
