// The request builders of hostile_cases.h.
#include "absl/strings/str_cat.h"
#include "tests/hostile/hostile_cases.h"

namespace taups::testing::hostile {

v1::PushDenseRequest DensePush(const std::string& table, uint32_t worker,
                               uint64_t seq, const std::string& gradient,
                               uint64_t offset) {
  v1::PushDenseRequest r;
  r.set_table(table);
  r.set_offset(offset);
  r.set_gradient(gradient);
  r.mutable_origin()->set_worker_id(worker);
  r.mutable_origin()->set_worker_incarnation(kIncarnation);
  r.mutable_origin()->set_seq(seq);
  return r;
}

v1::PullDenseRequest DensePull(const std::string& table, uint32_t worker,
                               uint64_t offset, uint64_t count) {
  v1::PullDenseRequest r;
  r.set_table(table);
  r.set_offset(offset);
  r.set_count(count);
  r.set_worker_id(worker);
  return r;
}

v1::PushSparseRequest SparsePush(const std::string& table, uint32_t worker,
                                 uint64_t seq, const std::vector<uint64_t>& keys,
                                 const std::string& gradients) {
  v1::PushSparseRequest r;
  r.set_table(table);
  r.set_keys(Keys(keys));
  r.set_gradients(gradients);
  r.mutable_origin()->set_worker_id(worker);
  r.mutable_origin()->set_worker_incarnation(kIncarnation);
  r.mutable_origin()->set_seq(seq);
  return r;
}

v1::PullSparseRequest SparsePull(const std::string& table, uint32_t worker,
                                 const std::vector<uint64_t>& keys) {
  v1::PullSparseRequest r;
  r.set_table(table);
  r.set_keys(Keys(keys));
  r.set_worker_id(worker);
  return r;
}

v1::RegisterRequest Registration(uint32_t worker, double lease_s,
                                 uint64_t incarnation) {
  v1::RegisterRequest r;
  r.set_worker_id(worker);
  r.set_worker_incarnation(incarnation);
  r.set_lease_s(lease_s);
  return r;
}

std::string PushFacts(const v1::PushResponse& response) {
  return absl::StrCat("accepted=", response.accepted(),
                      " duplicate=", response.duplicate(),
                      " staged=", response.staged(),
                      " new_version=", response.new_version());
}

}  // namespace taups::testing::hostile
