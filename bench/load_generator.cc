#include "bench/load_generator.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/status_macros.h"
#include "taups/client.h"

namespace taups::bench {
namespace {

using Clock = std::chrono::steady_clock;

double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The q-quantile of `values` (reorders them); 0 for none.
double Quantile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  const size_t k = std::min(values.size() - 1,
                            static_cast<size_t>(q * static_cast<double>(values.size())));
  std::nth_element(values.begin(), values.begin() + k, values.end());
  return values[k];
}

// What one worker did.
struct WorkerLog {
  absl::Status status;
  int64_t steps = 0;
  int64_t accepted = 0;
  int64_t refused = 0;
  Clock::time_point started, ended;
  std::vector<double> push_ms, pull_ms;
};

// Counts workers up to a number and lets waiters through when it is reached.
class Gate {
 public:
  explicit Gate(int expected) : expected_(expected) {}
  void Arrive() {
    absl::MutexLock lock(&mu_);
    ++arrived_;
  }
  void AwaitAll() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &Gate::AllArrived));
  }

 private:
  bool AllArrived() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return arrived_ >= expected_;
  }
  absl::Mutex mu_;
  const int expected_;
  int arrived_ ABSL_GUARDED_BY(mu_) = 0;
};

ClientOptions WorkerOptions(const LoadConfig& config, uint32_t worker_id,
                            bool register_worker) {
  ClientOptions options;
  options.servers = {config.server_address};
  options.worker_id = worker_id;
  options.channels_per_shard = 1;  // its own channel: W connections in all
  options.register_worker = register_worker;
  options.lease = config.lease;
  options.call_timeout = absl::Seconds(20);
  options.retry_budget = absl::Seconds(20);
  return options;
}

// Samples the server's threads and RSS until stopped, keeping the peaks.
class PeakSampler {
 public:
  explicit PeakSampler(const ServerProcess* server) : server_(server) {
    if (server_ == nullptr) return;
    thread_ = std::thread([this] {
      do {
        absl::StatusOr<ProcessUsage> usage = server_->Usage();
        if (usage.ok()) {
          threads_ = std::max<int64_t>(threads_, usage->threads);
          rss_ = std::max<int64_t>(rss_, usage->rss_bytes);
        }
      } while (!stop_.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
    });
  }
  ~PeakSampler() { Stop(); }
  void Stop() {
    if (!thread_.joinable()) return;
    stop_.Notify();
    thread_.join();
  }
  int64_t threads() const { return threads_; }
  int64_t rss() const { return rss_; }

 private:
  const ServerProcess* server_;
  std::atomic<int64_t> threads_{0}, rss_{0};
  absl::Notification stop_;
  std::thread thread_;
};

// One worker: connect (registering), wait for the start, then pull, push
// and clock until told to stop; then wait for `leave` before disconnecting.
void RunWorker(const LoadConfig& config, uint32_t worker_id, Gate& connected,
               const absl::Notification& go, std::atomic<int64_t>& last_step,
               Clock::time_point& deadline, Gate& finished,
               const absl::Notification& leave, WorkerLog& log) {
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Connect(WorkerOptions(config, worker_id, true));
  connected.Arrive();
  go.WaitForNotification();
  if (!client.ok()) {
    log.status = client.status();
    finished.Arrive();
    return;
  }
  const size_t floats = config.table_bytes / sizeof(float);
  std::vector<float> values(floats, 0.0f);
  const std::vector<float> gradient(floats, 1e-6f);
  // Steps past the deadline's first witness that every worker runs to (see
  // below); 0: each stops where it is.
  int64_t drain = 0;
  if (config.kind == ConsistencyKind::kSync) drain = 2;
  if (config.kind == ConsistencyKind::kSsp) drain = config.staleness_bound + 2;
  log.started = Clock::now();
  while (log.steps < last_step.load()) {
    if (Clock::now() >= deadline) {
      // Async workers stop where they are. Under sync the first worker to
      // see the deadline, having pushed step c, names c + 2 everyone's last:
      // another may have pushed c + 1 and begun c + 2 (its pull waits for
      // this worker's push of c + 1), but none can push c + 2 before this
      // one pushes c + 1, so every worker reaches c + 2 and none passes it.
      // Under ssp(s) no worker is more than s + 1 steps past the slowest, so
      // c + s + 2 is passed by none and reachable by all (a worker stopping
      // early would leave the others' pulls waiting for it).
      if (drain == 0) break;
      int64_t none = std::numeric_limits<int64_t>::max();
      last_step.compare_exchange_strong(none, log.steps + drain);
      if (log.steps >= last_step.load()) break;
    }
    Clock::time_point start = Clock::now();
    absl::StatusOr<PullInfo> pulled =
        (*client)->PullDense(config.table_name, absl::MakeSpan(values));
    log.pull_ms.push_back(MillisecondsSince(start));
    if (!pulled.ok()) {
      log.status = pulled.status();
      break;
    }
    start = Clock::now();
    absl::StatusOr<PushResult> pushed =
        (*client)->PushDense(config.table_name, gradient, &*pulled);
    log.push_ms.push_back(MillisecondsSince(start));
    if (!pushed.ok()) {
      log.status = pushed.status();
      break;
    }
    ++(pushed->all_accepted() ? log.accepted : log.refused);
    (*client)->Clock();
    ++log.steps;
  }
  log.ended = Clock::now();
  finished.Arrive();
  leave.WaitForNotification();
  client->reset();  // leaves the shard
}

}  // namespace

absl::StatusOr<LoadResult> RunLoad(const LoadConfig& config) {
  if (config.workers < 1 || config.table_bytes < sizeof(float)) {
    return absl::InvalidArgumentError("a load needs workers and a table");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Client> admin,
                   Client::Connect(WorkerOptions(config, 0, false)));
  TableConfig table =
      TableConfig::Dense(config.table_name, config.table_bytes / sizeof(float));
  table.consistency.kind = config.kind;
  if (config.kind != ConsistencyKind::kAsync) {
    table.consistency.num_workers = static_cast<uint32_t>(config.workers);
  }
  if (config.kind == ConsistencyKind::kSsp) {
    table.consistency.staleness_bound = config.staleness_bound;
  }
  RETURN_IF_ERROR(admin->CreateTable(table));

  LoadResult result;
  if (config.server != nullptr) {
    ASSIGN_OR_RETURN(ProcessUsage before, config.server->Usage());
    result.threads_before = before.threads;
    result.rss_before = before.rss_bytes;
  }
  Gate connected(config.workers), finished(config.workers);
  absl::Notification go, leave;
  std::atomic<int64_t> last_step{std::numeric_limits<int64_t>::max()};
  Clock::time_point deadline = Clock::time_point::max();
  std::vector<WorkerLog> logs(config.workers);
  std::vector<std::thread> threads;
  threads.reserve(config.workers);
  for (int w = 0; w < config.workers; ++w) {
    threads.emplace_back(RunWorker, std::cref(config),
                         config.first_worker_id + static_cast<uint32_t>(w),
                         std::ref(connected), std::cref(go), std::ref(last_step),
                         std::ref(deadline), std::ref(finished), std::cref(leave),
                         std::ref(logs[w]));
  }
  connected.AwaitAll();
  double cpu_before = 0;
  if (config.server != nullptr) {
    ASSIGN_OR_RETURN(ProcessUsage usage, config.server->Usage());
    cpu_before = usage.cpu_seconds;
  }
  ASSIGN_OR_RETURN(ProcessUsage own_before, ReadProcessUsage(getpid()));
  PeakSampler peaks(config.server);
  deadline = Clock::now() +
             std::chrono::nanoseconds(absl::ToInt64Nanoseconds(config.duration));
  go.Notify();
  finished.AwaitAll();
  peaks.Stop();
  if (config.server != nullptr) {
    ASSIGN_OR_RETURN(ProcessUsage usage, config.server->Usage());
    result.server_cpu_seconds = usage.cpu_seconds - cpu_before;
  }
  ASSIGN_OR_RETURN(ProcessUsage own_after, ReadProcessUsage(getpid()));
  result.client_cpu_seconds = own_after.cpu_seconds - own_before.cpu_seconds;
  absl::StatusOr<std::vector<TableShardStats>> stats =
      admin->Stats(config.table_name);
  leave.Notify();
  for (std::thread& t : threads) t.join();
  RETURN_IF_ERROR(stats.status());

  std::vector<double> push_ms, pull_ms;
  Clock::time_point first = Clock::time_point::max(), last = Clock::time_point::min();
  int64_t min_steps = std::numeric_limits<int64_t>::max(), max_steps = 0;
  for (const WorkerLog& log : logs) {
    RETURN_IF_ERROR(log.status);
    result.accepted_pushes += log.accepted;
    result.refused_pushes += log.refused;
    min_steps = std::min(min_steps, log.steps);
    max_steps = std::max(max_steps, log.steps);
    first = std::min(first, log.started);
    last = std::max(last, log.ended);
    push_ms.insert(push_ms.end(), log.push_ms.begin(), log.push_ms.end());
    pull_ms.insert(pull_ms.end(), log.pull_ms.begin(), log.pull_ms.end());
  }
  result.steps = min_steps;
  result.seconds = std::chrono::duration<double>(last - first).count();
  result.push_p50_ms = Quantile(push_ms, 0.5);
  result.push_p99_ms = Quantile(push_ms, 0.99);
  result.pull_p50_ms = Quantile(pull_ms, 0.5);
  result.pull_p99_ms = Quantile(pull_ms, 0.99);
  result.threads_peak = std::max(peaks.threads(), result.threads_before);
  result.rss_peak = std::max(peaks.rss(), result.rss_before);
  result.shard_version = stats->at(0).version;
  result.shard_pushes = stats->at(0).pushes;

  const uint64_t accepted = static_cast<uint64_t>(result.accepted_pushes);
  if (config.kind == ConsistencyKind::kSync) {
    const uint64_t expected = static_cast<uint64_t>(config.workers) *
                              static_cast<uint64_t>(max_steps);
    if (min_steps != max_steps) {
      result.mismatch = absl::StrCat("workers ended at steps ", min_steps,
                                     " to ", max_steps);
    } else if (result.shard_version != static_cast<uint64_t>(max_steps)) {
      result.mismatch = absl::StrCat("shard closed ", result.shard_version,
                                     " steps; the workers ran ", max_steps);
    } else if (accepted != expected) {
      result.mismatch = absl::StrCat(accepted, " pushes accepted of ", expected);
    }
  } else if (result.shard_version != accepted) {
    result.mismatch = absl::StrCat("shard version ", result.shard_version,
                                   " after ", accepted, " accepted pushes");
  }
  if (result.mismatch.empty() && result.shard_pushes != accepted) {
    result.mismatch = absl::StrCat("shard counted ", result.shard_pushes,
                                   " pushes; the workers ", accepted);
  }
  result.applied_exactly = result.mismatch.empty() && result.refused_pushes == 0;
  if (result.mismatch.empty() && result.refused_pushes > 0) {
    result.mismatch = absl::StrCat(result.refused_pushes, " pushes refused");
  }
  return result;
}

}  // namespace taups::bench
