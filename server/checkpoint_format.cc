#include "server/checkpoint_format.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "server/checkpoint_blocks.h"
#include "server/dense_table.h"

namespace taups {

// Every field of these structs is written below. A field added to one of
// them must be added to the encoding (and kCheckpointFormatVersion bumped
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

// ---- writing ----

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

void PutConfig(BlockWriter& w, const TableConfig& c) {
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

void PutPolicy(BlockWriter& w, const PolicySnapshot& p) {
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

void PutDedup(BlockWriter& w, const DedupSnapshot& d) {
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

void PutHeader(BlockWriter& w, const CheckpointHeader& h) {
  w.PutU64(h.sequence);
  w.PutU32(h.shard_index);
  w.PutU32(h.shard_count);
  w.PutU64(h.incarnation);
  w.PutI64(absl::ToUnixMicros(h.created));
  w.PutU8(h.sync_step.has_value());
  w.PutU64(h.sync_step.value_or(0));
}

// ---- reading ----

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

absl::Status GetConfig(BlockReader& r, TableConfig* c) {
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

absl::Status GetPolicy(BlockReader& r, PolicySnapshot* p) {
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

absl::Status GetDedup(BlockReader& r, DedupSnapshot* d) {
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

absl::Status GetHeader(BlockReader& r, CheckpointHeader* h) {
  RETURN_IF_ERROR(r.GetU64(&h->sequence));
  RETURN_IF_ERROR(r.GetU32(&h->shard_index));
  RETURN_IF_ERROR(r.GetU32(&h->shard_count));
  RETURN_IF_ERROR(r.GetU64(&h->incarnation));
  int64_t micros = 0;
  RETURN_IF_ERROR(r.GetI64(&micros));
  h->created = absl::FromUnixMicros(micros);
  bool has_step = false;
  uint64_t step = 0;
  RETURN_IF_ERROR(r.GetBool(&has_step));
  RETURN_IF_ERROR(r.GetU64(&step));
  if (has_step) h->sync_step = step;
  if (h->shard_count == 0 || h->shard_index >= h->shard_count) {
    return r.Corrupt(absl::StrCat("shard ", h->shard_index, " of ", h->shard_count));
  }
  return absl::OkStatus();
}

// Structure a snapshot must have whatever the table holds; Partition::Restore
// checks the rest (state widths, ranges, finite values).
absl::Status CheckShape(BlockReader& r, const PartitionCheckpoint& p) {
  const TableSnapshot& t = p.snapshot.table;
  if (p.config.kind == TableKind::kDense) {
    if (p.range.begin > p.range.end || p.range.end > p.config.dense_size) {
      return r.Corrupt(absl::StrCat("range [", p.range.begin, ", ", p.range.end,
                                    ") outside the table's ", p.config.dense_size));
    }
    if (!t.keys.empty() || !t.row_versions.empty() || t.values.size() != p.range.size()) {
      return r.Corrupt("dense table snapshot does not match its range");
    }
  } else {
    if (p.range.begin != 0 || p.range.end != 0) return r.Corrupt("sparse table with a range");
    if (t.values.size() != t.keys.size() * p.config.dim ||
        t.row_versions.size() != t.keys.size()) {
      return r.Corrupt("sparse rows, values and row versions disagree");
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string PartitionFileName(size_t index) {
  return absl::StrFormat("part-%05d", index);
}

PartitionCheckpoint CapturePartition(const Partition& partition) {
  PartitionCheckpoint out;
  out.snapshot = partition.Snapshot();
  out.config = partition.config();
  out.config.consistency = out.snapshot.policy.consistency;
  out.config.staleness = out.snapshot.policy.staleness;
  if (const auto* dense = dynamic_cast<const DenseTable*>(&partition.table())) {
    out.range = dense->range();
  }
  return out;
}

PartitionSummary SummaryOf(const PartitionCheckpoint& p, size_t index) {
  PartitionSummary s;
  s.file = PartitionFileName(index);
  s.table = p.config.name;
  s.version = p.snapshot.policy.version;
  s.open_step = p.snapshot.policy.open_step;
  s.applied = p.snapshot.applied;
  s.rows = p.snapshot.table.keys.size();
  s.values = p.snapshot.table.values.size();
  return s;
}

absl::StatusOr<ManifestFile> WritePartitionFile(CheckpointWritableFile* file,
                                                const PartitionCheckpoint& p) {
  BlockWriter w(file);
  RETURN_IF_ERROR(w.Start());
  w.Begin(BlockType::kConfig);
  PutConfig(w, p.config);
  w.PutU64(p.range.begin);
  w.PutU64(p.range.end);
  RETURN_IF_ERROR(w.End());

  const TableSnapshot& t = p.snapshot.table;
  w.Begin(BlockType::kTable);
  w.PutU64(p.snapshot.applied);
  w.PutArray<uint64_t>(t.keys);
  w.PutArray<float>(t.values);
  w.PutArray<float>(t.state);
  w.PutArray<uint64_t>(t.row_versions);
  RETURN_IF_ERROR(w.End());

  w.Begin(BlockType::kPolicy);
  PutPolicy(w, p.snapshot.policy);
  RETURN_IF_ERROR(w.End());

  w.Begin(BlockType::kDedup);
  PutDedup(w, p.snapshot.dedup);
  RETURN_IF_ERROR(w.End());
  RETURN_IF_ERROR(w.Finish());
  return ManifestFile{"", w.bytes_written(), w.digest()};
}

absl::StatusOr<ManifestFile> WriteManifestFile(CheckpointWritableFile* file,
                                               const CheckpointManifest& m) {
  BlockWriter w(file);
  RETURN_IF_ERROR(w.Start());
  w.Begin(BlockType::kShardHeader);
  PutHeader(w, m.header);
  RETURN_IF_ERROR(w.End());

  w.Begin(BlockType::kSummary);
  w.PutU64(m.partitions.size());
  for (const PartitionSummary& s : m.partitions) {
    w.PutString(s.file);
    w.PutString(s.table);
    w.PutU64(s.version);
    w.PutU64(s.open_step);
    w.PutU64(s.applied);
    w.PutU64(s.rows);
    w.PutU64(s.values);
  }
  RETURN_IF_ERROR(w.End());

  w.Begin(BlockType::kFiles);
  w.PutU64(m.files.size());
  for (const ManifestFile& f : m.files) {
    w.PutString(f.name);
    w.PutU64(f.size);
    w.PutU32(f.digest);
  }
  RETURN_IF_ERROR(w.End());
  RETURN_IF_ERROR(w.Finish());
  return ManifestFile{kManifestName, w.bytes_written(), w.digest()};
}

absl::StatusOr<PartitionCheckpoint> ReadPartitionFile(CheckpointReadableFile* file,
                                                      const std::string& name,
                                                      uint64_t size, uint32_t* digest) {
  BlockReader r(file, name, size);
  PartitionCheckpoint p;
  RETURN_IF_ERROR(r.Start());
  RETURN_IF_ERROR(r.Begin(BlockType::kConfig));
  RETURN_IF_ERROR(GetConfig(r, &p.config));
  RETURN_IF_ERROR(r.GetU64(&p.range.begin));
  RETURN_IF_ERROR(r.GetU64(&p.range.end));
  RETURN_IF_ERROR(r.End());
  if (absl::Status valid = p.config.Validate(); !valid.ok()) {
    return r.Corrupt(absl::StrCat("table config refused: ", valid.message()));
  }

  TableSnapshot& t = p.snapshot.table;
  RETURN_IF_ERROR(r.Begin(BlockType::kTable));
  RETURN_IF_ERROR(r.GetU64(&p.snapshot.applied));
  RETURN_IF_ERROR(r.GetArray(L::kMaxElements, &t.keys));
  RETURN_IF_ERROR(r.GetArray(L::kMaxElements, &t.values));
  RETURN_IF_ERROR(r.GetArray(L::kMaxElements, &t.state));
  RETURN_IF_ERROR(r.GetArray(L::kMaxElements, &t.row_versions));
  RETURN_IF_ERROR(r.End());
  RETURN_IF_ERROR(CheckShape(r, p));

  RETURN_IF_ERROR(r.Begin(BlockType::kPolicy));
  RETURN_IF_ERROR(GetPolicy(r, &p.snapshot.policy));
  RETURN_IF_ERROR(r.End());

  RETURN_IF_ERROR(r.Begin(BlockType::kDedup));
  RETURN_IF_ERROR(GetDedup(r, &p.snapshot.dedup));
  RETURN_IF_ERROR(r.End());
  RETURN_IF_ERROR(r.Finish());
  *digest = r.digest();
  return p;
}

absl::StatusOr<CheckpointManifest> ReadManifestFile(CheckpointReadableFile* file,
                                                    const std::string& name,
                                                    uint64_t size) {
  BlockReader r(file, name, size);
  if (size > L::kMaxManifestBytes) {
    return r.Corrupt(absl::StrCat("manifest of ", size, " bytes, limit ",
                                  L::kMaxManifestBytes));
  }
  CheckpointManifest m;
  RETURN_IF_ERROR(r.Start());
  RETURN_IF_ERROR(r.Begin(BlockType::kShardHeader));
  RETURN_IF_ERROR(GetHeader(r, &m.header));
  RETURN_IF_ERROR(r.End());

  RETURN_IF_ERROR(r.Begin(BlockType::kSummary));
  uint64_t n = 0;
  RETURN_IF_ERROR(r.GetCount(L::kMaxPartitions, 16 + 5 * 8, &n));
  m.partitions.resize(n);
  for (PartitionSummary& s : m.partitions) {
    RETURN_IF_ERROR(r.GetString(64, &s.file));
    RETURN_IF_ERROR(r.GetString(kMaxTableNameLength, &s.table));
    RETURN_IF_ERROR(r.GetU64(&s.version));
    RETURN_IF_ERROR(r.GetU64(&s.open_step));
    RETURN_IF_ERROR(r.GetU64(&s.applied));
    RETURN_IF_ERROR(r.GetU64(&s.rows));
    RETURN_IF_ERROR(r.GetU64(&s.values));
  }
  RETURN_IF_ERROR(r.End());

  RETURN_IF_ERROR(r.Begin(BlockType::kFiles));
  RETURN_IF_ERROR(r.GetCount(L::kMaxPartitions, 8 + 8 + 4, &n));
  m.files.resize(n);
  for (ManifestFile& f : m.files) {
    RETURN_IF_ERROR(r.GetString(64, &f.name));
    RETURN_IF_ERROR(r.GetU64(&f.size));
    RETURN_IF_ERROR(r.GetU32(&f.digest));
  }
  RETURN_IF_ERROR(r.End());
  RETURN_IF_ERROR(r.Finish());

  // One file per partition, named as the writer names them, in order.
  if (m.files.size() != m.partitions.size()) {
    return r.Corrupt(absl::StrCat(m.files.size(), " files for ", m.partitions.size(),
                                  " partitions"));
  }
  for (size_t i = 0; i < m.files.size(); ++i) {
    const std::string expected = PartitionFileName(i);
    if (m.files[i].name != expected || m.partitions[i].file != expected) {
      return r.Corrupt(absl::StrCat("file ", i, " is not named ", expected));
    }
  }
  return m;
}

}  // namespace taups
