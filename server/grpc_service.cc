#include "server/grpc_service.h"

#include <cmath>
#include <vector>

#include "common/aligned_view.h"
#include "common/wire_tensor.h"
#include "server/grpc_auth.h"
#include "wire_convert.h"

// A handler's first line: refuse a caller the auth gate does not allow.
#define RETURN_IF_DENIED(check)                       \
  if (grpc::Status denied = (check); !denied.ok()) { \
    return denied;                                    \
  }

namespace taups {
namespace {

PushOrigin OriginFromWire(const v1::PushOrigin& wire) {
  return PushOrigin{wire.worker_id(), wire.worker_incarnation(), wire.seq()};
}

template <typename Request>
PushMeta MetaFromWire(const Request& request, uint32_t slices,
                      uint32_t slice_index) {
  PushMeta meta;
  meta.origin = OriginFromWire(request.origin());
  meta.base_version = request.base_version();
  meta.clock = request.clock();
  meta.slices = slices == 0 ? 1 : slices;
  meta.slice_index = slice_index;
  meta.push_norm_sq = request.push_norm_sq();
  return meta;
}

// Pulls that wait for their policy wait at most until the call's deadline.
PullContext PullContextOf(const grpc::ServerContext& context, uint32_t worker,
                          uint64_t clock) {
  PullContext ctx;
  ctx.worker = worker;
  ctx.clock = clock;
  ctx.deadline = absl::FromChrono(context.deadline());
  return ctx;
}

// Pull responses are written straight into the response's bytes field.
absl::Span<float> ResizeFloats(std::string* bytes, size_t count) {
  bytes->resize(count * sizeof(float));
  return absl::MakeSpan(reinterpret_cast<float*>(bytes->data()), count);
}

absl::Span<uint64_t> ResizeUint64s(std::string* bytes, size_t count) {
  bytes->resize(count * sizeof(uint64_t));
  return absl::MakeSpan(reinterpret_cast<uint64_t*>(bytes->data()), count);
}

// Where a pull's values land: straight in the response's bytes, or, for a
// compressed pull, in a scratch vector that Finish() encodes into them.
class PullBuffer {
 public:
  PullBuffer(std::string* wire, CodecKind codec, uint32_t bucket_size,
             size_t count)
      : wire_(wire), codec_(codec), bucket_size_(bucket_size) {
    if (codec == CodecKind::kNone) {
      floats_ = ResizeFloats(wire, count);
    } else {
      plain_.resize(count);
      floats_ = absl::MakeSpan(plain_);
    }
  }
  absl::Span<float> floats() const { return floats_; }
  bool encoded() const { return codec_ != CodecKind::kNone; }
  absl::Status Finish() {
    if (!encoded()) return absl::OkStatus();
    return EncodeForPull(plain_, codec_, bucket_size_, wire_);
  }

 private:
  std::string* const wire_;
  const CodecKind codec_;
  const uint32_t bucket_size_;
  std::vector<float> plain_;
  absl::Span<float> floats_;
};

}  // namespace

ParameterServerService::ParameterServerService(ParameterStore* store,
                                               uint64_t incarnation,
                                               const AuthGate* auth)
    : store_(store), incarnation_(incarnation), auth_(auth) {}

grpc::Status ParameterServerService::Allow(
    const grpc::ServerContext* context, Rpc method,
    std::optional<uint32_t> worker_id) const {
  if (auth_ == nullptr) return grpc::Status::OK;
  return auth_->Check(*context, method, worker_id);
}

grpc::Status ParameterServerService::CreateTable(
    grpc::ServerContext* context, const v1::CreateTableRequest* request,
    v1::CreateTableResponse* response) {
  RETURN_IF_DENIED(Allow(context, Rpc::kCreateTable));
  absl::StatusOr<TableConfig> config = FromWire(request->config());
  if (!config.ok()) return ToGrpcStatus(config.status());
  bool created = false;
  absl::StatusOr<TableInfo> info =
      store_->CreateTable(*config, request->exist_ok(), &created);
  if (!info.ok()) return ToGrpcStatus(info.status());
  ToWire(*info, response->mutable_info());
  response->set_created(created);
  response->set_server_incarnation(incarnation_);
  return grpc::Status::OK;
}

grpc::Status ParameterServerService::GetTable(grpc::ServerContext* context,
                                              const v1::GetTableRequest* request,
                                              v1::GetTableResponse* response) {
  RETURN_IF_DENIED(Allow(context, Rpc::kGetTable));
  absl::StatusOr<TableInfo> info = store_->GetTable(request->name());
  if (!info.ok()) return ToGrpcStatus(info.status());
  ToWire(*info, response->mutable_info());
  response->set_server_incarnation(incarnation_);
  return grpc::Status::OK;
}

grpc::Status ParameterServerService::PullDense(
    grpc::ServerContext* context, const v1::PullDenseRequest* request,
    v1::PullDenseResponse* response) {
  RETURN_IF_DENIED(Allow(context, Rpc::kPullDense, request->worker_id()));
  const CodecKind codec = static_cast<CodecKind>(request->pull_codec());
  absl::Status codec_ok = CheckPullCodec(codec, request->pull_bucket_size());
  if (!codec_ok.ok()) return ToGrpcStatus(codec_ok);
  // Sized by the store, against its limits, before anything is allocated.
  absl::StatusOr<uint64_t> floats = store_->DensePullFloats(
      request->table(), request->offset(), request->count());
  if (!floats.ok()) return ToGrpcStatus(floats.status());
  PullBuffer out(response->mutable_values(), codec, request->pull_bucket_size(),
                 *floats);
  absl::StatusOr<PullResult> pulled = store_->PullDense(
      request->table(), request->offset(), out.floats(),
      PullContextOf(*context, request->worker_id(), request->clock()));
  absl::Status finished = pulled.ok() ? out.Finish() : pulled.status();
  if (!finished.ok()) {
    response->clear_values();
    return ToGrpcStatus(finished);
  }
  traffic_.CountPull(request->table(), *floats * sizeof(float),
                     response->values().size());
  response->set_encoded(out.encoded());
  response->set_version(pulled->version);
  response->set_step(pulled->step);
  response->set_server_incarnation(incarnation_);
  return grpc::Status::OK;
}

grpc::Status ParameterServerService::PushDense(
    grpc::ServerContext* context, const v1::PushDenseRequest* request,
    v1::PushResponse* response) {
  RETURN_IF_DENIED(Allow(context, Rpc::kPushDense, request->origin().worker_id()));
  std::vector<float> scratch;
  const PushMeta meta = MetaFromWire(*request, request->slices_in_push(),
                                     request->slice_index());
  absl::StatusOr<absl::Span<const float>> gradient = store_->ReadGradient(
      request->table(), TableKind::kDense, 0, request->gradient(),
      request->encoded(), &scratch, "PushDense gradient");
  if (!gradient.ok()) {
    if (request->encoded() && !absl::IsNotFound(gradient.status())) {
      traffic_.CountBadBlock(request->table());  // of a table that exists
    }
    store_->RefusePush(request->table(), meta, gradient.status());
    return ToGrpcStatus(gradient.status());
  }
  absl::StatusOr<PushOutcome> outcome =
      store_->PushDense(request->table(), request->offset(), *gradient, meta);
  if (!outcome.ok()) return ToGrpcStatus(outcome.status());
  traffic_.CountPush(request->table(), gradient->size() * sizeof(float),
                     request->gradient().size(), request->encoded());
  ToWire(*outcome, response);
  response->set_server_incarnation(incarnation_);
  return grpc::Status::OK;
}

grpc::Status ParameterServerService::PullSparse(
    grpc::ServerContext* context, const v1::PullSparseRequest* request,
    v1::PullSparseResponse* response) {
  RETURN_IF_DENIED(Allow(context, Rpc::kPullSparse, request->worker_id()));
  const CodecKind codec = static_cast<CodecKind>(request->pull_codec());
  absl::Status codec_ok = CheckPullCodec(codec, request->pull_bucket_size());
  if (!codec_ok.ok()) return ToGrpcStatus(codec_ok);
  std::vector<uint64_t> scratch;
  absl::StatusOr<absl::Span<const uint64_t>> keys =
      ViewAs<uint64_t>(request->keys(), &scratch, "PullSparse keys");
  if (!keys.ok()) return ToGrpcStatus(keys.status());
  // Sized by the store, against its limits, before anything is allocated.
  absl::StatusOr<uint64_t> floats = store_->SparsePullFloats(
      request->table(), keys->size(), request->with_row_versions());
  if (!floats.ok()) return ToGrpcStatus(floats.status());
  PullBuffer out(response->mutable_values(), codec, request->pull_bucket_size(),
                 *floats);
  absl::Span<uint64_t> row_versions;
  if (request->with_row_versions()) {
    row_versions = ResizeUint64s(response->mutable_row_versions(), keys->size());
  }
  absl::StatusOr<PullResult> pulled = store_->PullSparse(
      request->table(), *keys, out.floats(),
      PullContextOf(*context, request->worker_id(), request->clock()),
      row_versions);
  absl::Status finished = pulled.ok() ? out.Finish() : pulled.status();
  if (!finished.ok()) {
    response->clear_values();
    response->clear_row_versions();
    return ToGrpcStatus(finished);
  }
  traffic_.CountPull(request->table(), *floats * sizeof(float),
                     response->values().size());
  response->set_encoded(out.encoded());
  response->set_version(pulled->version);
  response->set_step(pulled->step);
  response->set_server_incarnation(incarnation_);
  return grpc::Status::OK;
}

grpc::Status ParameterServerService::PushSparse(
    grpc::ServerContext* context, const v1::PushSparseRequest* request,
    v1::PushResponse* response) {
  RETURN_IF_DENIED(Allow(context, Rpc::kPushSparse, request->origin().worker_id()));
  std::vector<uint64_t> key_scratch, base_scratch;
  std::vector<float> gradient_scratch;
  absl::StatusOr<absl::Span<const uint64_t>> keys =
      ViewAs<uint64_t>(request->keys(), &key_scratch, "PushSparse keys");
  if (!keys.ok()) return ToGrpcStatus(keys.status());
  absl::StatusOr<absl::Span<const float>> gradients = store_->ReadGradient(
      request->table(), TableKind::kSparse, keys->size(), request->gradients(),
      request->encoded(), &gradient_scratch, "PushSparse gradients");
  if (!gradients.ok()) {
    if (request->encoded() && !absl::IsNotFound(gradients.status())) {
      traffic_.CountBadBlock(request->table());  // of a table that exists
    }
    return ToGrpcStatus(gradients.status());
  }
  absl::StatusOr<absl::Span<const uint64_t>> row_bases = ViewAs<uint64_t>(
      request->row_base_versions(), &base_scratch, "PushSparse row_base_versions");
  if (!row_bases.ok()) return ToGrpcStatus(row_bases.status());
  PushMeta meta = MetaFromWire(*request, 1, 0);
  meta.row_base_versions = *row_bases;
  absl::StatusOr<PushOutcome> outcome =
      store_->PushSparse(request->table(), *keys, *gradients, meta);
  if (!outcome.ok()) return ToGrpcStatus(outcome.status());
  traffic_.CountPush(request->table(), gradients->size() * sizeof(float),
                     request->gradients().size(), request->encoded());
  ToWire(*outcome, response);
  response->set_server_incarnation(incarnation_);
  if (!row_bases->empty()) {
    RowTauToWire(*outcome, request->return_row_taus(), response);
  }
  return grpc::Status::OK;
}

grpc::Status ParameterServerService::Register(grpc::ServerContext* context,
                                              const v1::RegisterRequest* request,
                                              v1::RegisterResponse* response) {
  RETURN_IF_DENIED(Allow(context, Rpc::kRegister, request->worker_id()));
  absl::Status valid =
      store_->CheckRegistration(request->worker_id(), request->lease_s());
  if (!valid.ok()) return ToGrpcStatus(valid);
  const Registration registration =
      store_->Register(request->worker_id(), request->worker_incarnation(),
                       absl::Seconds(request->lease_s()));
  response->set_lease_s(absl::ToDoubleSeconds(registration.lease));
  response->set_heartbeat_every_s(
      absl::ToDoubleSeconds(registration.heartbeat_every));
  response->set_server_incarnation(incarnation_);
  for (const auto& [table, clock] : registration.start_clock) {
    (*response->mutable_start_clock())[table] = clock;
  }
  return grpc::Status::OK;
}

grpc::Status ParameterServerService::Leave(grpc::ServerContext* context,
                                           const v1::LeaveRequest* request,
                                           v1::LeaveResponse* response) {
  RETURN_IF_DENIED(Allow(context, Rpc::kLeave, request->worker_id()));
  response->set_known(
      store_->Leave(request->worker_id(), request->worker_incarnation()));
  response->set_server_incarnation(incarnation_);
  return grpc::Status::OK;
}

grpc::Status ParameterServerService::Heartbeat(
    grpc::ServerContext* context, const v1::HeartbeatRequest* request,
    v1::HeartbeatResponse* response) {
  RETURN_IF_DENIED(Allow(context, Rpc::kHeartbeat, request->worker_id()));
  response->set_known(store_->Heartbeat(request->worker_id(),
                                        request->worker_incarnation()));
  response->set_server_incarnation(incarnation_);
  return grpc::Status::OK;
}

grpc::Status ParameterServerService::SetConsistency(
    grpc::ServerContext* context, const v1::SetConsistencyRequest* request,
    v1::SetConsistencyResponse* response) {
  RETURN_IF_DENIED(Allow(context, Rpc::kSetConsistency));
  absl::StatusOr<ConsistencyConfig> consistency =
      FromWire(request->consistency());
  if (!consistency.ok()) return ToGrpcStatus(consistency.status());
  absl::StatusOr<StalenessConfig> staleness = FromWire(request->staleness());
  if (!staleness.ok()) return ToGrpcStatus(staleness.status());
  absl::StatusOr<TableInfo> info =
      store_->SetConsistency(request->table(), *consistency, *staleness);
  if (!info.ok()) return ToGrpcStatus(info.status());
  ToWire(*info, response->mutable_info());
  return grpc::Status::OK;
}

grpc::Status ParameterServerService::Stats(grpc::ServerContext* context,
                                           const v1::StatsRequest* request,
                                           v1::StatsResponse* response) {
  RETURN_IF_DENIED(Allow(context, Rpc::kStats));
  if (!request->table().empty()) {
    absl::StatusOr<TableInfo> exists = store_->GetTable(request->table());
    if (!exists.ok()) return ToGrpcStatus(exists.status());
  }
  ToWire(store_->Stats(request->table()),
         [this](absl::string_view table) { return traffic_.Of(table); },
         absl::Now(), response);
  response->set_server_incarnation(incarnation_);
  return grpc::Status::OK;
}

grpc::Status ParameterServerService::DropTable(grpc::ServerContext* context,
                                               const v1::DropTableRequest* request,
                                               v1::DropTableResponse* response) {
  RETURN_IF_DENIED(Allow(context, Rpc::kDropTable));
  absl::StatusOr<uint64_t> freed = store_->DropTable(request->name());
  if (!freed.ok()) return ToGrpcStatus(freed.status());
  response->set_shard_index(store_->shard_index());
  response->set_freed_bytes(*freed);
  response->set_server_incarnation(incarnation_);
  return grpc::Status::OK;
}

}  // namespace taups
