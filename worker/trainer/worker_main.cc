// ps_worker: trains a model against a tauPS cluster.
//
//   ps_worker --servers=127.0.0.1:7000,127.0.0.1:7001 --worker_id=0
//             --num_workers=2 --model=mlp --steps=400
//
// Progress goes to stderr (spdlog); the last line on stdout is a one-line
// JSON summary. Exit status 0 on success, 1 with an error message otherwise.
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/command_line.h"
#include "common/flag_checks.h"
#include "common/grpc_logging.h"
#include "common/log_rate_limiter.h"
#include "common/lock_checks.h"
#include "common/logging.h"
#include "common/malloc_tuning.h"
#include "common/metrics.h"
#include "common/metrics_http.h"
#include "common/port_file.h"
#include "common/process_flags.h"
#include "common/status_macros.h"
#include "common/tool_start.h"
#include "server/cluster_config.h"
#include "spdlog/spdlog.h"
#include "taups/client.h"
#include "worker/trainer/ctr_trainer.h"
#include "worker/trainer/math_backend.h"
#include "worker/trainer/mlp_trainer.h"
#include "worker/trainer/trainer_options.h"
#include "worker/trainer/worker_metrics.h"
#include "worker/tools/compression_flags.h"
#include "worker/tools/policy_flags.h"
#include "worker/tools/transport_flags.h"

ABSL_FLAG(double, retry_budget_s, 60,
          "Seconds a call keeps retrying while a shard is unreachable, so the "
          "worker rides through a shard restart (it then pulls again).");
ABSL_FLAG(std::string, servers, "",
          "Comma-separated host:port of every ps_server shard, in shard-index "
          "order (required), e.g. 127.0.0.1:7000,127.0.0.1:7001");
ABSL_FLAG(std::string, config, "",
          "Cluster config file (as ps_server --config): the shards, instead "
          "of --servers. When it lists tables the shards created them, and "
          "this worker opens the model's tables instead of creating them "
          "(--create_tables is then ignored).");
ABSL_FLAG(uint32_t, worker_id, 0,
          "This worker's index in [0, --num_workers); selects its data shard");
ABSL_FLAG(uint32_t, num_workers, 1,
          "Number of workers sharing the training data (mlp: worker w trains "
          "on examples i with i % num_workers == w)");
ABSL_FLAG(std::string, model, "mlp",
          "mlp: 784-128-10 MLP on Fashion-MNIST (one dense table). ctr: "
          "DLRM (26 embeddings in a sparse table, bottom/top MLPs in a dense "
          "table) on synthetic Criteo-like clicks with a planted ground "
          "truth");
ABSL_FLAG(std::string, device, "auto",
          "Where the GEMMs run: auto (CUDA if a device is usable, else CPU), "
          "cpu, or cuda (fails if no usable CUDA device)");
ABSL_FLAG(int64_t, steps, 500,
          "Pull-compute-push steps this worker runs (not an epoch count)");
ABSL_FLAG(int32_t, batch_size, 0,
          "Examples per step (0 = model default: mlp 64, ctr 256)");
ABSL_FLAG(double, lr, 0.0,
          "Server-side learning rate of the model's tables (0 = model default: "
          "mlp SGD 0.2, ctr Adagrad 0.1). Part of the table config, so every "
          "worker must pass the same value");
ABSL_FLAG(uint64_t, seed, 1,
          "Seed of table initialisation, data order and synthetic data; every "
          "worker must pass the same value");
ABSL_FLAG(int64_t, log_every, 100,
          "Log a progress line every N steps (0 = no progress lines)");
ABSL_FLAG(std::string, data_dir, taups::trainer::kDefaultFashionMnistDir,
          "Directory with Fashion-MNIST's {train,t10k}-{images-idx3,labels-"
          "idx1}-ubyte.gz (Debian package dataset-fashion-mnist); mlp only");
ABSL_FLAG(bool, create_tables, true,
          "Create the model's tables (safe from every worker: identical "
          "configs are accepted). If false, wait up to 60 s for another "
          "worker to create them");
ABSL_FLAG(bool, lr_decay, true,
          "mlp: decay the effective learning rate linearly to 5% over --steps "
          "by scaling the pushed gradients (the server's SGD rate is "
          "constant); steadier final accuracy");
ABSL_FLAG(double, slowdown, 1.0,
          "Make this worker a straggler: after computing each step, stall for "
          "(slowdown - 1) x the compute time (1 = no stall). For watching "
          "sync wait times grow and semi_sync hide them");
ABSL_FLAG(int64_t, eval_examples, 0,
          "Test examples evaluated (0 = all: the 10000 Fashion-MNIST test "
          "images for mlp, at the end; 50000 synthetic eval examples for "
          "ctr, at every evaluation)");
ABSL_FLAG(int32_t, embedding_dim, taups::trainer::kDefaultCtrEmbeddingDim,
          "ctr: width of every embedding row and of the bottom MLP's output");
ABSL_FLAG(int64_t, ctr_examples, taups::trainer::kDefaultCtrExamples,
          "ctr: size of the synthetic training set; worker w trains on "
          "examples i with i % num_workers == w, one pass per epoch");
ABSL_FLAG(std::string, ctr_bottom_mlp, "32",
          "ctr: hidden widths of the DLRM bottom MLP (13 dense features -> "
          "these -> embedding_dim), comma-separated; empty = none");
ABSL_FLAG(std::string, ctr_top_mlp, "64",
          "ctr: hidden widths of the DLRM top MLP (interaction -> these -> "
          "1 logit), comma-separated; empty = none");
ABSL_FLAG(int64_t, eval_every, 0,
          "ctr: also evaluate every N steps (0 = only at the end of each "
          "epoch over this worker's shard and after the last step)");
ABSL_FLAG(bool, row_tau, false,
          "ctr: pull embedding rows with their row versions and report the "
          "per-row staleness of the embedding pushes for head ids and tail "
          "ids separately (progress lines and the JSON's \"row_tau\")");
ABSL_FLAG(bool, prefetch, true,
          "ctr: pull the next batch's embedding rows while the current batch "
          "computes: at once under async, once the step is pushed under "
          "ssp, sync and semi_sync (so a pull never reads past the policy's "
          "bound); it follows a live policy change (ps_admin set-policy) "
          "and pulls an early batch again when the table starts bounding "
          "reads; false: at the start of each step");
ABSL_FLAG(double, row_tau_head_min_prob,
          taups::trainer::kDefaultRowTauHeadMinProbability,
          "ctr with --row_tau: an id is a head id when at least this fraction "
          "of examples carries it (default 1/256); all others are tail ids");
ABSL_FLAG(uint64_t, sparse_max_rows, 0,
          "ctr: most embedding rows each shard keeps (0 = unbounded); a full "
          "shard evicts by --sparse_eviction");
ABSL_FLAG(uint64_t, sparse_max_bytes, 0,
          "ctr: memory budget of the embedding table on each shard, in bytes "
          "(0 = none); turned into a row limit from the row's real footprint");
ABSL_FLAG(std::string, sparse_eviction, "lru",
          "ctr: which row a full shard gives up: lru (least recently used) or "
          "lfu (fewest touches since admission)");
ABSL_FLAG(double, sparse_ttl_s, 0.0,
          "ctr: drop embedding rows untouched for this many seconds (0 = "
          "never)");
ABSL_FLAG(uint32_t, sparse_admit_after, 0,
          "ctr: give a key a row only on its N-th sighting (0 or 1 = at "
          "once); before that it reads its initial values and its pushes are "
          "dropped");
ABSL_FLAG(double, sparse_admit_probability, 1.0,
          "ctr: admit a key's row with this probability per sighting, the "
          "same keys on every run and shard layout (1 = always)");

namespace taups::trainer {
namespace {

constexpr long double kMaxWorkers = 65536;
constexpr long double kOneYearS = 365.0L * 86400;

// Every numeric flag defined above; the shared policy and compression flags
// bring their own lists. Cross-flag rules (worker_id < num_workers, ...)
// are TrainerOptions::Validate's.
constexpr FlagRange kFlagRanges[] = {
    {"worker_id", 0, kMaxWorkers - 1},
    {"retry_budget_s", 0, 86400},
    {"num_workers", 1, kMaxWorkers},
    {"steps", 0, MaxOf<int64_t>()},
    {"batch_size", 0, 65536},
    {"lr", 0, 1e6},
    {"seed", 0, MaxOf<uint64_t>()},
    {"log_every", 0, MaxOf<int64_t>()},
    {"slowdown", 1, 1000},
    {"eval_examples", 0, MaxOf<int64_t>()},
    {"embedding_dim", 1, 1024},
    {"ctr_examples", 1, 2147483647},
    {"eval_every", 0, MaxOf<int64_t>()},
    {"row_tau_head_min_prob", 0, 1, /*min_open=*/true},
    {"sparse_max_rows", 0, MaxOf<uint64_t>()},
    {"sparse_max_bytes", 0, MaxOf<uint64_t>()},
    {"sparse_ttl_s", 0, 10 * kOneYearS},
    {"sparse_admit_after", 0, MaxOf<uint32_t>()},
    {"sparse_admit_probability", 0, 1, /*min_open=*/true},
    {"metrics_port", -1, 65535},
};

std::vector<FlagRange> AllFlagRanges() {
  std::vector<FlagRange> ranges(std::begin(kFlagRanges), std::end(kFlagRanges));
  AppendFlagRanges(ranges, PolicyFlagRanges());
  AppendFlagRanges(ranges, CompressionFlagRanges());
  return ranges;
}

// "64,32" -> {64, 32}; "" -> {}. INVALID_ARGUMENT naming `flag` otherwise.
absl::StatusOr<std::vector<int>> ParseWidths(const char* flag,
                                             const std::string& text) {
  std::vector<int> widths;
  for (absl::string_view part :
       absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int width = 0;
    if (!absl::SimpleAtoi(part, &width)) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": '", std::string(part), "' is not a layer width"));
    }
    widths.push_back(width);
  }
  return widths;
}

absl::StatusOr<TrainerOptions> OptionsFromFlags() {
  TrainerOptions options;
  ASSIGN_OR_RETURN(options.model, ParseModelKind(absl::GetFlag(FLAGS_model)));
  options.worker_id = absl::GetFlag(FLAGS_worker_id);
  options.num_workers = absl::GetFlag(FLAGS_num_workers);
  options.steps = absl::GetFlag(FLAGS_steps);
  options.batch_size = absl::GetFlag(FLAGS_batch_size);
  options.learning_rate = static_cast<float>(absl::GetFlag(FLAGS_lr));
  options.seed = absl::GetFlag(FLAGS_seed);
  options.log_every = absl::GetFlag(FLAGS_log_every);
  options.data_dir = absl::GetFlag(FLAGS_data_dir);
  options.create_tables = absl::GetFlag(FLAGS_create_tables);
  options.eval_examples = absl::GetFlag(FLAGS_eval_examples);
  options.slowdown = absl::GetFlag(FLAGS_slowdown);
  options.embedding_dim = absl::GetFlag(FLAGS_embedding_dim);
  options.ctr_examples = absl::GetFlag(FLAGS_ctr_examples);
  ASSIGN_OR_RETURN(options.ctr_bottom_mlp,
                   ParseWidths("--ctr_bottom_mlp",
                               absl::GetFlag(FLAGS_ctr_bottom_mlp)));
  ASSIGN_OR_RETURN(options.ctr_top_mlp,
                   ParseWidths("--ctr_top_mlp", absl::GetFlag(FLAGS_ctr_top_mlp)));
  options.eval_every = absl::GetFlag(FLAGS_eval_every);
  options.row_tau = absl::GetFlag(FLAGS_row_tau);
  options.prefetch = absl::GetFlag(FLAGS_prefetch);
  options.row_tau_head_min_probability =
      absl::GetFlag(FLAGS_row_tau_head_min_prob);
  EmbeddingMemoryOptions& memory = options.embedding_memory;
  memory.max_rows = absl::GetFlag(FLAGS_sparse_max_rows);
  memory.max_bytes = absl::GetFlag(FLAGS_sparse_max_bytes);
  RETURN_IF_ERROR(ParseSparseEvictionKind(absl::GetFlag(FLAGS_sparse_eviction),
                                          &memory.eviction));
  memory.ttl_s = absl::GetFlag(FLAGS_sparse_ttl_s);
  memory.admit_after = absl::GetFlag(FLAGS_sparse_admit_after);
  memory.admit_probability =
      static_cast<float>(absl::GetFlag(FLAGS_sparse_admit_probability));
  ASSIGN_OR_RETURN(PolicyFlags policy, PolicyFromFlags(options.num_workers));
  options.consistency = policy.consistency;
  options.staleness = policy.staleness;
  if (!policy.warmup_versions_given) {
    options.staleness.warmup_versions = DefaultWarmupVersions(
        options.model, options.consistency.kind, options.num_workers);
  }
  options.lr_decay = absl::GetFlag(FLAGS_lr_decay);
  ASSIGN_OR_RETURN(options.compression, CompressionFromFlags());
  RETURN_IF_ERROR(options.Validate());
  return options;
}

// The shards, from --servers or --config. A config that lists tables
// made the shards create them: the worker then opens the model's tables
// (as with --create_tables=false) instead of creating its own.
absl::StatusOr<std::vector<std::string>> ShardList(TrainerOptions& options) {
  ASSIGN_OR_RETURN(ClusterConfig config,
                   ClusterFromServersOrConfig(absl::GetFlag(FLAGS_servers),
                                              absl::GetFlag(FLAGS_config)));
  if (!config.tables.empty()) options.create_tables = false;
  return config.shards;
}

// The worker's Prometheus endpoint (--metrics_port): build info and
// `metrics`, ready once training runs. Null when --metrics_port is -1.
absl::StatusOr<std::unique_ptr<MetricsHttpServer>> StartMetrics(
    const WorkerMetrics& metrics, MetricsRegistry& registry) {
  const int port = absl::GetFlag(FLAGS_metrics_port);
  if (port < 0) return nullptr;
  registry.Add([](MetricsWriter& out) { WriteBuildInfoMetric(GetBuildInfo(), out); });
  registry.Add(metrics.Collector());
  const std::string host = absl::GetFlag(FLAGS_metrics_host);
  ASSIGN_OR_RETURN(std::unique_ptr<MetricsHttpServer> http,
                   MetricsHttpServer::Start({host, port}, &registry, nullptr));
  spdlog::info("metrics on http://{}:{}/metrics", host, http->port());
  const std::string port_file = absl::GetFlag(FLAGS_metrics_port_file);
  if (!port_file.empty()) {
    RETURN_IF_ERROR(WritePortFile("--metrics_port_file", port_file, http->port()));
  }
  return http;
}

absl::Status Run() {
  ASSIGN_OR_RETURN(TrainerOptions options, OptionsFromFlags());
  ASSIGN_OR_RETURN(const DeviceKind device,
                   ParseDeviceKind(absl::GetFlag(FLAGS_device)));
  ASSIGN_OR_RETURN(std::unique_ptr<MathBackend> backend,
                   CreateMathBackend(device));

  ClientOptions client_options;
  ASSIGN_OR_RETURN(client_options.servers, ShardList(options));
  if (client_options.servers.empty()) {
    return absl::InvalidArgumentError(
        "--servers (comma-separated host:port list) or --config is required");
  }
  client_options.worker_id = options.worker_id;
  client_options.retry_budget = absl::Seconds(absl::GetFlag(FLAGS_retry_budget_s));
  RETURN_IF_ERROR(ApplyTransportFlags(client_options));
  ASSIGN_OR_RETURN(std::unique_ptr<Client> client,
                   Client::Connect(client_options));

  // Declared after the client, so the endpoint stops before it goes.
  WorkerMetrics metrics(options.worker_id, client.get());
  MetricsRegistry registry;
  ASSIGN_OR_RETURN(std::unique_ptr<MetricsHttpServer> metrics_http,
                   StartMetrics(metrics, registry));
  if (metrics_http != nullptr) options.metrics = &metrics;

  TrainingSummary summary;
  if (options.model == ModelKind::kMlp) {
    ASSIGN_OR_RETURN(summary, RunMlpTraining(*client, *backend, options));
  } else {
    ASSIGN_OR_RETURN(summary, RunCtrTraining(*client, *backend, options));
  }
  // Done: the shards record this worker as having left, and a sync step no
  // longer waits for it, instead of declaring it dead when its lease runs out.
  const absl::Status left = client->Leave();
  if (!left.ok()) spdlog::warn("leaving the cluster: {}", left.ToString());
  std::printf("%s\n", summary.ToJson().c_str());
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace
}  // namespace taups::trainer

int main(int argc, char** argv) {
  taups::KeepLargeBuffersMapped();
  taups::SkipLockOrderChecks();
  taups::StartToolOrExit(
      argc, argv,
      {.name = "ps_worker",
       .usage =
           "ps_worker: trains a model against tauPS parameter servers.\n"
           "  ps_worker --servers=127.0.0.1:7000,127.0.0.1:7001 --worker_id=0 "
           "--num_workers=2 --model=mlp --steps=400\n"
           "Progress is logged to stderr; the final stdout line is a JSON summary.\n"
           "Exit status 2 for a flag out of range, 1 for other failures.",
       .ranges = taups::trainer::AllFlagRanges(),
       // Logs on stderr so stdout carries only the JSON summary.
       .daemon_log = [] {
         taups::LogOptions log;
         log.tag = absl::StrCat("ps_worker[", absl::GetFlag(FLAGS_worker_id), "]");
         log.level = absl::GetFlag(FLAGS_log_level);
         return log;
       }});

  const absl::Status status = taups::trainer::Run();
  // What the rate limiter held back since its last report.
  taups::LogOverdueRepeats(taups::DefaultLogRateLimiter(), spdlog::level::warn,
                           /*include_recent=*/true);
  if (!status.ok()) {
    taups::LogFailure(status.ToString());
    return 1;
  }
  return 0;
}
