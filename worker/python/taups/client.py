"""taups.Client: the connection to a tauPS cluster."""

import os

from taups import _taups
from taups.arrays import as_numpy
from taups.credentials import read_token_file


_SETTINGS = ("worker_id", "worker_incarnation", "call_timeout_s",
             "connect_timeout_s", "retry_budget_s", "register_worker",
             "lease_s", "max_attempts", "slice_bytes", "channels_per_shard",
             "tls_ca_file", "tls_cert_file", "tls_key_file",
             "tls_server_name", "auth_token")


def client_options(servers=None, *, options=None, auth_token_file=None,
                   **settings):
    """A taups.ClientOptions: a copy of `options` (or the defaults) with
    `servers` ("host:port,..." or a list) and every keyword setting applied;
    auth_token_file names a file holding the bearer token (chmod 600; see
    taups.credentials). TypeError for an unknown setting, ValueError for a
    bad value."""
    result = _taups.ClientOptions(options) if options is not None \
        else _taups.ClientOptions()
    if isinstance(servers, str):
        servers = [s for s in servers.split(",") if s]
    if servers is not None:
        result.servers = list(servers)
    unknown = sorted(set(settings) - set(_SETTINGS))
    if unknown:
        raise TypeError(f"unknown client settings {unknown}; the settings "
                        f"are {list(_SETTINGS)}")
    if auth_token_file is not None:
        if settings.get("auth_token"):
            raise ValueError("give auth_token or auth_token_file, not both")
        settings["auth_token"] = read_token_file(auth_token_file)
    for name, value in settings.items():
        if value is None:
            continue
        if name.startswith("tls_"):
            value = os.fspath(value)
        setattr(result, name, value)
    return result


class Client:
    """A worker's connection to every shard of a tauPS cluster.

    Client(servers, *, worker_id=0, call_timeout_s=30, connect_timeout_s=30,
           register_worker=True, lease_s=0, max_attempts=8,
           tls_ca_file=None, tls_cert_file=None, tls_key_file=None,
           tls_server_name=None, auth_token=None, auth_token_file=None,
           options=None, ...)

    servers: one "host:port" per shard, in shard order (a list, or one
    comma-separated string). Connecting waits up to connect_timeout_s for
    every shard (UnavailableError otherwise). register_worker: hold a
    lease renewed by heartbeat, which sync, semi_sync and ssp tables need.
    Each call has a deadline of call_timeout_s and is retried while a shard
    is unavailable. Every keyword is a field of taups.ClientOptions (pass a
    whole one as `options`; keywords override its fields).

    Transport security (docs/SECURITY.md): tls_ca_file (PEM CA bundle of
    the shards' certificates) turns TLS on; tls_cert_file + tls_key_file
    add a client certificate (mutual TLS); tls_server_name is the name the
    certificates carry when it is not the host dialled. auth_token (or
    auth_token_file, a chmod-600 file holding it) is the bearer token of
    this client's principal; without TLS it is sent to loopback shards
    only. A token the shards do not know raises UnauthenticatedError, a
    call the principal's role may not make PermissionDeniedError; neither
    message contains the token.

    Arrays: numpy arrays or CPU torch tensors, C-contiguous, float32 values
    and uint64 (or int64) keys; they are read and written in place, never
    copied. A wrong dtype raises TypeError, a wrong layout or shape
    ValueError, before anything is sent.

    Every network call releases the GIL; one client may be used from
    several threads at once. Use it as a context manager, or call close().
    """

    def __init__(self, servers=None, *, options=None, auth_token_file=None,
                 **settings):
        self._core = _taups.ClientCore(client_options(
            servers, options=options, auth_token_file=auth_token_file,
            **settings))

    # --- connection ---
    @property
    def num_shards(self):
        return self._core.num_shards

    @property
    def worker_id(self):
        return self._core.worker_id

    @property
    def worker_clock(self):
        """Steps this worker has completed (clock() calls)."""
        return self._core.worker_clock

    def clock(self):
        """Marks one step done (after pushing every table of the step);
        returns the new worker clock. sync/semi_sync/ssp tables wait on it."""
        return self._core.clock()

    def close(self):
        """Stops the heartbeat and closes the channels; later calls raise."""
        self._core.close()

    @property
    def closed(self):
        return self._core.closed

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    # --- tables ---
    def create_table(self, config):
        """Creates `config` (a TableConfig) on every shard. An identical
        table may already exist; another config of that name raises
        AlreadyExistsError."""
        self._core.create_table(config)

    def open_table(self, name):
        """The TableConfig of an existing table; NotFoundError if absent."""
        return self._core.open_table(name)

    def set_consistency(self, table, consistency, staleness=None):
        """Changes a table's policy (ConsistencyConfig) and staleness
        treatment (StalenessConfig, default: none) on every shard."""
        if staleness is None:
            staleness = _taups.StalenessConfig()
        self._core.set_consistency(table, consistency, staleness)

    def drop_table(self, name):
        """Admin: drops table `name` on every shard, giving its memory back
        to each shard's budget; returns the bytes given back, summed over
        the shards. NotFoundError if a shard has no such table (the others
        still drop theirs); PermissionDeniedError for a principal that is
        not an admin. Pulls and pushes of the table fail from then on; the
        name may be created again, with any configuration."""
        return self._core.drop_table(name)

    def stats(self, table):
        """What every shard measured for `table`: list of TableShardStats."""
        return self._core.stats(table)

    def set_compression(self, table, config):
        """Compresses this worker's pushes (and, if asked, pulls) of `table`
        from now on: a CompressionConfig, e.g. taups.compression("int8",
        error_feedback=True). Call it again to change it."""
        self._core.set_compression(table, config)

    def transfers(self, table):
        """Bytes this worker pushed and pulled for `table`, raw (float32) and
        on the wire: a TransferCounters."""
        return self._core.transfers(table)

    # --- dense tables ---
    def pull_dense(self, table, out):
        """Reads the whole table into `out` (float32, table-size elements,
        any shape). Returns a PullInfo."""
        return self._core.pull_dense(table, as_numpy(out, "out"))

    def push_dense(self, table, grad, basis=None):
        """Sends a gradient for the whole table. Its staleness is measured
        against this worker's last pull of the table, or against `basis` (a
        PullInfo). Returns a PushResult (accepted, tau per shard)."""
        return self._core.push_dense(table, as_numpy(grad, "grad"), basis)

    def push_dense_with(self, table, encoder, basis=None):
        """Sends a gradient that encodes itself, a taups._taups
        DeviceGradient (CUDA builds: the gradient in GPU memory, encoded
        there with the table's push codec and error feedback). Returns a
        PushResult. InvalidArgumentError when its size is not the table's or
        the table accumulates gradients."""
        return self._core.push_dense_with(table, encoder, basis)

    # --- sparse tables ---
    def pull_sparse(self, table, keys, out, row_versions=False):
        """Reads the rows of `keys` (any shape) into `out`, of shape
        keys.shape + (dim,). Missing rows are created by the table's
        initializer. Returns a PullInfo; with row_versions=True it carries
        each key's row version, and a push based on it reports per-row tau
        (PushResult.row_taus)."""
        return self._core.pull_sparse(table, as_numpy(keys, "keys"),
                                      as_numpy(out, "out"), row_versions)

    def push_sparse(self, table, keys, grads, basis=None):
        """Sends gradients for the rows of `keys`; `grads` has the shape
        keys.shape + (dim,). Gradients of repeated keys are summed. Returns
        a PushResult."""
        return self._core.push_sparse(table, as_numpy(keys, "keys"),
                                      as_numpy(grads, "grads"), basis)
