// A real ps_server process set up for the hostile-input suite, and the
// stock gRPC calls a hostile client makes against it.
//
// The shard is shard 0 of 2 (so half of every dense range and about half of
// all sparse keys belong to a shard that is not there), runs with an auth
// file over gRPC local credentials, and with small limits so that every
// budget and cap can be reached in a few calls (kFlags below). Its
// principals:
//
//   token       principal  role    worker ids
//   kTrainers   trainers   worker  0-3
//   kOthers     others     worker  4-7
//   kAuditor    auditor    worker  9    (reads values for the digest only)
//   kFar        far        worker  62-66 (ids at and past --max_workers)
//   kAdmin      ops        admin
//   kReader     dash       reader
//
// Requests are built from proto/ps.proto's generated messages and sent with
// the generated stub over a local-credentials channel; the credential is the
// call's own "authorization" metadata, so a case can send none, a wrong one
// or a malformed one. Nothing here goes through the tauPS client library.
//
// With a TestPki (tests/test_pki.h) the shard serves mutual TLS instead
// (--tls_cert/--tls_key/--tls_ca/--tls_require_client_cert, the same auth
// file plus "cert peer-cert.taups.test certified worker 10"): every channel
// then presents the PKI's `client` certificate, whose name the auth file
// does not list, so the bearer tokens still decide who calls, as above.
//
// Thread-compatible: one test thread drives it (the flood cases start
// asynchronous calls from that thread and wait for them there).
#ifndef TAUPS_TESTS_HOSTILE_HOSTILE_SHARD_H_
#define TAUPS_TESTS_HOSTILE_HOSTILE_SHARD_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/transport_security.h"
#include "ps.grpc.pb.h"
#include "tests/process_harness.h"
#include "tests/test_pki.h"

namespace taups::testing::hostile {

// Whose credential a call carries.
enum class Who {
  kNobody,       // no authorization metadata
  kTrainers,     // worker 0-3
  kOthers,       // worker 4-7
  kAuditor,      // worker 9
  kFar,          // worker 62-66
  kAdmin,
  kReader,
  kUnknownToken, // "Bearer <a token the file does not list>"
  kBasicAuth,    // "Basic <base64>": not a bearer token
  kEmptyBearer,  // "Bearer " and nothing
};

// The shard's limits (its flags), which the cases' expectations use.
inline constexpr int kNumShards = 2;           // this is shard 0
inline constexpr uint64_t kBudgetMb = 8;       // tables may take 7 MiB
inline constexpr uint64_t kMaxTables = 5;
inline constexpr uint64_t kMaxWorkers = 64;
inline constexpr uint64_t kMaxWorkersPerTable = 3;  // 0, 1 and the auditor
inline constexpr uint64_t kMaxWaitingPerWorker = 3;
inline constexpr uint64_t kMaxWaitingCalls = 5;
inline constexpr uint64_t kMaxKeys = 64;
inline constexpr uint64_t kMaxBlockValues = 4096;
inline constexpr uint64_t kMaxNameLength = 32;
inline constexpr double kMaxLeaseS = 120;

// The tables the suite sets up (HostileShard::SetUp). Dense sizes are the
// whole table; this shard holds the first half.
inline constexpr char kDense[] = "dense";  // 64 floats, adam, async
inline constexpr uint64_t kDenseSize = 64;
inline constexpr uint64_t kDenseHere = kDenseSize / kNumShards;
inline constexpr char kSparse[] = "emb";   // dim 4, adagrad, 1024 rows
inline constexpr uint32_t kDim = 4;
inline constexpr char kSync[] = "sync";    // 16 floats, sgd, sync of 2
inline constexpr uint64_t kSyncSize = 16;
inline constexpr uint64_t kSyncHere = kSyncSize / kNumShards;
inline constexpr uint64_t kIncarnation = 77;  // of workers 0 and 1
// The worker id of the TLS shard's certificate principal 'certified'.
inline constexpr uint32_t kCertifiedWorker = 10;

class HostileShard {
 public:
  // `pki`, when given, must outlive the shard: the shard then serves mutual
  // TLS with it.
  explicit HostileShard(const TempDir& dir, const TestPki* pki = nullptr);

  // The legitimate history every case runs against: the three tables,
  // workers 0 and 1 registered (lease kMaxLeaseS), pushes applied to each
  // table, worker 0's push of sync step 0 in (the step stays open: worker 1
  // has not pushed), and the auditor's seat in each table. Afterwards each
  // table holds state for exactly kMaxWorkersPerTable workers.
  void SetUp();

  // Heartbeats workers 0 and 1, renewing the leases SetUp took. SetUp's
  // workers hold a kMaxLeaseS lease and nothing else renews it: a suite that
  // ran past it (ASan on a loaded machine) saw both declared dead in
  // whatever class was running then, which closed sync step 0, moved the
  // digest and left the waiting-call classes nothing to park. The suite
  // calls this before every case; it moves nothing the digest holds (only
  // the last-seen age, which the digest leaves out).
  void RenewLeases();

  // The keys of kSparse this shard owns that SetUp gave rows (the digest
  // reads exactly these) and a few this shard does not own.
  const std::vector<uint64_t>& own_keys() const { return own_keys_; }
  const std::vector<uint64_t>& foreign_keys() const { return foreign_keys_; }

  // A text digest of everything a client can read of the shard's state (see
  // hostile_digest.cc): equal digests before and after a case mean the case
  // changed nothing observable.
  std::string Digest();

  // A /metrics scrape, and one series' value (the first line naming it).
  std::string Metrics();
  double Metric(const std::string& series);

  // A context for one call: `who`'s credential, a deadline `timeout` away.
  std::unique_ptr<grpc::ClientContext> Context(
      Who who, std::chrono::milliseconds timeout = std::chrono::seconds(5)) const;

  // The stub for `who`'s calls. Every credential shares one channel, as
  // one client process would; kNobody has a connection of its own (see
  // anonymous_).
  v1::ParameterServer::Stub& stub(Who who = Who::kAuditor) {
    return who == Who::kNobody ? *anonymous_ : *stub_;
  }
  // A plaintext stub to the same port (the port speaks local credentials,
  // or TLS).
  v1::ParameterServer::Stub& plaintext_stub() { return *plaintext_; }
  // The PKI of a TLS shard; nullptr for local credentials.
  const TestPki* pki() const { return pki_; }
  // A stub on a connection of its own, with the shard's transport but
  // `security`'s certificates (ca_file empty: the shard's CA; cert_file
  // empty: no client certificate), for the TLS handshake cases.
  std::unique_ptr<v1::ParameterServer::Stub> TlsStub(ChannelSecurity security) const;
  const std::string& address() const { return address_; }
  Process& process() { return *shards_[0].process; }

 private:
  const TestPki* const pki_;
  std::vector<Shard> shards_;
  std::string address_;
  int metrics_port_ = 0;
  std::unique_ptr<v1::ParameterServer::Stub> stub_;
  std::unique_ptr<v1::ParameterServer::Stub> plaintext_;
  // A connection that never carried a token. (On a connection where a
  // token was presented before, ps_server serves a call without one as
  // the last principal seen there: a bug of server/grpc_auth.cc reported
  // with this suite, whose cases therefore send no token on this one.)
  std::unique_ptr<v1::ParameterServer::Stub> anonymous_;
  std::vector<uint64_t> own_keys_;
  std::vector<uint64_t> foreign_keys_;
};

// Packed little-endian bytes of `values`, as the wire carries tensors.
std::string Floats(const std::vector<float>& values);
std::string Keys(const std::vector<uint64_t>& keys);

}  // namespace taups::testing::hostile

#endif  // TAUPS_TESTS_HOSTILE_HOSTILE_SHARD_H_
