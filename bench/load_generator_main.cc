// load_generator: one real ps_server shard driven by W concurrent workers,
// each a tauPS client with its own worker id, registration and gRPC channel,
// under async, sync or ssp. A benchmark; --short is CI's smoke test of it.
//
//   load_generator                         # W = 4,16,64,256, async and sync
//   load_generator --format=markdown       # the table for docs/BENCHMARKS.md
//   load_generator --short                 # W = 4,32, 1 s each: CI smoke
//   load_generator --workers=4,256 --modes=async --rounds=5
//                                          # the 256 ÷ 4 ratio over 5
//                                          # alternated rounds, with spread
//
// Exits 1 when a run fails or a worker's accepted pushes were not all
// applied exactly once (compared with the shard's version and push count).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bench/byte_size.h"
#include "bench/load_generator.h"
#include "bench/machine_info.h"
#include "bench/report_table.h"
#include "bench/server_process.h"
#include "common/lock_checks.h"
#include "common/malloc_tuning.h"
#include "common/status_macros.h"
#include "common/usage.h"

ABSL_FLAG(std::vector<std::string>, workers,
          std::vector<std::string>({"4", "16", "64", "256"}),
          "Worker counts to run, each against a fresh table.");
ABSL_FLAG(std::vector<std::string>, modes,
          std::vector<std::string>({"async", "sync"}),
          "Consistency models to run: async, sync, ssp (bounded staleness, "
          "s = --ssp_bound).");
ABSL_FLAG(uint32_t, ssp_bound, 2, "ssp: the staleness bound s.");
ABSL_FLAG(double, seconds, 3.0, "How long each (mode, W) runs.");
ABSL_FLAG(int32_t, rounds, 1,
          "Times the whole sweep runs; even rounds run the worker counts in "
          "reverse order, so the smallest and largest W alternate. With more "
          "than one, the async ratio of the largest W to the smallest is "
          "printed per round with its median and range.");
ABSL_FLAG(std::string, table_bytes, "64KiB",
          "float32 payload of each worker's pull and push.");
ABSL_FLAG(bool, short, false,
          "CI smoke: W = 4,32, 1 s each, 16 KiB tables (flags given "
          "explicitly still win).");
ABSL_FLAG(double, lease_s, 30.0,
          "Lease each worker asks for, in seconds (0: the server's default, "
          "10 s). Longer than the default because 256 workers' heartbeat "
          "threads on a loaded 2-CPU machine can fall a default lease "
          "behind.");
ABSL_FLAG(std::string, server_binary, "",
          "ps_server to start; default: the one next to this binary.");
ABSL_FLAG(std::vector<std::string>, server_args, {},
          "Extra ps_server flags, e.g. --server_args=--lease_s=30.");
ABSL_FLAG(std::string, format, "text", "text | markdown");

namespace taups::bench {
namespace {

std::string KindName(ConsistencyKind kind) {
  if (kind == ConsistencyKind::kSsp) return "ssp";
  return kind == ConsistencyKind::kSync ? "sync" : "async";
}

absl::StatusOr<std::vector<int>> WorkerCounts() {
  std::vector<int> counts;
  for (const std::string& text : absl::GetFlag(FLAGS_workers)) {
    int w = 0;
    if (!absl::SimpleAtoi(text, &w) || w < 1 || w > 1000) {
      return absl::InvalidArgumentError(
          absl::StrCat("--workers: '", text, "' is not a count in 1..1000"));
    }
    counts.push_back(w);
  }
  return counts;
}

absl::StatusOr<std::vector<ConsistencyKind>> Modes() {
  std::vector<ConsistencyKind> modes;
  for (const std::string& name : absl::GetFlag(FLAGS_modes)) {
    if (name == "async") {
      modes.push_back(ConsistencyKind::kAsync);
    } else if (name == "sync") {
      modes.push_back(ConsistencyKind::kSync);
    } else if (name == "ssp") {
      modes.push_back(ConsistencyKind::kSsp);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--modes: '", name, "' is not async, sync or ssp"));
    }
  }
  return modes;
}

// "median (min-max): a, b, c" of `values` in their order (none: "-").
std::string Spread(std::vector<double> values) {
  if (values.empty()) return "-";
  std::vector<std::string> listed;
  for (double v : values) listed.push_back(FormatNumber(v));
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const double median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return absl::StrCat(FormatNumber(median), " (", FormatNumber(values.front()), "-",
                      FormatNumber(values.back()), "): ", absl::StrJoin(listed, ", "));
}

// --short's values for the flags the command line did not set.
void ApplyShort(int argc, char** argv) {
  auto given = [&](absl::string_view flag) {
    for (int i = 1; i < argc; ++i) {
      absl::string_view arg = argv[i];
      if (absl::StartsWith(arg, absl::StrCat("--", flag))) return true;
    }
    return false;
  };
  if (!given("workers")) absl::SetFlag(&FLAGS_workers, {"4", "32"});
  if (!given("seconds")) absl::SetFlag(&FLAGS_seconds, 1.0);
  if (!given("table_bytes")) absl::SetFlag(&FLAGS_table_bytes, "16KiB");
}

absl::Status Run() {
  ASSIGN_OR_RETURN(TableFormat format,
                   ParseTableFormat(absl::GetFlag(FLAGS_format)));
  ASSIGN_OR_RETURN(std::vector<int> counts, WorkerCounts());
  ASSIGN_OR_RETURN(std::vector<ConsistencyKind> modes, Modes());
  ASSIGN_OR_RETURN(size_t table_bytes,
                   ParseByteSize(absl::GetFlag(FLAGS_table_bytes)));
  const double seconds = absl::GetFlag(FLAGS_seconds);
  if (!(seconds > 0) || table_bytes < sizeof(float)) {
    return absl::InvalidArgumentError("--seconds and --table_bytes must be positive");
  }
  const int rounds = absl::GetFlag(FLAGS_rounds);
  if (rounds < 1 || rounds > 100) {
    return absl::InvalidArgumentError("--rounds must be in 1..100");
  }
  std::string binary = absl::GetFlag(FLAGS_server_binary);
  if (binary.empty()) binary = OwnBinaryDir() + "/ps_server";

  // Declared before the server: removed after it stopped.
  ASSIGN_OR_RETURN(std::unique_ptr<ScratchDir> scratch_dir,
                   ScratchDir::Make("taups_load_"));
  const std::string& scratch = scratch_dir->path();
  std::vector<std::string> server_args = {"--host=127.0.0.1",
                                          "--stats_interval_s=0"};
  for (const std::string& a : absl::GetFlag(FLAGS_server_args)) {
    server_args.push_back(a);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ServerProcess> server,
                   ServerProcess::Start(binary, server_args, scratch,
                                        "ps_server.log"));

  std::vector<std::string> description = DescribeMachine();
  description.push_back(absl::StrCat(
      "one ps_server shard (pid ", server->pid(), ", ", binary, " ",
      absl::StrJoin(server_args, " "), ")"));
  description.push_back(absl::StrCat(
      "each worker: its own Client (worker id, registration, 1 channel), "
      "PullDense + PushDense + Clock of a ", FormatBytes(table_bytes),
      " table, ", seconds, " s per row, lease asked for ",
      absl::GetFlag(FLAGS_lease_s), " s"));
  description.push_back(
      "latencies in ms over every call of every worker; server threads "
      "before the workers connected → peak; RSS per worker = (peak - "
      "before) / W; server us/push = the shard's CPU per pull + push; "
      "client cpu-s/s = this process's (all W workers') CPU per second");
  PrintReportHeader(format, "Load generator: W workers on one shard",
                    description);

  std::vector<std::string> columns = {"mode",           "W",
                                      "steps (min)",    "pushes/s",
                                      "MB/s",           "push p50",
                                      "push p99",       "pull p50",
                                      "pull p99",       "server threads",
                                      "RSS/worker",     "server cpu-s/s",
                                      "server us/push", "client cpu-s/s",
                                      "applied"};
  if (rounds > 1) columns.insert(columns.begin(), "round");
  ReportTable table(columns, /*left_columns=*/rounds > 1 ? 3 : 2);
  bool all_exact = true;
  const int w_low = *std::min_element(counts.begin(), counts.end());
  const int w_high = *std::max_element(counts.begin(), counts.end());
  // One figure per round (async): the largest W's ÷ the smallest W's.
  std::vector<double> rate_ratios, cost_ratios;
  uint32_t next_worker_id = 1;
  for (int round = 1; round <= rounds; ++round) {
    std::vector<int> order = counts;
    if (round % 2 == 0) std::reverse(order.begin(), order.end());
    for (ConsistencyKind kind : modes) {
      double rate_low = 0, rate_high = 0, cost_low = 0, cost_high = 0;
      for (int w : order) {
        LoadConfig config;
        config.server_address = server->address();
        config.server = server.get();
        config.kind = kind;
        config.staleness_bound = absl::GetFlag(FLAGS_ssp_bound);
        config.workers = w;
        config.table_bytes = table_bytes;
        config.duration = absl::Seconds(seconds);
        config.first_worker_id = next_worker_id;
        config.lease = absl::Seconds(absl::GetFlag(FLAGS_lease_s));
        config.table_name = absl::StrCat("load_", KindName(kind), "_", w, "_r", round);
        next_worker_id += static_cast<uint32_t>(w);
        std::fprintf(stderr, "  round %d %s W=%d ...\n", round, KindName(kind).c_str(), w);
        ASSIGN_OR_RETURN(LoadResult r, RunLoad(config));
        const double pushes = r.PushesPerSecond();
        if (w == w_low) rate_low = pushes, cost_low = r.ServerMicrosPerPush();
        if (w == w_high) rate_high = pushes, cost_high = r.ServerMicrosPerPush();
        all_exact = all_exact && r.applied_exactly;
        // A pull and a push of the table per accepted push.
        const double mb = pushes * 2.0 * static_cast<double>(table_bytes) / 1e6;
        std::vector<std::string> row = {
            KindName(kind),
            absl::StrCat(w),
            absl::StrCat(r.steps),
            FormatNumber(pushes),
            FormatNumber(mb),
            FormatNumber(r.push_p50_ms),
            FormatNumber(r.push_p99_ms),
            FormatNumber(r.pull_p50_ms),
            FormatNumber(r.pull_p99_ms),
            absl::StrCat(r.threads_before, " → ", r.threads_peak),
            FormatBytes(static_cast<double>(r.rss_peak - r.rss_before) / w),
            FormatNumber(r.seconds > 0 ? r.server_cpu_seconds / r.seconds : 0),
            FormatNumber(r.ServerMicrosPerPush()),
            FormatNumber(r.seconds > 0 ? r.client_cpu_seconds / r.seconds : 0),
            r.applied_exactly ? "exact" : r.mismatch};
        if (rounds > 1) row.insert(row.begin(), absl::StrCat(round));
        table.AddRow(row);
      }
      if (kind == ConsistencyKind::kAsync && w_high != w_low && rate_low > 0 && cost_low > 0) {
        rate_ratios.push_back(rate_high / rate_low);
        cost_ratios.push_back(cost_high / cost_low);
      }
    }
  }
  table.Print(format, stdout);
  if (!rate_ratios.empty()) {
    std::printf("\nasync pushes/s at W=%d ÷ at W=%d, per round: %s\n", w_high, w_low,
                Spread(rate_ratios).c_str());
    std::printf("async server us/push at W=%d ÷ at W=%d, per round: %s\n", w_high, w_low,
                Spread(cost_ratios).c_str());
  }
  if (!all_exact) {
    return absl::InternalError("some pushes were not applied exactly once");
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace taups::bench

int main(int argc, char** argv) {
  // The W clients run in this process as they would in ps_worker, so it is
  // set up as ps_worker is: without these, Abseil's lock-order graph (on in
  // Debian's build) serializes every absl::Mutex acquisition of gRPC and
  // the clients on one global graph, a cost that grows with W (2.8 % of
  // this process's samples at W = 4, 5.8 % at W = 256; docs/BENCHMARKS.md).
  taups::KeepLargeBuffersMapped();
  taups::SkipLockOrderChecks();
  taups::SetUsage(
      "Drives one ps_server shard with W concurrent workers (async, sync "
      "or ssp) and reports throughput, latency, server threads and memory.\n"
      "  load_generator [--workers=4,16,64,256] [--modes=async,sync,ssp] "
      "[--short] [--format=markdown]");
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_short)) taups::bench::ApplyShort(argc, argv);
  const absl::Status status = taups::bench::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "load_generator: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
