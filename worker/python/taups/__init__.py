"""tauPS worker client for Python.

    import numpy as np
    import taups

    with taups.Client(["127.0.0.1:7000"], worker_id=0) as client:
        client.create_table(taups.dense_table("w", 1000, learning_rate=0.1))
        w = np.empty(1000, np.float32)
        client.pull_dense("w", w)        # fills w in place
        grad = np.ones(1000, np.float32)  # ... from the model
        result = client.push_dense("w", grad)
        print(result.all_accepted, result.taus)
        client.clock()                   # one step done

numpy arrays and CPU torch tensors are passed without copying; they must be
C-contiguous float32 (keys: uint64 or int64). Failed calls raise
taups.StatusError or one of its subclasses (NotFoundError, ...), carrying
`code`, `code_name` and `message`. `taups.__version__` is the tauPS version
the extension was built from.

TLS and bearer tokens are keyword arguments of Client (tls_ca_file,
tls_cert_file, tls_key_file, auth_token or auth_token_file), the fields of
taups.ClientOptions; see docs/SECURITY.md.

`taups.cuda_built` says whether the extension holds the CUDA codecs (then
`taups._taups.DeviceGradient` encodes gradients in GPU memory, which
`Client.push_dense_with` pushes); `taups.encode_block` is the CPU codec.
"""

from taups._taups import (
    __version__,
    AlreadyExistsError,
    ClientOptions,
    Codec,
    CodecOptions,
    CompressionConfig,
    CtrData,
    Consistency,
    ConsistencyConfig,
    DeadlineExceededError,
    Downweight,
    Initializer,
    InitializerConfig,
    InvalidArgumentError,
    LatePolicy,
    NotFoundError,
    Optimizer,
    OptimizerConfig,
    PermissionDeniedError,
    PullInfo,
    PushResult,
    Rounding,
    ShardPushResult,
    SparseEviction,
    StalenessConfig,
    StatusError,
    TableConfig,
    TableKind,
    TableShardStats,
    TransferCounters,
    UnauthenticatedError,
    UnavailableError,
    WorkerShardStats,
    cuda_built,
    cuda_device_count,
    encode_block,
)
from taups.client import Client, client_options
from taups.compression import compression
from taups import metrics
from taups.tables import consistency, dense_table, sparse_table
from taups.transport_args import add_transport_arguments, transport_settings

__all__ = [name for name in dir() if not name.startswith("_")]
