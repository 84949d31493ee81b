// The gRPC side of a shard's authentication: an AuthMetadataProcessor that
// turns a bearer token (or a mutual-TLS client certificate's name) into a
// principal of the auth file (server/principals.h), and the check each
// service handler makes, in one line, before it touches the request
// (server/authorization.h decides).
//
// The processor only screens tokens: a token that is presented but unknown,
// or not of the "Bearer <token>" form, is UNAUTHENTICATED before any
// handler runs. Who the caller is, the handler's Check works out per call
// from that call's own "authorization" metadata (else from the connection's
// client certificate): gRPC 1.51 hands the processor the connection's
// AuthContext, shared by all its calls, so nothing per call may be stored
// there. A call with no credential passes the processor and is refused by
// Check (so gRPC's health service stays reachable). The file is read at
// Open and again at each Reload (SIGHUP in ps_server); a reload that fails
// keeps the principals already loaded. Nothing here logs a secret, and no
// handler logs metadata.
//
// Thread-safe: the principals are an immutable table swapped under mu_.
#ifndef TAUPS_SERVER_GRPC_AUTH_H_
#define TAUPS_SERVER_GRPC_AUTH_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/authorization.h"
#include "server/principals.h"

namespace taups {

class AuthGate {
 public:
  // Loads `auth_file`; its error when the file is unreadable, readable by
  // others, or malformed.
  static absl::StatusOr<std::unique_ptr<AuthGate>> Open(std::string auth_file);

  // Reads the file again; on success the new principals take effect for
  // the next calls, on failure the old ones stay and the error is returned.
  absl::Status Reload() ABSL_LOCKS_EXCLUDED(mu_);

  // The processor to set on the server credentials; it refers to this gate,
  // which must outlive the server.
  std::shared_ptr<grpc::AuthMetadataProcessor> Processor();

  // OK when the caller of `context` may call `method` (as `worker_id`, for
  // worker methods); otherwise UNAUTHENTICATED or PERMISSION_DENIED.
  grpc::Status Check(const grpc::ServerContextBase& context, Rpc method,
                     std::optional<uint32_t> worker_id = std::nullopt) const
      ABSL_LOCKS_EXCLUDED(mu_);

  std::shared_ptr<const PrincipalTable> principals() const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  AuthGate(std::string path, PrincipalTable table);

  const std::string path_;
  mutable absl::Mutex mu_;
  // Replaced whole by Reload; readers keep the table they took.
  std::shared_ptr<const PrincipalTable> table_ ABSL_GUARDED_BY(mu_);
};

}  // namespace taups

#endif  // TAUPS_SERVER_GRPC_AUTH_H_
