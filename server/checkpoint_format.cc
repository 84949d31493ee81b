#include "server/checkpoint_format.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "server/checkpoint_blocks.h"
#include "server/checkpoint_records.h"
#include "server/dense_table.h"

namespace taups {

namespace {

using L = CheckpointLimits;

void PutHeader(BlockWriter& w, const CheckpointHeader& h) {
  w.PutU64(h.sequence);
  w.PutU32(h.shard_index);
  w.PutU32(h.shard_count);
  w.PutU64(h.incarnation);
  w.PutI64(absl::ToUnixMicros(h.created));
  w.PutU8(h.sync_step.has_value());
  w.PutU64(h.sync_step.value_or(0));
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
  return CheckpointOf(partition, partition.Snapshot());
}

PartitionCheckpoint CheckpointOf(const Partition& partition, PartitionSnapshot snapshot) {
  PartitionCheckpoint out;
  out.snapshot = std::move(snapshot);
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
  s.delta = p.delta;
  s.removed = p.removed.size();
  return s;
}

absl::StatusOr<ManifestFile> WritePartitionFile(CheckpointWritableFile* file,
                                                const PartitionCheckpoint& p) {
  BlockWriter w(file);
  RETURN_IF_ERROR(w.Start());
  w.Begin(BlockType::kConfig);
  PutTableConfig(w, p.config);
  w.PutU64(p.range.begin);
  w.PutU64(p.range.end);
  RETURN_IF_ERROR(w.End());

  const TableSnapshot& t = p.snapshot.table;
  w.Begin(p.delta ? BlockType::kDelta : BlockType::kTable);
  w.PutU64(p.snapshot.applied);
  w.PutArray<uint64_t>(t.keys);
  w.PutArray<float>(t.values);
  w.PutArray<float>(t.state);
  w.PutArray<uint64_t>(t.row_versions);
  if (p.delta) w.PutArray<uint64_t>(p.removed);
  RETURN_IF_ERROR(w.End());

  w.Begin(BlockType::kPolicy);
  PutPolicySnapshot(w, p.snapshot.policy);
  RETURN_IF_ERROR(w.End());

  w.Begin(BlockType::kDedup);
  PutDedupSnapshot(w, p.snapshot.dedup);
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

  if (m.base) {
    w.Begin(BlockType::kChain);
    w.PutU64(m.base->sequence);
    w.PutU32(m.base->manifest_digest);
    w.PutU64(m.partitions.size());
    for (const PartitionSummary& s : m.partitions) {
      w.PutU8(s.delta);
      w.PutU64(s.removed);
    }
    RETURN_IF_ERROR(w.End());
  } else {
    for (const PartitionSummary& s : m.partitions) {
      if (s.delta) return absl::InternalError("a delta partition in a full checkpoint");
    }
  }

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
  RETURN_IF_ERROR(GetTableConfig(r, &p.config));
  RETURN_IF_ERROR(r.GetU64(&p.range.begin));
  RETURN_IF_ERROR(r.GetU64(&p.range.end));
  RETURN_IF_ERROR(r.End());
  if (absl::Status valid = p.config.Validate(); !valid.ok()) {
    return r.Corrupt(absl::StrCat("table config refused: ", valid.message()));
  }

  TableSnapshot& t = p.snapshot.table;
  BlockType section = BlockType::kTable;
  RETURN_IF_ERROR(r.BeginEither(BlockType::kTable, BlockType::kDelta, &section));
  p.delta = section == BlockType::kDelta;
  RETURN_IF_ERROR(r.GetU64(&p.snapshot.applied));
  RETURN_IF_ERROR(r.GetArray(L::kMaxElements, &t.keys));
  RETURN_IF_ERROR(r.GetArray(L::kMaxElements, &t.values));
  RETURN_IF_ERROR(r.GetArray(L::kMaxElements, &t.state));
  RETURN_IF_ERROR(r.GetArray(L::kMaxElements, &t.row_versions));
  if (p.delta) RETURN_IF_ERROR(r.GetArray(L::kMaxElements, &p.removed));
  RETURN_IF_ERROR(r.End());
  if (p.delta && p.config.kind != TableKind::kSparse) {
    return r.Corrupt("a delta of a dense table");
  }
  RETURN_IF_ERROR(CheckShape(r, p));

  RETURN_IF_ERROR(r.Begin(BlockType::kPolicy));
  RETURN_IF_ERROR(GetPolicySnapshot(r, &p.snapshot.policy));
  RETURN_IF_ERROR(r.End());
  // Restore puts the policy's settings in force: they must be the config's
  // (validated above), as CapturePartition writes them.
  if (!(p.snapshot.policy.consistency == p.config.consistency) ||
      !(p.snapshot.policy.staleness == p.config.staleness)) {
    return r.Corrupt("policy settings differ from the table config's");
  }

  RETURN_IF_ERROR(r.Begin(BlockType::kDedup));
  RETURN_IF_ERROR(GetDedupSnapshot(r, &p.snapshot.dedup));
  RETURN_IF_ERROR(r.End());
  RETURN_IF_ERROR(r.Finish());
  *digest = r.digest();
  return p;
}

absl::StatusOr<CheckpointManifest> ReadManifestFile(CheckpointReadableFile* file,
                                                    const std::string& name,
                                                    uint64_t size, uint32_t* digest) {
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

  // Per partition (delta, removed) of an incremental checkpoint.
  std::vector<std::pair<bool, uint64_t>> chain;
  BlockType section = BlockType::kSummary;
  RETURN_IF_ERROR(r.BeginEither(BlockType::kChain, BlockType::kSummary, &section));
  uint64_t n = 0;
  if (section == BlockType::kChain) {
    CheckpointBase base;
    RETURN_IF_ERROR(r.GetU64(&base.sequence));
    RETURN_IF_ERROR(r.GetU32(&base.manifest_digest));
    if (base.sequence >= m.header.sequence) {
      return r.Corrupt(absl::StrCat("checkpoint ", m.header.sequence,
                                    " follows a base of sequence ", base.sequence));
    }
    m.base = base;
    RETURN_IF_ERROR(r.GetCount(L::kMaxPartitions, 1 + 8, &n));
    chain.resize(n);
    for (auto& [delta, removed] : chain) {
      RETURN_IF_ERROR(r.GetBool(&delta));
      RETURN_IF_ERROR(r.GetU64(&removed));
    }
    RETURN_IF_ERROR(r.End());
    RETURN_IF_ERROR(r.Begin(BlockType::kSummary));
  }
  RETURN_IF_ERROR(r.GetCount(L::kMaxPartitions, 16 + 5 * 8, &n));
  if (m.base && n != chain.size()) {
    return r.Corrupt(absl::StrCat(n, " partitions, the chain section lists ", chain.size()));
  }
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
  for (size_t i = 0; i < chain.size(); ++i) {
    m.partitions[i].delta = chain[i].first;
    m.partitions[i].removed = chain[i].second;
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
  if (digest != nullptr) *digest = r.digest();
  return m;
}

}  // namespace taups
