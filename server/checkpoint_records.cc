#include "server/checkpoint_records.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/checkpoint_format.h"

namespace taups {

// Every field of these structs is written below or in checkpoint_format.cc
// (TableSnapshot, PartitionSnapshot). A field added to one of them must be
// added to the encoding (and kCheckpointFormatVersion bumped
// if old files can no longer be read); these sizes are a tripwire for that
// (a field that fits in padding slips past, so look anyway).
static_assert(sizeof(TableConfig) == 240, "checkpoint: encode the new TableConfig field");
static_assert(sizeof(OptimizerConfig) == 44, "checkpoint: encode the new OptimizerConfig field");
static_assert(sizeof(InitializerConfig) == 16, "checkpoint: encode the new InitializerConfig field");
static_assert(sizeof(ConsistencyConfig) == 32, "checkpoint: encode the new ConsistencyConfig field");
static_assert(sizeof(StalenessConfig) == 48, "checkpoint: encode the new StalenessConfig field");
static_assert(sizeof(PushOutcome) == 128, "checkpoint: encode the new PushOutcome field");
static_assert(sizeof(RowTauSummary) == 32, "checkpoint: encode the new RowTauSummary field");
static_assert(sizeof(PolicySnapshot) == 320, "checkpoint: encode the new PolicySnapshot field");
static_assert(sizeof(DedupSnapshot::Incarnation) == 80, "checkpoint: encode the new dedup field");
static_assert(sizeof(TableSnapshot) == 96, "checkpoint: encode the new TableSnapshot field");
static_assert(sizeof(BufferSnapshot) == 48, "checkpoint: encode the new BufferSnapshot field");
static_assert(sizeof(PartitionSnapshot) == 456, "checkpoint: encode the new PartitionSnapshot field");

namespace {

using L = CheckpointLimits;

void PutConsistency(BlockWriter& w, const ConsistencyConfig& c) {
  w.PutU8(static_cast<uint8_t>(c.kind));
  w.PutU32(c.num_workers);
  w.PutF32(c.quorum);
  w.PutF64(c.step_timeout_s);
  w.PutU8(static_cast<uint8_t>(c.late));
  w.PutU32(c.staleness_bound);
}

void PutStaleness(BlockWriter& w, const StalenessConfig& s) {
  w.PutU8(s.reject_above_tau_max);
  w.PutU64(s.tau_max);
  w.PutU8(static_cast<uint8_t>(s.downweight));
  w.PutF32(s.downweight_lambda);
  w.PutU8(s.delay_compensation);
  w.PutF32(s.delay_compensation_lambda);
  w.PutF32(s.clip_norm);
  w.PutU64(s.warmup_versions);
}

void PutBuffer(BlockWriter& w, const BufferSnapshot& b) {
  w.PutArray<uint64_t>(b.keys);
  w.PutArray<float>(b.sums);
}

void PutBufferMap(BlockWriter& w, const std::map<uint32_t, BufferSnapshot>& m) {
  w.PutU64(m.size());
  for (const auto& [worker, buffer] : m) {
    w.PutU32(worker);
    PutBuffer(w, buffer);
  }
}

void PutAnswer(BlockWriter& w, const PushAnswer& a) {
  w.PutU32(static_cast<uint32_t>(a.status.code()));
  w.PutString(a.status.message());
  const PushOutcome& o = a.outcome;
  w.PutU8(o.accepted);
  w.PutU64(o.tau);
  w.PutF32(o.lr_factor);
  w.PutU64(o.new_version);
  w.PutString(o.reject_reason);
  w.PutU8(o.downweighted);
  w.PutU8(o.staged);
  w.PutU8(o.duplicate);
  w.PutU64(o.row_tau.rows);
  w.PutU64(o.row_tau.sum);
  w.PutU64(o.row_tau.max);
  w.PutU64(o.row_tau.reborn);
  w.PutArray<uint64_t>(o.row_taus);
}

template <typename E>
absl::Status GetEnum(BlockReader& r, E last, E* out) {
  uint8_t v = 0;
  RETURN_IF_ERROR(r.GetU8(&v));
  if (v > static_cast<uint8_t>(last)) {
    return r.Corrupt(absl::StrCat("enum value ", v, " out of range"));
  }
  *out = static_cast<E>(v);
  return absl::OkStatus();
}

absl::Status GetConsistency(BlockReader& r, ConsistencyConfig* c) {
  RETURN_IF_ERROR(GetEnum(r, ConsistencyKind::kSsp, &c->kind));
  RETURN_IF_ERROR(r.GetU32(&c->num_workers));
  RETURN_IF_ERROR(r.GetF32(&c->quorum));
  RETURN_IF_ERROR(r.GetF64(&c->step_timeout_s));
  RETURN_IF_ERROR(GetEnum(r, LatePolicy::kApplyLate, &c->late));
  return r.GetU32(&c->staleness_bound);
}

absl::Status GetStaleness(BlockReader& r, StalenessConfig* s) {
  RETURN_IF_ERROR(r.GetBool(&s->reject_above_tau_max));
  RETURN_IF_ERROR(r.GetU64(&s->tau_max));
  RETURN_IF_ERROR(GetEnum(r, DownweightKind::kExponential, &s->downweight));
  RETURN_IF_ERROR(r.GetF32(&s->downweight_lambda));
  RETURN_IF_ERROR(r.GetBool(&s->delay_compensation));
  RETURN_IF_ERROR(r.GetF32(&s->delay_compensation_lambda));
  RETURN_IF_ERROR(r.GetF32(&s->clip_norm));
  return r.GetU64(&s->warmup_versions);
}

absl::Status GetBuffer(BlockReader& r, BufferSnapshot* b) {
  RETURN_IF_ERROR(r.GetArray(L::kMaxElements, &b->keys));
  return r.GetArray(L::kMaxElements, &b->sums);
}

absl::Status GetBufferMap(BlockReader& r, std::map<uint32_t, BufferSnapshot>* m) {
  uint64_t n = 0;
  RETURN_IF_ERROR(r.GetCount(L::kMaxWorkers, 4 + 16, &n));
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t worker = 0;
    RETURN_IF_ERROR(r.GetU32(&worker));
    BufferSnapshot buffer;
    RETURN_IF_ERROR(GetBuffer(r, &buffer));
    if (!m->emplace(worker, std::move(buffer)).second) {
      return r.Corrupt(absl::StrCat("worker ", worker, " has two step buffers"));
    }
  }
  return absl::OkStatus();
}

absl::Status GetAnswer(BlockReader& r, PushAnswer* a) {
  uint32_t code = 0;
  RETURN_IF_ERROR(r.GetU32(&code));
  if (code > static_cast<uint32_t>(absl::StatusCode::kUnauthenticated)) {
    return r.Corrupt(absl::StrCat("status code ", code));
  }
  std::string message;
  RETURN_IF_ERROR(r.GetString(L::kMaxMessageBytes, &message));
  if (code == 0 && !message.empty()) return r.Corrupt("OK answer with a message");
  a->status = absl::Status(static_cast<absl::StatusCode>(code), message);
  PushOutcome& o = a->outcome;
  RETURN_IF_ERROR(r.GetBool(&o.accepted));
  RETURN_IF_ERROR(r.GetU64(&o.tau));
  RETURN_IF_ERROR(r.GetF32(&o.lr_factor));
  RETURN_IF_ERROR(r.GetU64(&o.new_version));
  RETURN_IF_ERROR(r.GetString(L::kMaxMessageBytes, &o.reject_reason));
  RETURN_IF_ERROR(r.GetBool(&o.downweighted));
  RETURN_IF_ERROR(r.GetBool(&o.staged));
  RETURN_IF_ERROR(r.GetBool(&o.duplicate));
  RETURN_IF_ERROR(r.GetU64(&o.row_tau.rows));
  RETURN_IF_ERROR(r.GetU64(&o.row_tau.sum));
  RETURN_IF_ERROR(r.GetU64(&o.row_tau.max));
  RETURN_IF_ERROR(r.GetU64(&o.row_tau.reborn));
  return r.GetArray(L::kMaxElements, &o.row_taus);
}

// The smallest an answer takes in the file (fixed fields, empty strings).
constexpr size_t kMinAnswerBytes = 8 + 4 + 8 + 1 + 8 + 4 + 8 + 8 + 3 + 32 + 8;

}  // namespace

void PutTableConfig(BlockWriter& w, const TableConfig& c) {
  w.PutString(c.name);
  w.PutU8(static_cast<uint8_t>(c.kind));
  w.PutU64(c.dense_size);
  w.PutU32(c.dim);
  w.PutU64(c.sparse_max_rows);
  w.PutU64(c.sparse_max_bytes);
  w.PutU8(static_cast<uint8_t>(c.sparse_eviction));
  w.PutF64(c.sparse_ttl_s);
  w.PutU32(c.sparse_admit_after);
  w.PutF32(c.sparse_admit_probability);
  const OptimizerConfig& o = c.optimizer;
  w.PutU8(static_cast<uint8_t>(o.kind));
  for (float f : {o.learning_rate, o.adagrad_initial_accumulator, o.adagrad_epsilon,
                  o.momentum, o.adam_beta1, o.adam_beta2, o.adam_epsilon, o.ftrl_beta,
                  o.ftrl_l1, o.ftrl_l2}) {
    w.PutF32(f);
  }
  w.PutU8(static_cast<uint8_t>(c.initializer.kind));
  w.PutF32(c.initializer.scale);
  w.PutU64(c.initializer.seed);
  PutConsistency(w, c.consistency);
  PutStaleness(w, c.staleness);
}

void PutPolicySnapshot(BlockWriter& w, const PolicySnapshot& p) {
  PutConsistency(w, p.consistency);
  PutStaleness(w, p.staleness);
  w.PutU64(p.version);
  w.PutU64(p.open_step);
  w.PutU64(p.clocks.size());
  for (const auto& [worker, clock] : p.clocks) {
    w.PutU32(worker);
    w.PutU64(clock);
  }
  w.PutArray<uint32_t>(p.arrivals);
  w.PutU64(p.contributed);
  PutBuffer(w, p.step_sum);
  PutBufferMap(w, p.current);
  PutBufferMap(w, p.last);
}

void PutDedupSnapshot(BlockWriter& w, const DedupSnapshot& d) {
  w.PutU64(d.uses);
  w.PutU64(d.incarnations.size());
  for (const DedupSnapshot::Incarnation& inc : d.incarnations) {
    w.PutU32(inc.worker_id);
    w.PutU64(inc.worker_incarnation);
    w.PutU64(inc.forgotten_through);
    w.PutU64(inc.last_use);
    w.PutU64(inc.answers.size());
    for (const auto& [seq, answer] : inc.answers) {
      w.PutU64(seq);
      PutAnswer(w, answer);
    }
  }
}

absl::Status GetTableConfig(BlockReader& r, TableConfig* c) {
  RETURN_IF_ERROR(r.GetString(kMaxTableNameLength, &c->name));
  RETURN_IF_ERROR(GetEnum(r, TableKind::kSparse, &c->kind));
  RETURN_IF_ERROR(r.GetU64(&c->dense_size));
  RETURN_IF_ERROR(r.GetU32(&c->dim));
  RETURN_IF_ERROR(r.GetU64(&c->sparse_max_rows));
  RETURN_IF_ERROR(r.GetU64(&c->sparse_max_bytes));
  RETURN_IF_ERROR(GetEnum(r, SparseEvictionKind::kLfu, &c->sparse_eviction));
  RETURN_IF_ERROR(r.GetF64(&c->sparse_ttl_s));
  RETURN_IF_ERROR(r.GetU32(&c->sparse_admit_after));
  RETURN_IF_ERROR(r.GetF32(&c->sparse_admit_probability));
  OptimizerConfig& o = c->optimizer;
  RETURN_IF_ERROR(GetEnum(r, OptimizerKind::kFtrl, &o.kind));
  for (float* f : {&o.learning_rate, &o.adagrad_initial_accumulator, &o.adagrad_epsilon,
                   &o.momentum, &o.adam_beta1, &o.adam_beta2, &o.adam_epsilon,
                   &o.ftrl_beta, &o.ftrl_l1, &o.ftrl_l2}) {
    RETURN_IF_ERROR(r.GetF32(f));
  }
  RETURN_IF_ERROR(GetEnum(r, InitializerKind::kNormal, &c->initializer.kind));
  RETURN_IF_ERROR(r.GetF32(&c->initializer.scale));
  RETURN_IF_ERROR(r.GetU64(&c->initializer.seed));
  RETURN_IF_ERROR(GetConsistency(r, &c->consistency));
  return GetStaleness(r, &c->staleness);
}

absl::Status GetPolicySnapshot(BlockReader& r, PolicySnapshot* p) {
  RETURN_IF_ERROR(GetConsistency(r, &p->consistency));
  RETURN_IF_ERROR(GetStaleness(r, &p->staleness));
  RETURN_IF_ERROR(r.GetU64(&p->version));
  RETURN_IF_ERROR(r.GetU64(&p->open_step));
  uint64_t n = 0;
  RETURN_IF_ERROR(r.GetCount(L::kMaxWorkers, 12, &n));
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t worker = 0;
    uint64_t clock = 0;
    RETURN_IF_ERROR(r.GetU32(&worker));
    RETURN_IF_ERROR(r.GetU64(&clock));
    if (!p->clocks.emplace(worker, clock).second) {
      return r.Corrupt(absl::StrCat("worker ", worker, " has two clocks"));
    }
  }
  RETURN_IF_ERROR(r.GetArray(L::kMaxWorkers, &p->arrivals));
  for (size_t i = 1; i < p->arrivals.size(); ++i) {
    if (p->arrivals[i - 1] >= p->arrivals[i]) return r.Corrupt("arrivals not sorted");
  }
  RETURN_IF_ERROR(r.GetU64(&p->contributed));
  RETURN_IF_ERROR(GetBuffer(r, &p->step_sum));
  RETURN_IF_ERROR(GetBufferMap(r, &p->current));
  return GetBufferMap(r, &p->last);
}

absl::Status GetDedupSnapshot(BlockReader& r, DedupSnapshot* d) {
  RETURN_IF_ERROR(r.GetU64(&d->uses));
  uint64_t n = 0;
  RETURN_IF_ERROR(r.GetCount(L::kMaxIncarnations, 4 + 8 * 4, &n));
  d->incarnations.resize(n);
  for (DedupSnapshot::Incarnation& inc : d->incarnations) {
    RETURN_IF_ERROR(r.GetU32(&inc.worker_id));
    RETURN_IF_ERROR(r.GetU64(&inc.worker_incarnation));
    RETURN_IF_ERROR(r.GetU64(&inc.forgotten_through));
    RETURN_IF_ERROR(r.GetU64(&inc.last_use));
    uint64_t answers = 0;
    RETURN_IF_ERROR(r.GetCount(L::kMaxAnswers, kMinAnswerBytes, &answers));
    for (uint64_t i = 0; i < answers; ++i) {
      uint64_t seq = 0;
      RETURN_IF_ERROR(r.GetU64(&seq));
      PushAnswer answer;
      RETURN_IF_ERROR(GetAnswer(r, &answer));
      if (!inc.answers.emplace(seq, std::move(answer)).second) {
        return r.Corrupt(absl::StrCat("seq ", seq, " answered twice"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace taups
