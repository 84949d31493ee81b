"""ps_worker's transport flags for Python programs (the examples, torchrun
jobs): --tls_ca, --tls_cert, --tls_key, --tls_server_name and
--auth_token_file, with the same names and meaning (docs/SECURITY.md), turned
into taups.Client settings."""


def add_transport_arguments(parser):
    """Adds the five flags to an argparse parser; all default to unset
    (plaintext, no token)."""
    group = parser.add_argument_group("transport (as ps_worker's flags)")
    group.add_argument("--tls_ca", default=None,
                       help="PEM CA the shards' certificates are checked "
                            "against: talk TLS to them")
    group.add_argument("--tls_cert", default=None,
                       help="PEM client certificate for mutual TLS "
                            "(with --tls_key and --tls_ca)")
    group.add_argument("--tls_key", default=None,
                       help="PEM private key of --tls_cert")
    group.add_argument("--tls_server_name", default=None,
                       help="name the shards' certificates carry, when not "
                            "the host dialled")
    group.add_argument("--auth_token_file", default=None,
                       help="file holding this worker's bearer token "
                            "(chmod 600)")
    return group


def transport_settings(args):
    """The taups.Client keyword settings the parsed flags ask for (only those
    given), e.g. taups.Client(servers, **transport_settings(args))."""
    settings = {"tls_ca_file": args.tls_ca, "tls_cert_file": args.tls_cert,
                "tls_key_file": args.tls_key,
                "tls_server_name": args.tls_server_name,
                "auth_token_file": args.auth_token_file}
    return {k: v for k, v in settings.items() if v is not None}
