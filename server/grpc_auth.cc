#include "server/grpc_auth.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "wire_convert.h"

namespace taups {
namespace {

// Set by the processor on a call whose credential named a principal.
constexpr char kPrincipalProperty[] = "taups_principal";
constexpr char kBearerPrefix[] = "Bearer ";

class PrincipalProcessor final : public grpc::AuthMetadataProcessor {
 public:
  explicit PrincipalProcessor(const AuthGate* gate) : gate_(gate) {}

  // Looking a token up is cheap: run on gRPC's own thread.
  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed, OutputMetadata*) override {
    const std::shared_ptr<const PrincipalTable> table = gate_->principals();
    const Principal* principal = nullptr;
    auto header = metadata.find("authorization");
    if (header != metadata.end()) {
      const absl::string_view value(header->second.data(), header->second.size());
      if (!absl::StartsWith(value, kBearerPrefix)) {
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            "authorization metadata is not 'Bearer <token>'");
      }
      principal = table->FindByToken(value.substr(sizeof(kBearerPrefix) - 1));
      if (principal == nullptr) {
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            "unknown bearer token");
      }
      // Handlers never see the token.
      consumed->emplace(std::string(header->first.data(), header->first.size()),
                        std::string(header->second.data(), header->second.size()));
    } else {
      principal = FromCertificate(*table, *context);
    }
    if (principal != nullptr) {
      context->AddProperty(kPrincipalProperty, principal->name);
    }
    return grpc::Status::OK;
  }

 private:
  // A client certificate's common name or subject alternative names, mapped
  // by the table's "cert" lines.
  static const Principal* FromCertificate(const PrincipalTable& table,
                                          const grpc::AuthContext& context) {
    for (const char* property :
         {"x509_common_name", "x509_subject_alternative_name"}) {
      for (const grpc::string_ref& name : context.FindPropertyValues(property)) {
        const Principal* principal =
            table.FindByCertName(absl::string_view(name.data(), name.size()));
        if (principal != nullptr) return principal;
      }
    }
    return nullptr;
  }

  const AuthGate* const gate_;
};

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

std::shared_ptr<grpc::AuthMetadataProcessor> AuthGate::Processor() {
  return std::make_shared<PrincipalProcessor>(this);
}

grpc::Status AuthGate::Check(const grpc::ServerContextBase& context,
                             Rpc method,
                             std::optional<uint32_t> worker_id) const {
  const std::shared_ptr<const PrincipalTable> table = principals();
  const Principal* caller = nullptr;
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth != nullptr) {
    for (const grpc::string_ref& name :
         auth->FindPropertyValues(kPrincipalProperty)) {
      // Null when a reload removed the principal since the call arrived.
      caller = table->FindByName(absl::string_view(name.data(), name.size()));
    }
  }
  return ToGrpcStatus(Authorize(caller, method, worker_id));
}

}  // namespace taups
