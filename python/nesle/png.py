"""A minimal PNG writer (8-bit RGB or grayscale), with zlib and struct only: no Pillow needed."""

from __future__ import annotations

import os
import struct
import zlib

import numpy as np


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode(image: np.ndarray) -> bytes:
    """PNG bytes of a uint8 image of shape (H, W, 3) (RGB) or (H, W) (grayscale)."""
    img = np.ascontiguousarray(image, dtype=np.uint8)
    if img.ndim == 2:
        color_type = 0
    elif img.ndim == 3 and img.shape[2] == 3:
        color_type = 2
    else:
        raise ValueError(f"expected an image of shape (H, W) or (H, W, 3), got {img.shape}")
    h, w = img.shape[:2]
    # Each scanline starts with filter type 0 (None).
    rows = np.concatenate([np.zeros((h, 1), np.uint8), img.reshape(h, -1)], axis=1)
    header = struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
        + _chunk(b"IEND", b"")
    )


def write(path: str | os.PathLike[str], image: np.ndarray) -> None:
    with open(path, "wb") as f:
        f.write(encode(image))
