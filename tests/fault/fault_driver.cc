// fault_driver: a worker for the fault harness. Through the public
// taups::Client it pulls the shared dense table and pushes one additive
// update per step (layout in fault_history.h: the push of step k adds 1 to
// slot slot_base + k of every shard), recording every pull and push in its
// history file. It pushes from one thread, one push at a time and nothing
// else that takes a seq, so the client's seq of step k's push is k + 1.
//
//   fault_driver --servers=H:P,H:P --worker_id=0 --incarnation=1
//       --history=FILE --slots=600 --slot_base=0 --pushes=100
//       [--consistency=async|ssp|sync --staleness_bound=2 --num_workers=2
//        --step_ms=10 --think_ms=0 --retry_budget_s=30 --lease_s=0]
//
// Exits 0 after its last step and a final pull, whatever the calls
// answered (errors are in the history); 2 for bad flags or no connection.
//
// --probe: one pull of the existing table and nothing else, one attempt,
// without registering (recorded like any pull; a test reads how long it
// took and how it ended, e.g. across a network cut). With --probe_go_file
// it connects, creates --probe_ready_file, and pulls once the go file
// exists, so the pull runs on a connection made before the test's fault.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "taups/client.h"
#include "tests/fault/fault_history.h"
#include "worker/src/client_events.h"

ABSL_FLAG(std::string, servers, "", "Comma-separated shard addresses.");
ABSL_FLAG(uint32_t, worker_id, 0, "Worker id.");
ABSL_FLAG(uint64_t, incarnation, 1, "Worker incarnation (> 0, new per restart).");
ABSL_FLAG(std::string, history, "", "History file to append to.");
ABSL_FLAG(uint64_t, slots, 0, "Elements per shard of the table.");
ABSL_FLAG(uint64_t, slot_base, 0, "Slot of this incarnation's first push.");
ABSL_FLAG(uint64_t, pushes, 0, "Steps (one pull and one push each).");
ABSL_FLAG(std::string, consistency, "async", "async, ssp or sync.");
ABSL_FLAG(uint32_t, staleness_bound, 2, "ssp: s.");
ABSL_FLAG(uint32_t, num_workers, 1, "sync, ssp: workers expected at start.");
ABSL_FLAG(int, step_ms, 10, "Pause between steps (spreads the run over time).");
ABSL_FLAG(int, think_ms, 0, "Pause between a step's pull and its push (compute).");
ABSL_FLAG(double, retry_budget_s, 30, "ClientOptions::retry_budget.");
ABSL_FLAG(double, call_timeout_s, 10, "ClientOptions::call_timeout.");
ABSL_FLAG(double, lease_s, 0, "Lease asked for; 0 = the shard's default.");
ABSL_FLAG(bool, probe, false, "Pull once (one attempt, unregistered) and exit.");
ABSL_FLAG(std::string, probe_ready_file, "", "--probe: created once connected.");
ABSL_FLAG(std::string, probe_go_file, "", "--probe: pull once this file exists.");

namespace taups::fault {
namespace {

std::string CodeName(const absl::Status& status) {
  return status.ok() ? "OK" : absl::StatusCodeToString(status.code());
}

TableConfig Config(uint64_t size) {
  TableConfig config = TableConfig::Dense("fault", size);
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.learning_rate = 1.0f;
  config.initializer.kind = InitializerKind::kZeros;
  const std::string mode = absl::GetFlag(FLAGS_consistency);
  if (mode == "sync") config.consistency.kind = ConsistencyKind::kSync;
  if (mode == "ssp") {
    config.consistency.kind = ConsistencyKind::kSsp;
    config.consistency.staleness_bound = absl::GetFlag(FLAGS_staleness_bound);
  }
  config.consistency.num_workers = absl::GetFlag(FLAGS_num_workers);
  return config;
}

// The driver's state: one client, one history, the table's values.
class Driver {
 public:
  Driver(std::unique_ptr<Client> client, HistoryWriter history, uint64_t slots)
      : client_(std::move(client)),
        history_(std::move(history)),
        slots_(slots),
        values_(slots * client_->num_shards()) {}

  void Pull() {
    PullOp op;
    Stamp(op);
    op.clock = client_->clock();
    op.t0 = NowNanos();
    absl::StatusOr<PullInfo> info = client_->PullDense("fault", absl::MakeSpan(values_));
    op.t1 = NowNanos();
    op.status = CodeName(info.status());
    if (info.ok()) {
      op.step = info->step;
      op.versions = info->shard_versions;
      op.seen.resize(values_.size());
      for (size_t i = 0; i < values_.size(); ++i) op.seen[i] = values_[i] > 0;
    }
    history_.Pulled(op);
  }

  void Push(uint64_t step, uint64_t slot) {
    PushOp op;
    Stamp(op);
    op.seq = step + 1;
    op.slot = slot;
    op.clock = client_->clock();
    std::vector<float> gradient(values_.size(), 0.0f);
    for (int s = 0; s < client_->num_shards(); ++s) gradient[s * slots_ + slot] = -1.0f;
    op.t0 = NowNanos();
    history_.PushSent(op);
    absl::StatusOr<PushResult> result = client_->PushDense("fault", gradient);
    op.t1 = NowNanos();
    op.status = CodeName(result.status());
    if (result.ok()) {
      for (const ShardPushResult& shard : result->shards) {
        op.shards.push_back({shard.accepted, shard.duplicate, shard.new_version});
      }
    }
    history_.PushDone(op);
    client_->Clock();
  }

  // Push parts the client redid (ClientCore::SendPush), all shards.
  uint64_t Redos() const {
    const std::optional<ClientEvents> events = EventsOf(*client_);
    return events.has_value() ? events->total_redos() : 0;
  }

 private:
  template <typename Op>
  void Stamp(Op& op) const {
    op.worker = absl::GetFlag(FLAGS_worker_id);
    op.incarnation = absl::GetFlag(FLAGS_incarnation);
  }

  std::unique_ptr<Client> client_;
  HistoryWriter history_;
  const uint64_t slots_;
  std::vector<float> values_;
};

int Run() {
  ClientOptions options;
  options.servers = absl::StrSplit(absl::GetFlag(FLAGS_servers), ',', absl::SkipEmpty());
  options.worker_id = absl::GetFlag(FLAGS_worker_id);
  options.worker_incarnation = absl::GetFlag(FLAGS_incarnation);
  options.retry_budget = absl::Seconds(absl::GetFlag(FLAGS_retry_budget_s));
  options.call_timeout = absl::Seconds(absl::GetFlag(FLAGS_call_timeout_s));
  options.lease = absl::Seconds(absl::GetFlag(FLAGS_lease_s));
  const bool probe = absl::GetFlag(FLAGS_probe);
  if (probe) {
    options.register_worker = false;
    options.max_attempts = 1;
    options.retry_budget = absl::ZeroDuration();
  }
  const uint64_t slots = absl::GetFlag(FLAGS_slots);
  const uint64_t pushes = absl::GetFlag(FLAGS_pushes);
  const uint64_t base = absl::GetFlag(FLAGS_slot_base);
  if (slots == 0 || base + pushes > slots || options.worker_incarnation == 0) {
    std::fprintf(stderr, "fault_driver: need --slots > 0, slot_base + pushes <= slots, "
                         "--incarnation > 0\n");
    return 2;
  }
  absl::StatusOr<HistoryWriter> history = HistoryWriter::Open(absl::GetFlag(FLAGS_history));
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  if (!history.ok() || !client.ok()) {
    std::fprintf(stderr, "fault_driver: %s\n",
                 (history.ok() ? client.status() : history.status()).ToString().c_str());
    return 2;
  }
  if (probe) {
    Driver driver(std::move(*client), std::move(*history), slots);
    const std::string go = absl::GetFlag(FLAGS_probe_go_file);
    if (!go.empty()) {
      std::ofstream(absl::GetFlag(FLAGS_probe_ready_file)) << "connected\n";
      while (!std::filesystem::exists(go)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    driver.Pull();
    return 0;
  }
  const absl::Status created = (*client)->CreateTable(Config(slots * options.servers.size()));
  if (!created.ok()) {
    std::fprintf(stderr, "fault_driver: %s\n", created.ToString().c_str());
    return 2;
  }
  Driver driver(std::move(*client), std::move(*history), slots);
  for (uint64_t k = 0; k < pushes; ++k) {
    driver.Pull();
    std::this_thread::sleep_for(std::chrono::milliseconds(absl::GetFlag(FLAGS_think_ms)));
    driver.Push(k, base + k);
    std::this_thread::sleep_for(std::chrono::milliseconds(absl::GetFlag(FLAGS_step_ms)));
  }
  driver.Pull();
  std::printf("fault_driver: worker %u done, push redos %lu\n", options.worker_id,
              static_cast<unsigned long>(driver.Redos()));
  return 0;
}

}  // namespace
}  // namespace taups::fault

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return taups::fault::Run();
}
