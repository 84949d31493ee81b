"""Table configurations in one call, with enum fields given by name."""

from taups import _taups


def _enum(enum_type, value, what):
    if isinstance(value, enum_type):
        return value
    members = enum_type.__members__
    if isinstance(value, str) and value.upper() in members:
        return members[value.upper()]
    names = ", ".join(name.lower() for name in members)
    raise ValueError(f"{what}: {value!r} is not one of {names}")


def _configure(config, optimizer, learning_rate, initializer, init_scale,
               init_seed, consistency):
    config.optimizer.kind = _enum(_taups.Optimizer, optimizer, "optimizer")
    config.optimizer.learning_rate = learning_rate
    config.initializer.kind = _enum(_taups.Initializer, initializer,
                                    "initializer")
    config.initializer.scale = init_scale
    config.initializer.seed = init_seed
    if consistency is not None:
        config.consistency = consistency
    config.validate()
    return config


def dense_table(name, size, *, optimizer="sgd", learning_rate=0.01,
                initializer="zeros", init_scale=0.0, init_seed=0,
                consistency=None):
    """A dense table of `size` float32 values, split over the shards.

    optimizer: sgd, adagrad, momentum, adam or ftrl (the other optimizer
    settings keep their defaults; change them on the returned config's
    .optimizer). initializer: zeros, uniform (U(-init_scale, init_scale)) or
    normal (N(0, init_scale^2)). consistency: a ConsistencyConfig, default
    async.
    """
    return _configure(_taups.TableConfig.dense(name, size), optimizer,
                      learning_rate, initializer, init_scale, init_seed,
                      consistency)


def sparse_table(name, dim, *, optimizer="sgd", learning_rate=0.01,
                 initializer="zeros", init_scale=0.0, init_seed=0,
                 consistency=None, max_rows=0, max_bytes=0, eviction="lru",
                 ttl_s=0.0, admit_after=0, admit_probability=1.0):
    """A sparse table: uint64 key -> row of `dim` float32 values.

    Rows are created on first touch by the initializer (deterministic in the
    seed, table and key). Bounded memory per shard (see table_config.h):
    max_rows / max_bytes > 0 cap the rows, evicted by `eviction` (lru or
    lfu); ttl_s > 0 expires untouched rows; admit_after > 1 gives a key a row
    only on its admit_after-th sighting, admit_probability < 1 admits a new
    key with that probability. Other arguments as in dense_table.
    """
    config = _taups.TableConfig.sparse(name, dim)
    config.sparse_max_rows = max_rows
    config.sparse_max_bytes = max_bytes
    config.sparse_eviction = _enum(_taups.SparseEviction, eviction, "eviction")
    config.sparse_ttl_s = ttl_s
    config.sparse_admit_after = admit_after
    config.sparse_admit_probability = admit_probability
    return _configure(config, optimizer, learning_rate, initializer,
                      init_scale, init_seed, consistency)


def consistency(kind="async", *, num_workers=0, quorum=1.0, step_timeout_s=0.0,
                late="drop", staleness_bound=0):
    """A ConsistencyConfig: kind async, sync (every one of num_workers
    workers each step), semi_sync (a quorum fraction of them in (0, 1], or
    whoever came within step_timeout_s) or ssp
    (a worker at most staleness_bound steps ahead of the slowest). late:
    what a push for a closed step does (drop, reuse_last, apply_late).
    validate() is left to the table config that carries it."""
    config = _taups.ConsistencyConfig()
    config.kind = _enum(_taups.Consistency, kind, "consistency")
    config.num_workers = num_workers
    config.quorum = quorum
    config.step_timeout_s = step_timeout_s
    config.late = _enum(_taups.LatePolicy, late, "late")
    config.staleness_bound = staleness_bound
    return config
