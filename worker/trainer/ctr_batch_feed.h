// CtrBatchFeed: the CTR trainer's batches with their embedding rows pulled,
// either at the start of each step or, with prefetch, ahead of it.
//
// Each batch is the next `batch` indices of the sampler, their examples and
// embedding keys (one per example and field), and the rows of those keys,
// pulled with PullSparse. With prefetch, batch t+1 is drawn and its rows are
// pulled on a background thread while batch t computes, as early as the
// table's consistency policy allows the read to stand for step t+1:
//
//   async            at once, when batch t is handed out: the rows may miss
//                    this worker's own step-t update (async promises nothing
//                    about that; the push's tau shows it).
//   ssp, sync,       once step t is pushed and the clock moved (StepDone):
//   semi_sync        the pull then carries clock t+1, so the shard holds it
//                    exactly as it would hold the plain pull of step t+1 (a
//                    sync step t closed, the SSP bound met) and it reads
//                    within the same bound; under sync it reads the very
//                    rows the plain pull would. What overlaps is the rest of
//                    step t (logging, evaluation) and drawing batch t+1.
//
// The policy may change while the job runs (ps_admin set-policy), so the
// feed follows it instead of keeping the start it chose at construction:
//   - a pull answered with a step (PullInfo::step > 0: only sync and
//     semi_sync shards gather steps) means the table now bounds reads by
//     steps: prefetch waits for StepDone from then on;
//   - every `policy_check_every` pulls the feed reads the table's config
//     (Client::OpenTable) and takes its start from the policy there (this
//     is how it sees ssp, whose answers carry no step, and a switch back to
//     async); a read that fails (shards that disagree in mid-switch) counts
//     as a bounding policy.
// A batch whose rows were pulled early (with the step before) and that is
// handed out after the feed learned of a bounding policy is pulled again
// first, at the right clock (under sync: once the step before closed), so
// no push is computed on rows read past the new policy's bound. A prefetch
// that was off at construction stays off.
//
// No pull is made for a batch past `steps`, so a prefetching run creates no
// row a plain run does not.
//
// Thread-compatible: one training thread calls Next and StepDone; the
// background pull touches only the batch slot it fills (and the start, an
// atomic), and Next waits for it before handing that slot out. The
// destructor waits for a pull in flight.
#ifndef TAUPS_WORKER_TRAINER_CTR_BATCH_FEED_H_
#define TAUPS_WORKER_TRAINER_CTR_BATCH_FEED_H_

#include <atomic>
#include <cstdint>
#include <future>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "taups/client.h"
#include "taups/table_config.h"
#include "worker/trainer/ctr_data.h"
#include "worker/trainer/shard_sampler.h"

namespace taups::trainer {

// When the next batch's rows are pulled.
enum class PrefetchStart {
  kOff,            // at the start of its own step
  kWithCompute,    // when the batch before it is handed out
  kAfterStepDone,  // when the step before it is pushed and clocked
};
// kOff without prefetch; else kWithCompute for async tables and
// kAfterStepDone for every policy that bounds what a step may read.
PrefetchStart PrefetchStartFor(bool prefetch, ConsistencyKind kind);
std::string_view PrefetchStartName(PrefetchStart start);

// One step's inputs.
struct CtrBatch {
  CtrExamples examples;
  std::vector<int> indices;
  std::vector<uint64_t> keys;     // examples x fields, example-major
  std::vector<float> rows;        // keys.size() x dim
  PullInfo pull;                  // the rows' pull (the push's basis)
  bool early = false;             // pulled before the step before was pushed
};

class CtrBatchFeed {
 public:
  struct Config {
    std::string table;               // the embedding table
    SparsePullOptions pull_options;  // e.g. row versions
    int batch = 0;
    int embedding_dim = 0;
    int64_t steps = 0;               // batches the run takes
    PrefetchStart start = PrefetchStart::kOff;  // at construction
    // Pulls between two reads of the table's policy (0: never read it; the
    // pulls' answers are still followed).
    int policy_check_every = 25;
  };
  // `client`, `sampler` and `generator` must outlive the feed; the sampler
  // is advanced by the feed only.
  CtrBatchFeed(Client& client, ShardSampler& sampler,
               const CtrDataGenerator& generator, Config config);
  ~CtrBatchFeed();
  CtrBatchFeed(const CtrBatchFeed&) = delete;
  CtrBatchFeed& operator=(const CtrBatchFeed&) = delete;

  // The next step's batch with its rows, valid until the next call (the
  // feed then starts filling its slot again). The pull's error, if it
  // failed. At most `steps` calls.
  absl::StatusOr<const CtrBatch*> Next();
  // The step of the batch Next returned last is pushed and clocked.
  void StepDone();

  // When the next prefetch starts, as the feed last learned the policy.
  PrefetchStart start() const { return start_.load(); }
  // Early-pulled batches pulled again after a switch to a bounding policy,
  // and changes of start seen so far (training thread, after Next).
  int64_t repulls() const { return repulls_; }
  int64_t start_changes() const { return start_changes_.load(); }

 private:
  // Draws the next batch into `slot` and pulls its rows (either thread).
  absl::Status Fill(CtrBatch& slot, bool early);
  // Pulls the rows of `slot`'s keys and learns the policy from the answer.
  absl::Status Pull(CtrBatch& slot);
  // Reads the table's policy when one is due (either thread).
  void MaybeCheckPolicy();
  void SetStart(PrefetchStart start);
  // Starts filling the other slot on a background thread, unless every
  // batch of the run was already started or one is in flight.
  void StartPrefetch(bool early);

  Client& client_;
  ShardSampler& sampler_;
  const CtrDataGenerator& generator_;
  const Config config_;
  CtrBatch slots_[2];
  int current_ = 1;           // the slot Next returned last
  int64_t started_ = 0;       // batches drawn (or being drawn) so far
  std::future<absl::Status> prefetch_;  // fills slots_[1 - current_]
  std::atomic<PrefetchStart> start_;
  std::atomic<int64_t> start_changes_{0};
  int64_t pulls_ = 0;    // by Pull, on whichever thread pulls (never two)
  int64_t repulls_ = 0;  // training thread
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_CTR_BATCH_FEED_H_
