// What protects a shard's port and a client's channels, as plain settings
// (file paths and names; no gRPC types). proto/grpc_credentials.h turns
// them into gRPC credentials; docs/SECURITY.md says how to make the files.
//
// Three ways a connection can go:
//   TLS        a server certificate (ServerSecurity::cert_file) and, for
//              mutual TLS, client certificates checked against a CA;
//   local      gRPC local credentials over loopback TCP: no encryption,
//              but a secure transport as far as gRPC is concerned, so
//              bearer tokens can be checked (gRPC 1.51 aborts when an auth
//              processor sits on insecure credentials);
//   insecure   plaintext with no authentication, today's default on
//              loopback.
//
// Thread-safe: plain values; the functions keep no state.
#ifndef TAUPS_COMMON_TRANSPORT_SECURITY_H_
#define TAUPS_COMMON_TRANSPORT_SECURITY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace taups {

// How a shard serves.
struct ServerSecurity {
  // PEM server certificate chain and its private key; both or neither.
  // Empty: no TLS.
  std::string cert_file;
  std::string key_file;
  // PEM CA bundle that client certificates are checked against (mutual
  // TLS). Needs cert_file.
  std::string client_ca_file;
  // Refuse a TLS handshake without a client certificate the CA signed.
  // Needs client_ca_file.
  bool require_client_cert = false;
  // Without TLS: serve gRPC local credentials (loopback only) instead of
  // insecure ones. Set by the shard when it checks tokens without TLS.
  bool local = false;

  bool tls() const { return !cert_file.empty(); }
  // Every named file is readable, and the pairs above are complete.
  absl::Status Validate() const;
};

// How a client reaches the shards.
struct ChannelSecurity {
  // PEM CA bundle the shards' certificates are checked against. Empty: no
  // TLS.
  std::string ca_file;
  // Client certificate and key for mutual TLS; both or neither; need
  // ca_file.
  std::string cert_file;
  std::string key_file;
  // Name the server certificate must carry, when it differs from the host
  // of the address dialled (e.g. dialling 127.0.0.1 of a certificate made
  // for "shard0.taups"). Needs ca_file.
  std::string server_name;
  // Bearer token sent with every call. Without TLS it travels over gRPC
  // local credentials, which only reach loopback addresses.
  std::string bearer_token;

  bool tls() const { return !ca_file.empty(); }
  // The files exist and are readable, pairs are complete; `field_prefix`
  // names the settings in errors (e.g. "ClientOptions.tls_").
  absl::Status Validate(absl::string_view field_prefix) const;
};

// OK if `path` names a regular file this process can read; otherwise
// INVALID_ARGUMENT naming `setting` (a flag such as "--tls_cert" or an
// options field) and the reason.
absl::Status CheckReadableFile(absl::string_view setting,
                               const std::string& path);

// True for 127.0.0.0/8, ::1 and "localhost" (IPv6 hosts with or without
// brackets).
bool IsLoopbackHost(absl::string_view host);

// The host part of "host:port" or "[v6]:port" (the whole string when it
// has no port).
absl::string_view HostOf(absl::string_view address);

}  // namespace taups

#endif  // TAUPS_COMMON_TRANSPORT_SECURITY_H_
