// raw_transfer_server: the raw gRPC reference as its own process, for
// throughput_bench --raw_server when the shards run on another host.
//
//   raw_transfer_server --port=7100
#include <signal.h>

#include <cstdio>
#include <thread>

#include "absl/flags/flag.h"
#include "common/usage.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "bench/byte_size.h"
#include "bench/raw_transfer_server.h"
#include "common/malloc_tuning.h"
#include "common/port_file.h"

ABSL_FLAG(std::string, host, "127.0.0.1", "Address to listen on (plaintext).");
ABSL_FLAG(int, port, 7100, "Port to listen on; 0 picks a free one.");
ABSL_FLAG(std::string, port_file, "",
          "When set, the port listened on is written here (with --port=0).");
ABSL_FLAG(std::string, max_download, "64MiB",
          "Preallocated Download buffer; larger Downloads are refused.");

int main(int argc, char** argv) {
  taups::SetUsage(
      "Serves taups.bench.RawTransfer, the raw gRPC reference of "
      "throughput_bench.\n  raw_transfer_server --port=7100\n"
      "Stops on SIGTERM or SIGINT.");
  absl::ParseCommandLine(argc, argv);
  // The allocator settings ps_server runs with: without them, on a kernel
  // where page faults are dear, every received upload's buffers are mapped
  // and unmapped again (on one machine the raw server spent 3-5x the shard's
  // CPU per byte on faults and TLB shootdowns), and the raw reference would
  // no longer be the best gRPC does here.
  taups::KeepLargeBuffersMapped();
  auto max_download =
      taups::bench::ParseByteSize(absl::GetFlag(FLAGS_max_download));
  if (!max_download.ok()) {
    std::fprintf(stderr, "%s\n", max_download.status().ToString().c_str());
    return 1;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  taups::bench::RawTransferServerOptions options;
  options.listen_address =
      absl::StrCat(absl::GetFlag(FLAGS_host), ":", absl::GetFlag(FLAGS_port));
  options.max_download_bytes = *max_download;
  auto server = taups::bench::RawTransferServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  const std::string port_file = absl::GetFlag(FLAGS_port_file);
  if (!port_file.empty()) {
    const absl::Status written =
        taups::WritePortFile("--port_file", port_file, (*server)->port());
    if (!written.ok()) {
      std::fprintf(stderr, "%s\n", written.ToString().c_str());
      return 1;
    }
  }
  std::printf("raw_transfer_server listening on port %d\n", (*server)->port());
  std::fflush(stdout);
  std::thread watcher([&signals, s = server->get()] {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    s->Shutdown();
  });
  (*server)->Wait();
  watcher.join();
  return 0;
}
