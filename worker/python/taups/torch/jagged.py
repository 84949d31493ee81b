"""Jagged id input: the ids of each feature as bags (one bag per example).

A batch of B examples carries, for every feature, B bags of ids (a bag may
be empty). `JaggedFeatures` holds them in the layout TorchRec's
KeyedJaggedTensor uses: all values feature by feature, and one length per
(feature, example). `as_features` turns every accepted input into per-feature
(values, offsets) pairs; nothing here talks to tauPS.

Plain value objects; thread-compatible.
"""

import sys

import torch

ID_BITS = 40
MAX_ID = (1 << ID_BITS) - 1


class JaggedFeatures:
    """Ids of `keys` (feature names) for a batch of `batch_size` examples.

    values: 1-D integer tensor, every feature's ids, feature by feature and,
      within a feature, example by example.
    lengths: integer tensor of len(keys) * batch_size bag sizes (or shaped
      (len(keys), batch_size)); give lengths or offsets, not both.
    offsets: len(keys) * batch_size + 1 starting positions into values.

    Raises ValueError when the sizes do not agree.
    """

    def __init__(self, keys, values, lengths=None, offsets=None):
        self.keys = list(keys)
        if not self.keys:
            raise ValueError("JaggedFeatures: no feature names")
        values = torch.as_tensor(values)
        if values.dim() != 1 or values.dtype.is_floating_point:
            raise ValueError("JaggedFeatures: values must be a 1-D integer "
                             f"tensor, got {values.dtype} of shape "
                             f"{tuple(values.shape)}")
        if (lengths is None) == (offsets is None):
            raise ValueError("JaggedFeatures: give exactly one of lengths "
                             "and offsets")
        if lengths is not None:
            lengths = torch.as_tensor(lengths, device=values.device).reshape(-1)
            offsets = torch.zeros(lengths.numel() + 1, dtype=torch.int64,
                                  device=values.device)
            torch.cumsum(lengths.to(torch.int64), 0, out=offsets[1:])
        else:
            offsets = torch.as_tensor(offsets, device=values.device)
            offsets = offsets.reshape(-1).to(torch.int64)
        bags = offsets.numel() - 1
        if bags < 0 or bags % len(self.keys) != 0:
            raise ValueError(
                f"JaggedFeatures: {bags} bags are not a whole number of "
                f"examples for {len(self.keys)} features")
        if int(offsets[0]) != 0 or int(offsets[-1]) != values.numel():
            raise ValueError(
                f"JaggedFeatures: offsets run from {int(offsets[0])} to "
                f"{int(offsets[-1])}, values has {values.numel()} ids")
        if bags and bool((offsets[1:] < offsets[:-1]).any()):
            raise ValueError("JaggedFeatures: lengths must be >= 0 "
                             "(offsets non-decreasing)")
        self.values = values.to(torch.int64)
        self.offsets = offsets
        self.batch_size = bags // len(self.keys)

    def feature(self, index):
        """(values, offsets) of feature `index`: offsets has batch_size + 1
        entries starting at 0."""
        b = self.batch_size
        bag_offsets = self.offsets[index * b:(index + 1) * b + 1]
        start, end = int(bag_offsets[0]), int(bag_offsets[-1])
        return self.values[start:end], bag_offsets - start


def _from_kjt(kjt):
    """A torchrec KeyedJaggedTensor, read through its public accessors."""
    return JaggedFeatures(kjt.keys(), kjt.values(), lengths=kjt.lengths())


def _looks_like_kjt(value):
    torchrec = sys.modules.get("torchrec")
    if torchrec is None:
        return False
    kjt_type = getattr(torchrec, "KeyedJaggedTensor", None)
    return kjt_type is not None and isinstance(value, kjt_type)


def _bag_of_entry(name, entry):
    """(values, offsets) of one dict entry: a (values, lengths) pair, or an
    integer tensor of shape (B,) (one id per example) or (B, k) (k ids)."""
    if isinstance(entry, (tuple, list)):
        if len(entry) != 2:
            raise ValueError(f"feature {name!r}: expected (values, lengths)")
        one = JaggedFeatures([name], entry[0], lengths=entry[1])
        return one.feature(0)
    ids = torch.as_tensor(entry)
    if ids.dtype.is_floating_point or ids.dim() not in (1, 2):
        raise ValueError(
            f"feature {name!r}: expected an integer tensor of shape (B,) or "
            f"(B, k), or a (values, lengths) pair; got {ids.dtype} of shape "
            f"{tuple(ids.shape)}")
    per_bag = 1 if ids.dim() == 1 else ids.shape[1]
    offsets = torch.arange(0, ids.shape[0] + 1, device=ids.device,
                           dtype=torch.int64) * per_bag
    return ids.reshape(-1).to(torch.int64), offsets


def as_features(features, names):
    """Per-feature (values int64, offsets int64 of B + 1) for `names`, in
    that order, from a JaggedFeatures, a torchrec KeyedJaggedTensor (when
    torchrec is imported) or a dict name -> entry (see _bag_of_entry).

    Raises KeyError naming a missing feature, ValueError for features of
    different batch sizes or ids outside [0, 2^40).
    """
    if _looks_like_kjt(features):
        features = _from_kjt(features)
    if isinstance(features, JaggedFeatures):
        index = {k: i for i, k in enumerate(features.keys)}
        lookup = lambda name: features.feature(index[name])
        available = index
    elif isinstance(features, dict):
        lookup = lambda name: _bag_of_entry(name, features[name])
        available = features
    else:
        raise TypeError(
            "features: expected a dict, a taups.torch.JaggedFeatures or a "
            f"torchrec KeyedJaggedTensor, got {type(features).__name__}")
    out = []
    batch = None
    for name in names:
        if name not in available:
            raise KeyError(f"features: no feature {name!r} (have "
                           f"{sorted(available)})")
        values, offsets = lookup(name)
        if batch is None:
            batch = offsets.numel() - 1
        elif offsets.numel() - 1 != batch:
            raise ValueError(f"feature {name!r} has {offsets.numel() - 1} "
                             f"bags, the others {batch}")
        if values.numel() and (bool((values < 0).any())
                               or bool((values > MAX_ID).any())):
            raise ValueError(f"feature {name!r}: ids must be in [0, 2^40)")
        out.append((values, offsets))
    return out
