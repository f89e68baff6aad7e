"""The few array operations the game modules use, for NumPy arrays and torch tensors alike.

Game functions (:mod:`nesle.games.smb`, ...) run on the CPU backend's NumPy RAM and, unchanged,
on the CUDA backend's torch RAM on the GPU: everything else they use (indexing, arithmetic,
comparisons, ``&``/``|``/``~``, ``abs``, ``.any(-1)``, ``.sum(-1)``, ``.reshape``) means the same
for both. Nothing here imports torch: a tensor is recognised by its type's module.
"""

from __future__ import annotations

from functools import reduce
from typing import Any

import numpy as np


def is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def i64(x: Any) -> Any:
    """``x`` as 64-bit integers."""
    return x.long() if is_torch(x) else np.asarray(x).astype(np.int64)


def f64(x: Any) -> Any:
    return x.double() if is_torch(x) else np.asarray(x).astype(np.float64)


def where(cond: Any, a: Any, b: Any) -> Any:
    if is_torch(cond):
        import torch

        def t(v: Any) -> Any:
            if is_torch(v):
                return v
            v = torch.as_tensor(v)  # on the host: the dtype torch gives the value
            if v.dim() == 0:
                # Filled on the device: a copy from the host would wait for the GPU's queue.
                return torch.full((), v.item(), dtype=v.dtype, device=cond.device)
            return v.to(cond.device)

        return torch.where(cond, t(a), t(b))
    return np.where(cond, a, b)


def clip(x: Any, lo: Any = None, hi: Any = None) -> Any:
    return x.clamp(lo, hi) if is_torch(x) else np.clip(x, lo, hi)


def isin(x: Any, values: Any) -> Any:
    """Elementwise membership in a short list of constants."""
    return reduce(lambda acc, v: acc | (x == int(v)), values[1:], x == int(values[0]))


def host(x: Any) -> np.ndarray:
    """A NumPy copy (for values that only exist on the host, e.g. names)."""
    return x.cpu().numpy() if is_torch(x) else np.asarray(x)
