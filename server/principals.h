// Who may call a shard: the principals of an auth file, each with one role
// and, for workers, the worker ids it may act as.
//
// File format (docs/SECURITY.md), one principal credential per line, '#'
// starts a comment:
//   token <secret>      <principal> <role> [<worker ids>]
//   cert  <cert name>   <principal> <role> [<worker ids>]
// role is worker, admin or reader; worker ids ("7" or "0-15", inclusive)
// are required for worker and refused for the others. A "cert" line maps a
// client certificate whose common name or a subject alternative name is
// <cert name> (mutual TLS). One principal may have several lines (a token
// and a certificate) with the same role and ids; two principals' worker
// ids never overlap, so every worker id belongs to at most one principal
// and only that one may register it. Secrets are at least 16 characters
// and unique. The file must not be readable by group or others.
//
// Thread-safe after construction (immutable); a reload builds a new table.
#ifndef TAUPS_SERVER_PRINCIPALS_H_
#define TAUPS_SERVER_PRINCIPALS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace taups {

enum class Role { kWorker, kAdmin, kReader };
const char* RoleName(Role role);

struct Principal {
  std::string name;
  Role role = Role::kReader;
  // Worker role: the ids it may act as, first..last inclusive.
  uint32_t first_worker = 0;
  uint32_t last_worker = 0;

  bool ActsAs(uint32_t worker) const {
    return role == Role::kWorker && worker >= first_worker &&
           worker <= last_worker;
  }
};

class PrincipalTable {
 public:
  // Parses the text of an auth file; errors name `origin` and the line
  // (never the secret).
  static absl::StatusOr<PrincipalTable> Parse(absl::string_view text,
                                              absl::string_view origin);
  // Reads and parses `path`, refusing a file group or others may read.
  static absl::StatusOr<PrincipalTable> Load(const std::string& path);

  // The principal a bearer token belongs to; null when none. Compares
  // against every token in constant time per token.
  const Principal* FindByToken(absl::string_view token) const;
  // The principal a certificate name maps to; null when none.
  const Principal* FindByCertName(absl::string_view name) const;
  const Principal* FindByName(absl::string_view name) const;

  size_t principals() const { return principals_.size(); }
  size_t tokens() const { return tokens_.size(); }
  size_t cert_names() const { return cert_names_.size(); }

 private:
  std::vector<Principal> principals_;
  absl::flat_hash_map<std::string, size_t> by_name_;
  std::vector<std::pair<std::string, size_t>> tokens_;  // secret, principal
  absl::flat_hash_map<std::string, size_t> cert_names_;
};

}  // namespace taups

#endif  // TAUPS_SERVER_PRINCIPALS_H_
