#include "server/parameter_store.h"

#include <cmath>

#include "absl/strings/string_view.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace taups {

ParameterStore::ParameterStore(uint32_t shard_index, uint32_t num_shards)
    : shard_index_(shard_index), num_shards_(num_shards) {}

absl::StatusOr<TableInfo> ParameterStore::CreateTable(const TableConfig& config,
                                                      bool exist_ok,
                                                      bool* created) {
  RETURN_IF_ERROR(config.Validate());
  *created = false;
  absl::MutexLock lock(&mu_);
  auto it = tables_.find(config.name);
  if (it != tables_.end()) {
    const TableConfig& existing = it->second->dense
                                      ? it->second->dense->config()
                                      : it->second->sparse->config();
    if (exist_ok && existing == config) return InfoOf(*it->second);
    return absl::AlreadyExistsError(absl::StrCat(
        "table '", config.name, "' already exists",
        existing == config ? "" : " with a different configuration"));
  }
  auto entry = std::make_shared<Entry>();
  if (config.kind == TableKind::kDense) {
    if (config.dense_size < num_shards_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dense table '", config.name, "' of ", config.dense_size,
          " elements is smaller than the ", num_shards_, " shards"));
    }
    entry->dense = std::make_unique<DenseTable>(
        config, DenseShardRange(config.dense_size, num_shards_, shard_index_));
  } else {
    entry->sparse = std::make_unique<SparseTable>(config);
  }
  tables_.emplace(config.name, entry);
  *created = true;
  return InfoOf(*entry);
}

absl::StatusOr<TableInfo> ParameterStore::GetTable(absl::string_view name) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry, Find(name));
  return InfoOf(*entry);
}

std::vector<TableInfo> ParameterStore::ListTables() const {
  std::vector<std::shared_ptr<Entry>> entries;
  {
    absl::ReaderMutexLock lock(&mu_);
    for (const auto& [name, entry] : tables_) entries.push_back(entry);
  }
  std::vector<TableInfo> infos;
  for (const auto& entry : entries) infos.push_back(InfoOf(*entry));
  return infos;
}

TableInfo ParameterStore::InfoOf(const Entry& entry) const {
  TableInfo info;
  info.shard_index = shard_index_;
  info.num_shards = num_shards_;
  if (entry.dense) {
    info.config = entry.dense->config();
    info.range = entry.dense->range();
    info.version = entry.dense->clock().version();
    info.staleness = entry.dense->clock().stats();
  } else {
    info.config = entry.sparse->config();
    info.version = entry.sparse->clock().version();
    info.staleness = entry.sparse->clock().stats();
    info.sparse_rows = entry.sparse->num_rows();
  }
  return info;
}

absl::StatusOr<std::shared_ptr<ParameterStore::Entry>> ParameterStore::Find(
    absl::string_view name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = tables_.find(name);
  if (it == tables_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no table '", name, "' on shard ", shard_index_));
  }
  return it->second;
}

absl::StatusOr<DenseTable*> ParameterStore::FindDense(
    absl::string_view name, std::shared_ptr<Entry>* hold) const {
  ASSIGN_OR_RETURN(*hold, Find(name));
  if (!(*hold)->dense) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", name, "' is sparse; use the sparse calls"));
  }
  return (*hold)->dense.get();
}

absl::StatusOr<SparseTable*> ParameterStore::FindSparse(
    absl::string_view name, std::shared_ptr<Entry>* hold) const {
  ASSIGN_OR_RETURN(*hold, Find(name));
  if (!(*hold)->sparse) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", name, "' is dense; use the dense calls"));
  }
  return (*hold)->sparse.get();
}

namespace {

absl::Status CheckDenseRange(const DenseTable& table, uint64_t offset,
                             uint64_t count, uint32_t shard) {
  if (count == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", table.config().name, "': empty range"));
  }
  if (!table.range().Contains(offset, count)) {
    return absl::OutOfRangeError(absl::StrCat(
        "table '", table.config().name, "': elements [", offset, ", +", count,
        ") are not all on shard ", shard, ", which holds [",
        table.range().begin, ", ", table.range().end, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParameterStore::CheckFinite(absl::string_view table,
                                         absl::Span<const float> values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      nonfinite_rejections_.fetch_add(1);
      return absl::InvalidArgumentError(absl::StrCat(
          "table '", table, "': gradient element ", i, " is ", values[i],
          "; NaN/Inf gradients are refused and nothing was applied"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParameterStore::CheckSparseKeys(const SparseTable& table,
                                             absl::Span<const uint64_t> keys,
                                             bool require_unique) const {
  if (keys.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", table.config().name, "': no keys"));
  }
  if (keys.size() > kMaxKeysPerRequest) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", table.config().name, "': ", keys.size(),
        " keys in one request; the limit is ", kMaxKeysPerRequest));
  }
  for (uint64_t key : keys) {
    if (SparseShardOf(key, num_shards_) != shard_index_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table '", table.config().name, "': key ", key, " belongs to shard ",
          SparseShardOf(key, num_shards_), ", not shard ", shard_index_));
    }
  }
  if (require_unique) {
    absl::flat_hash_set<uint64_t> seen;
    seen.reserve(keys.size());
    for (uint64_t key : keys) {
      if (!seen.insert(key).second) {
        return absl::InvalidArgumentError(absl::StrCat(
            "table '", table.config().name, "': key ", key,
            " appears twice in one push; merge duplicate keys first"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ParameterStore::PullDense(absl::string_view table,
                                                   uint64_t offset,
                                                   absl::Span<float> out) const {
  std::shared_ptr<Entry> hold;
  ASSIGN_OR_RETURN(DenseTable * dense, FindDense(table, &hold));
  RETURN_IF_ERROR(CheckDenseRange(*dense, offset, out.size(), shard_index_));
  return dense->Pull(offset, out);
}

absl::StatusOr<PushOutcome> ParameterStore::PushDense(
    absl::string_view table, uint64_t offset, absl::Span<const float> gradient,
    const PushOrigin& origin, uint64_t base_version, uint32_t slices_in_push) {
  std::shared_ptr<Entry> hold;
  ASSIGN_OR_RETURN(DenseTable * dense, FindDense(table, &hold));
  RETURN_IF_ERROR(
      CheckDenseRange(*dense, offset, gradient.size(), shard_index_));
  const uint32_t slices = slices_in_push == 0 ? 1 : slices_in_push;
  // A push cannot have more slices than elements per shard.
  if (slices > dense->range().size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", table, "': ", slices, " slices for a shard range of ",
        dense->range().size(), " elements"));
  }
  RETURN_IF_ERROR(CheckFinite(table, gradient));
  ASSIGN_OR_RETURN(PushOutcome outcome,
                   dense->clock().StampSlice(origin, base_version, slices));
  if (!outcome.accepted) return outcome;
  dense->Apply(offset, gradient, outcome.lr_factor);
  outcome.new_version = dense->clock().FinishSlice(origin, slices);
  return outcome;
}

absl::StatusOr<uint64_t> ParameterStore::PullSparse(
    absl::string_view table, absl::Span<const uint64_t> keys,
    absl::Span<float> out) {
  std::shared_ptr<Entry> hold;
  ASSIGN_OR_RETURN(SparseTable * sparse, FindSparse(table, &hold));
  RETURN_IF_ERROR(CheckSparseKeys(*sparse, keys, /*require_unique=*/false));
  if (out.size() != keys.size() * sparse->dim()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", table, "': output holds ", out.size(), " floats, need ",
        keys.size(), " x ", sparse->dim()));
  }
  return sparse->Pull(keys, out);
}

absl::StatusOr<PushOutcome> ParameterStore::PushSparse(
    absl::string_view table, absl::Span<const uint64_t> keys,
    absl::Span<const float> gradients, const PushOrigin& origin,
    uint64_t base_version) {
  std::shared_ptr<Entry> hold;
  ASSIGN_OR_RETURN(SparseTable * sparse, FindSparse(table, &hold));
  RETURN_IF_ERROR(CheckSparseKeys(*sparse, keys, /*require_unique=*/true));
  if (gradients.size() != keys.size() * sparse->dim()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", table, "': ", gradients.size(), " gradient floats for ",
        keys.size(), " keys of dim ", sparse->dim()));
  }
  RETURN_IF_ERROR(CheckFinite(table, gradients));
  ASSIGN_OR_RETURN(PushOutcome outcome,
                   sparse->clock().StampSlice(origin, base_version, 1));
  if (!outcome.accepted) return outcome;
  sparse->Apply(keys, gradients, outcome.lr_factor);
  outcome.new_version = sparse->clock().FinishSlice(origin, 1);
  return outcome;
}

}  // namespace taups
