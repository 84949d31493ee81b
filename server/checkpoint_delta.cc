#include "server/checkpoint_delta.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace taups {
namespace {

// Optimizer state floats per row of `t`; -1 when they do not divide evenly.
int64_t StatePerRow(const TableSnapshot& t) {
  if (t.keys.empty()) return 0;
  if (t.state.size() % t.keys.size() != 0) return -1;
  return static_cast<int64_t>(t.state.size() / t.keys.size());
}

absl::Status Corrupt(const std::string& where, const std::string& table,
                     const std::string& what) {
  return absl::DataLossError(
      absl::StrCat(where, ": delta of table '", table, "': ", what));
}

// `base` with `delta`'s rows put in and its removed keys dropped.
absl::StatusOr<TableSnapshot> FoldRows(const TableSnapshot& base,
                                       const PartitionCheckpoint& delta,
                                       const std::string& where) {
  const std::string& name = delta.config.name;
  const TableSnapshot& d = delta.snapshot.table;
  const size_t dim = delta.config.dim;
  const int64_t width = StatePerRow(d);
  const int64_t base_width = StatePerRow(base);
  if (width < 0 || base_width < 0 ||
      (!d.keys.empty() && !base.keys.empty() && width != base_width)) {
    return Corrupt(where, name, "optimizer state of another width than the base's");
  }
  const size_t state = static_cast<size_t>(d.keys.empty() ? base_width : width);
  absl::flat_hash_map<uint64_t, size_t> changed;  // key -> row of d
  changed.reserve(d.keys.size());
  for (size_t i = 0; i < d.keys.size(); ++i) {
    if (!changed.emplace(d.keys[i], i).second) {
      return Corrupt(where, name, absl::StrCat("key ", d.keys[i], " changed twice"));
    }
  }
  absl::flat_hash_set<uint64_t> removed;
  removed.reserve(delta.removed.size());
  for (uint64_t key : delta.removed) {
    if (changed.contains(key)) {
      return Corrupt(where, name, absl::StrCat("key ", key, " both changed and removed"));
    }
    if (!removed.insert(key).second) {
      return Corrupt(where, name, absl::StrCat("key ", key, " removed twice"));
    }
  }
  TableSnapshot out;
  auto put = [&](const TableSnapshot& from, size_t i) {
    out.keys.push_back(from.keys[i]);
    out.values.insert(out.values.end(), from.values.begin() + i * dim,
                      from.values.begin() + (i + 1) * dim);
    out.state.insert(out.state.end(), from.state.begin() + i * state,
                     from.state.begin() + (i + 1) * state);
    out.row_versions.push_back(from.row_versions[i]);
  };
  std::vector<uint8_t> placed(d.keys.size());
  for (size_t i = 0; i < base.keys.size(); ++i) {
    const uint64_t key = base.keys[i];
    if (removed.contains(key)) continue;
    auto it = changed.find(key);
    if (it == changed.end()) {
      put(base, i);
    } else {
      put(d, it->second);
      placed[it->second] = 1;
    }
  }
  for (size_t i = 0; i < d.keys.size(); ++i) {
    if (!placed[i]) put(d, i);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<PartitionCheckpoint>> FoldDelta(
    std::vector<PartitionCheckpoint> base, std::vector<PartitionCheckpoint> delta,
    const std::string& where) {
  absl::flat_hash_map<std::string, size_t> base_of;
  for (size_t i = 0; i < base.size(); ++i) base_of.emplace(base[i].config.name, i);
  std::vector<PartitionCheckpoint> out;
  out.reserve(delta.size());
  for (PartitionCheckpoint& part : delta) {
    if (!part.delta) {
      out.push_back(std::move(part));
      continue;
    }
    const std::string& name = part.config.name;
    auto it = base_of.find(name);
    if (it == base_of.end()) return Corrupt(where, name, "the base has no such table");
    const PartitionCheckpoint& from = base[it->second];
    if (from.config.kind != TableKind::kSparse || from.config.dim != part.config.dim ||
        !(from.config.optimizer == part.config.optimizer)) {
      return Corrupt(where, name, "the base holds the table in another shape");
    }
    absl::StatusOr<TableSnapshot> rows = FoldRows(from.snapshot.table, part, where);
    if (!rows.ok()) return rows.status();
    part.snapshot.table = *std::move(rows);
    part.delta = false;
    part.removed.clear();
    out.push_back(std::move(part));
  }
  return out;
}

}  // namespace taups
