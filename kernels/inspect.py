"""Placeholder for kernel inspection (issue 5 fills it in)."""


def inspect(op, device="cpu", dtype=None):
    raise NotImplementedError("nbtorch.kernels.inspect is not implemented yet")
