"""EmbeddingTable: how one sparse tauPS table behind a module is set up."""

import taups


def finish_config(config, adagrad_initial_accumulator, staleness):
    """Sets the settings taups.*_table leave at their defaults (when given)
    and validates; returns `config`."""
    if adagrad_initial_accumulator is not None:
        config.optimizer.adagrad_initial_accumulator = \
            adagrad_initial_accumulator
    if staleness is not None:
        config.staleness = staleness
    config.validate()
    return config


class EmbeddingTable:
    """One sparse tauPS table and the features that look ids up in it.

    name: the tauPS table; dim: row width; features: feature names (each
    feature gets its own key space in the table: its ids never meet another
    feature's, so the same id in two features names two rows).
    optimizer, learning_rate, initializer, init_scale, init_seed and the
    memory bounds (max_rows, max_bytes, eviction, ttl_s, admit_after,
    admit_probability) are taups.sparse_table's; adagrad_initial_accumulator
    sets that optimizer field when given. consistency: a ConsistencyConfig
    (taups.consistency(...)), default async; staleness: a StalenessConfig.
    compression: a CompressionConfig (taups.compression(...)) for this
    worker's pushes and pulls of the table. row_versions: pull row versions
    so each push reports per-row tau (a few bytes more per row).

    Value object; building the TableConfig raises InvalidArgumentError or
    ValueError for bad settings.
    """

    def __init__(self, name, dim, features, *, optimizer="adagrad",
                 learning_rate=0.01, initializer="uniform", init_scale=0.05,
                 init_seed=0, adagrad_initial_accumulator=None,
                 consistency=None, staleness=None, compression=None,
                 row_versions=False, max_rows=0, max_bytes=0, eviction="lru",
                 ttl_s=0.0, admit_after=0, admit_probability=1.0):
        if isinstance(features, str):
            features = [features]
        self.name = name
        self.dim = int(dim)
        self.features = list(features)
        if not self.features:
            raise ValueError(f"table {name!r}: no features")
        if len(set(self.features)) != len(self.features):
            raise ValueError(f"table {name!r}: a feature is listed twice")
        if len(self.features) >= 1 << 24:
            raise ValueError(f"table {name!r}: at most 2^24 - 1 features")
        self.compression = compression
        self.row_versions = bool(row_versions)
        config = taups.sparse_table(
            name, self.dim, optimizer=optimizer, learning_rate=learning_rate,
            initializer=initializer, init_scale=init_scale,
            init_seed=init_seed, consistency=consistency, max_rows=max_rows,
            max_bytes=max_bytes, eviction=eviction, ttl_s=ttl_s,
            admit_after=admit_after, admit_probability=admit_probability)
        self.config = finish_config(config, adagrad_initial_accumulator,
                                    staleness)

    @property
    def consistency_kind(self):
        return self.config.consistency.kind

    def __repr__(self):
        return (f"EmbeddingTable({self.name!r}, dim={self.dim}, "
                f"features={self.features})")
