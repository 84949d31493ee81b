// The gRPC side of a shard's authentication: the check each service
// handler makes, in its first line, before it touches the request. It turns
// the call's bearer token (or the connection's mutual-TLS client
// certificate name) into a principal of the auth file (server/principals.h)
// and asks server/authorization.h whether that principal may make the call.
//
// Who the caller is comes from that call's own "authorization" metadata,
// looked up once per call, here; else from the connection's client
// certificate. There is no AuthMetadataProcessor: gRPC 1.51 hands a
// processor the connection's AuthContext, shared by all the calls on it, so
// it cannot pass anything per call to the handler (recording the principal
// there served a later call without a token as that principal, fixed in
// 9ba481b), and screening the token there as well looked it up twice. A
// token that is not "Bearer <token>" or that the file does not list, and a
// call with no credential, are UNAUTHENTICATED here; gRPC's health and
// reflection services, which have no Check, answer any caller. The file is
// read at Open and again at each Reload (SIGHUP in ps_server); a reload
// that fails keeps the principals already loaded. Nothing here logs a
// secret, and no handler logs metadata.
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
