#include "server/grpc_service.h"

#include <vector>

#include "common/aligned_view.h"
#include "wire_convert.h"

namespace taups {
namespace {

void InfoToWire(const TableInfo& info, v1::TableInfo* wire) {
  ToWire(info.config, wire->mutable_config());
  wire->set_shard_index(info.shard_index);
  wire->set_num_shards(info.num_shards);
  wire->set_range_begin(info.range.begin);
  wire->set_range_end(info.range.end);
  wire->set_version(info.version);
  wire->set_sparse_rows(info.sparse_rows);
}

PushOrigin OriginFromWire(const v1::PushOrigin& wire) {
  return PushOrigin{wire.worker_id(), wire.worker_incarnation(), wire.seq()};
}

void OutcomeToWire(const PushOutcome& outcome, uint64_t incarnation,
                   v1::PushResponse* wire) {
  wire->set_accepted(outcome.accepted);
  wire->set_tau(outcome.tau);
  wire->set_lr_factor(outcome.lr_factor);
  wire->set_new_version(outcome.new_version);
  wire->set_reject_reason(outcome.reject_reason);
  wire->set_server_incarnation(incarnation);
}

// Pull responses are written straight into the response's bytes field.
absl::Span<float> ResizeFloats(std::string* bytes, size_t count) {
  bytes->resize(count * sizeof(float));
  return absl::MakeSpan(reinterpret_cast<float*>(bytes->data()), count);
}

}  // namespace

ParameterServerService::ParameterServerService(ParameterStore* store,
                                               uint64_t incarnation)
    : store_(store), incarnation_(incarnation) {}

grpc::Status ParameterServerService::CreateTable(
    grpc::ServerContext*, const v1::CreateTableRequest* request,
    v1::CreateTableResponse* response) {
  absl::StatusOr<TableConfig> config = FromWire(request->config());
  if (!config.ok()) return ToGrpcStatus(config.status());
  bool created = false;
  absl::StatusOr<TableInfo> info =
      store_->CreateTable(*config, request->exist_ok(), &created);
  if (!info.ok()) return ToGrpcStatus(info.status());
  InfoToWire(*info, response->mutable_info());
  response->set_created(created);
  response->set_server_incarnation(incarnation_);
  return grpc::Status::OK;
}

grpc::Status ParameterServerService::GetTable(grpc::ServerContext*,
                                              const v1::GetTableRequest* request,
                                              v1::GetTableResponse* response) {
  absl::StatusOr<TableInfo> info = store_->GetTable(request->name());
  if (!info.ok()) return ToGrpcStatus(info.status());
  InfoToWire(*info, response->mutable_info());
  response->set_server_incarnation(incarnation_);
  return grpc::Status::OK;
}

grpc::Status ParameterServerService::PullDense(
    grpc::ServerContext*, const v1::PullDenseRequest* request,
    v1::PullDenseResponse* response) {
  if (request->count() == 0 || request->count() > kMaxDenseTableSize) {
    return ToGrpcStatus(absl::InvalidArgumentError(
        "PullDense: count must be between 1 and the table size"));
  }
  absl::StatusOr<TableInfo> info = store_->GetTable(request->table());
  if (!info.ok()) return ToGrpcStatus(info.status());
  // Bound the allocation by what this shard holds before making it.
  if (info->config.kind != TableKind::kDense) {
    return ToGrpcStatus(
        store_->PullDense(request->table(), request->offset(), {}).status());
  }
  if (request->count() > info->range.size()) {
    return ToGrpcStatus(absl::OutOfRangeError(
        "PullDense: count exceeds this shard's range of the table"));
  }
  absl::Span<float> out =
      ResizeFloats(response->mutable_values(), request->count());
  absl::StatusOr<uint64_t> version =
      store_->PullDense(request->table(), request->offset(), out);
  if (!version.ok()) return ToGrpcStatus(version.status());
  response->set_version(*version);
  response->set_server_incarnation(incarnation_);
  return grpc::Status::OK;
}

grpc::Status ParameterServerService::PushDense(
    grpc::ServerContext*, const v1::PushDenseRequest* request,
    v1::PushResponse* response) {
  std::vector<float> scratch;
  absl::StatusOr<absl::Span<const float>> gradient =
      ViewAs<float>(request->gradient(), &scratch, "PushDense gradient");
  if (!gradient.ok()) return ToGrpcStatus(gradient.status());
  absl::StatusOr<PushOutcome> outcome = store_->PushDense(
      request->table(), request->offset(), *gradient,
      OriginFromWire(request->origin()), request->base_version(),
      request->slices_in_push());
  if (!outcome.ok()) return ToGrpcStatus(outcome.status());
  OutcomeToWire(*outcome, incarnation_, response);
  return grpc::Status::OK;
}

grpc::Status ParameterServerService::PullSparse(
    grpc::ServerContext*, const v1::PullSparseRequest* request,
    v1::PullSparseResponse* response) {
  std::vector<uint64_t> scratch;
  absl::StatusOr<absl::Span<const uint64_t>> keys =
      ViewAs<uint64_t>(request->keys(), &scratch, "PullSparse keys");
  if (!keys.ok()) return ToGrpcStatus(keys.status());
  absl::StatusOr<TableInfo> info = store_->GetTable(request->table());
  if (!info.ok()) return ToGrpcStatus(info.status());
  if (keys->size() > kMaxKeysPerRequest) {
    return ToGrpcStatus(absl::InvalidArgumentError(
        "PullSparse: too many keys in one request"));
  }
  absl::Span<float> out = ResizeFloats(response->mutable_values(),
                                       keys->size() * info->config.dim);
  absl::StatusOr<uint64_t> version =
      store_->PullSparse(request->table(), *keys, out);
  if (!version.ok()) {
    response->clear_values();
    return ToGrpcStatus(version.status());
  }
  response->set_version(*version);
  response->set_server_incarnation(incarnation_);
  return grpc::Status::OK;
}

grpc::Status ParameterServerService::PushSparse(
    grpc::ServerContext*, const v1::PushSparseRequest* request,
    v1::PushResponse* response) {
  std::vector<uint64_t> key_scratch;
  std::vector<float> gradient_scratch;
  absl::StatusOr<absl::Span<const uint64_t>> keys =
      ViewAs<uint64_t>(request->keys(), &key_scratch, "PushSparse keys");
  if (!keys.ok()) return ToGrpcStatus(keys.status());
  absl::StatusOr<absl::Span<const float>> gradients = ViewAs<float>(
      request->gradients(), &gradient_scratch, "PushSparse gradients");
  if (!gradients.ok()) return ToGrpcStatus(gradients.status());
  absl::StatusOr<PushOutcome> outcome = store_->PushSparse(
      request->table(), *keys, *gradients, OriginFromWire(request->origin()),
      request->base_version());
  if (!outcome.ok()) return ToGrpcStatus(outcome.status());
  OutcomeToWire(*outcome, incarnation_, response);
  return grpc::Status::OK;
}

}  // namespace taups
