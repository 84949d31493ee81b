"""EmbeddingBagCollection and EmbeddingCollection: embedding modules whose
rows live in sparse tauPS tables.

    tables = [taups.torch.EmbeddingTable("user_item", 16, ["user", "item"],
                                         learning_rate=0.05)]
    ebc = taups.torch.EmbeddingBagCollection(client, tables, pooling="sum")
    pooled = ebc({"user": (values, lengths), "item": item_ids})
    loss(pooled["user"], pooled["item"]).backward()   # pushes the gradients
    ebc.step()                                        # clocks

The forward pass pulls each unique (feature, id) of the batch once; the
backward pass pushes each row's gradient, summed over its lookups, with the
pull as its basis (so tau is measured against the rows actually used). The
gradient pushed is the gradient of whatever was differentiated: a mean loss
pushes mean gradients, and the table's server-side optimizer applies them.
Pushes run on background threads; step() (or taups.torch.step) waits for
them and clocks. In eval mode or under torch.no_grad() the forward only
pulls.

Input: a dict feature -> (values, lengths) / ids of shape (B,) or (B, k),
a taups.torch.JaggedFeatures, or a torchrec KeyedJaggedTensor. Ids must be
in [0, 2^40). Tensors on the module's device (cpu or cuda); the outputs are
on the same device.
"""

import torch
import torch.nn.functional as F

from taups.torch.collection import SparseCollection

_POOLINGS = ("sum", "mean")


class EmbeddingBagCollection(SparseCollection):
    """Pooled lookups: forward(features) -> dict feature -> (B, dim) tensor,
    in feature order; each bag's rows summed (pooling="sum") or averaged
    ("mean"); an empty bag gives zeros. See the module docstring.

    client: a taups.Client (shared with other tauPS modules of the job);
    tables: EmbeddingTable list; device: where inputs and outputs live;
    create_tables: create the tables (identical configs may exist already).
    """

    def __init__(self, client, tables, *, pooling="sum", device=None,
                 create_tables=True):
        if pooling not in _POOLINGS:
            raise ValueError(f"pooling {pooling!r}: expected one of "
                             f"{', '.join(_POOLINGS)} (EmbeddingCollection "
                             "for unpooled lookups)")
        super().__init__(client, tables, device=device,
                         create_tables=create_tables)
        self.pooling = pooling

    def forward(self, features):
        out = {}
        rows_of = self._table_rows(features)
        for table in self.tables:
            plan, rows = rows_of[table.name]
            inverse, offsets = plan.all_bags()
            pooled = F.embedding_bag(inverse, rows, offsets,
                                     mode=self.pooling,
                                     include_last_offset=True)
            batch = plan.offsets[0].numel() - 1
            for name, bags in zip(table.features,
                                  torch.split(pooled, batch)):
                out[name] = bags
        return {name: out[name] for name in self.feature_names}


class JaggedEmbeddings:
    """One feature's unpooled lookups: values (N, dim), one row per id in
    input order; lengths (B,) and offsets (B + 1,) of the bags."""

    __slots__ = ("values", "offsets")

    def __init__(self, values, offsets):
        self.values = values
        self.offsets = offsets

    @property
    def lengths(self):
        return self.offsets[1:] - self.offsets[:-1]

    def __repr__(self):
        return (f"JaggedEmbeddings(values={tuple(self.values.shape)}, "
                f"bags={self.offsets.numel() - 1})")


class EmbeddingCollection(SparseCollection):
    """Unpooled lookups: forward(features) -> dict feature ->
    JaggedEmbeddings. Arguments as EmbeddingBagCollection's, no pooling."""

    def forward(self, features):
        out = {}
        rows_of = self._table_rows(features)
        for table in self.tables:
            plan, rows = rows_of[table.name]
            for i, name in enumerate(table.features):
                out[name] = JaggedEmbeddings(
                    F.embedding(plan.inverse[i], rows), plan.offsets[i])
        return {name: out[name] for name in self.feature_names}
