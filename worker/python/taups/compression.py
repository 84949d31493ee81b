"""A worker's compression settings for one table, in one call."""

from taups import _taups
from taups.tables import _enum


def _codec(value, what):
    if isinstance(value, str) and value.lower() == "fp32":
        return _taups.Codec.NONE
    return _enum(_taups.Codec, value, what)


def compression(codec="none", *, bucket_size=512, rounding="nearest",
                seed=0, topk_ratio=0.01, topk_count=0, topk_values="none",
                error_feedback=False, accumulate_steps=1,
                topk_warmup_pushes=0, topk_warmup_start_ratio=0.25,
                pull="none", pull_bucket_size=512):
    """A CompressionConfig for Client.set_compression.

    codec: how pushed gradients travel: none (fp32), fp16, bf16, int8, int4,
    int2 (a step per bucket_size values; rounding nearest or stochastic),
    sign (one bit per value and a magnitude per bucket) or topk (the
    topk_count, else ceil(topk_ratio * n), largest magnitudes, their values
    as topk_values). error_feedback keeps what encoding lost and adds it to
    the next gradient (dense tables); accumulate_steps sums that many pushes
    locally and sends one. pull: how pulled parameters travel (none, fp16,
    bf16, int8). Bad settings raise InvalidArgumentError.
    """
    config = _taups.CompressionConfig()
    push = config.push
    push.codec = _codec(codec, "codec")
    push.bucket_size = bucket_size
    push.rounding = _enum(_taups.Rounding, rounding, "rounding")
    push.seed = seed
    push.topk_ratio = topk_ratio
    push.topk_count = topk_count
    push.topk_values = _codec(topk_values, "topk_values")
    config.push = push
    config.error_feedback = error_feedback
    config.accumulate_steps = accumulate_steps
    config.topk_warmup_pushes = topk_warmup_pushes
    config.topk_warmup_start_ratio = topk_warmup_start_ratio
    config.pull = _codec(pull, "pull")
    config.pull_bucket_size = pull_bucket_size
    config.validate()
    return config
