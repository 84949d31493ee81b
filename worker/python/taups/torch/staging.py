"""Moving rows and gradients between tauPS (host memory) and the device.

tauPS reads and writes host memory. For CPU tensors nothing moves. For CUDA
tensors, `CudaStaging` stages through pinned (page-locked) host buffers and
copies on a side stream of its own, so uploads overlap the compute stream
until the rows are needed:
  * keys_to_host: the unique keys leave the GPU (the pull needs them);
  * host_rows: a pinned buffer for a pull to fill;
  * rows_to_device: the pulled rows go up on the side stream; the current
    stream waits for that copy before it reads them;
  * grad_to_host: a gradient comes down once per table and step on the side
    stream, which first waits for the stream that computed it.

One staging object per module; its methods are called from the training
thread (keys_to_host, rows_to_device, grad_to_host) and may be used while
background threads read the host buffers they returned.
"""

import torch


class HostStaging:
    """CPU tensors: everything already is in host memory."""

    device = torch.device("cpu")

    def keys_to_host(self, keys):
        return keys.contiguous()

    def host_rows(self, count, dim):
        return torch.empty((count, dim), dtype=torch.float32)

    def rows_to_device(self, rows):
        return rows

    def grad_to_host(self, grad):
        return grad.detach().to(torch.float32).contiguous()


class CudaStaging:
    """CUDA tensors on `device`, through pinned host memory and a stream."""

    def __init__(self, device):
        if not torch.cuda.is_available():
            raise RuntimeError(f"{device}: this torch has no CUDA device "
                               "(torch.cuda.is_available() is False)")
        self.device = torch.device(device)
        self._stream = torch.cuda.Stream(device=self.device)

    def _to_host(self, tensor):
        """A pinned host copy of `tensor`, made on the side stream after
        the current stream's work on it; returns once it is complete."""
        host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
        self._stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self._stream):
            host.copy_(tensor, non_blocking=True)
        tensor.record_stream(self._stream)
        self._stream.synchronize()
        return host

    def keys_to_host(self, keys):
        return self._to_host(keys.contiguous())

    def host_rows(self, count, dim):
        return torch.empty((count, dim), dtype=torch.float32, pin_memory=True)

    def rows_to_device(self, rows):
        with torch.cuda.stream(self._stream):
            on_device = rows.to(self.device, non_blocking=True)
        current = torch.cuda.current_stream(self.device)
        current.wait_stream(self._stream)
        on_device.record_stream(current)
        return on_device

    def grad_to_host(self, grad):
        return self._to_host(grad.detach().to(torch.float32).contiguous())


def staging_for(device):
    """HostStaging for a CPU device (or None), CudaStaging for a CUDA one."""
    device = torch.device("cpu" if device is None else device)
    if device.type == "cpu":
        return HostStaging()
    if device.type == "cuda":
        return CudaStaging(device)
    raise ValueError(f"device {device}: tauPS modules run on cpu or cuda")
