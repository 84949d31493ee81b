#include "tests/test_pki.h"

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace taups::testing {

bool HaveOpenssl() {
  return std::system("openssl version >/dev/null 2>&1") == 0;
}

bool MakeTestPki(const std::string& dir, TestPki* pki) {
  // ca <file> <name>: a self-signed CA valid two days.
  // sign <file> <CA file> <name> <extra SANs> <key usage> <days>
  const std::string script = absl::StrCat(
      "set -e; cd '", dir, "'\n",
      "o() { openssl \"$@\" >>openssl.log 2>&1; }\n"
      "key='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'\n"
      "ca() { o req -x509 $key -keyout $1.key -out $1.pem -days 2 -subj /CN=$2; }\n"
      "ca ca taups-test-ca\n"
      "ca other other-ca\n"
      "sign() {\n"
      "  o req $key -keyout $1.key -out $1.csr -subj /CN=$3\n"
      "  printf 'subjectAltName=DNS:%s%s\\nextendedKeyUsage=%s\\n' $3 \"$4\" $5 > $1.ext\n"
      "  o x509 -req -in $1.csr -CA $2.pem -CAkey $2.key -CAcreateserial "
      "-out $1.pem -days $6 -extfile $1.ext\n"
      "}\n"
      "sign server ca ", kTestServerName, " ,IP:127.0.0.1 serverAuth 2\n",
      "sign client ca ", kTestClientName, " '' clientAuth 2\n",
      "sign peer ca ", kTestPeerName, " '' clientAuth 2\n",
      "sign stranger other ", kTestClientName, " '' clientAuth 2\n",
      "sign expired ca ", kTestClientName, " '' clientAuth -1\n");
  const std::string path = dir + "/make_pki.sh";
  std::ofstream(path) << script;
  if (std::system(absl::StrCat("bash '", path, "'").c_str()) != 0) return false;
  auto pem = [&](const char* name) { return absl::StrCat(dir, "/", name, ".pem"); };
  auto key = [&](const char* name) { return absl::StrCat(dir, "/", name, ".key"); };
  pki->ca = pem("ca");
  pki->server_cert = pem("server");
  pki->server_key = key("server");
  pki->client_cert = pem("client");
  pki->client_key = key("client");
  pki->peer_cert = pem("peer");
  pki->peer_key = key("peer");
  pki->other_ca = pem("other");
  pki->stranger_cert = pem("stranger");
  pki->stranger_key = key("stranger");
  pki->expired_cert = pem("expired");
  pki->expired_key = key("expired");
  return true;
}

}  // namespace taups::testing
