// ShardAdmin: ps_admin's own line to every shard for the admin RPCs the
// client library does not offer (ShardStatus, Checkpoint, EvictWorker,
// Rollback):
// one channel per shard, made by the one credentials factory
// (proto/grpc_credentials.h) with the same TLS and token settings as the
// library's ClientOptions, and the generated stub.
//
// Every answer is per shard: an error names the shard and its address
// ("shard 1 (10.0.0.6:7000): FAILED_PRECONDITION: ..."), so one shard that
// fails does not hide what the others answered.
//
// Thread-compatible: one caller at a time.
#ifndef TAUPS_WORKER_TOOLS_SHARD_ADMIN_H_
#define TAUPS_WORKER_TOOLS_SHARD_ADMIN_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ps.pb.h"
#include "taups/client.h"

namespace taups {

class ShardAdmin {
 public:
  // Channels to options.servers, secured as options say (tls_*,
  // auth_token). Calls wait at most `timeout` each. A shard that cannot be
  // reached is reported by the call that tries it, not here.
  static absl::StatusOr<std::unique_ptr<ShardAdmin>> Open(
      const ClientOptions& options, absl::Duration timeout);
  ~ShardAdmin();

  int num_shards() const { return static_cast<int>(addresses_.size()); }
  const std::string& address(int shard) const { return addresses_[shard]; }

  std::vector<absl::StatusOr<v1::ShardStatusResponse>> ShardStatus();
  std::vector<absl::StatusOr<v1::CheckpointResponse>> Checkpoint();
  std::vector<absl::StatusOr<v1::EvictWorkerResponse>> EvictWorker(
      uint32_t worker, bool drain);
  // Every shard restores its checkpoint of sync step `step` in place.
  std::vector<absl::StatusOr<v1::RollbackResponse>> Rollback(uint64_t step);

 private:
  struct Stubs;
  ShardAdmin(std::vector<std::string> addresses, std::unique_ptr<Stubs> stubs,
             absl::Duration timeout);
  // "shard i (address): " before the status's message.
  absl::Status Named(int shard, const absl::Status& status) const;

  std::vector<std::string> addresses_;
  std::unique_ptr<Stubs> stubs_;
  absl::Duration timeout_;
};

}  // namespace taups

#endif  // TAUPS_WORKER_TOOLS_SHARD_ADMIN_H_
