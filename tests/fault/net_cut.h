// A network namespace for the fault harness's network cut (issue 11 part
// 6): a namespace of its own joined to the test's by a veth pair, so that a
// process run inside it (Exec()) reaches the shards over a real link, and
// nftables drop rules inside it that cut that link for one port, both ways,
// until Heal(). Processes outside the namespace are not affected: one
// worker is cut from one shard, the others keep talking to it.
//
//   test's namespace:  <host_address>/30 on veth "tps<pid>h"; shards listen here
//   the namespace:     <inner_address>/30 on veth "tps<pid>n", and lo
//
// Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN), `ip` (iproute2) and `nft`
// (nftables); where any is missing Create says why and the caller skips.
//
// Not thread-safe. The destructor deletes the namespace, and with it the
// veth pair and the rules.
#ifndef TAUPS_TESTS_FAULT_NET_CUT_H_
#define TAUPS_TESTS_FAULT_NET_CUT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace taups::fault {

class NetCut {
 public:
  // Makes the namespace and its link; `scratch` is a directory for the
  // rule files. FAILED_PRECONDITION naming the step that failed and its
  // output where this machine cannot (not root, no ip or nft, no netns).
  static absl::StatusOr<std::unique_ptr<NetCut>> Create(const std::string& scratch);
  ~NetCut();
  NetCut(const NetCut&) = delete;
  NetCut& operator=(const NetCut&) = delete;

  const std::string& name() const { return name_; }
  // The test's side of the link: an address of this machine that processes
  // inside the namespace reach only over the veth pair.
  const std::string& host_address() const { return host_address_; }
  // The command prefix that runs a program inside the namespace: `ip` and
  // its arguments (ip execs the program, so it keeps ip's process id).
  std::vector<std::string> Exec() const;

  // Drops every TCP segment between the namespace and host_address():port
  // (both directions); Heal removes the rules. Each returns once nft did.
  absl::Status Cut(int port);
  absl::Status Heal();

 private:
  NetCut(std::string ip, std::string nft, std::string name, std::string scratch,
         std::string host_address);

  const std::string ip_, nft_;  // the programs
  const std::string name_;
  const std::string scratch_;
  const std::string host_address_;
  bool cut_ = false;
};

}  // namespace taups::fault

#endif  // TAUPS_TESTS_FAULT_NET_CUT_H_
