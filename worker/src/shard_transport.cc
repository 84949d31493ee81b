#include "worker/src/shard_transport.h"

#include <cstring>
#include <memory>
#include <utility>

namespace taups {

void ShardTransport::SendPushDense(absl::Duration timeout,
                                   const v1::PushDenseRequest& header,
                                   absl::string_view gradient,
                                   v1::PushResponse* response, Done done) {
  // The whole message, owned until the call is done (Send may answer on
  // another thread, after this returns).
  auto whole = std::make_shared<v1::PushDenseRequest>(header);
  whole->set_gradient(gradient.data(), gradient.size());
  const v1::PushDenseRequest& request = *whole;
  Send(Rpc::kPushDense, timeout, request, response,
       [whole = std::move(whole), done = std::move(done)](absl::Status status) {
         done(std::move(status));
       });
}

void ShardTransport::PullDenseInto(absl::Duration timeout,
                                   const v1::PullDenseRequest& request,
                                   v1::PullDenseResponse* response,
                                   absl::Span<char> values, bool* landed,
                                   Done done) {
  *landed = false;
  Send(Rpc::kPullDense, timeout, request, response,
       [response, values, landed, done = std::move(done)](absl::Status status) {
         if (status.ok() && !response->encoded() &&
             response->values().size() == values.size()) {
           std::memcpy(values.data(), response->values().data(), values.size());
           response->clear_values();
           *landed = true;
         }
         done(std::move(status));
       });
}

void ShardTransport::PullSparseInto(
    absl::Duration timeout, const v1::PullSparseRequest& request,
    v1::PullSparseResponse* response, size_t values_size,
    const std::function<void(SparsePullCall::Pieces)>& land, bool* landed,
    Done done) {
  *landed = false;
  Send(Rpc::kPullSparse, timeout, request, response,
       [response, values_size, &land, landed,
        done = std::move(done)](absl::Status status) {
         if (status.ok() && !response->encoded() &&
             response->values().size() == values_size) {
           const absl::string_view values = response->values();
           land(SparsePullCall::Pieces(&values, 1));
           response->clear_values();
           *landed = true;
         }
         done(std::move(status));
       });
}

}  // namespace taups
