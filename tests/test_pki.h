// A throwaway PKI for tests that run shards with TLS: a CA, a server
// certificate, client certificates, made with the openssl CLI in a test's
// temporary directory (docs/SECURITY.md shows the same commands for real
// use). Tests that need it report skipped where the CLI is missing
// (REQUIRE_TEST_PKI below).
//
// What MakeTestPki writes (EC P-256 keys, certificates valid two days):
//   ca          the test CA (CN taups-test-ca)
//   server      signed by ca, CN and DNS shard.taups.test, IP 127.0.0.1,
//               extendedKeyUsage serverAuth
//   client      signed by ca, CN and DNS worker-cert.taups.test, clientAuth
//   peer        signed by ca, CN and DNS peer-cert.taups.test, clientAuth
//               (a second client name, for a principal of its own)
//   other_ca    a second CA, which signed none of the above
//   stranger    signed by other_ca, CN and DNS worker-cert.taups.test (the
//               name of `client`, from a CA the shard does not trust)
//   expired     signed by ca, CN and DNS worker-cert.taups.test, whose
//               notAfter is a day before its notBefore (expired at birth)
//
// Thread-compatible; each call writes its own directory.
#ifndef TAUPS_TESTS_TEST_PKI_H_
#define TAUPS_TESTS_TEST_PKI_H_

#include <string>

#include "tests/test_skip.h"

namespace taups::testing {

// Paths of the files MakeTestPki wrote (certificates .pem, keys .key).
struct TestPki {
  std::string ca, server_cert, server_key, client_cert, client_key;
  std::string peer_cert, peer_key;
  std::string other_ca, stranger_cert, stranger_key;
  std::string expired_cert, expired_key;
};

inline constexpr char kTestServerName[] = "shard.taups.test";
inline constexpr char kTestClientName[] = "worker-cert.taups.test";
inline constexpr char kTestPeerName[] = "peer-cert.taups.test";

// Whether an openssl CLI can be run.
bool HaveOpenssl();

// Writes the PKI into `dir`; false (openssl's output in dir/openssl.log)
// when a command failed.
bool MakeTestPki(const std::string& dir, TestPki* pki);

}  // namespace taups::testing

// Declares `pki` and fills it in `dir` (a TempDir), or skips the test case
// when there is no openssl CLI.
#define REQUIRE_TEST_PKI(dir, pki)                                         \
  ::taups::testing::TestPki pki;                                           \
  if (!::taups::testing::HaveOpenssl())                                    \
    TAUPS_SKIP("no openssl CLI to make test certs");                       \
  REQUIRE(::taups::testing::MakeTestPki((dir).path(), &pki))

#endif  // TAUPS_TESTS_TEST_PKI_H_
