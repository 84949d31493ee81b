#include "grpc_status_convert.h"

#include <string>

#include "common/refusal.h"
#include "refusal.pb.h"

namespace taups {
namespace {

// The status details for `status`'s refusal reason; empty without one.
std::string DetailsOf(const absl::Status& status) {
  const std::optional<int> number = RefusalNumberOf(status);
  if (!number || !v1::RefusalReason_IsValid(*number)) return "";
  v1::RefusalDetail detail;
  detail.set_reason(static_cast<v1::RefusalReason>(*number));
  v1::RpcStatus details;
  details.set_code(static_cast<int>(status.code()));
  details.set_message(std::string(status.message()));
  v1::StatusDetail* any = details.add_details();
  any->set_type_url(kRefusalPayloadUrl);
  any->set_value(detail.SerializeAsString());
  return details.SerializeAsString();
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()), DetailsOf(status));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  absl::Status out(static_cast<absl::StatusCode>(status.error_code()),
                   status.error_message());
  v1::RpcStatus details;
  if (status.error_details().empty() || !details.ParseFromString(status.error_details())) {
    return out;
  }
  for (const v1::StatusDetail& any : details.details()) {
    v1::RefusalDetail detail;
    if (any.type_url() != kRefusalPayloadUrl || !detail.ParseFromString(any.value())) {
      continue;
    }
    out = WithRefusal(std::move(out), static_cast<Refusal>(detail.reason()));
  }
  return out;
}

}  // namespace taups
