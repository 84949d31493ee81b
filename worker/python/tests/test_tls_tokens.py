"""taups.Client over mutual TLS with bearer tokens, against a real ps_server.

The test makes a CA, a certificate for the shard (127.0.0.1) and one for
the client with the openssl CLI (as tests/security_process_test.cc does),
writes an auth file with a worker token (worker ids 0-1) and an admin
token, and starts ps_server with --tls_cert/--tls_key/--tls_ca
--tls_require_client_cert --auth_file. Then: an admin client creates a
table, a worker client trains a few steps on it (values checked against
SGD computed here; with torch, the taups.torch modules too, on tables the
admin created), and wrong, missing or misused credentials are refused with
the right exception, whose message never holds the token.

Exits 77 (skipped) without the openssl CLI. Run by CTest
(python_tls_tokens_test); $TAUPS_PS_SERVER names the server binary.
"""

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import taups
from ps_servers import ps_servers

WORKER_TOKEN = "py-worker-secret-0123456789abcdef"
ADMIN_TOKEN = "py-admin-secret-fedcba9876543210"
UNKNOWN_TOKEN = "py-unknown-secret-00000000000000"

MAKE_PKI = r"""
set -e
o() { openssl "$@" >>openssl.log 2>&1; }
key='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'
o req -x509 $key -keyout ca.key -out ca.pem -days 2 -subj /CN=taups-py-ca
sign() {
  o req $key -keyout $1.key -out $1.csr -subj /CN=$2
  printf 'subjectAltName=DNS:%s%s\nextendedKeyUsage=%s\n' $2 "$3" $4 > $1.ext
  o x509 -req -in $1.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -out $1.pem -days 2 -extfile $1.ext
}
sign server shard.taups.test ,IP:127.0.0.1 serverAuth
sign client worker.taups.test '' clientAuth
"""


def write_private(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


class TlsTokensTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls._stack = contextlib.ExitStack()
        cls.dir = cls._stack.enter_context(tempfile.TemporaryDirectory())
        subprocess.run(["bash", "-c", MAKE_PKI], cwd=cls.dir, check=True)
        pem = lambda name: os.path.join(cls.dir, name)
        auth = write_private(pem("auth.txt"),
                             f"token {WORKER_TOKEN} trainers worker 0-1\n"
                             f"token {ADMIN_TOKEN} ops admin\n")
        cls.servers = cls._stack.enter_context(ps_servers(1, args=[
            f"--tls_cert={pem('server.pem')}", f"--tls_key={pem('server.key')}",
            f"--tls_ca={pem('ca.pem')}", "--tls_require_client_cert",
            f"--auth_file={auth}"]))
        cls.tls = {"tls_ca_file": pem("ca.pem"),
                   "tls_cert_file": pem("client.pem"),
                   "tls_key_file": pem("client.key")}

    @classmethod
    def tearDownClass(cls):
        cls._stack.close()

    def connect(self, **settings):
        args = {"call_timeout_s": 10, "connect_timeout_s": 10, **self.tls,
                **settings}
        return taups.Client(self.servers, **args)

    def assertRefused(self, error_class, code_name, caught):
        error = caught.exception
        self.assertIsInstance(error, error_class)
        self.assertIsInstance(error, PermissionError)
        self.assertEqual(error.code_name, code_name)
        for secret in (WORKER_TOKEN, ADMIN_TOKEN, UNKNOWN_TOKEN):
            self.assertNotIn(secret, str(error))
        return str(error)

    def test_worker_trains_over_mutual_tls_with_tokens(self):
        token_file = write_private(os.path.join(self.dir, "admin.token"),
                                   ADMIN_TOKEN + "\n")
        with self.connect(auth_token_file=token_file,
                          register_worker=False) as admin:
            admin.create_table(taups.dense_table("tls_w", 6, optimizer="sgd",
                                                 learning_rate=0.5))
        grads = [np.arange(6, dtype=np.float32) * np.float32(k + 1)
                 for k in range(3)]
        expected = np.zeros(6, np.float32)
        w = np.empty(6, np.float32)
        with self.connect(worker_id=1, auth_token=WORKER_TOKEN) as worker:
            for grad in grads:
                worker.pull_dense("tls_w", w)
                np.testing.assert_array_equal(w, expected)
                result = worker.push_dense("tls_w", grad)
                self.assertTrue(result.all_accepted)
                worker.clock()
                expected = expected - np.float32(0.5) * grad
            worker.pull_dense("tls_w", w)
            # Only an admin drops tables.
            with self.assertRaises(taups.PermissionDeniedError):
                worker.drop_table("tls_w")
            with self.connect(auth_token=ADMIN_TOKEN,
                              register_worker=False) as admin:
                self.assertGreaterEqual(admin.drop_table("tls_w"), 6 * 4)
            with self.assertRaises(taups.NotFoundError):
                worker.pull_dense("tls_w", w)
        np.testing.assert_array_equal(w, expected)
        self.assertFalse(np.array_equal(w, np.zeros(6, np.float32)))

    def test_example_flags_reach_the_client(self):
        # The examples' --tls_* / --auth_token_file, parsed as they parse
        # them, connect over mutual TLS with the token; without the client
        # certificate the same flags are refused.
        import argparse
        token_file = write_private(os.path.join(self.dir, "ex.token"),
                                   ADMIN_TOKEN + "\n")
        parser = argparse.ArgumentParser()
        taups.add_transport_arguments(parser)
        flags = ["--tls_ca", self.tls["tls_ca_file"],
                 "--tls_cert", self.tls["tls_cert_file"],
                 "--tls_key", self.tls["tls_key_file"],
                 "--auth_token_file", token_file]
        settings = taups.transport_settings(parser.parse_args(flags))
        self.assertEqual(set(settings), {"tls_ca_file", "tls_cert_file",
                                         "tls_key_file", "auth_token_file"})
        self.assertEqual(taups.transport_settings(parser.parse_args([])), {})
        with taups.Client(self.servers, register_worker=False,
                          call_timeout_s=10, connect_timeout_s=10,
                          **settings) as admin:
            admin.create_table(taups.dense_table("ex_w", 3))
            self.assertGreaterEqual(admin.drop_table("ex_w"), 3 * 4)
        no_cert = taups.transport_settings(parser.parse_args(
            flags[:2] + flags[-2:]))
        with self.assertRaises(taups.UnavailableError):
            taups.Client(self.servers, register_worker=False,
                         connect_timeout_s=1, **no_cert)

    @unittest.skipUnless(importlib.util.find_spec("torch"), "no torch")
    def test_torch_modules_on_tables_an_admin_created(self):
        import torch
        import taups.torch as tt
        spec = tt.EmbeddingTable("tls_emb", 2, ["f"], optimizer="sgd",
                                 learning_rate=1.0, init_scale=0.5)
        with self.connect(auth_token=ADMIN_TOKEN,
                          register_worker=False) as admin:
            admin.create_table(spec.config)
        with self.connect(worker_id=0, auth_token=WORKER_TOKEN) as worker:
            ebc = tt.EmbeddingBagCollection(worker, [spec],
                                            create_tables=False)
            ids = {"f": torch.tensor([[3], [4]])}
            for _ in range(2):
                with tt.training_step(ebc) as done:
                    before = ebc(ids)["f"]
                    before.sum().backward()
                self.assertEqual(done.stats.tables["tls_emb"].pushes, 1)
            with torch.no_grad():
                after = ebc.eval()(ids)["f"]
            ebc.close()
        # SGD, rate 1, gradient 1 per row and step: one less per step.
        torch.testing.assert_close(after, before.detach() - 1.0)

    def test_unknown_token_is_unauthenticated(self):
        with self.assertRaises(taups.UnauthenticatedError) as caught:
            self.connect(worker_id=0, auth_token=UNKNOWN_TOKEN)
        message = self.assertRefused(taups.UnauthenticatedError,
                                     "UNAUTHENTICATED", caught)
        self.assertIn("unknown bearer token", message)
        self.assertIn("auth_token_file", message)  # what to check

    def test_missing_token_is_unauthenticated(self):
        with self.assertRaises(taups.UnauthenticatedError) as caught:
            self.connect(worker_id=0)
        message = self.assertRefused(taups.UnauthenticatedError,
                                     "UNAUTHENTICATED", caught)
        self.assertIn("no credential", message)

    def test_worker_token_may_neither_administer_nor_act_for_others(self):
        with self.connect(worker_id=0, auth_token=WORKER_TOKEN) as worker:
            with self.assertRaises(taups.PermissionDeniedError) as caught:
                worker.create_table(taups.dense_table("tls_denied", 4))
            message = self.assertRefused(taups.PermissionDeniedError,
                                         "PERMISSION_DENIED", caught)
            self.assertIn("'trainers' (role worker) may not call CreateTable",
                          message)
        # Worker id 5 is not among the token's ids 0-1: its Register is
        # refused while connecting.
        with self.assertRaises(taups.PermissionDeniedError) as caught:
            self.connect(worker_id=5, auth_token=WORKER_TOKEN)
        self.assertIn("not worker 5", self.assertRefused(
            taups.PermissionDeniedError, "PERMISSION_DENIED", caught))

    def test_token_file_must_be_private_and_not_echoed(self):
        path = os.path.join(self.dir, "loose.token")
        with open(path, "w") as f:
            f.write(WORKER_TOKEN + "\n")
        os.chmod(path, 0o644)
        with self.assertRaisesRegex(ValueError, "chmod 600") as caught:
            self.connect(auth_token_file=path)
        self.assertNotIn(WORKER_TOKEN, str(caught.exception))
        with self.assertRaisesRegex(ValueError, "not both"):
            self.connect(auth_token_file=path, auth_token=WORKER_TOKEN)

    def test_options_repr_hides_the_token(self):
        options = taups.client_options(self.servers, auth_token=WORKER_TOKEN,
                                       **self.tls)
        self.assertEqual(options.auth_token, WORKER_TOKEN)
        self.assertIn("auth_token=<set>", repr(options))
        self.assertNotIn(WORKER_TOKEN, repr(options))
        self.assertIn("client.pem", repr(options))

    def test_client_without_certificate_is_not_served(self):
        # --tls_require_client_cert: the handshake fails, the shard never
        # answers (a token alone is not enough).
        with self.assertRaises(taups.UnavailableError):
            taups.Client(self.servers, tls_ca_file=self.tls["tls_ca_file"],
                         auth_token=WORKER_TOKEN, connect_timeout_s=1)

    def test_certificate_without_key_is_refused_before_connecting(self):
        with self.assertRaisesRegex(taups.InvalidArgumentError,
                                    "tls_key_file"):
            taups.Client(self.servers, tls_ca_file=self.tls["tls_ca_file"],
                         tls_cert_file=self.tls["tls_cert_file"])


if __name__ == "__main__":
    if shutil.which("openssl") is None:
        print("SKIPPED: no openssl CLI to make the test certificates")
        sys.exit(77)
    unittest.main(verbosity=2)
