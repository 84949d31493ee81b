// libFuzzer's start-up hook for the targets that drive a shard: logging off.
// The shard logs what it refuses and who joins; a fuzzer's thousands of
// requests a second would spend their time writing that.
#include "spdlog/spdlog.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  return 0;
}
