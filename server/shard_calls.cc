#include "server/shard_calls.h"

#include <optional>
#include <vector>

#include "common/aligned_view.h"
#include "common/float_bytes.h"
#include "common/status_macros.h"
#include "common/wire_tensor.h"
#include "wire_convert.h"

namespace taups {
namespace {

// The push's origin, base version, clock and slice position as the store
// takes them (a 0 slice count from an old client means one slice).
template <typename Request>
PushMeta PushMetaOf(const Request& request, uint32_t slices,
                    uint32_t slice_index) {
  PushMeta meta;
  meta.origin = PushOrigin{request.origin().worker_id(),
                           request.origin().worker_incarnation(),
                           request.origin().seq()};
  meta.base_version = request.base_version();
  meta.clock = request.clock();
  meta.slices = std::max<uint32_t>(slices, 1);
  meta.slice_index = slice_index;
  meta.push_norm_sq = request.push_norm_sq();
  meta.ownership_epoch = request.ownership_epoch();
  return meta;
}

// An answered pull's fields besides its values.
template <typename Response>
void SetPullFields(const PullResult& pulled, bool encoded, uint64_t incarnation,
                   uint64_t epoch, Response* response) {
  response->set_encoded(encoded);
  response->set_version(pulled.version);
  response->set_step(pulled.step);
  response->set_server_incarnation(incarnation);
  response->set_ownership_epoch(epoch);
}

// Answers a pull of `floats` values: `read(out)` fills them (and returns
// the store's PullResult). Plain pulls are written straight into the room
// `room` gives (ShardCalls::ValuesRoom; the response's bytes then stay
// empty and *landed is set), else into the response's bytes; compressed
// ones into a scratch vector, then encoded. On error, or when the pull was
// parked (the ticket returned), the response holds no values.
template <typename Response, typename Read>
absl::StatusOr<ParkedPull> AnswerPull(const std::string& table, CodecKind codec,
                        uint32_t bucket_size, uint64_t floats, Read read,
                        uint64_t incarnation, uint64_t epoch,
                        WireTraffic* traffic, Response* response,
                        const ShardCalls::ValuesRoom* room = nullptr,
                        bool* landed = nullptr) {
  if (landed != nullptr) *landed = false;
  std::string* wire = response->mutable_values();
  std::vector<float> plain;
  absl::Span<float> out;
  bool land = false;
  if (codec == CodecKind::kNone && room != nullptr && landed != nullptr) {
    out = room->take(floats);
    land = out.size() == floats;
  }
  if (!land && codec == CodecKind::kNone) {
    wire->resize(floats * sizeof(float));
    out = absl::MakeSpan(reinterpret_cast<float*>(wire->data()), floats);
  } else if (!land) {
    plain.resize(floats);
    out = absl::MakeSpan(plain);
  }
  absl::StatusOr<PullResult> pulled = read(out);
  if (pulled.ok() && pulled->parked.parked()) {
    response->Clear();
    return pulled->parked;
  }
  absl::Status status = pulled.status();
  if (status.ok() && codec != CodecKind::kNone) {
    status = EncodeForPull(plain, codec, bucket_size, wire);
  }
  if (!status.ok()) {
    response->Clear();
    return status;
  }
  if (land) *landed = true;
  traffic->CountPull(table, floats * sizeof(float),
                     land ? floats * sizeof(float) : wire->size());
  SetPullFields(*pulled, codec != CodecKind::kNone, incarnation, epoch,
                response);
  return ParkedPull();
}

}  // namespace

absl::Status ShardCalls::CreateTable(const v1::CreateTableRequest& request,
                                     v1::CreateTableResponse* response) {
  absl::ReaderMutexLock gate(&gate_);
  absl::StatusOr<TableConfig> config = FromWire(request.config());
  if (!config.ok()) return config.status();
  bool created = false;
  absl::StatusOr<TableInfo> info =
      store_->CreateTable(*config, request.exist_ok(), &created);
  if (!info.ok()) return info.status();
  ToWire(*info, response->mutable_info());
  response->set_created(created);
  response->set_server_incarnation(incarnation_);
  return absl::OkStatus();
}

absl::Status ShardCalls::GetTable(const v1::GetTableRequest& request,
                                  v1::GetTableResponse* response) {
  absl::StatusOr<TableInfo> info = store_->GetTable(request.name());
  if (!info.ok()) return info.status();
  ToWire(*info, response->mutable_info());
  response->set_server_incarnation(incarnation_);
  response->set_ownership_epoch(store_->ownership().epoch());
  return absl::OkStatus();
}

absl::Status ShardCalls::PullDense(const v1::PullDenseRequest& request,
                                   absl::Time deadline,
                                   v1::PullDenseResponse* response) {
  return PullDense(request, deadline, nullptr, response).status();
}

absl::Status ShardCalls::PullSparse(const v1::PullSparseRequest& request,
                                    absl::Time deadline,
                                    v1::PullSparseResponse* response) {
  return PullSparse(request, deadline, nullptr, response).status();
}

absl::Status ShardCalls::PullDenseInto(const v1::PullDenseRequest& request,
                                       absl::Time deadline,
                                       absl::Span<float> values, bool* landed,
                                       v1::PullDenseResponse* response) {
  ValuesRoom room;
  room.take = [values](uint64_t floats) {
    return floats == values.size() ? values : absl::Span<float>();
  };
  return PullDense(request, deadline, nullptr, response, &room, landed)
      .status();
}

absl::StatusOr<ParkedPull> ShardCalls::PullDense(
    const v1::PullDenseRequest& request, absl::Time deadline,
    PullWaiters::Wake* park, v1::PullDenseResponse* response,
    const ValuesRoom* room, bool* landed) {
  // A parking pull returns at once, so it may hold the gate; a blocking
  // one (no park) would hold it for as long as it waits.
  std::optional<absl::ReaderMutexLock> gate;
  if (park != nullptr) gate.emplace(&gate_);
  RETURN_IF_ERROR(store_->CheckOwnershipEpoch(request.ownership_epoch()));
  const auto codec = static_cast<CodecKind>(request.pull_codec());
  if (absl::Status ok = CheckPullCodec(codec, request.pull_bucket_size());
      !ok.ok()) {
    return ok;
  }
  absl::StatusOr<uint64_t> floats = store_->DensePullFloats(
      request.table(), request.offset(), request.count());
  if (!floats.ok()) return floats.status();
  RETURN_IF_ERROR(store_->SeatPuller(request.table(), request.worker_id()));
  const PullContext ctx{request.worker_id(), request.clock(), deadline, park,
                        request.ownership_epoch()};
  if (codec == CodecKind::kNone && room != nullptr && room->lend != nullptr &&
      landed != nullptr && *floats >= room->lend_min_floats) {
    *landed = false;
    absl::StatusOr<PullResult> pulled = store_->LendDense(
        request.table(), request.offset(), *floats, ctx, room->lend);
    if (!pulled.ok() || pulled->parked.parked()) {
      response->Clear();
      if (!pulled.ok()) return pulled.status();
      return pulled->parked;
    }
    *landed = true;
    const uint64_t bytes = *floats * sizeof(float);
    traffic_.CountPull(request.table(), bytes, bytes);
    SetPullFields(*pulled, /*encoded=*/false, incarnation_,
                  store_->ownership().epoch(), response);
    return ParkedPull();
  }
  return AnswerPull(
      request.table(), codec, request.pull_bucket_size(), *floats,
      [&](absl::Span<float> out) {
        return store_->PullDense(request.table(), request.offset(), out, ctx);
      },
      incarnation_, store_->ownership().epoch(), &traffic_, response, room,
      landed);
}

absl::StatusOr<ParkedPull> ShardCalls::PullSparse(
    const v1::PullSparseRequest& request, absl::Time deadline,
    PullWaiters::Wake* park, v1::PullSparseResponse* response,
    const ValuesRoom* room, bool* landed) {
  std::optional<absl::ReaderMutexLock> gate;
  if (park != nullptr) gate.emplace(&gate_);
  RETURN_IF_ERROR(store_->CheckOwnershipEpoch(request.ownership_epoch()));
  const auto codec = static_cast<CodecKind>(request.pull_codec());
  if (absl::Status ok = CheckPullCodec(codec, request.pull_bucket_size());
      !ok.ok()) {
    return ok;
  }
  std::vector<uint64_t> key_copy;
  absl::StatusOr<absl::Span<const uint64_t>> keys =
      ViewAs<uint64_t>(request.keys(), &key_copy, "PullSparse keys");
  if (!keys.ok()) return keys.status();
  absl::StatusOr<uint64_t> floats = store_->SparsePullFloats(
      request.table(), keys->size(), request.with_row_versions());
  if (!floats.ok()) return floats.status();
  RETURN_IF_ERROR(store_->SeatPuller(request.table(), request.worker_id()));
  // Row versions land in their own bytes field, beside the values.
  std::string row_bytes;
  absl::Span<uint64_t> row_versions;
  if (request.with_row_versions()) {
    row_bytes.resize(keys->size() * sizeof(uint64_t));
    row_versions = absl::MakeSpan(reinterpret_cast<uint64_t*>(row_bytes.data()),
                                  keys->size());
  }
  const PullContext ctx{request.worker_id(), request.clock(), deadline, park,
                        request.ownership_epoch()};
  absl::StatusOr<ParkedPull> answered = AnswerPull(
      request.table(), codec, request.pull_bucket_size(), *floats,
      [&](absl::Span<float> out) {
        return store_->PullSparse(request.table(), *keys, out, ctx,
                                  row_versions);
      },
      incarnation_, store_->ownership().epoch(), &traffic_, response, room,
      landed);
  if (answered.ok() && !answered->parked() && request.with_row_versions()) {
    *response->mutable_row_versions() = std::move(row_bytes);
  }
  return answered;
}

absl::Status ShardCalls::PushDense(const v1::PushDenseRequest& request,
                                   v1::PushResponse* response) {
  return PushDense(request, request.gradient(), response);
}

absl::Status ShardCalls::PushDense(const v1::PushDenseRequest& request,
                                   absl::string_view gradient_bytes,
                                   v1::PushResponse* response,
                                   std::shared_ptr<const void> holder,
                                   float bytes_max_abs) {
  absl::ReaderMutexLock gate(&gate_);
  // Before the gradient is read: its size is checked against the range this
  // shard's map gives it.
  RETURN_IF_ERROR(store_->CheckOwnershipEpoch(request.ownership_epoch()));
  const PushMeta meta =
      PushMetaOf(request, request.slices_in_push(), request.slice_index());
  std::vector<float> decoded;
  absl::StatusOr<absl::Span<const float>> gradient = store_->ReadGradient(
      request.table(), TableKind::kDense, 0, gradient_bytes,
      request.encoded(), &decoded, "PushDense gradient");
  if (!gradient.ok()) {
    if (request.encoded() && !absl::IsNotFound(gradient.status())) {
      traffic_.CountBadBlock(request.table());
    }
    // The push's other slices (staged, or still to come) are refused too.
    store_->RefusePush(request.table(), meta, gradient.status());
    return gradient.status();
  }
  // Floats decoded or realigned into `decoded` get a holder of their own
  // (moving the vector keeps its buffer, so the view stays valid).
  if (holder != nullptr && !decoded.empty() &&
      gradient->data() == decoded.data()) {
    holder = std::make_shared<const std::vector<float>>(std::move(decoded));
  }
  // A decoded gradient's floats are not the bytes that were measured.
  absl::StatusOr<PushOutcome> outcome = store_->PushDense(
      request.table(), request.offset(), *gradient, meta, std::move(holder),
      request.encoded() ? -1.0f : bytes_max_abs);
  if (!outcome.ok()) return outcome.status();
  AnswerPush(request, gradient->size(), gradient_bytes.size(), *outcome,
             response);
  return absl::OkStatus();
}

absl::Status ShardCalls::PushDense(const v1::PushDenseRequest& request,
                                   const FloatPieces& gradient,
                                   v1::PushResponse* response,
                                   std::shared_ptr<const void> holder) {
  absl::ReaderMutexLock gate(&gate_);
  RETURN_IF_ERROR(store_->CheckOwnershipEpoch(request.ownership_epoch()));
  const PushMeta meta =
      PushMetaOf(request, request.slices_in_push(), request.slice_index());
  // What ReadGradient checks of raw bytes in one view (the table's kind is
  // checked by the store).
  if (absl::Status whole =
          CheckPackedSize<float>(gradient.bytes(), "PushDense gradient");
      !whole.ok()) {
    store_->RefusePush(request.table(), meta, whole);
    return whole;
  }
  absl::StatusOr<PushOutcome> outcome = store_->PushDense(
      request.table(), request.offset(), gradient, meta, std::move(holder));
  if (!outcome.ok()) return outcome.status();
  AnswerPush(request, gradient.floats(), gradient.bytes(), *outcome, response);
  return absl::OkStatus();
}

void ShardCalls::AnswerPush(const v1::PushDenseRequest& request,
                            uint64_t floats, uint64_t wire_bytes,
                            const PushOutcome& outcome,
                            v1::PushResponse* response) {
  traffic_.CountPush(request.table(), floats * sizeof(float), wire_bytes,
                     request.encoded());
  ToWire(outcome, response);
  response->set_server_incarnation(incarnation_);
  response->set_ownership_epoch(store_->ownership().epoch());
}

absl::Status ShardCalls::PushSparse(const v1::PushSparseRequest& request,
                                    v1::PushResponse* response) {
  return PushSparse(request, request.gradients(), response);
}

absl::Status ShardCalls::PushSparse(const v1::PushSparseRequest& request,
                                    absl::string_view gradient_bytes,
                                    v1::PushResponse* response,
                                    float bytes_max_abs) {
  absl::ReaderMutexLock gate(&gate_);
  RETURN_IF_ERROR(store_->CheckOwnershipEpoch(request.ownership_epoch()));
  std::vector<uint64_t> key_copy, base_copy;
  std::vector<float> decoded;
  absl::StatusOr<absl::Span<const uint64_t>> keys =
      ViewAs<uint64_t>(request.keys(), &key_copy, "PushSparse keys");
  if (!keys.ok()) return keys.status();
  absl::StatusOr<absl::Span<const float>> gradients = store_->ReadGradient(
      request.table(), TableKind::kSparse, keys->size(), gradient_bytes,
      request.encoded(), &decoded, "PushSparse gradients");
  if (!gradients.ok()) {
    if (request.encoded() && !absl::IsNotFound(gradients.status())) {
      traffic_.CountBadBlock(request.table());
    }
    return gradients.status();
  }
  absl::StatusOr<absl::Span<const uint64_t>> row_bases =
      ViewAs<uint64_t>(request.row_base_versions(), &base_copy,
                       "PushSparse row_base_versions");
  if (!row_bases.ok()) return row_bases.status();
  PushMeta meta = PushMetaOf(request, 1, 0);
  meta.row_base_versions = *row_bases;
  // A decoded gradient's floats are not the bytes that were measured.
  absl::StatusOr<PushOutcome> outcome =
      store_->PushSparse(request.table(), *keys, *gradients, meta,
                         request.encoded() ? -1.0f : bytes_max_abs);
  if (!outcome.ok()) return outcome.status();
  traffic_.CountPush(request.table(), gradients->size() * sizeof(float),
                     gradient_bytes.size(), request.encoded());
  ToWire(*outcome, response);
  if (!row_bases->empty()) {
    RowTauToWire(*outcome, request.return_row_taus(), response);
  }
  response->set_server_incarnation(incarnation_);
  response->set_ownership_epoch(store_->ownership().epoch());
  return absl::OkStatus();
}

absl::Status ShardCalls::Register(const v1::RegisterRequest& request,
                                  v1::RegisterResponse* response) {
  absl::ReaderMutexLock gate(&gate_);
  if (absl::Status ok =
          store_->CheckRegistration(request.worker_id(), request.lease_s());
      !ok.ok()) {
    return ok;
  }
  const uint64_t max_seen = store_->limits().max_tables;
  if (static_cast<uint64_t>(request.seen_before_restart_size()) > max_seen) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Register: seen_before_restart lists ", request.seen_before_restart_size(),
        " tables; at most ", max_seen, " (--max_tables)"));
  }
  for (const v1::TableVersionSeen& seen : request.seen_before_restart()) {
    store_->restore_losses().Report(request.worker_id(), seen.table(),
                                     seen.version());
  }
  const Registration joined =
      store_->Register(request.worker_id(), request.worker_incarnation(),
                       absl::Seconds(request.lease_s()));
  response->set_lease_s(absl::ToDoubleSeconds(joined.lease));
  response->set_heartbeat_every_s(absl::ToDoubleSeconds(joined.heartbeat_every));
  response->mutable_start_clock()->insert(joined.start_clock.begin(),
                                          joined.start_clock.end());
  response->set_server_incarnation(incarnation_);
  return absl::OkStatus();
}

absl::Status ShardCalls::Heartbeat(const v1::HeartbeatRequest& request,
                                   v1::HeartbeatResponse* response) {
  absl::ReaderMutexLock gate(&gate_);
  response->set_known(
      store_->Heartbeat(request.worker_id(), request.worker_incarnation()));
  response->set_server_incarnation(incarnation_);
  return absl::OkStatus();
}

absl::Status ShardCalls::Leave(const v1::LeaveRequest& request,
                               v1::LeaveResponse* response) {
  absl::ReaderMutexLock gate(&gate_);
  response->set_known(
      store_->Leave(request.worker_id(), request.worker_incarnation()));
  response->set_server_incarnation(incarnation_);
  return absl::OkStatus();
}

absl::Status ShardCalls::SetConsistency(const v1::SetConsistencyRequest& request,
                                        v1::SetConsistencyResponse* response) {
  absl::ReaderMutexLock gate(&gate_);
  absl::StatusOr<ConsistencyConfig> consistency = FromWire(request.consistency());
  if (!consistency.ok()) return consistency.status();
  absl::StatusOr<StalenessConfig> staleness = FromWire(request.staleness());
  if (!staleness.ok()) return staleness.status();
  absl::StatusOr<TableInfo> info =
      store_->SetConsistency(request.table(), *consistency, *staleness);
  if (!info.ok()) return info.status();
  ToWire(*info, response->mutable_info());
  return absl::OkStatus();
}

absl::Status ShardCalls::Stats(const v1::StatsRequest& request,
                               v1::StatsResponse* response) {
  if (!request.table().empty()) {
    absl::StatusOr<TableInfo> exists = store_->GetTable(request.table());
    if (!exists.ok()) return exists.status();
  }
  ToWire(store_->Stats(request.table()),
         [this](absl::string_view table) { return traffic_.Of(table); },
         absl::Now(), response);
  response->set_server_incarnation(incarnation_);
  return absl::OkStatus();
}

absl::Status ShardCalls::DropTable(const v1::DropTableRequest& request,
                                   v1::DropTableResponse* response) {
  absl::ReaderMutexLock gate(&gate_);
  absl::StatusOr<uint64_t> freed = store_->DropTable(request.name());
  if (!freed.ok()) return freed.status();
  response->set_shard_index(store_->shard_index());
  response->set_freed_bytes(*freed);
  response->set_server_incarnation(incarnation_);
  return absl::OkStatus();
}

}  // namespace taups
