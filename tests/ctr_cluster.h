// A cluster for the policy tests that train the DLRM CTR model (synthetic
// data) through real processes: two ps_server shards on 127.0.0.1, the
// ps_worker jobs a test starts, and an observer client that reads the
// shards' Stats without registering as a worker.
//
// Thread-compatible: one test thread uses it. Catch2 assertions fail the
// running test case.
#ifndef TAUPS_TESTS_CTR_CLUSTER_H_
#define TAUPS_TESTS_CTR_CLUSTER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "taups/client.h"
#include "tests/process_harness.h"

namespace taups::testing {

// ps_worker --model=ctr's two tables (worker/trainer/ctr_trainer.h).
inline constexpr char kCtrDense[] = "ctr_mlp";
inline constexpr char kCtrSparse[] = "ctr_embeddings";

// ps_worker flags of a CTR run of `steps` steps (no periodic log, a
// 1,000-example evaluation, seed 6), then `more`.
std::vector<std::string> CtrArgs(int steps,
                                 const std::vector<std::string>& more = {});

struct CtrCluster {
  static constexpr int kShards = 2;

  // Starts the shards with `shard_args` (fails the test when one does not
  // come up) and connects the observer.
  explicit CtrCluster(const std::vector<std::string>& shard_args = {});

  // ps_worker w = 0..workers-1 against the shards (process_harness.h).
  std::vector<std::unique_ptr<Process>> StartWorkers(
      int workers, const std::vector<std::string>& args,
      const std::vector<std::vector<std::string>>& per_worker = {});

  // Every shard's stats of `table`; fails the test unless all answered.
  std::vector<TableShardStats> Stats(const std::string& table);

  // `ps_admin set-policy --table=T --num_workers=N --consistency=KIND`;
  // checks that it reported the change.
  void SetPolicy(const std::string& table, int num_workers,
                 const std::string& kind);

  // Stops every shard; each must exit 0.
  void StopShards();

  TempDir dir;
  std::vector<Shard> shards;
  std::unique_ptr<Client> observer;
};

// Whether `process` has exited (without waiting).
bool Exited(Process& process);
// Fails the test, with what the worker printed, if it has exited.
void RequireTraining(Process& worker);
void RequireTraining(std::vector<std::unique_ptr<Process>>& workers);

// Polls `done` every 20 ms; false if it is still false after `timeout`.
bool PollUntil(const std::function<bool()>& done, absl::Duration timeout);

}  // namespace taups::testing

#endif  // TAUPS_TESTS_CTR_CLUSTER_H_
