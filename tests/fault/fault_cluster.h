// The fault harness: ps_server shards and fault_driver workers on
// 127.0.0.1, each shard with its own checkpoint directory, that a test (or a
// seeded schedule) kills with -9, pauses with SIGSTOP / SIGCONT and
// restarts: a shard on its old port with its old checkpoint directory, a
// worker as a new incarnation with a fresh range of slots. Everything done
// to a process is appended to the run's events file, which the history
// checker reads with the drivers' histories.
//
// Not thread-safe: one test thread drives it. Processes still running when
// it is destroyed are stopped.
#ifndef TAUPS_TESTS_FAULT_FAULT_CLUSTER_H_
#define TAUPS_TESTS_FAULT_FAULT_CLUSTER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "tests/fault/fault_history.h"
#include "tests/fault/history_checker.h"
#include "tests/process_harness.h"

namespace taups::fault {

struct FaultClusterOptions {
  uint32_t num_shards = 2;
  uint32_t num_workers = 2;
  uint32_t incarnations_per_worker = 2;  // most restarts of a worker + 1
  uint64_t pushes = 100;                 // steps of each worker incarnation
  std::vector<std::string> shard_args;   // e.g. --checkpoint_every_versions=20
  std::vector<std::string> driver_args;  // e.g. --consistency=sync
  CheckOptions::Mode mode = CheckOptions::Mode::kAsync;
  uint32_t staleness_bound = 0;
  // The address shards listen on and everyone dials; another than loopback
  // (a veth end, net_cut.h) starts them with --insecure.
  std::string host = "127.0.0.1";
  // Per worker (missing or empty: none), a command its driver runs under,
  // e.g. NetCut::Exec() to run it inside a network namespace.
  std::vector<std::vector<std::string>> worker_prefix;
};

class FaultCluster {
 public:
  // Starts every shard (first start: --start_empty) in `dir`.
  FaultCluster(std::string dir, FaultClusterOptions options);
  ~FaultCluster();

  std::string Servers() const;
  int Port(uint32_t s) const { return shards_[s].port; }
  uint64_t slots() const {
    return uint64_t{options_.num_workers} * options_.incarnations_per_worker *
           options_.pushes;
  }

  // Shards. Restart starts the shard on its port with its checkpoint
  // directory and returns how long it took until it served (port file
  // written, after the restore). RestoredVersion: what its log says it
  // restored ('fault' table), nullopt for none.
  void KillShard(uint32_t s);
  absl::Duration RestartShard(uint32_t s);
  void StopShard(uint32_t s);
  void ContShard(uint32_t s);
  std::string ShardLog(uint32_t s) const;
  std::string CheckpointDir(uint32_t s) const;
  static std::optional<uint64_t> RestoredVersion(const std::string& log);

  // Workers: StartWorker runs the next incarnation of worker w.
  void StartWorker(uint32_t w);
  void KillWorker(uint32_t w);
  void StopWorker(uint32_t w);
  void ContWorker(uint32_t w);
  // Waits for every running worker; their exit codes (-1000: did not end).
  std::vector<int> WaitWorkers(absl::Duration timeout);
  std::string WorkerLog(uint32_t w) const;

  // The table as it is now, read by a client that does not register.
  FinalState ReadTable() const;
  // Every history of the run so far (drivers' and the events file).
  History ReadHistories() const;
  // Reads every history of the run and checks it against ReadTable().
  CheckReport Check() const;

 private:
  struct ShardSlot {
    std::unique_ptr<testing::Process> process;
    int port = 0;
    int starts = 0;
  };
  struct WorkerSlot {
    std::unique_ptr<testing::Process> process;
    int starts = 0;
  };
  void StartShard(uint32_t s, bool first);
  void Note(bool shard, uint32_t index, const std::string& what,
            std::optional<uint64_t> restored = std::nullopt);
  void Signal(testing::Process& process, int signal);

  const std::string dir_;
  const FaultClusterOptions options_;
  HistoryWriter events_;
  std::vector<ShardSlot> shards_;
  std::vector<WorkerSlot> workers_;
  std::vector<std::string> histories_;
};

}  // namespace taups::fault

#endif  // TAUPS_TESTS_FAULT_FAULT_CLUSTER_H_
