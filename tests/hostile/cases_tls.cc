// Transport cases of a mutual-TLS shard (HostileShard with a TestPki):
// handshakes the shard or the client must refuse, and a certificate that
// names a principal trying to act beyond it. Each handshake case dials on a
// connection of its own, so none reuses the suite's accepted connection.
#include "absl/strings/str_cat.h"
#include "tests/hostile/hostile_cases.h"

namespace taups::testing::hostile {
namespace {

using Stub = v1::ParameterServer::Stub;
using grpc::StatusCode;

// A push of worker `worker` to the dense table (a fresh seq), which the
// shard would apply if the call got through.
Outcome PushOn(Stub& stub, HostileShard& s, Who who, uint32_t worker) {
  auto context = s.Context(who, std::chrono::seconds(3));
  v1::PushResponse response;
  Outcome out;
  out.status = stub.PushDense(
      context.get(),
      DensePush(kDense, worker, 950, Floats(std::vector<float>(kDenseHere, 1))),
      &response);
  return out;
}

// Sends `request` on `stub` without a token.
template <typename Request, typename Response>
Outcome OnConnection(Stub& stub, HostileShard& s,
                     grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                                  Response*),
                     const Request& request) {
  auto context = s.Context(Who::kNobody, std::chrono::seconds(3));
  Response response;
  return Outcome{(stub.*method)(context.get(), request, &response), ""};
}

// A case that presents `security`'s certificates on a connection of its
// own (see HostileShard::TlsStub) and pushes as `worker` with `who`'s token.
Case Handshake(std::string name, ChannelSecurity security, Who who, uint32_t worker,
               StatusCode code, std::string says) {
  return {std::move(name), code, std::move(says),
          [security, who, worker](HostileShard& s) {
            auto stub = s.TlsStub(security);
            return PushOn(*stub, s, who, worker);
          }};
}

ChannelSecurity Presenting(const std::string& cert, const std::string& key) {
  ChannelSecurity security;
  security.cert_file = cert;
  security.key_file = key;
  return security;
}

}  // namespace

CaseClass TlsCases(const HostileShard& shard) {
  CaseClass c{"TLS handshakes and certificates", {}, {}, {}};
  const TestPki* pki = shard.pki();
  if (pki == nullptr) return c;
  // The shard refuses the handshake: the client sees the socket closed
  // during it (gRPC reports no more; the shard logs the TLS error).
  c.cases.push_back(Handshake("no client certificate where mutual TLS is required",
                              ChannelSecurity{}, Who::kTrainers, 0,
                              StatusCode::UNAVAILABLE, "Socket closed"));
  c.cases.push_back(Handshake("a client certificate another CA signed",
                              Presenting(pki->stranger_cert, pki->stranger_key),
                              Who::kTrainers, 0, StatusCode::UNAVAILABLE,
                              "Socket closed"));
  c.cases.push_back(Handshake("an expired client certificate",
                              Presenting(pki->expired_cert, pki->expired_key),
                              Who::kTrainers, 0, StatusCode::UNAVAILABLE,
                              "Socket closed"));
  // The client refuses the shard: a CA that did not sign the shard's
  // certificate, or a name the certificate does not carry.
  ChannelSecurity other_ca = Presenting(pki->client_cert, pki->client_key);
  other_ca.ca_file = pki->other_ca;
  c.cases.push_back(Handshake("a client that trusts another CA", other_ca,
                              Who::kTrainers, 0, StatusCode::UNAVAILABLE,
                              "certificate verify failed"));
  ChannelSecurity wrong_name = Presenting(pki->client_cert, pki->client_key);
  wrong_name.server_name = "other-shard.taups.test";
  c.cases.push_back(Handshake("the shard's certificate checked for another name",
                              wrong_name, Who::kTrainers, 0,
                              StatusCode::UNAVAILABLE, "Peer name other-shard.taups.test is not in peer certificate"));
  c.cases.push_back({"a plaintext client on the TLS port", StatusCode::UNAVAILABLE,
                     "Socket closed", [](HostileShard& s) {
                       return PushOn(s.plaintext_stub(), s, Who::kTrainers, 0);
                     }});

  // The certificate names principal 'certified' (worker kCertifiedWorker).
  const ChannelSecurity peer = Presenting(pki->peer_cert, pki->peer_key);
  c.cases.push_back(Handshake("a certificate principal pushing as worker 0", peer,
                              Who::kNobody, 0, StatusCode::PERMISSION_DENIED,
                              absl::StrCat("'certified' acts as workers ",
                                           kCertifiedWorker, "-", kCertifiedWorker,
                                           ", not worker 0")));
  c.cases.push_back(Handshake("a certificate principal pushing as worker 5", peer,
                              Who::kNobody, 5, StatusCode::PERMISSION_DENIED,
                              "not worker 5"));
  c.cases.push_back({"a certificate principal registering worker 1",
                     StatusCode::PERMISSION_DENIED, "not worker 1", [peer](HostileShard& s) {
                       return OnConnection(*s.TlsStub(peer), s, &Stub::Register,
                                           Registration(1, kMaxLeaseS, kIncarnation + 1));
                     }});
  v1::CreateTableRequest create;
  create.mutable_config()->set_name("by-cert");
  create.mutable_config()->set_kind(v1::TABLE_KIND_DENSE);
  create.mutable_config()->set_dense_size(4);
  c.cases.push_back({"a certificate principal creating a table",
                     StatusCode::PERMISSION_DENIED, "may not call CreateTable",
                     [peer, create](HostileShard& s) {
                       return OnConnection(*s.TlsStub(peer), s, &Stub::CreateTable, create);
                     }});
  // A token on a certificate principal's connection names the caller: an
  // unknown one is refused, and another principal's gives only its rights.
  c.cases.push_back(Handshake("a certificate principal with an unknown token", peer,
                              Who::kUnknownToken, kCertifiedWorker,
                              StatusCode::UNAUTHENTICATED, "unknown bearer token"));
  c.cases.push_back(Handshake("the trainers' token on the certificate's connection, "
                              "as the certificate's worker",
                              peer, Who::kTrainers, kCertifiedWorker,
                              StatusCode::PERMISSION_DENIED,
                              absl::StrCat("'trainers' acts as workers 0-3, not worker ",
                                           kCertifiedWorker)));
  return c;
}

}  // namespace taups::testing::hostile
