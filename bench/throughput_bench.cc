// throughput_bench: how fast tauPS moves parameters, next to raw gRPC moving
// the same bytes and a local memcpy of them. A benchmark, not a test.
//
//   throughput_bench                       # in-process shards on 127.0.0.1
//   throughput_bench --format=markdown     # tables ready for docs/
//   throughput_bench --servers=h1:7000,h2:7000 --raw_server=h1:7100
//
// See docs/BENCHMARKS.md for what each figure means.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/bench_cluster.h"
#include "bench/bench_main.h"
#include "bench/byte_size.h"
#include "bench/compressed_push_bench.h"
#include "bench/dense_bench.h"
#include "bench/machine_info.h"
#include "bench/raw_transfer_client.h"
#include "bench/raw_transfer_server.h"
#include "bench/server_process.h"
#include "bench/sparse_bench.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(double, min_seconds, 0.5,
          "Each figure repeats its operation for at least this many seconds "
          "(and at least --min_iters times), after one untimed warm-up call.");
ABSL_FLAG(int64_t, min_iters, 5, "Each figure repeats at least this often.");
ABSL_FLAG(int, trials, 1,
          "Timed runs per figure (each of --min_seconds / --min_iters); the "
          "median run is reported. Raise it on a machine shared with other "
          "work.");
ABSL_FLAG(std::vector<std::string>, sections,
          std::vector<std::string>({"dense", "sparse"}),
          "Which tables to produce: dense, sparse, compressed (one dense "
          "push per codec; not in the default set).");
ABSL_FLAG(std::string, compressed_bytes, "16MiB",
          "compressed: float32 size of the gradient pushed with each codec.");
ABSL_FLAG(
    std::vector<std::string>, dense_sizes,
    std::vector<std::string>({"4KiB", "64KiB", "1MiB", "4MiB", "16MiB"}),
    "Dense table sizes (float32 payload per push/pull), e.g. 4KiB,16MiB.");
ABSL_FLAG(std::vector<std::string>, dense_clients, std::vector<std::string>({"1"}),
          "Dense rows for these numbers of clients calling at once (each its "
          "own worker id and channels; the raw reference runs as many raw "
          "clients), e.g. 1,2. GB/s and calls/s are of all of them together.");
ABSL_FLAG(std::vector<std::string>, shards,
          std::vector<std::string>({"1", "2"}),
          "In-process clusters to run against, by shard count (ignored with "
          "--servers).");
ABSL_FLAG(std::string, servers, "",
          "Comma-separated host:port of running ps_server shards, in shard "
          "order. When set, runs against them instead of in-process shards.");
ABSL_FLAG(bool, server_processes, false,
          "Run the shards (ps_server) and the raw reference "
          "(raw_transfer_server), both found next to this binary, as their "
          "own processes on 127.0.0.1, so the tables split CPU per GB into "
          "this client's and the servers' (/proc/<pid>/stat). Default: all "
          "in this process, where server cpu-s/GB reads n/a and client "
          "cpu-s/GB counts both sides.");
ABSL_FLAG(std::string, raw_server, "",
          "host:port of a running raw_transfer_server to use as the raw gRPC "
          "reference. Empty: start one in this process on 127.0.0.1.");
ABSL_FLAG(std::string, slice_bytes, "1MiB",
          "ClientOptions::slice_bytes; the sliced raw reference cuts the same "
          "way.");
ABSL_FLAG(int, channels_per_shard, 2,
          "ClientOptions::channels_per_shard; the sliced raw reference opens "
          "as many channels.");
ABSL_FLAG(int64_t, sparse_rows, 65536, "Keys per sparse pull/push call.");
ABSL_FLAG(uint32_t, sparse_dim, 16, "Floats per sparse row.");
ABSL_FLAG(int, sparse_cold_repeats, 3,
          "Fresh sparse tables whose first pull (which creates the rows) is "
          "timed; the figure is their mean.");
ABSL_FLAG(uint64_t, sparse_evict_rows, 4096,
          "Row limit per shard of the eviction tables (pull evict lru/lfu), "
          "far below the distinct keys one call brings.");
ABSL_FLAG(int, sparse_evict_batches, 8,
          "Different Zipf batches the eviction rows pull in turn; 0 skips "
          "them.");
ABSL_FLAG(std::vector<std::string>, sparse_keys,
          std::vector<std::string>({"uniform", "zipf"}),
          "Key sets of the sparse figures: uniform, zipf (a profile of one "
          "set's calls leaves the other out).");
ABSL_FLAG(uint64_t, key_space, uint64_t{1} << 24,
          "Sparse keys are drawn from [0, key_space).");
ABSL_FLAG(double, zipf_exponent, 1.1,
          "Exponent s of the Zipf keys: P(rank r) ~ (r + 1)^-s. Must be > 1.");
ABSL_FLAG(uint64_t, seed, 1, "Seed of the key generators.");
ABSL_FLAG(std::string, format, "text",
          "text: aligned plain-text tables; markdown: tables for docs/.");
ABSL_FLAG(
    std::string, log_level, "warn",
    "spdlog level of the in-process shards: trace|debug|info|warn|error.");

namespace taups::bench {
namespace {

struct Setup {
  std::vector<std::unique_ptr<BenchCluster>> clusters;
  std::unique_ptr<RawTransferServer> raw_server;  // in-process reference only
  // --server_processes: the raw reference's process (the shards' are in
  // their clusters), declared before `raw`, so the client goes first.
  std::vector<std::unique_ptr<ServerProcess>> raw_process;
  std::unique_ptr<RawTransferClient> raw;
  // More raw clients, one per client beyond the first (--dense_clients).
  std::vector<std::unique_ptr<RawTransferClient>> more_raw;
  std::string description;
};

bool Wants(const std::string& section) {
  const auto sections = absl::GetFlag(FLAGS_sections);
  return std::find(sections.begin(), sections.end(), section) != sections.end();
}

absl::StatusOr<std::vector<size_t>> DenseSizes() {
  std::vector<size_t> sizes;
  for (const std::string& text : absl::GetFlag(FLAGS_dense_sizes)) {
    ASSIGN_OR_RETURN(size_t bytes, ParseByteSize(text));
    if (bytes % sizeof(float) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--dense_sizes: ", text, " is not a whole number of floats"));
    }
    sizes.push_back(bytes);
  }
  return sizes;
}

absl::StatusOr<std::vector<int>> DenseClients() {
  std::vector<int> counts;
  for (const std::string& text : absl::GetFlag(FLAGS_dense_clients)) {
    int n = 0;
    if (!absl::SimpleAtoi(text, &n) || n < 1 || n > 64) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--dense_clients: '", text, "' is not a client count in [1, 64]"));
    }
    counts.push_back(n);
  }
  if (counts.empty()) {
    return absl::InvalidArgumentError("--dense_clients names no client count");
  }
  return counts;
}

absl::StatusOr<Setup> StartSetup(const ClientOptions& client_options,
                                 size_t largest_download, int raw_clients,
                                 const std::string& scratch) {
  Setup setup;
  const std::string servers = absl::GetFlag(FLAGS_servers);
  if (!servers.empty()) {
    ASSIGN_OR_RETURN(
        auto cluster,
        AttachCluster(absl::StrSplit(servers, ',', absl::SkipEmpty()),
                      client_options));
    setup.description = absl::StrCat("external shards ", servers);
    setup.clusters.push_back(std::move(cluster));
  } else {
    const bool processes = absl::GetFlag(FLAGS_server_processes);
    for (const std::string& text : absl::GetFlag(FLAGS_shards)) {
      int n = 0;
      if (!absl::SimpleAtoi(text, &n) || n < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("--shards: '", text, "' is not a shard count"));
      }
      ASSIGN_OR_RETURN(auto cluster,
                       processes ? StartProcessCluster(
                                       n, client_options,
                                       OwnBinaryDir() + "/ps_server", scratch)
                                 : StartLocalCluster(n, client_options));
      setup.clusters.push_back(std::move(cluster));
    }
    setup.description =
        processes ? "each shard a ps_server process on 127.0.0.1"
                  : "shards in this process on 127.0.0.1 free ports";
  }
  std::string raw_address = absl::GetFlag(FLAGS_raw_server);
  if (raw_address.empty() && absl::GetFlag(FLAGS_server_processes)) {
    ASSIGN_OR_RETURN(
        std::unique_ptr<ServerProcess> raw,
        ServerProcess::Start(
            OwnBinaryDir() + "/raw_transfer_server",
            {"--host=127.0.0.1",
             absl::StrCat("--max_download=",
                          std::max<size_t>(largest_download, 1 << 20))},
            scratch, "raw_transfer_server.log"));
    raw_address = raw->address();
    setup.raw_process.push_back(std::move(raw));
    absl::StrAppend(&setup.description,
                    "; raw reference a raw_transfer_server process");
  } else if (raw_address.empty()) {
    RawTransferServerOptions options;
    options.max_download_bytes = std::max<size_t>(largest_download, 1 << 20);
    ASSIGN_OR_RETURN(setup.raw_server, RawTransferServer::Start(options));
    raw_address = absl::StrCat("127.0.0.1:", setup.raw_server->port());
    absl::StrAppend(&setup.description,
                    "; raw reference server in this process on 127.0.0.1");
  } else {
    absl::StrAppend(&setup.description, "; raw reference server ", raw_address);
  }
  absl::StrAppend(&setup.description,
                  !setup.raw_process.empty()
                      ? "; client in this process (client cpu-s/GB counts "
                        "this process, server cpu-s/GB the server processes)"
                  : servers.empty() && setup.raw_server != nullptr
                      ? "; client in this process too (loopback TCP; all "
                        "threads share the same CPUs)"
                      : "; client in this process (GB/cpu-s counts this "
                        "process only)");
  ASSIGN_OR_RETURN(
      setup.raw, RawTransferClient::Connect(raw_address,
                                            client_options.channels_per_shard));
  for (int k = 1; k < raw_clients; ++k) {
    ASSIGN_OR_RETURN(std::unique_ptr<RawTransferClient> more,
                     RawTransferClient::Connect(
                         raw_address, client_options.channels_per_shard));
    setup.more_raw.push_back(std::move(more));
  }
  return setup;
}

std::string FlagLine() {
  std::vector<std::string> parts = {
      absl::StrCat("--min_seconds=", absl::GetFlag(FLAGS_min_seconds)),
      absl::StrCat("--min_iters=", absl::GetFlag(FLAGS_min_iters)),
      absl::StrCat("--trials=", absl::GetFlag(FLAGS_trials)),
      absl::StrCat("--sections=",
                   absl::StrJoin(absl::GetFlag(FLAGS_sections), ",")),
      absl::StrCat("--dense_sizes=",
                   absl::StrJoin(absl::GetFlag(FLAGS_dense_sizes), ",")),
      absl::StrCat("--dense_clients=",
                   absl::StrJoin(absl::GetFlag(FLAGS_dense_clients), ",")),
  };
  if (absl::GetFlag(FLAGS_servers).empty()) {
    parts.push_back(absl::StrCat(
        "--shards=", absl::StrJoin(absl::GetFlag(FLAGS_shards), ",")));
  } else {
    parts.push_back(absl::StrCat("--servers=", absl::GetFlag(FLAGS_servers)));
  }
  if (!absl::GetFlag(FLAGS_raw_server).empty()) {
    parts.push_back(
        absl::StrCat("--raw_server=", absl::GetFlag(FLAGS_raw_server)));
  }
  if (absl::GetFlag(FLAGS_server_processes)) {
    parts.push_back("--server_processes");
  }
  parts.push_back(
      absl::StrCat("--slice_bytes=", absl::GetFlag(FLAGS_slice_bytes)));
  parts.push_back(absl::StrCat("--channels_per_shard=",
                               absl::GetFlag(FLAGS_channels_per_shard)));
  parts.push_back(
      absl::StrCat("--sparse_rows=", absl::GetFlag(FLAGS_sparse_rows)));
  parts.push_back(
      absl::StrCat("--sparse_dim=", absl::GetFlag(FLAGS_sparse_dim)));
  parts.push_back(absl::StrCat("--sparse_cold_repeats=",
                               absl::GetFlag(FLAGS_sparse_cold_repeats)));
  parts.push_back(absl::StrCat("--sparse_evict_rows=",
                               absl::GetFlag(FLAGS_sparse_evict_rows)));
  parts.push_back(absl::StrCat("--sparse_evict_batches=",
                               absl::GetFlag(FLAGS_sparse_evict_batches)));
  parts.push_back(absl::StrCat(
      "--sparse_keys=", absl::StrJoin(absl::GetFlag(FLAGS_sparse_keys), ",")));
  parts.push_back(absl::StrCat("--key_space=", absl::GetFlag(FLAGS_key_space)));
  parts.push_back(
      absl::StrCat("--zipf_exponent=", absl::GetFlag(FLAGS_zipf_exponent)));
  parts.push_back(absl::StrCat("--seed=", absl::GetFlag(FLAGS_seed)));
  parts.push_back(absl::StrCat("--format=", absl::GetFlag(FLAGS_format)));
  return absl::StrJoin(parts, " ");
}

void PrintHeader(TableFormat format, const std::string& setup) {
  std::vector<std::string> lines = DescribeMachine();
  lines.push_back(absl::StrCat("setup: ", setup));
  lines.push_back(absl::StrCat("flags: ", FlagLine()));
  lines.push_back(
      "GB/s = payload bytes / wall time (1 GB = 1e9 B); calls/s = API calls "
      "completed per second; ÷ raw = tauPS GB/s over raw gRPC GB/s (dense: the "
      "fastest of the three raw figures, whose CPU the raw cpu-s/GB columns give)");
  PrintReportHeader(format, "tauPS throughput benchmark", lines);
}

void PrintTable(TableFormat format, const std::string& title,
                const ReportTable& table) {
  if (format == TableFormat::kMarkdown) {
    std::printf("#### %s\n\n", title.c_str());
  } else {
    std::printf("%s\n", title.c_str());
  }
  table.Print(format, stdout);
  std::printf("\n");
  std::fflush(stdout);
}

absl::Status Run() {
  ASSIGN_OR_RETURN(const TableFormat format,
                   ParseTableFormat(absl::GetFlag(FLAGS_format)));
  spdlog::set_level(spdlog::level::from_str(absl::GetFlag(FLAGS_log_level)));

  MeasureOptions measure = MeasureOptionsFrom(absl::GetFlag(FLAGS_min_seconds),
                                              absl::GetFlag(FLAGS_min_iters),
                                              absl::GetFlag(FLAGS_trials));
  ASSIGN_OR_RETURN(std::vector<size_t> dense_sizes, DenseSizes());
  ASSIGN_OR_RETURN(std::vector<int> dense_clients, DenseClients());
  ASSIGN_OR_RETURN(size_t slice_bytes,
                   ParseByteSize(absl::GetFlag(FLAGS_slice_bytes)));

  SparseBenchConfig sparse;
  sparse.rows = static_cast<size_t>(absl::GetFlag(FLAGS_sparse_rows));
  sparse.dim = absl::GetFlag(FLAGS_sparse_dim);
  sparse.cold_repeats = absl::GetFlag(FLAGS_sparse_cold_repeats);
  sparse.key_space = absl::GetFlag(FLAGS_key_space);
  sparse.zipf_exponent = absl::GetFlag(FLAGS_zipf_exponent);
  sparse.seed = absl::GetFlag(FLAGS_seed);
  sparse.evict_max_rows = absl::GetFlag(FLAGS_sparse_evict_rows);
  sparse.evict_batches = absl::GetFlag(FLAGS_sparse_evict_batches);
  sparse.measure = measure;
  sparse.key_sets = absl::GetFlag(FLAGS_sparse_keys);
  if (sparse.key_sets.empty()) {
    return absl::InvalidArgumentError(
        "--sparse_keys names no key set (uniform, zipf)");
  }
  for (const std::string& set : sparse.key_sets) {
    if (set != "uniform" && set != "zipf") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--sparse_keys=", set, " is not a key set (uniform, zipf)"));
    }
  }
  if (sparse.rows == 0 || sparse.dim == 0 || sparse.cold_repeats < 1 ||
      sparse.key_space == 0 || !(sparse.zipf_exponent > 1.0) ||
      sparse.evict_max_rows < 64 || sparse.evict_batches < 0) {
    return absl::InvalidArgumentError(
        "--sparse_rows, --sparse_dim, --sparse_cold_repeats and --key_space "
        "must be positive, --zipf_exponent above 1, --sparse_evict_rows at "
        "least 64 and --sparse_evict_batches not negative");
  }

  ClientOptions client_options;
  client_options.slice_bytes = slice_bytes;
  client_options.channels_per_shard = absl::GetFlag(FLAGS_channels_per_shard);
  size_t largest_download = sparse.rows * sparse.dim * sizeof(float);
  for (size_t bytes : dense_sizes) {
    largest_download = std::max(largest_download, bytes);
  }
  // Server logs and port files; declared before the setup, so removed
  // after its server processes stopped.
  ASSIGN_OR_RETURN(std::unique_ptr<ScratchDir> scratch,
                   ScratchDir::Make("taups_bench_"));
  const int most_clients =
      Wants("dense")
          ? *std::max_element(dense_clients.begin(), dense_clients.end())
          : 1;
  ASSIGN_OR_RETURN(Setup setup, StartSetup(client_options, largest_download,
                                           most_clients, scratch->path()));
  const std::function<double()> raw_server_cpu =
      setup.raw_process.empty()
          ? std::function<double()>()
          : [&setup] { return CpuSecondsOf(setup.raw_process); };
  std::vector<BenchCluster*> clusters;
  for (const auto& c : setup.clusters) clusters.push_back(c.get());
  // Unique per run, so runs against long-lived external shards never meet
  // tables of an earlier run.
  const std::string prefix = absl::StrCat(
      "bench", absl::ToUnixSeconds(absl::Now()), "_", getpid(), "_");

  PrintHeader(format, setup.description);
  if (Wants("dense")) {
    DenseBenchConfig dense;
    dense.sizes_bytes = dense_sizes;
    dense.measure = measure;
    dense.slice_bytes = slice_bytes;
    dense.raw_channels = client_options.channels_per_shard;
    dense.table_prefix = prefix;
    dense.raw_server_cpu = raw_server_cpu;
    dense.clients = dense_clients;
    std::vector<RawTransferClient*> raw = {setup.raw.get()};
    for (const auto& more : setup.more_raw) raw.push_back(more.get());
    std::fprintf(stderr, "dense:\n");
    ASSIGN_OR_RETURN(ReportTable table, RunDenseBench(dense, clusters, raw));
    PrintTable(
        format,
        "Dense tables: PushDense / PullDense of the whole table (float32)",
        table);
  }
  if (Wants("compressed")) {
    CompressedPushBenchConfig compressed;
    ASSIGN_OR_RETURN(compressed.gradient_bytes,
                     ParseByteSize(absl::GetFlag(FLAGS_compressed_bytes)));
    compressed.measure = measure;
    compressed.slice_bytes = slice_bytes;
    compressed.table_prefix = prefix;
    std::fprintf(stderr, "compressed:\n");
    ASSIGN_OR_RETURN(ReportTable table, RunCompressedPushBench(
                                            compressed, clusters, setup.raw.get()));
    PrintTable(format,
               absl::StrCat("Compressed pushes: PushDense of a ",
                            FormatBytes(compressed.gradient_bytes),
                            " float32 gradient with each codec (encode + "
                            "transfer + server decode and apply)"),
               table);
  }
  if (Wants("sparse")) {
    sparse.table_prefix = prefix;
    sparse.raw_server_cpu = raw_server_cpu;
    std::fprintf(stderr, "sparse:\n");
    ASSIGN_OR_RETURN(ReportTable table,
                     RunSparseBench(sparse, clusters, setup.raw.get()));
    PrintTable(
        format,
        absl::StrCat("Sparse tables: PullSparse / PushSparse of ", sparse.rows,
                     " keys × dim ", sparse.dim, " (payload = 8 B key + ",
                     sparse.dim * 4, " B row per key = ",
                     FormatBytes(sparse.rows * (8.0 + sparse.dim * 4)),
                     " per call)"),
        table);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace taups::bench

int main(int argc, char** argv) {
  return taups::bench::BenchMain(
      argc, argv, "throughput_bench",
      "Measures tauPS dense and sparse push/pull throughput and prints it next "
      "to raw gRPC moving the same bytes and a local memcpy.\n"
      "  throughput_bench                      # in-process shards, 127.0.0.1\n"
      "  throughput_bench --format=markdown    # tables for "
      "docs/BENCHMARKS.md\n"
      "  throughput_bench --servers=h:7000,h:7001 --raw_server=h:7100\n"
      "Tables go to stdout, progress to stderr.",
      taups::bench::Run);
}
