// Why a shard could not listen where it was told to. gRPC's ServerBuilder
// only reports that binding failed; this binds a probe socket to the same
// address the way gRPC does (SO_REUSEADDR, no SO_REUSEPORT) and turns the
// errno into a message an operator can act on, e.g.
//   cannot listen on 0.0.0.0:7000: port 7000 is already in use (another
//   ps_server, or another program, listens there)
//
// Thread-safe (no shared state).
#ifndef TAUPS_SERVER_LISTEN_CHECK_H_
#define TAUPS_SERVER_LISTEN_CHECK_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace taups {

// UNAVAILABLE describing why "host:port" (host may be "[::]" style) cannot
// be bound; the generic "cannot listen on <address>" when the probe binds
// (the failure was gRPC's own) or the address does not resolve.
absl::Status ExplainListenFailure(absl::string_view address);

}  // namespace taups

#endif  // TAUPS_SERVER_LISTEN_CHECK_H_
