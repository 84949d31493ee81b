// Command-line flags that say how ps_worker and ps_admin reach the shards
// (TLS, mutual TLS, bearer token; docs/SECURITY.md). Only their mains link
// this.
#ifndef TAUPS_WORKER_TOOLS_TRANSPORT_FLAGS_H_
#define TAUPS_WORKER_TOOLS_TRANSPORT_FLAGS_H_

#include "absl/status/status.h"
#include "taups/client.h"

namespace taups {

// Sets options' TLS fields from --tls_ca, --tls_cert, --tls_key and
// --tls_server_name, and auth_token from the file --auth_token_file names
// (its first line; the file must not be readable by group or others).
// INVALID_ARGUMENT naming the flag when a file is missing or unreadable or
// a flag needs another one; options are unchanged then.
absl::Status ApplyTransportFlags(ClientOptions& options);

}  // namespace taups

#endif  // TAUPS_WORKER_TOOLS_TRANSPORT_FLAGS_H_
