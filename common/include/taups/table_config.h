// Table configuration shared by the server core and the worker client API.
//
// A table is either dense (one flat float32 tensor of `dense_size` elements,
// split into contiguous ranges across shards) or sparse (uint64 key -> row of
// `dim` floats, rows hashed to shards and created on first touch).
//
// Plain value types; no thread-safety concerns.
#ifndef TAUPS_TABLE_CONFIG_H_
#define TAUPS_TABLE_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/status/status.h"

namespace taups {

enum class TableKind { kDense, kSparse };
enum class OptimizerKind { kSgd, kAdagrad, kMomentum, kAdam, kFtrl };
enum class InitializerKind { kZeros, kUniform, kNormal };
// Which row a full stripe of a bounded sparse table gives up (see
// TableConfig::sparse_eviction).
enum class SparseEvictionKind { kLru, kLfu };
// When updates apply and what pulls wait for (see ConsistencyConfig).
enum class ConsistencyKind { kAsync, kSync, kSemiSync, kSsp };
// Semi-sync: what happens to workers that miss a step's close.
enum class LatePolicy {
  kDrop,       // the step's mean is over the arrivals; late pushes refused
  kReuseLast,  // a missing worker's previous gradient stands in for it
  kApplyLate,  // a late push is applied on arrival, down-weighted by its tau
};
// Learning-rate factor f(tau) applied to a stale push.
enum class DownweightKind {
  kNone,            // 1
  kInverse,         // 1 / max(1, tau)      (Zhang et al. 2016)
  kInversePlusOne,  // 1 / (1 + tau)
  kExponential,     // exp(-lambda * tau)
};

// Server-side update rule applied to every accepted gradient.
//
// Each optimizer reads only its own hyper-parameters; Validate checks those
// and ignores the rest. The defaults below are also what a field left 0 on
// the wire (proto3's unset) means, so a client that sets only the kind gets
// a working optimizer; for that reason a used field whose default is not 0
// cannot be 0 (momentum, the Adam betas, Adagrad's initial accumulator and
// epsilon, Adam's epsilon and FTRL's beta are > 0; FTRL's l1 and l2 >= 0).
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  float learning_rate = 0.01f;
  // Adagrad: accumulator starts here; update is lr * g / (sqrt(acc) + eps).
  float adagrad_initial_accumulator = 0.1f;
  float adagrad_epsilon = 1e-8f;
  // Momentum (heavy ball): v = momentum * v + g;  w -= lr * v.
  float momentum = 0.9f;
  // Adam: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; with t the number of
  // updates this parameter has had, w -= lr * m^ / (sqrt(v^) + eps) where
  // m^ = m / (1 - b1^t), v^ = v / (1 - b2^t).
  float adam_beta1 = 0.9f;
  float adam_beta2 = 0.999f;
  float adam_epsilon = 1e-8f;
  // FTRL-Proximal (McMahan et al. 2013), per coordinate, with alpha = lr:
  // sigma = (sqrt(n + g^2) - sqrt(n)) / alpha; z += g - sigma w; n += g^2;
  // w = 0 if |z| <= l1, else -(z - sign(z) l1) / ((beta + sqrt(n)) / alpha + l2).
  float ftrl_beta = 1.0f;
  float ftrl_l1 = 0.0f;
  float ftrl_l2 = 0.0f;
};

// How parameters are born. Deterministic: the same (seed, table, position or
// key) always gives the same value, on any shard layout.
struct InitializerConfig {
  InitializerKind kind = InitializerKind::kZeros;
  float scale = 0.0f;  // uniform: U(-scale, scale); normal: N(0, scale^2)
  uint64_t seed = 0;
};

// Consistency model of a table.
//   async:     pushes apply at once; pulls never wait.
//   sync:      a step is applied once, as the mean of every live worker's
//              gradient for it; a pull for the next step waits until then.
//   semi_sync: a step closes when `quorum` of the live workers pushed it, or
//              `step_timeout` after it opened (with at least one arrival);
//              `late` says what happens to the workers that missed it.
//   ssp:       pushes apply at once; a worker at clock c may pull only when
//              every live worker has reached clock c - staleness_bound.
// Sync, semi-sync and SSP count the workers registered with the shard
// (leases renewed by heartbeat); no step closes before `num_workers`
// workers have registered, so a start-up race cannot close steps early.
struct ConsistencyConfig {
  ConsistencyKind kind = ConsistencyKind::kAsync;
  uint32_t num_workers = 0;  // sync/semi_sync/ssp: workers expected at start
  float quorum = 1.0f;       // semi_sync: fraction of live workers, (0, 1]
  double step_timeout_s = 0.0;  // semi_sync: 0 = wait for the quorum only
  LatePolicy late = LatePolicy::kDrop;
  uint32_t staleness_bound = 0;  // ssp: s
};

// What the server does with a push computed on stale parameters (tau > 0),
// and the guards of [S15]. Applied by every policy where tau can be > 0.
struct StalenessConfig {
  // Refuse pushes with tau > tau_max (answered accepted=false with the
  // reason); when false every tau is accepted.
  bool reject_above_tau_max = false;
  uint64_t tau_max = 0;
  DownweightKind downweight = DownweightKind::kNone;
  float downweight_lambda = 0.1f;  // kExponential's lambda
  // DC-ASGD (Zheng et al. 2017): g + lambda * g*g*(theta_now - theta_pulled).
  // Dense tables only; the shard keeps a copy of its range for every worker
  // that pulls (memory: workers x range floats).
  bool delay_compensation = false;
  float delay_compensation_lambda = 0.04f;
  // Scale each push so its L2 norm is at most clip_norm; 0 = no clipping.
  // The norm is of the whole push (the client sends it) when known, else of
  // the part this shard receives.
  float clip_norm = 0.0f;
  // Linear learning-rate warm-up over the table's first warmup_versions
  // updates on this shard: factor (version + 1) / warmup_versions.
  uint64_t warmup_versions = 0;
};

struct TableConfig {
  std::string name;
  TableKind kind = TableKind::kDense;
  uint64_t dense_size = 0;  // dense only: total elements across all shards
  uint32_t dim = 0;         // sparse only: floats per row
  // Sparse only, bounded memory per shard. Every bound is per shard and per
  // table, split evenly over the shard's 64 lock stripes; an evicted or
  // expired row that comes back is re-initialized (its values from the
  // initializer, its optimizer state fresh, its row version 0).
  //
  // max_rows > 0: the shard keeps at most this many rows; a full stripe
  // makes room by evicting one row, chosen by `sparse_eviction`.
  uint64_t sparse_max_rows = 0;
  // max_bytes > 0: the same bound expressed in memory. It becomes a row
  // limit (the smaller of the two applies when both are set): the budget,
  // less a fixed 2 KiB per stripe (plus the 32 KiB admission sketch of each
  // stripe when admit_after > 1 or admit_probability < 1), divided by the
  // row's real footprint in bytes:
  //   4 * dim * (1 + optimizer state floats per parameter)   values + state
  //   + 28               key 8, row version 8, recency links 8, free list 4
  //   + 44               hash index: a 16 B entry and 1 control byte at the
  //                      hash map's worst load after a resize (25/64)
  //   + 8  if ttl > 0    last touch time
  //   + 36 if lfu        bucket id and bucket links 12, and at most one
  //                      frequency bucket per row (touch count, links: 24)
  // State floats per parameter: sgd 0, adagrad 1, momentum 1, ftrl 2,
  // adam 3. Storage grows with the rows but never past the limit, so the
  // table's measured footprint (TableInfo::sparse_bytes) stays within the
  // budget. A budget that leaves fewer than 64 rows (one per stripe) is
  // refused at table creation.
  uint64_t sparse_max_bytes = 0;
  // lru: evict the stripe's least recently used row (a row is used by every
  // pull and push that touches it). lfu: evict the row touched the fewest
  // times since it was admitted (every occurrence of the key in a pull or
  // push request counts one, and the client sends each key once per
  // request; the admitting touch counts as the first; counts saturate at
  // 2^32 - 1); among rows with equally few touches, the least recently used
  // one. Both are exact per stripe and O(1) per touch. A row's count starts
  // over when it comes back after eviction or expiry.
  SparseEvictionKind sparse_eviction = SparseEvictionKind::kLru;
  // > 0: a row not touched for this many seconds (of the shard's clock) is
  // expired: removed by the shard's periodic tick, or on its next touch,
  // whichever comes first, and counted apart from evictions. 0 = never.
  double sparse_ttl_s = 0.0;
  // admit_after > 1: a key gets a row only on its admit_after-th sighting
  // (count-min sketch per stripe; collisions can only make it earlier);
  // before that pulls read its initial values and pushes to it are dropped.
  uint32_t sparse_admit_after = 0;
  // < 1: admission by probability, deterministic per key. Key k draws
  // u(k) in [0, 1) from a hash of (k, table seed, table name) and is
  // admitted on its n-th sighting for the smallest n >= 1 with
  // 1 - (1 - p)^n > u(k). So a key seen once is admitted with probability p,
  // a key seen n times with probability 1 - (1 - p)^n (as if each sighting
  // flipped its own coin), and the same key is refused on the same first
  // sightings on every shard layout, restart and run. With admit_after
  // too, a key needs both. Sightings are counted by the same sketch.
  float sparse_admit_probability = 1.0f;
  OptimizerConfig optimizer;
  InitializerConfig initializer;
  ConsistencyConfig consistency;
  StalenessConfig staleness;

  static TableConfig Dense(std::string name, uint64_t size);
  static TableConfig Sparse(std::string name, uint32_t dim);

  // OK, or INVALID_ARGUMENT naming the first bad field.
  absl::Status Validate() const;
};

bool operator==(const OptimizerConfig& a, const OptimizerConfig& b);
bool operator==(const InitializerConfig& a, const InitializerConfig& b);
bool operator==(const ConsistencyConfig& a, const ConsistencyConfig& b);
bool operator==(const StalenessConfig& a, const StalenessConfig& b);
bool operator==(const TableConfig& a, const TableConfig& b);

const char* TableKindName(TableKind kind);
const char* OptimizerKindName(OptimizerKind kind);
const char* ConsistencyKindName(ConsistencyKind kind);
const char* LatePolicyName(LatePolicy late);
const char* DownweightKindName(DownweightKind kind);
const char* SparseEvictionKindName(SparseEvictionKind kind);
// Inverse of the *Name functions; INVALID_ARGUMENT listing the valid names.
absl::Status ParseConsistencyKind(absl::string_view text, ConsistencyKind* out);
absl::Status ParseLatePolicy(absl::string_view text, LatePolicy* out);
absl::Status ParseDownweightKind(absl::string_view text, DownweightKind* out);
absl::Status ParseSparseEvictionKind(absl::string_view text,
                                     SparseEvictionKind* out);

// A sparse row version (or per-row tau) nobody knows: sent as the base of a
// key its pusher did not pull with row versions, and returned as that key's
// tau. Never a real version.
inline constexpr uint64_t kUnknownRowVersion = UINT64_MAX;

// What any table config may hold (Validate). A shard bounds tables and
// requests further by its own limits (server/limits.h).
inline constexpr uint64_t kMaxDenseTableSize = uint64_t{1} << 34;  // 64 GiB fp32
inline constexpr uint32_t kMaxSparseDim = 4096;
inline constexpr size_t kMaxTableNameLength = 128;

// Bytes of a name an error message quotes.
inline constexpr size_t kMaxQuotedNameBytes = 64;
// `name` as error messages quote it, whatever a request sent: in single
// quotes, bytes outside printable ASCII escaped, cut after
// kMaxQuotedNameBytes bytes with its full length added
// ("'aaaa...' (1000000 bytes)").
std::string QuotedName(absl::string_view name);

}  // namespace taups

#endif  // TAUPS_TABLE_CONFIG_H_
