#include "common/grpc_lifetime.h"

#include <grpc/grpc.h>

namespace taups {

void KeepGrpcInitialized() {
  static const bool initialized = [] {
    grpc_init();
    return true;
  }();
  (void)initialized;
}

}  // namespace taups
