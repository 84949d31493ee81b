// The fault harness's network namespace and its cut (see net_cut.h).
#include "tests/fault/net_cut.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace taups::fault {
namespace {

// The first of `candidates` that is an executable file, or "".
std::string FindProgram(std::initializer_list<const char*> candidates) {
  for (const char* path : candidates) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

// Runs `command` through the shell; its output goes into the error.
absl::Status Run(const std::string& command) {
  std::FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return absl::InternalError(absl::StrCat("cannot run: ", command));
  std::string output;
  char buffer[512];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  const int status = pclose(pipe);
  if (status == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("`", command, "` failed (status ", status, "): ", output));
}

}  // namespace

NetCut::NetCut(std::string ip, std::string nft, std::string name,
               std::string scratch, std::string host_address)
    : ip_(std::move(ip)),
      nft_(std::move(nft)),
      name_(std::move(name)),
      scratch_(std::move(scratch)),
      host_address_(std::move(host_address)) {}

absl::StatusOr<std::unique_ptr<NetCut>> NetCut::Create(const std::string& scratch) {
  if (geteuid() != 0) {
    return absl::FailedPreconditionError("network namespaces need root");
  }
  const std::string ip = FindProgram({"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"});
  if (ip.empty()) return absl::FailedPreconditionError("no `ip` (Debian package iproute2)");
  const std::string nft = FindProgram({"/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"});
  if (nft.empty()) return absl::FailedPreconditionError("no `nft` (Debian package nftables)");
  // One /30 per process id inside 10.201.0.0/16, so parallel runs differ.
  const pid_t pid = getpid();
  const int block = static_cast<int>(pid % 16384);
  const std::string net = absl::StrCat("10.201.", block / 64, ".");
  const int first = (block % 64) * 4;
  const std::string host_address = absl::StrCat(net, first + 1);
  const std::string inner_address = absl::StrCat(net, first + 2);
  const std::string name = absl::StrCat("taups-cut-", pid);
  const std::string outer = absl::StrCat("tps", pid, "h"), inner = absl::StrCat("tps", pid, "n");
  if (absl::Status made = Run(absl::StrCat(ip, " netns add ", name)); !made.ok()) return made;
  // From here the destructor cleans up whatever was made.
  std::unique_ptr<NetCut> cut(new NetCut(ip, nft, name, scratch, host_address));
  const std::string in_ns = absl::StrCat(ip, " -n ", name, " ");
  for (const std::string& step : {
           absl::StrCat(ip, " link add ", outer, " type veth peer name ", inner),
           absl::StrCat(ip, " link set ", inner, " netns ", name),
           absl::StrCat(ip, " addr add ", host_address, "/30 dev ", outer),
           absl::StrCat(ip, " link set ", outer, " up"),
           absl::StrCat(in_ns, "addr add ", inner_address, "/30 dev ", inner),
           absl::StrCat(in_ns, "link set ", inner, " up"),
           absl::StrCat(in_ns, "link set lo up"),
           // nft works in the namespace (the kernel has nf_tables).
           absl::StrCat(ip, " netns exec ", name, " ", nft, " list ruleset"),
       }) {
    if (absl::Status done = Run(step); !done.ok()) return done;
  }
  return cut;
}

NetCut::~NetCut() {
  // The namespace's end of the veth pair goes with it, and the pair with it.
  Run(absl::StrCat(ip_, " netns del ", name_)).IgnoreError();
}

std::vector<std::string> NetCut::Exec() const { return {ip_, "netns", "exec", name_}; }

absl::Status NetCut::Cut(int port) {
  const std::string rules = absl::StrCat(scratch_, "/cut.nft");
  std::ofstream(rules) << "table inet taups_cut {\n"
                       << "  chain out {\n"
                       << "    type filter hook output priority 0; policy accept;\n"
                       << "    ip daddr " << host_address_ << " tcp dport " << port << " drop\n"
                       << "  }\n"
                       << "  chain in {\n"
                       << "    type filter hook input priority 0; policy accept;\n"
                       << "    ip saddr " << host_address_ << " tcp sport " << port << " drop\n"
                       << "  }\n"
                       << "}\n";
  const absl::Status done = Run(absl::StrCat(ip_, " netns exec ", name_, " ", nft_, " -f ", rules));
  if (done.ok()) cut_ = true;
  return done;
}

absl::Status NetCut::Heal() {
  if (!cut_) return absl::OkStatus();
  const absl::Status done =
      Run(absl::StrCat(ip_, " netns exec ", name_, " ", nft_, " delete table inet taups_cut"));
  if (done.ok()) cut_ = false;
  return done;
}

}  // namespace taups::fault
