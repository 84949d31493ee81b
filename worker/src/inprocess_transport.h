// InProcessTransport: ShardTransport that calls a shard's core (ShardCalls
// over a ParameterStore) directly, in the same process: no sockets, no
// serialization, no gRPC. The request and response messages are the ones
// the client core built; the shard reads and fills them in place.
//
// Each call runs to its end on the caller's thread and `done` runs before
// Send returns; a pull that waits for its policy (sync, ssp) blocks that
// thread, until the step closes or `timeout` passes (DEADLINE_EXCEEDED).
// That makes a single-threaded caller deterministic (the simulator's use)
// and lets threaded tests run the real client core against real shards.
//
// Thread-safe (ShardCalls is). `shard` must outlive the transport.
#ifndef TAUPS_WORKER_SRC_INPROCESS_TRANSPORT_H_
#define TAUPS_WORKER_SRC_INPROCESS_TRANSPORT_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/shard_calls.h"
#include "worker/src/client_core.h"
#include "worker/src/shard_transport.h"

namespace taups {

class InProcessTransport final : public ShardTransport {
 public:
  explicit InProcessTransport(ShardCalls* shard) : shard_(shard) {}

  void Send(Rpc rpc, absl::Duration timeout,
            const google::protobuf::Message& request,
            google::protobuf::Message* response, Done done) override;
  // The gradient handed to the shard as it is, with no copy.
  void SendPushDense(absl::Duration timeout, const v1::PushDenseRequest& header,
                     absl::string_view gradient, v1::PushResponse* response,
                     Done done) override;
  // A raw answer read by the shard straight from its table into `values`
  // (ShardCalls::PullDenseInto): one copy, where Send's answer would be
  // copied into the response and then again into `values`. A `values`
  // not aligned for floats is answered as Send answers.
  void PullDenseInto(absl::Duration timeout,
                     const v1::PullDenseRequest& request,
                     v1::PullDenseResponse* response, absl::Span<char> values,
                     bool* landed, Done done) override;

 private:
  absl::Status Dispatch(Rpc rpc, absl::Time deadline,
                        const google::protobuf::Message& request,
                        google::protobuf::Message* response);

  ShardCalls* const shard_;
};

// One InProcessTransport per shard, in shard-index order.
std::vector<std::unique_ptr<ShardTransport>> InProcessTransports(
    absl::Span<ShardCalls* const> shards);

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_INPROCESS_TRANSPORT_H_
