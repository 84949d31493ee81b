// The gRPC edge's conversions: every message conversion (message_convert.h)
// and the mapping between absl and gRPC statuses (grpc_status_convert.h).
// Code that never touches gRPC includes message_convert.h instead.
#ifndef TAUPS_PROTO_WIRE_CONVERT_H_
#define TAUPS_PROTO_WIRE_CONVERT_H_

#include "grpc_status_convert.h"
#include "message_convert.h"

#endif  // TAUPS_PROTO_WIRE_CONVERT_H_
