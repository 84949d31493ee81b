// The input format of request_fuzzer, shared with the seed writer: a run of
// records, each one request to a shard,
//
//   u8 method (RequestMethod, taken modulo kMethodCount) | u16 length (LE) |
//   length bytes of that method's request message (proto/ps.proto)
//
// so one input is a sequence of calls (register, push, pull, ...) against
// one fresh shard. A truncated last record is read as far as it goes.
#ifndef TAUPS_TESTS_FUZZ_REQUEST_RECORDS_H_
#define TAUPS_TESTS_FUZZ_REQUEST_RECORDS_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace taups::fuzz {

enum class RequestMethod : uint8_t {
  kCreateTable, kGetTable, kPullDense, kPushDense, kPullSparse, kPushSparse,
  kRegister, kHeartbeat, kLeave, kSetConsistency, kStats,
};
inline constexpr uint8_t kMethodCount = 11;

struct RequestRecord {
  RequestMethod method;
  absl::string_view message;
};

// Takes the next record off the front of `*input`; false when it is empty.
inline bool NextRecord(absl::string_view* input, RequestRecord* record) {
  if (input->empty()) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(input->data());
  record->method = static_cast<RequestMethod>(p[0] % kMethodCount);
  size_t length = 0;
  if (input->size() >= 3) length = p[1] | (size_t{p[2]} << 8);
  input->remove_prefix(std::min<size_t>(3, input->size()));
  length = std::min(length, input->size());
  record->message = input->substr(0, length);
  input->remove_prefix(length);
  return true;
}

// Appends one record (the seed writer); `message` is at most 65,535 bytes.
inline void AppendRecord(RequestMethod method, const std::string& message,
                         std::string* out) {
  out->push_back(static_cast<char>(method));
  out->push_back(static_cast<char>(message.size() & 0xff));
  out->push_back(static_cast<char>((message.size() >> 8) & 0xff));
  out->append(message);
}

}  // namespace taups::fuzz

#endif  // TAUPS_TESTS_FUZZ_REQUEST_RECORDS_H_
