"""Dense gradients compressed on the GPU before they leave it.

When a DenseParameters table has a push codec (or error feedback), its
parameters live on a CUDA device, and this extension was built with the CUDA
codecs (taups._taups.cuda_built) and sees a device, DevicePush replaces the
host path (gradient copied to pinned host memory, then encoded by the CPU
codec): the parameters' gradients are gathered into one flat float32 buffer
on the device, and the client's PushDenseWith asks a taups DeviceGradient
over that buffer for each slice's block. The device codec makes the same
bytes as the CPU codec (same values, options and element numbering,
stochastic rounding included), and with error feedback the residual stays
on the device, committed only for the parts the shards accepted. Only the
encoded blocks cross to the host.

Not covered (the host path stays): sparse tables (the device encoder
encodes dense slices only; embedding gradients come down once per step as
rows and are encoded on the host), tables that accumulate gradients
(accumulate_steps > 1), and a compression changed with
client.set_compression after the module was made.

Thread-compatible: one push at a time, from the training thread.
"""

import torch

import taups
from taups import _taups


def flatten_grads(params, flat):
    """Copies each parameter's .grad (zeros where it has none) into `flat`,
    one after another in order."""
    offset = 0
    with torch.no_grad():
        for p in params:
            n = p.numel()
            target = flat[offset:offset + n]
            if p.grad is None:
                target.zero_()
            else:
                target.copy_(p.grad.reshape(-1))
            offset += n


def device_codec_reason(device, compression):
    """None when a dense table on `device` with `compression` (a
    CompressionConfig or None) can push through the device codec, else why
    not (a short phrase)."""
    if device.type != "cuda":
        return "the parameters are not on a CUDA device"
    if compression is None or (
            compression.push.codec == taups.Codec.NONE
            and not compression.error_feedback):
        return "the table has no push codec"
    if compression.accumulate_steps > 1:
        return "the table accumulates gradients (accumulate_steps > 1)"
    if not _taups.cuda_built:
        return "taups was built without the CUDA codecs"
    if _taups.cuda_device_count() == 0:
        return "the CUDA runtime of taups sees no usable device"
    return None


class DevicePush:
    """The flat device gradient of `size` float32 values on `device` and
    its DeviceGradient (the device codecs and residual). gather() fills the
    buffer from parameters' .grad on the current stream; push() waits for
    that work and sends it through client.push_dense_with."""

    def __init__(self, client, table, size, device):
        self.client = client
        self.table = table
        self.device = torch.device(device)
        if self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.flat = torch.zeros(size, dtype=torch.float32, device=self.device)
        with torch.cuda.device(self.device):
            # Keeps self.flat alive as long as the encoder: it reads there.
            self.encoder = _taups.DeviceGradient(self.flat.data_ptr(), size,
                                                 self.device.index)

    def gather(self, params):
        """Copies the parameters' gradients into the flat buffer on the
        current CUDA stream (flatten_grads)."""
        flatten_grads(params, self.flat)

    def push(self, basis):
        """Sends the flat gradient, encoded on the device; returns the
        PushResult. The codec runs on a stream of its own, so the current
        stream's work on the buffer is waited for first."""
        done = torch.cuda.Event()
        done.record(torch.cuda.current_stream(self.device))
        done.synchronize()
        with torch.cuda.device(self.device):
            return self.client.push_dense_with(self.table, self.encoder,
                                               basis=basis)

    def residual(self):
        """The committed device residual, copied to a CPU tensor."""
        out = torch.empty(self.flat.numel(), dtype=torch.float32)
        with torch.cuda.device(self.device):
            self.encoder.copy_residual(out.numpy())
        return out
