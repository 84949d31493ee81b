// ClientCore's dense-table calls: one RPC per slice, all in flight at once.
// The tensor's bytes travel beside each slice's message (DensePushCall,
// DensePullCall): a raw push sends from the caller's memory, a raw pull's
// answer is copied once, into the caller's buffer.
#include <cstring>
#include <limits>

#include "absl/strings/string_view.h"
#include "absl/strings/str_cat.h"
#include "common/vector_math.h"
#include "common/wire_tensor.h"
#include "worker/src/client_core.h"

namespace taups {
namespace {

template <typename T>
std::future<absl::StatusOr<T>> Ready(absl::Status status, T value = T()) {
  std::promise<absl::StatusOr<T>> promise;
  if (status.ok()) {
    promise.set_value(std::move(value));
  } else {
    promise.set_value(std::move(status));
  }
  return promise.get_future();
}

absl::Status SizeMismatch(const TableConfig& config, size_t got) {
  if (config.kind != TableKind::kDense) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", config.name, "' is sparse"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("table '", config.name, "' holds ", config.dense_size,
                   " floats; the buffer holds ", got));
}

}  // namespace

std::future<absl::StatusOr<PullInfo>> ClientCore::PullDenseAsync(
    absl::string_view table, absl::Span<float> values) {
  auto meta = Meta(table);
  if (!meta.ok()) return Ready<PullInfo>(meta.status());
  const TableConfig& config = (*meta)->config;
  if (config.kind != TableKind::kDense || values.size() != config.dense_size) {
    return Ready<PullInfo>(SizeMismatch(config, values.size()));
  }
  BeginStep(std::string(table), config.consistency.kind);
  struct State {
    absl::Mutex mu;
    PullInfo info;
    std::promise<absl::StatusOr<PullInfo>> promise;
  };
  auto state = std::make_shared<State>();
  state->info.shard_versions.assign(shards_.size(),
                                    std::numeric_limits<uint64_t>::max());
  state->info.shard_touched.assign(shards_.size(), false);
  auto future = state->promise.get_future();
  std::string name(table);
  const absl::Time start = absl::Now();
  std::shared_ptr<TableCompression> compression = CompressionOf(name);
  const CodecKind pull_codec = compression->config().pull;
  auto fan = std::make_shared<FanIn>(
      (*meta)->slices.size(), [this, state, name, start](absl::Status status) {
        if (!status.ok()) return state->promise.set_value(status);
        for (size_t s = 0; s < shards_.size(); ++s) {
          if (!state->info.shard_touched[s]) state->info.shard_versions[s] = 0;
        }
        state->info.elapsed = absl::Now() - start;
        CatchUp(name, state->info.step);
        RecordPull(name, state->info);
        state->promise.set_value(std::move(state->info));
      });
  for (const DenseSlice& slice : (*meta)->slices) {
    // A raw answer is copied once, by the transport, from the received
    // bytes straight into this slice of `values`.
    DensePullCall call;
    call.values = absl::MakeSpan(
        reinterpret_cast<char*>(values.data() + slice.offset),
        slice.count * sizeof(float));
    v1::PullDenseRequest& request = call.header;
    request.set_table(name);
    request.set_offset(slice.offset);
    request.set_count(slice.count);
    request.set_worker_id(options_.worker_id);
    request.set_clock(ClockOf(name));
    request.set_ownership_epoch((*meta)->ownership->epoch());
    if (pull_codec != CodecKind::kNone) {
      request.set_pull_codec(static_cast<v1::Codec>(pull_codec));
      request.set_pull_bucket_size(compression->config().pull_bucket_size);
    }
    CallKeeping<DensePullCall>(
        policy_, slice.shard, std::move(call),
        [this, state, fan, slice, values, compression](
            const absl::Status& status, v1::PullDenseResponse* response,
            DensePullCall* sent) {
          if (!status.ok()) return fan->Report(status);
          absl::Span<float> out = values.subspan(slice.offset, slice.count);
          uint64_t wire_bytes = response->values().size();
          if (sent->landed) {
            wire_bytes = slice.count * sizeof(float);
          } else if (response->encoded()) {
            absl::Status decoded = DecodePulled(response->values(), out);
            if (!decoded.ok()) {
              return fan->Report(absl::InternalError(absl::StrCat(
                  "shard ", slice.shard, " returned a bad block: ",
                  decoded.message())));
            }
          } else if (response->values().size() != slice.count * sizeof(float)) {
            return fan->Report(absl::InternalError(absl::StrCat(
                "shard ", slice.shard, " returned ", response->values().size(),
                " bytes for ", slice.count, " floats")));
          } else {  // the transport lands every raw answer of this size
            return fan->Report(absl::InternalError(absl::StrCat(
                "shard ", slice.shard, "'s answer did not reach the buffer")));
          }
          compression->CountPull(slice.count * sizeof(float), wire_bytes);
          const bool restarted =
              NoteAnswer(slice.shard, response->server_incarnation(),
                         sent->header.table(), response->version());
          {
            absl::MutexLock lock(&state->mu);
            // Slices of one shard may read different versions; keep the
            // oldest, so tau is never under-reported.
            uint64_t& v = state->info.shard_versions[slice.shard];
            v = std::min(v, response->version());
            state->info.step = std::max(state->info.step, response->step());
            state->info.shard_touched[slice.shard] = true;
            if (restarted) ++state->info.server_incarnation_changed;
          }
          fan->Report(absl::OkStatus());
        });
  }
  return future;
}

std::future<absl::StatusOr<PushResult>> ClientCore::PushDenseAsync(
    absl::string_view table, absl::Span<const float> gradient,
    const PullInfo* basis) {
  return PushDenseImpl(table, gradient, nullptr, basis,
                       /*borrow_gradient=*/false);
}

absl::StatusOr<PushResult> ClientCore::PushDenseWith(absl::string_view table,
                                                     SliceEncoder& encoder,
                                                     const PullInfo* basis) {
  return PushDenseImpl(table, {}, &encoder, basis, /*borrow_gradient=*/true)
      .get();
}

std::future<absl::StatusOr<PushResult>> ClientCore::PushDenseImpl(
    absl::string_view table, absl::Span<const float> gradient,
    SliceEncoder* encoder, const PullInfo* basis, bool borrow_gradient) {
  auto meta = Meta(table);
  if (!meta.ok()) return Ready<PushResult>(meta.status());
  const TableConfig& config = (*meta)->config;
  const uint64_t size = encoder != nullptr ? encoder->size() : gradient.size();
  if (config.kind != TableKind::kDense || size != config.dense_size) {
    return Ready<PushResult>(SizeMismatch(config, size));
  }
  std::string name(table);
  EnsureLeases();
  const std::vector<uint64_t> base = BaseVersions(name, basis);
  if (base.size() != shards_.size()) {
    return Ready<PushResult>(absl::InvalidArgumentError(
        "basis.shard_versions must hold one version per shard"));
  }
  std::shared_ptr<TableCompression> compression = CompressionOf(name);
  const CompressionConfig& compress = compression->config();
  if (encoder != nullptr && compress.accumulate_steps > 1) {
    return Ready<PushResult>(absl::InvalidArgumentError(absl::StrCat(
        "table '", name, "' accumulates gradients (accumulate_steps ",
        compress.accumulate_steps, "): push them from host memory")));
  }
  std::vector<std::pair<uint64_t, uint64_t>> parts;
  parts.reserve((*meta)->slices.size());
  for (const DenseSlice& slice : (*meta)->slices) {
    parts.emplace_back(slice.offset, slice.count);
  }
  // The push holds back its changes to the residual and the accumulation
  // buffer until the shards answer (TableCompression's comment).
  std::unique_ptr<PendingDensePush> pending =
      compression->StartDense(gradient, std::move(parts));
  if (pending == nullptr) {
    compression->CountDeferred();
    PushResult deferred;
    deferred.shards.resize(shards_.size());
    deferred.deferred = true;
    return Ready<PushResult>(absl::OkStatus(), std::move(deferred));
  }
  const float* const caller_gradient = gradient.data();
  gradient = pending->gradient();
  const bool encode = encoder != nullptr ||
                      compress.push.codec != CodecKind::kNone ||
                      compress.error_feedback;
  if (encode) {
    absl::Status encoded = encoder != nullptr
                               ? compression->EncodeDenseWith(*pending, *encoder)
                               : compression->EncodeDense(*pending);
    if (!encoded.ok()) return Ready<PushResult>(encoded);
  }
  struct State {
    absl::Mutex mu;
    PushResult result;
    std::promise<absl::StatusOr<PushResult>> promise;
    // Declared after the TableCompression it points into: destroyed first.
    std::shared_ptr<TableCompression> compression;
    std::unique_ptr<PendingDensePush> pending;
    std::vector<float> gradient_copy;  // PushDenseAsync's own gradient
  };
  auto state = std::make_shared<State>();
  state->result.shards.resize(shards_.size());
  state->compression = compression;
  state->pending = std::move(pending);
  // The slices borrow what they send until every call (each retry and a
  // redo) is done: the encoded blocks and an accumulated sum belong to the
  // pending push; the caller's gradient is borrowed only by a caller that
  // waits for the answer (PushDense), else copied once here.
  if (!encode && !borrow_gradient && gradient.data() == caller_gradient) {
    state->gradient_copy.assign(gradient.begin(), gradient.end());
    gradient = state->gradient_copy;
  }
  auto future = state->promise.get_future();
  std::shared_ptr<const TableMeta> plan = *meta;
  auto fan = std::make_shared<FanIn>(
      plan->slices.size(), [state, plan](absl::Status status) {
        // A part was delivered when its shard's answer to the push (its
        // last slice's) accepted it, whatever the other shards answered:
        // each shard applies its parts whole or not at all. A shard that
        // refused, or gave no answer (an RPC failed after its retries), is
        // taken not to have applied them: their residual and accumulated
        // sum are kept for later pushes.
        std::vector<bool> delivered(plan->slices.size());
        {
          absl::MutexLock lock(&state->mu);
          for (size_t i = 0; i < plan->slices.size(); ++i) {
            delivered[i] = state->result.shards[plan->slices[i].shard].accepted;
          }
        }
        state->pending->Finish(delivered);
        if (!status.ok()) return state->promise.set_value(status);
        state->promise.set_value(std::move(state->result));
      });
  const v1::PushOrigin origin = NextOrigin();
  const uint64_t clock = ClockOf(name);
  // An encoded push leaves the norm to the shards (0 = unknown): the raw
  // gradient's norm is not the norm of what they will decode. A table that
  // does not clip never reads it, so it is not measured.
  const bool clips = plan->config.staleness.clip_norm > 0.0f;
  const double norm_sq = encode || !clips ? 0.0 : SquaredNorm(gradient);
  uint64_t wire_bytes = 0;
  std::vector<std::vector<DensePushCall>> by_shard(shards_.size());
  for (size_t i = 0; i < (*meta)->slices.size(); ++i) {
    const DenseSlice& slice = (*meta)->slices[i];
    DensePushCall call;
    v1::PushDenseRequest& request = call.header;
    request.set_table(name);
    request.set_offset(slice.offset);
    if (encode) {
      call.gradient = state->pending->blocks()[i];
      request.set_encoded(true);
    } else {
      call.gradient = absl::string_view(
          reinterpret_cast<const char*>(gradient.data() + slice.offset),
          slice.count * sizeof(float));
    }
    wire_bytes += call.gradient.size();
    *request.mutable_origin() = origin;
    request.set_base_version(base[slice.shard]);
    request.set_slices_in_push(slice.slices_in_shard);
    request.set_slice_index(slice.index_in_shard);
    request.set_clock(clock);
    request.set_push_norm_sq(norm_sq);
    request.set_ownership_epoch(plan->ownership->epoch());
    by_shard[slice.shard].push_back(std::move(call));
  }
  SendPush<DensePushCall>(
      std::move(by_shard),
      [this, state, name](uint32_t shard, v1::PushResponse* response) {
        NoteAnswer(shard, response->server_incarnation(), name,
                   response->staged() ? 0 : response->new_version());
        absl::MutexLock lock(&state->mu);
        ShardPushResult& r = state->result.shards[shard];
        r.touched = true;
        r.duplicate = r.duplicate || response->duplicate();
        // The push's answer is its last slice's; the others were only
        // kept until then (staged).
        if (!response->staged()) {
          r.accepted = response->accepted();
          r.tau = response->tau();
          r.lr_factor = response->lr_factor();
          r.new_version = response->new_version();
          r.reject_reason = response->reject_reason();
        }
        return absl::OkStatus();
      },
      fan);
  compression->CountPush(size * sizeof(float), wire_bytes);
  return future;
}

}  // namespace taups
