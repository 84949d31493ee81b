"""Torch tensors as numpy views of the same memory (no copies)."""

import sys


def as_numpy(value, what):
    """Returns `value` itself, or a numpy view of a CPU torch tensor.

    The view shares the tensor's memory, so a pull into it fills the tensor.
    Dtype, contiguity and shape are checked by the C++ extension; a tensor on
    another device is refused here.
    """
    # A torch tensor can only exist if torch was imported; never import it.
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if value.device.type != "cpu":
            raise TypeError(
                f"{what}: tensor is on {value.device}; tauPS reads and writes "
                "CPU memory (use tensor.cpu())")
        return value.detach().numpy()
    return value
