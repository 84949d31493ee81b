#include "server/grpc_auth.h"

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "wire_convert.h"

namespace taups {
namespace {

constexpr char kAuthorizationKey[] = "authorization";
constexpr char kBearerPrefix[] = "Bearer ";

absl::string_view View(const grpc::string_ref& ref) {
  return absl::string_view(ref.data(), ref.size());
}

// A client certificate's common name or subject alternative names, mapped
// by the table's "cert" lines. The certificate's properties belong to the
// connection, which is the certificate's scope.
const Principal* FromCertificate(const PrincipalTable& table,
                                 const grpc::AuthContext& context) {
  for (const char* property :
       {"x509_common_name", "x509_subject_alternative_name"}) {
    for (const grpc::string_ref& name : context.FindPropertyValues(property)) {
      const Principal* principal = table.FindByCertName(View(name));
      if (principal != nullptr) return principal;
    }
  }
  return nullptr;
}

// The principal of one call's "authorization" value: UNAUTHENTICATED when
// it is not "Bearer <token>" or the token is unknown.
absl::StatusOr<const Principal*> FromBearer(const PrincipalTable& table,
                                            absl::string_view value) {
  if (!absl::StartsWith(value, kBearerPrefix)) {
    return absl::UnauthenticatedError(
        "authorization metadata is not 'Bearer <token>'");
  }
  const Principal* principal =
      table.FindByToken(value.substr(sizeof(kBearerPrefix) - 1));
  if (principal == nullptr) {
    return absl::UnauthenticatedError("unknown bearer token");
  }
  return principal;
}

}  // namespace

AuthGate::AuthGate(std::string path, PrincipalTable table)
    : path_(std::move(path)),
      table_(std::make_shared<const PrincipalTable>(std::move(table))) {}

absl::StatusOr<std::unique_ptr<AuthGate>> AuthGate::Open(std::string auth_file) {
  absl::StatusOr<PrincipalTable> table = PrincipalTable::Load(auth_file);
  if (!table.ok()) return table.status();
  return std::unique_ptr<AuthGate>(
      new AuthGate(std::move(auth_file), std::move(*table)));
}

absl::Status AuthGate::Reload() {
  absl::StatusOr<PrincipalTable> table = PrincipalTable::Load(path_);
  if (!table.ok()) return table.status();
  auto fresh = std::make_shared<const PrincipalTable>(std::move(*table));
  absl::MutexLock lock(&mu_);
  table_ = std::move(fresh);
  return absl::OkStatus();
}

std::shared_ptr<const PrincipalTable> AuthGate::principals() const {
  absl::MutexLock lock(&mu_);
  return table_;
}

grpc::Status AuthGate::Check(const grpc::ServerContextBase& context,
                             Rpc method,
                             std::optional<uint32_t> worker_id) const {
  const std::shared_ptr<const PrincipalTable> table = principals();
  const Principal* caller = nullptr;
  // The one lookup of the call's token, in the table of now.
  const auto& metadata = context.client_metadata();
  auto header = metadata.find(kAuthorizationKey);
  if (header != metadata.end()) {
    absl::StatusOr<const Principal*> bearer = FromBearer(*table, View(header->second));
    if (!bearer.ok()) return ToGrpcStatus(bearer.status());
    caller = *bearer;
  } else if (const std::shared_ptr<const grpc::AuthContext> auth =
                 context.auth_context();
             auth != nullptr) {
    caller = FromCertificate(*table, *auth);
  }
  return ToGrpcStatus(Authorize(caller, method, worker_id));
}

}  // namespace taups
