// Simulation: N simulated workers training one model against the REAL shard
// core (ParameterStore: tables, consistency controller, staleness treatment,
// membership), in simulated time.
//
// Each worker is a small state machine driven by a discrete-event queue:
//
//   pull     when every shard's policy lets the worker read at its clock
//            (PullReady), its client pulls the whole table; otherwise it is
//            blocked until the store changes.
//   compute  it really computes the loss and gradient of its next mini-batch
//            (ShardSampler order) on what it pulled, and draws how long that
//            took from the ComputeTimeModel.
//   push     at pull time + duration its client pushes the gradient, then
//            the client's clock moves on (Clock()) and it pulls again.
//
// The client is the worker library's own core (ClientCore, the code behind
// taups::Client) over in-process transports to the stores' ShardCalls: it
// plans the slices, keeps each shard's pulled version as the next push's
// base, numbers the pushes (worker, incarnation, seq), measures the push's
// squared norm and joins the shards' answers, exactly as over gRPC. Leases
// and heartbeats stay the simulator's, in simulated time.
//
// Compression (SimConfig::compression; docs/EXPERIMENTS.md): with
// accumulate_steps = k the worker computes the gradients of k mini-batches on
// the parameters it pulled and sums them, and the step takes the sum of the k
// drawn compute times. The (summed, decayed) gradient goes to the client core,
// which compresses it as it would over gRPC (Client::SetCompression: one
// block per slice, error feedback committed only where a shard accepted);
// the shard decodes each block as ps_server does. The bytes are the client's
// own counts (TransferCounters): encoded blocks, or raw float32 for an
// uncompressed push, against the float32 bytes of the same values.
//
// The ManualClock the stores read moves only between events; every time it
// moves, and after every push, each store's Tick() runs (semi-sync timeouts,
// lease expiry). Heartbeats renew every live worker's lease every lease/4.
// A semi-sync step's timeout gets its own Tick event.
//
// Stopping rule (the "gradient budget", counted in mini-batch gradients; a
// push carries accumulate_steps = k of them): barrier policies (sync,
// semi_sync) stop when budget_gradients / (num_workers * k) steps have closed;
// async and SSP stop after budget_gradients / k pushes. So runs with any k see
// the same number of training examples. The learning rate decays linearly
// with that progress; the decay is applied by scaling the gradient before the
// push (for plain SGD the same as scaling the server's learning rate).
//
// Determinism: events run in (time, scheduling order); compute times and
// batches are pure functions of (seed, worker, step); the math is
// single-threaded CPU. The same config and data give bit-identical results.
//
// Thread-compatible: a Simulation runs on one thread; independent
// simulations may run concurrently (the data set is shared read-only).
#ifndef TAUPS_BENCH_SIM_SIMULATION_H_
#define TAUPS_BENCH_SIM_SIMULATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/sim/classifier_model.h"
#include "bench/sim/compute_time_model.h"
#include "common/histogram.h"
#include "server/table_stats.h"
#include "taups/compression.h"
#include "taups/table_config.h"
#include "worker/trainer/fashion_mnist.h"

namespace taups::sim {

struct SimConfig {
  std::string label;
  uint64_t seed = 1;  // batches, compute times, initial parameters
  uint32_t num_workers = 16;
  uint32_t num_shards = 1;  // 1 or more ParameterStores, dense range split
  ModelKind model = ModelKind::kMlp;
  int batch_size = 32;
  int train_examples = 0;  // first n training examples; 0 = all
  int eval_examples = 0;   // first n test examples; 0 = all
  int64_t budget_gradients = 0;  // see the stopping rule above
  int eval_points = 20;          // evaluations along the run (plus t = 0)
  float learning_rate = 0.1f;    // server-side SGD learning rate (alpha0)
  // Linear decay from learning_rate to learning_rate * final_lr_fraction.
  float final_lr_fraction = 0.0f;
  float init_scale = 0.05f;  // U(-s, s) server-side initializer
  ConsistencyConfig consistency;  // num_workers filled in if 0
  StalenessConfig staleness;
  ComputeTimeConfig compute;
  double lease_s = 10.0;  // simulated seconds
  // A worker that stops (no pushes, no heartbeats) at dead_at_s; -1 = none.
  int dead_worker = -1;
  double dead_at_s = 0.0;
  uint64_t slice_elements = uint64_t{1} << 18;  // 1 MiB of floats
  // Worker-side push compression: codec, error feedback, accumulation, top-k
  // warm-up (see above). Pull compression is not simulated: `pull` must be
  // none.
  CompressionConfig compression;

  absl::Status Validate() const;
};

// Bytes of one or more pushes: the float32 payload the gradient would take
// raw, and the gradient fields actually sent (encoded blocks with their
// 32-byte headers, or the raw float32 of an uncompressed push).
struct PushBytes {
  uint64_t raw = 0;
  uint64_t wire = 0;
};

struct CurvePoint {
  double time_s = 0.0;      // simulated
  double progress = 0.0;    // fraction of the budget done
  int64_t pushes = 0;       // pushes so far (all workers)
  uint64_t version = 0;     // shard 0's table version
  double test_accuracy = 0.0;
  double test_loss = 0.0;
  double train_loss = 0.0;  // mean mini-batch loss since the previous point
};

struct WorkerSummary {
  uint32_t id = 0;
  int64_t pushes = 0;
  int64_t not_applied = 0;  // refused: stale (tau > tau_max) or late
  double tau_mean = 0.0;
  uint64_t tau_max = 0;
  double wait_s = 0.0;      // time blocked waiting for a pull
  uint64_t closed_steps_as_last = 0;  // barrier steps its push closed
  uint64_t missed_steps = 0;          // semi-sync steps closed without it
};

struct SimResult {
  SimConfig config;
  std::vector<CurvePoint> curve;
  double final_accuracy = 0.0;
  double final_loss = 0.0;
  bool diverged = false;       // non-finite loss at some evaluation
  bool stalled = false;        // nothing could move any more (e.g. every
                               // push of a barrier step refused); stopped
  double sim_time_s = 0.0;     // when the budget was reached
  int64_t pushes = 0;
  int64_t not_applied = 0;     // accepted == false on shard 0
  int64_t over_tau_max = 0;    // pushes with tau > tau_max (when rejecting)
  int64_t refused_errors = 0;  // pushes the store refused with an error
                               // (NaN/Inf gradient, ...), or that the
                               // worker could not encode (NaN/Inf under a
                               // scaled codec)
  PushBytes push_bytes;        // all pushes: fp32 bytes vs what was sent
  int64_t spiked_steps = 0;    // steps that drew a delay spike
  double push_norm_mean = 0.0; // mean L2 norm of the pushed gradients
                               // (after lr decay, before encoding and
                               // server clipping)
  Histogram tau{Histogram::IntegerBounds(kTauHistogramMax)};  // max over shards
  Histogram pull_wait_s{Histogram::ExponentialBounds(1e-3, 2.0, 1e4)};
  // Barrier policies: how long each step stayed open (opened -> closed on
  // shard 0), exact; the server's own step_wait_s histogram has factor-2
  // buckets.
  std::vector<double> step_durations_s;
  TableStats table_stats;      // shard 0's own measurements
  uint64_t lease_expirations = 0;
  std::vector<WorkerSummary> workers;
  double wall_s = 0.0;         // real seconds the simulation took
};

// The q-quantile (0 <= q <= 1, nearest rank) of `values`; 0 when empty.
double Quantile(std::vector<double> values, double q);

// Runs one simulation. `train` and `test` must stay valid for the call.
absl::StatusOr<SimResult> RunSimulation(const SimConfig& config,
                                        const trainer::ImageDataset& train,
                                        const trainer::ImageDataset& test);

}  // namespace taups::sim

#endif  // TAUPS_BENCH_SIM_SIMULATION_H_
