"""Worker identity from torchrun (RANK, WORLD_SIZE) and a client for it."""

import os

import taups


def _env_int(name):
    text = os.environ.get(name)
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"${name}={text!r} is not an integer") from None


def worker_from_env(worker_id=None, num_workers=None):
    """(worker_id, num_workers): the arguments when given, else $RANK and
    $WORLD_SIZE (set by torchrun), else (0, 1). ValueError unless
    0 <= worker_id < num_workers."""
    if worker_id is None:
        worker_id = _env_int("RANK")
    if num_workers is None:
        num_workers = _env_int("WORLD_SIZE")
    worker_id = 0 if worker_id is None else worker_id
    num_workers = 1 if num_workers is None else num_workers
    if not 0 <= worker_id < num_workers:
        raise ValueError(f"worker id {worker_id} is not in [0, "
                         f"{num_workers})")
    return worker_id, num_workers


def connect(servers, worker_id=None, **client_args):
    """A taups.Client whose worker id is `worker_id` or $RANK (torchrun).
    servers: "host:port,..." or a list; other arguments as taups.Client's."""
    worker_id, _ = worker_from_env(worker_id)
    return taups.Client(servers, worker_id=worker_id, **client_args)
