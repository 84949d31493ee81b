#include "proto/grpc_credentials.h"

#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace taups {
namespace {

// The whole of a PEM file, refused unless it holds a "-----BEGIN ...`kind`"
// line (kind "CERTIFICATE" or "PRIVATE KEY").
absl::StatusOr<std::string> ReadPem(absl::string_view setting,
                                    const std::string& path,
                                    absl::string_view kind) {
  RETURN_IF_ERROR(CheckReadableFile(setting, path));
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) {
    return absl::InvalidArgumentError(
        absl::StrCat(setting, "=", path, ": read failed"));
  }
  std::string pem = std::move(text).str();
  const size_t begin = pem.find("-----BEGIN ");
  if (begin == std::string::npos ||
      pem.find(absl::StrCat(kind, "-----"), begin) == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        setting, "=", path, ": holds no PEM ", kind, " block"));
  }
  return pem;
}

// Adds "authorization: Bearer <token>" to every call of the channel.
class BearerTokenPlugin final : public grpc::MetadataCredentialsPlugin {
 public:
  explicit BearerTokenPlugin(std::string token)
      : header_(absl::StrCat("Bearer ", token)) {}
  bool IsBlocking() const override { return false; }
  grpc::Status GetMetadata(grpc::string_ref, grpc::string_ref,
                           const grpc::AuthContext&,
                           std::multimap<grpc::string, grpc::string>* metadata)
      override {
    metadata->emplace("authorization", header_);
    return grpc::Status::OK;
  }
  grpc::string DebugString() override { return "taups bearer token"; }

 private:
  const std::string header_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerSecurity& security) {
  RETURN_IF_ERROR(security.Validate());
  if (security.local) {
    return grpc::experimental::LocalServerCredentials(LOCAL_TCP);
  }
  if (!security.tls()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  ASSIGN_OR_RETURN(pair.cert_chain,
                   ReadPem("tls certificate", security.cert_file, "CERTIFICATE"));
  ASSIGN_OR_RETURN(pair.private_key,
                   ReadPem("tls key", security.key_file, "PRIVATE KEY"));
  grpc_ssl_client_certificate_request_type request =
      GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
  if (security.require_client_cert) {
    request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  } else if (!security.client_ca_file.empty()) {
    request = GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  grpc::SslServerCredentialsOptions options(request);
  if (!security.client_ca_file.empty()) {
    ASSIGN_OR_RETURN(options.pem_root_certs,
                     ReadPem("tls client CA", security.client_ca_file,
                             "CERTIFICATE"));
  }
  options.pem_key_cert_pairs.push_back(std::move(pair));
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenChannel(
    const std::string& target, const ChannelSecurity& security,
    grpc::ChannelArguments args) {
  RETURN_IF_ERROR(security.Validate("tls_"));
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  grpc_security_level token_needs = GRPC_PRIVACY_AND_INTEGRITY;
  if (security.tls()) {
    grpc::SslCredentialsOptions tls;
    ASSIGN_OR_RETURN(tls.pem_root_certs,
                     ReadPem("tls_ca_file", security.ca_file, "CERTIFICATE"));
    if (!security.cert_file.empty()) {
      ASSIGN_OR_RETURN(tls.pem_cert_chain, ReadPem("tls_cert_file",
                                                   security.cert_file,
                                                   "CERTIFICATE"));
      ASSIGN_OR_RETURN(tls.pem_private_key,
                       ReadPem("tls_key_file", security.key_file, "PRIVATE KEY"));
    }
    if (!security.server_name.empty()) {
      args.SetSslTargetNameOverride(security.server_name);
    }
    credentials = grpc::SslCredentials(tls);
  } else if (!security.bearer_token.empty()) {
    if (!IsLoopbackHost(HostOf(target))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a bearer token without TLS is only sent to loopback addresses, not ",
          target, " (set a TLS CA)"));
    }
    credentials = grpc::experimental::LocalCredentials(LOCAL_TCP);
    // Loopback TCP counts as no transport security to gRPC.
    token_needs = GRPC_SECURITY_NONE;
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  if (!security.bearer_token.empty()) {
    credentials = grpc::CompositeChannelCredentials(
        credentials,
        grpc::experimental::MetadataCredentialsFromPlugin(
            std::make_unique<BearerTokenPlugin>(security.bearer_token),
            token_needs));
  }
  return grpc::CreateCustomChannel(target, credentials, args);
}

}  // namespace taups
