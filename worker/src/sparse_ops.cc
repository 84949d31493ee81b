// ClientCore's sparse-table calls: keys grouped by shard, duplicates fetched
// once (pull) or summed (push), one RPC per shard in flight at once; a large
// call to several shards builds its shards' requests at once, on a shared
// pool (kAtOnceMinKeys).
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/strings/str_cat.h"
#include "common/float_bytes.h"
#include "common/row_copy.h"
#include "common/task_pool.h"
#include "common/vector_math.h"
#include "common/wire_tensor.h"
#include "proto/raw_payload.h"
#include "worker/src/client_core.h"

namespace taups {
namespace {

absl::Status CheckSparse(const TableConfig& config, size_t keys,
                         size_t floats, absl::string_view what) {
  if (config.kind != TableKind::kSparse) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", config.name, "' is dense"));
  }
  if (floats != keys * config.dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", config.name, "': ", what, " holds ", floats, " floats for ",
        keys, " keys of dim ", config.dim));
  }
  return absl::OkStatus();
}

// Writes one shard's raw pull answer, `pieces` (consecutive received bytes:
// one row per unique key of `group`, in key order), into the caller's
// `rows`. Each answer row is read once, at its key's first position (these
// come in key order, as GroupKeysByShard numbers keys, so one PieceReader
// walks the pieces front to back, with no call per row); a repeated key
// copies its first position's row, already in `rows`. kDim is the row width
// when WithRowWidth fixed it at compile time, else 0.
template <uint32_t kDim>
void LandPulledRows(const ShardKeys& group, SparsePullCall::Pieces pieces,
                    uint32_t runtime_dim, absl::Span<float> rows) {
  const uint32_t dim = kDim > 0 ? kDim : runtime_dim;
  const size_t row_bytes = size_t{dim} * sizeof(float);
  PieceReader answer(pieces);
  std::vector<uint32_t> first(group.keys.size());
  uint32_t next_new = 0;
  for (const auto& [request_index, key_index] : group.positions) {
    float* dest = rows.data() + size_t{request_index} * dim;
    if (key_index == next_new) {
      ++next_new;
      first[key_index] = request_index;
      answer.Next(row_bytes, reinterpret_cast<char*>(dest));
    } else {
      CopyRow<kDim>(dest, rows.data() + size_t{first[key_index]} * dim, dim);
    }
  }
}

// A sparse call of this many keys or more, to several shards, builds its
// shards' requests at once, one task of ShardPartsPool each: the keys are
// split by owner (PositionsByShard, one range of keys per thread of the
// pool), then each task groups its shard's keys (GroupShardKeys), merges a
// push's rows, and sends. Smaller calls build them one after another, on
// the caller's thread: waking a helper costs more than grouping a few
// thousand keys.
constexpr size_t kAtOnceMinKeys = size_t{1} << 13;

bool BuildsAtOnce(size_t keys, uint32_t shards) {
  return shards >= 2 && keys >= kAtOnceMinKeys;
}

// A push of that many keys to one shard merges its rows on a second thread
// while its keys are grouped (OneShardGroupMerge), when the rows go into
// the request as they are (uncompressed, no norm).
bool MergesWhileGrouping(size_t keys, uint32_t shards) {
  return shards == 1 && keys >= kAtOnceMinKeys;
}

// The pool the process's clients build large sparse calls on: min(cores,
// 4) threads, the caller one of them, made on first use. One per process,
// not per client, so that a process with hundreds of clients (the load
// generator) does not start threads for each; it is not the shards' pool
// (TaskPool::Shared), so building a call never waits on a shard's apply.
TaskPool& ShardPartsPool() {
  static TaskPool* const pool = new TaskPool(TaskPool::AutoThreads());
  return *pool;
}

// One sparse call's keys grouped by shard: at once, on ShardPartsPool
// (BuildsAtOnce), or one shard after another on the caller's thread, or for
// one shard, grouped while its rows are merged (MergesWhileGrouping).
// Thread-compatible; Build and BuildMerged run their tasks as described
// there.
class ShardParts {
 public:
  enum class Mode { kInOrder, kAtOnce, kMergedWhileGrouping };
  // How a pull of `keys` keys over `shards` shards is built; a push whose
  // rows go into its requests as they are may also merge while it groups.
  static Mode ModeForPull(size_t keys, uint32_t shards) {
    return BuildsAtOnce(keys, shards) ? Mode::kAtOnce : Mode::kInOrder;
  }
  static Mode ModeForPush(size_t keys, uint32_t shards) {
    return MergesWhileGrouping(keys, shards) ? Mode::kMergedWhileGrouping
                                             : ModeForPull(keys, shards);
  }

  // `keys` must outlive this object. kMergedWhileGrouping needs a map of
  // one shard and at least one key.
  ShardParts(absl::Span<const uint64_t> keys, const OwnershipMap& map,
             Mode mode)
      : keys_(keys), mode_(mode) {
    switch (mode_) {
      case Mode::kAtOnce: {
        // One range of keys per thread: the split by owner reads every
        // key, and on one thread it took as long as a shard's grouping
        // when shards are few.
        const size_t ranges = static_cast<size_t>(ShardPartsPool().threads());
        range_positions_.resize(ranges);
        ShardPartsPool().Run(ranges, [&](size_t r) {
          range_positions_[r] =
              PositionsByShard(keys, map, keys.size() * r / ranges,
                               keys.size() * (r + 1) / ranges);
        });
        groups_.resize(map.num_shards());
        for (uint32_t s = 0; s < map.num_shards(); ++s) {
          const bool any = std::any_of(
              range_positions_.begin(), range_positions_.end(),
              [s](const auto& range) { return !range[s].empty(); });
          calls_ += any ? 1 : 0;
        }
        break;
      }
      case Mode::kMergedWhileGrouping:
        groups_.resize(1);
        calls_ = 1;
        break;
      case Mode::kInOrder:
        groups_ = GroupKeysByShard(keys, map);
        for (const ShardKeys& g : groups_) calls_ += g.keys.empty() ? 0 : 1;
        break;
    }
  }

  Mode mode() const { return mode_; }
  // Shards the call has keys for: one request each.
  size_t calls() const { return calls_; }
  // Indexed by shard. Built at once, a shard's group is empty until Build
  // has grouped it (just before build(s) runs); merged while grouping,
  // until BuildMerged has; otherwise final already.
  const std::vector<ShardKeys>& groups() const { return groups_; }

  // kMergedWhileGrouping: groups shard 0's keys on this thread while a task
  // of ShardPartsPool merges `gradients` (rows of `dim`) into *bytes as
  // MergeShardGradients would, then runs build(0) with groups()[0] final.
  template <typename BuildFn>
  void BuildMerged(absl::Span<const float> gradients, uint32_t dim,
                   std::string* bytes, BuildFn build) {
    OneShardGroupMerge both(keys_, gradients, dim);
    // Tasks are claimed in order: whoever runs the merge (1) runs it
    // beside the grouping (0), or after it on the same thread.
    ShardPartsPool().Run(2, [&](size_t task) {
      if (task == 0) {
        both.Group();
      } else {
        both.Merge(bytes);
      }
    });
    groups_[0] = std::move(both.group());
    build(0);
  }

  // Runs build(s) once for each shard with keys, with groups()[s] final
  // (not for kMergedWhileGrouping, whose group BuildMerged makes). At
  // once: on tasks of ShardPartsPool, for different shards at the same
  // time (task s writes only groups()[s]); else in shard order, here.
  template <typename BuildFn>
  void Build(BuildFn build) {
    if (mode_ != Mode::kAtOnce) {
      for (uint32_t s = 0; s < groups_.size(); ++s) {
        if (!groups_[s].keys.empty()) build(s);
      }
      return;
    }
    ShardPartsPool().Run(groups_.size(), [&](size_t task) {
      const uint32_t s = static_cast<uint32_t>(task);
      const std::vector<uint32_t> positions = PositionsOf(s);
      if (positions.empty()) return;
      groups_[s] = GroupShardKeys(keys_, positions);
      build(s);
    });
  }

 private:
  // Built at once: shard s's request positions, ascending (the ranges'
  // lists in range order).
  std::vector<uint32_t> PositionsOf(uint32_t s) const {
    size_t total = 0;
    for (const auto& range : range_positions_) total += range[s].size();
    std::vector<uint32_t> positions;
    positions.reserve(total);
    for (const auto& range : range_positions_) {
      positions.insert(positions.end(), range[s].begin(), range[s].end());
    }
    return positions;
  }

  absl::Span<const uint64_t> keys_;
  Mode mode_;
  std::vector<ShardKeys> groups_;
  // Built at once only: [range][shard] -> request positions.
  std::vector<std::vector<std::vector<uint32_t>>> range_positions_;
  size_t calls_ = 0;
};

}  // namespace

absl::StatusOr<PullInfo> ClientCore::PullSparse(absl::string_view table,
                                                absl::Span<const uint64_t> keys,
                                                absl::Span<float> rows) {
  return PullSparse(table, keys, rows, SparsePullOptions());
}

void ClientCore::RecordRowVersions(const std::string& table,
                                   const PullInfo& info) {
  if (info.row_versions.empty() && !any_row_versions_.load()) return;
  absl::MutexLock lock(&mu_);
  if (info.row_versions.empty()) {
    last_row_versions_.erase(table);
  } else {
    auto basis = std::make_shared<RowVersionBasis>();
    basis->keys = info.row_keys;
    basis->versions = info.row_versions;
    last_row_versions_[table] = std::move(basis);
  }
  any_row_versions_.store(!last_row_versions_.empty());
}

std::shared_ptr<const RowVersionBasis> ClientCore::LastRowVersions(
    const std::string& table) {
  if (!any_row_versions_.load()) return nullptr;
  absl::MutexLock lock(&mu_);
  auto it = last_row_versions_.find(table);
  return it == last_row_versions_.end() ? nullptr : it->second;
}

absl::StatusOr<PullInfo> ClientCore::PullSparse(
    absl::string_view table, absl::Span<const uint64_t> keys,
    absl::Span<float> rows, const SparsePullOptions& options) {
  auto meta = Meta(table);
  if (!meta.ok()) return meta.status();
  const TableConfig& config = (*meta)->config;
  absl::Status valid = CheckSparse(config, keys.size(), rows.size(), "rows");
  if (!valid.ok()) return valid;
  BeginStep(std::string(table), config.consistency.kind);
  // Shared with the callbacks, which may still be unwinding when this call
  // returns.
  struct State {
    absl::Mutex mu;
    PullInfo info;
    std::vector<uint64_t> row_versions;  // each callback fills its positions
    std::promise<absl::Status> done;
  };
  auto state = std::make_shared<State>();
  state->info.shard_versions.assign(shards_.size(), 0);
  state->info.shard_touched.assign(shards_.size(), false);
  if (keys.empty()) return state->info;
  const bool with_versions = options.row_versions;
  if (with_versions) state->row_versions.assign(keys.size(), 0);

  const absl::Time start = absl::Now();
  const OwnershipMap& ownership = *(*meta)->ownership;
  ShardParts parts(keys, ownership,
                   ShardParts::ModeForPull(keys.size(), ownership.num_shards()));
  const std::vector<ShardKeys>& groups = parts.groups();
  const uint32_t dim = config.dim;
  auto fan = std::make_shared<FanIn>(
      parts.calls(), [state](absl::Status s) { state->done.set_value(s); });
  const std::string name(table);
  std::shared_ptr<TableCompression> compression = CompressionOf(name);
  const uint64_t pull_clock = ClockOf(name);
  // Sends shard s's request (groups[s] final); maybe for several shards at
  // once: each answer lands in its own keys' rows only.
  parts.Build([&](uint32_t s) {
    const ShardKeys* group = &groups[s];
    const size_t row_bytes = size_t{dim} * sizeof(float);
    // A raw answer is copied once, by the transport, from the received
    // bytes straight into the caller's rows (LandPulledRows).
    SparsePullCall call;
    call.values_size = group->keys.size() * row_bytes;
    call.land = [group, rows, dim](SparsePullCall::Pieces pieces) {
      WithRowWidth(dim, [&](auto width) {
        LandPulledRows<width()>(*group, pieces, dim, rows);
      });
    };
    v1::PullSparseRequest& request = call.header;
    request.set_table(name);
    PackInto<uint64_t>(groups[s].keys, request.mutable_keys());
    request.set_worker_id(options_.worker_id);
    request.set_clock(pull_clock);
    request.set_with_row_versions(with_versions);
    request.set_ownership_epoch((*meta)->ownership->epoch());
    if (compression->config().pull != CodecKind::kNone) {
      request.set_pull_codec(static_cast<v1::Codec>(compression->config().pull));
      request.set_pull_bucket_size(compression->config().pull_bucket_size);
    }
    CallKeeping<SparsePullCall>(
        policy_, s, std::move(call),
        [this, s, group, fan, state, rows, dim, row_bytes, compression,
         with_versions, name](const absl::Status& status,
                              v1::PullSparseResponse* response,
                              SparsePullCall* sent) {
          if (!status.ok()) return fan->Report(status);
          std::vector<float> decoded;
          const char* src = response->values().data();
          uint64_t wire_bytes = response->values().size();
          if (sent->landed) {
            wire_bytes = group->keys.size() * row_bytes;
            src = nullptr;  // the rows are in place already
          } else if (response->encoded()) {
            decoded.resize(group->keys.size() * dim);
            absl::Status ok = DecodePulled(response->values(), absl::MakeSpan(decoded));
            if (!ok.ok()) {
              return fan->Report(absl::InternalError(absl::StrCat(
                  "shard ", s, " returned a bad block: ", ok.message())));
            }
            src = reinterpret_cast<const char*>(decoded.data());
          } else if (response->values().size() != group->keys.size() * row_bytes) {
            return fan->Report(absl::InternalError(absl::StrCat(
                "shard ", s, " returned ", response->values().size(),
                " bytes for ", group->keys.size(), " rows")));
          }
          compression->CountPull(group->keys.size() * row_bytes, wire_bytes);
          if (src != nullptr) {
            for (const auto& [request_index, key_index] : group->positions) {
              std::memcpy(rows.data() + size_t{request_index} * dim,
                          src + size_t{key_index} * row_bytes, row_bytes);
            }
          }
          if (with_versions) {
            const std::string& versions = response->row_versions();
            if (versions.size() != group->keys.size() * sizeof(uint64_t)) {
              return fan->Report(absl::InternalError(absl::StrCat(
                  "shard ", s, " returned ", versions.size(),
                  " bytes of row versions for ", group->keys.size(), " rows")));
            }
            for (const auto& [request_index, key_index] : group->positions) {
              std::memcpy(&state->row_versions[request_index],
                          versions.data() + size_t{key_index} * sizeof(uint64_t),
                          sizeof(uint64_t));
            }
          }
          const bool restarted = NoteAnswer(s, response->server_incarnation(),
                                            name, response->version());
          {
            absl::MutexLock lock(&state->mu);
            PullInfo& info = state->info;
            info.shard_versions[s] = response->version();
            info.step = std::max(info.step, response->step());
            info.shard_touched[s] = true;
            if (restarted) ++info.server_incarnation_changed;
          }
          fan->Report(absl::OkStatus());
        });
  });
  absl::Status status = state->done.get_future().get();
  if (!status.ok()) return status;
  absl::MutexLock lock(&state->mu);
  PullInfo info = state->info;
  info.elapsed = absl::Now() - start;
  if (with_versions) {
    info.row_keys.assign(keys.begin(), keys.end());
    info.row_versions = std::move(state->row_versions);
  }
  CatchUp(name, info.step);
  RecordPull(name, info);
  RecordRowVersions(name, info);
  return info;
}

absl::StatusOr<PushResult> ClientCore::PushSparse(
    absl::string_view table, absl::Span<const uint64_t> keys,
    absl::Span<const float> gradients, const PullInfo* basis) {
  auto meta = Meta(table);
  if (!meta.ok()) return meta.status();
  const TableConfig& config = (*meta)->config;
  absl::Status valid =
      CheckSparse(config, keys.size(), gradients.size(), "gradients");
  if (!valid.ok()) return valid;
  struct State {
    absl::Mutex mu;
    PushResult result;
    std::promise<absl::Status> done;
  };
  auto state = std::make_shared<State>();
  state->result.shards.resize(shards_.size());
  if (keys.empty()) return state->result;
  const std::string name(table);
  const std::vector<uint64_t> base = BaseVersions(name, basis);
  if (base.size() != shards_.size()) {
    return absl::InvalidArgumentError(
        "basis.shard_versions must hold one version per shard");
  }

  EnsureLeases();
  // Row versions of the basis pull go back with the push: per-row tau.
  std::shared_ptr<const RowVersionBasis> last_rows;
  absl::Span<const uint64_t> pulled_keys, pulled_versions;
  if (basis != nullptr) {
    pulled_keys = basis->row_keys;
    pulled_versions = basis->row_versions;
  } else if ((last_rows = LastRowVersions(name)) != nullptr) {
    pulled_keys = last_rows->keys;
    pulled_versions = last_rows->versions;
  }
  if (pulled_keys.size() != pulled_versions.size()) {
    return absl::InvalidArgumentError(
        "basis.row_keys and basis.row_versions differ in length");
  }
  const bool with_rows = !pulled_versions.empty();
  std::shared_ptr<TableCompression> compression = CompressionOf(name);
  const bool compress_push =
      compression->config().push.codec != CodecKind::kNone;
  // Encoded: each shard measures what it decodes; no clipping: not needed.
  const bool want_norm = !compress_push && config.staleness.clip_norm > 0.0f;
  // Uncompressed rows without a norm to share need nothing from the other
  // shards: each shard's request goes out as soon as its rows are merged,
  // so the first shards receive and apply while the client merges the
  // rest. Otherwise every request is built before any is sent, so that a
  // refusal of the encoder sends nothing and every shard gets the push's
  // whole norm.
  const bool send_each = !compress_push && !want_norm;
  // A large push of that kind builds its shards' parts at once
  // (kAtOnceMinKeys), or to one shard, merges while it groups.
  const OwnershipMap& ownership = *(*meta)->ownership;
  ShardParts parts(keys, ownership,
                   send_each ? ShardParts::ModeForPush(keys.size(),
                                                       ownership.num_shards())
                             : ShardParts::Mode::kInOrder);
  const std::vector<ShardKeys>& groups = parts.groups();
  std::optional<RowBasisLookup> row_basis;
  if (with_rows) {
    row_basis.emplace(keys, pulled_keys, pulled_versions);
    state->result.row_taus.assign(keys.size(), kUnknownRowVersion);
  }
  auto fan = std::make_shared<FanIn>(
      parts.calls(), [state](absl::Status s) { state->done.set_value(s); });
  const v1::PushOrigin origin = NextOrigin();
  const uint64_t push_index =
      compress_push ? compression->NextPushIndex() : 0;
  const uint64_t push_clock = ClockOf(name);
  const auto on_answer = [this, &groups, state, with_rows, &name](
                             uint32_t s, v1::PushResponse* response) {
    NoteAnswer(s, response->server_incarnation(), name, response->new_version());
    const ShardKeys* group = &groups[s];
    absl::MutexLock lock(&state->mu);
    ShardPushResult& r = state->result.shards[s];
    r.touched = true;
    r.accepted = response->accepted();
    r.tau = response->tau();
    r.lr_factor = response->lr_factor();
    r.new_version = response->new_version();
    r.reject_reason = response->reject_reason();
    r.duplicate = response->duplicate();
    if (with_rows) {
      r.row_tau_rows = response->row_tau_rows();
      r.row_tau_mean = response->row_tau_mean();
      r.row_tau_max = response->row_tau_max();
      r.row_tau_reborn = response->row_tau_reborn();
      const std::string& taus = response->row_taus();
      if (taus.size() != group->keys.size() * sizeof(uint64_t)) {
        return absl::InternalError(absl::StrCat(
            "shard ", s, " returned ", taus.size(), " bytes of row tau for ",
            group->keys.size(), " rows"));
      }
      for (const auto& [request_index, key_index] : group->positions) {
        std::memcpy(&state->result.row_taus[request_index],
                    taus.data() + size_t{key_index} * sizeof(uint64_t),
                    sizeof(uint64_t));
      }
    }
    return absl::OkStatus();
  };
  double norm_sq = 0.0;
  // Everything but the rows; norm_sq must be the whole push's by then.
  const auto fill_header = [&](uint32_t s, v1::PushSparseRequest& request) {
    compression->CountPush(groups[s].keys.size() * config.dim * sizeof(float),
                           request.gradients().size());
    request.set_table(name);
    PackInto<uint64_t>(groups[s].keys, request.mutable_keys());
    *request.mutable_origin() = origin;
    request.set_base_version(base[s]);
    request.set_clock(push_clock);
    request.set_push_norm_sq(norm_sq);
    request.set_ownership_epoch((*meta)->ownership->epoch());
    if (with_rows) {
      PackInto<uint64_t>(row_basis->BasesOf(groups[s]),
                         request.mutable_row_base_versions());
      request.set_return_row_taus(true);
    }
  };
  // Uncompressed rows are merged straight into the request's bytes;
  // compressed ones into a scratch buffer first.
  const auto merge_raw = [&](uint32_t s, v1::PushSparseRequest& request) {
    std::string* bytes = request.mutable_gradients();
    const size_t floats = groups[s].keys.size() * config.dim;
    bytes->resize(floats * sizeof(float));
    const absl::Span<float> rows(reinterpret_cast<float*>(bytes->data()),
                                 floats);
    MergeShardGradients(groups[s], gradients, config.dim, rows);
    return rows;
  };
  if (send_each) {
    // Each shard's request goes out as soon as it is built; maybe several
    // at once, or merged while grouped (ShardParts).
    const auto send = [&](uint32_t s, std::vector<v1::PushSparseRequest> part) {
      fill_header(s, part.front());
      SendShardPush<v1::PushSparseRequest>(s, std::move(part), on_answer, fan);
    };
    if (parts.mode() == ShardParts::Mode::kMergedWhileGrouping) {
      std::vector<v1::PushSparseRequest> part(1);
      std::string* bytes = part.front().mutable_gradients();
      parts.BuildMerged(gradients, config.dim, bytes,
                        [&](uint32_t s) { send(s, std::move(part)); });
    } else {
      parts.Build([&](uint32_t s) {
        std::vector<v1::PushSparseRequest> part(1);
        merge_raw(s, part.front());
        send(s, std::move(part));
      });
    }
  } else {
    std::vector<std::vector<v1::PushSparseRequest>> by_shard(groups.size());
    std::vector<float> scratch;
    for (uint32_t s = 0; s < groups.size(); ++s) {
      if (groups[s].keys.empty()) continue;
      const size_t floats = groups[s].keys.size() * config.dim;
      v1::PushSparseRequest& request = by_shard[s].emplace_back();
      if (compress_push) {
        scratch.resize(floats);
        MergeShardGradients(groups[s], gradients, config.dim,
                            absl::MakeSpan(scratch));
        absl::Status encoded = compression->EncodeRows(
            scratch, config.dim, push_index, request.mutable_gradients());
        if (!encoded.ok()) return encoded;
        request.set_encoded(true);
      } else {
        norm_sq += SquaredNorm(merge_raw(s, request));
      }
    }
    // Every request built, and the norm complete: the headers, then all
    // at once.
    for (uint32_t s = 0; s < by_shard.size(); ++s) {
      if (!by_shard[s].empty()) fill_header(s, by_shard[s].front());
    }
    SendPush<v1::PushSparseRequest>(std::move(by_shard), on_answer, fan);
  }
  absl::Status status = state->done.get_future().get();
  if (!status.ok()) return status;
  absl::MutexLock lock(&state->mu);
  return state->result;
}

}  // namespace taups
