"""Run a ROM with scripted or random inputs and keep what it shows: a screenshot, or a recording.

The NES draws every pixel from a 64-colour palette, and ``CpuBatch.pixels()`` gives frames as
those palette indices. A GIF (or an animated PNG) with the NES palette as its colour table can
store the indices as they are: the file decodes to exactly the emulator's pixels, and it is
small (one byte per pixel before compression, and only the rectangle that changed since the
previous image is stored). Hence the encoders here, with no imaging dependency:

- GIF89a with LZW (``.gif``): plays everywhere. Delays are in 1/100 s, so a recording of every
  K-th frame at 60 frames/s gets delays rounded on a running clock (K=2: 3, 4, 3, 3, 4, ... cs).
  Most browsers show delays under 2 cs as 10 cs: keep ``every >= 2``.
- APNG (``.png``): exact delays (K/60 s); viewers without APNG support show the first image.
- MP4 (``.mp4``): only when the ``imageio-ffmpeg`` package is installed; lossy.

Inputs (:func:`action_script`): ``"random"`` (seeded), ``"right"``, a script file, or a script
inline. A script is items separated by commas or new lines, ``#`` starting a comment; an item is
``BUTTONS`` or ``BUTTONS*FRAMES``, where ``BUTTONS`` is ``noop``, a bitmask (``136``,
``0x88``) or button names joined by ``+`` (``right+b``). For example, to start Super Mario Bros.
and run: ``noop*40, start*5, noop*180, right+b*600``.
"""

from __future__ import annotations

import itertools
import os
import struct
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np

from nesle import _native, png

BUTTONS = ("a", "b", "select", "start", "up", "down", "left", "right")
BUTTON_BITS = {name: 1 << i for i, name in enumerate(BUTTONS)}
#: ``random`` draws new buttons every HOLD frames (an agent's usual frameskip).
RANDOM_HOLD = 4
#: Chance that ``random`` presses each button (A, B, Select, Start, Up, Down, Left, Right).
#: Start and Select are rare: often enough to leave a title screen, seldom enough not to keep a
#: game paused.
RANDOM_P = (0.5, 0.5, 1 / 32, 1 / 32, 0.5, 0.5, 0.5, 0.5)
DEFAULT_FRAMES = 600
FORMATS = (".gif", ".png", ".mp4")


class RecordError(ValueError):
    """Bad arguments: an action script, an output file name, a frame count."""


# --- inputs ---


#: The most frames a run or a script's count may ask for: 2^32, two years of NES time (more
#: would only fail later, in NumPy, or run for ever).
MAX_FRAMES = 2**32


def parse_script(text: str, source: str = "script") -> np.ndarray:
    """A script (see the module doc) -> one uint8 button mask per frame."""
    masks: list[np.ndarray] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for item in line.split("#", 1)[0].split(","):
            item = item.strip().lower()
            if not item:
                continue
            where = f"{source}, line {lineno}: {item!r}"
            buttons, _, count = item.partition("*")
            n = 1
            if count:
                try:
                    n = int(count.strip())
                except ValueError:
                    raise RecordError(
                        f"{where}: the frame count after '*' must be an integer"
                    ) from None
                if not 1 <= n <= MAX_FRAMES:
                    raise RecordError(
                        f"{where}: the frame count must be between 1 and {MAX_FRAMES:,}"
                    )
            masks.append(np.full(n, _parse_buttons(buttons.strip(), where), np.uint8))
    if not masks:
        raise RecordError(f"{source} holds no actions")
    return np.concatenate(masks)


def _parse_buttons(text: str, where: str) -> int:
    if text in ("noop", "none", ""):
        return 0
    if text[0].isdigit():
        try:
            mask = int(text, 0)
        except ValueError:
            raise RecordError(f"{where}: not a bitmask") from None
        if not 0 <= mask <= 255:
            raise RecordError(f"{where}: a bitmask must be 0..255")
        return mask
    mask = 0
    for name in text.split("+"):
        bit = BUTTON_BITS.get(name.strip())
        if bit is None:
            raise RecordError(f"{where}: unknown button {name.strip()!r} (buttons: "
                              f"{', '.join(BUTTONS)}, or noop, or a bitmask)")  # fmt: skip
        mask |= bit
    return mask


def action_script(spec: str, frames: int | None = None, seed: int = 0) -> np.ndarray:
    """One uint8 button mask per frame, from ``spec``:

    - ``"random"``: new buttons every :data:`RANDOM_HOLD` frames, each pressed with the chance
      in :data:`RANDOM_P`, from ``numpy.random.default_rng(seed)``;
    - ``"right"``: Right held;
    - a script file's path, or a script inline (see the module doc).

    ``frames``: the length (a script is cut, or padded with no buttons); default: a script's own
    length, else :data:`DEFAULT_FRAMES`.
    """
    if frames is not None and not 1 <= frames <= MAX_FRAMES:
        raise RecordError(f"frames must be between 1 and {MAX_FRAMES:,}, got {frames}")
    if spec == "random":
        n = frames or DEFAULT_FRAMES
        rng = np.random.default_rng(seed)
        pressed = rng.random((-(-n // RANDOM_HOLD), 8)) < np.array(RANDOM_P)
        masks = (pressed.astype(np.uint8) << np.arange(8, dtype=np.uint8)).sum(1, dtype=np.uint8)
        return np.repeat(masks, RANDOM_HOLD)[:n]
    if spec == "right":
        return np.full(frames or DEFAULT_FRAMES, BUTTON_BITS["right"], np.uint8)
    path = Path(spec).expanduser()
    if path.is_file():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            raise RecordError(f"actions {str(path)!r}: not a text action script") from None
        script = parse_script(text, str(path))
    elif (
        any(c in spec for c in ",*+\n")
        or spec.strip()[:1].isdigit()
        or spec.strip().lower() in (*BUTTONS, "noop")
    ):
        script = parse_script(spec)
    else:
        raise RecordError(
            f"actions {spec!r}: not 'random' or 'right', no such file, and not a script "
            "(e.g. 'noop*40, start*5, noop*180, right+b*600')"
        )
    if frames is None:
        return script
    return np.concatenate([script, np.zeros(max(frames - len(script), 0), np.uint8)])[:frames]


# --- running ---


@dataclass
class RunResult:
    frames: int
    seconds: float
    pixels: np.ndarray
    """(240, 256) palette indices of the last frame."""
    ram: np.ndarray
    """(2048,) work RAM at the end."""
    fault: str | None


class Sink(Protocol):
    def add(self, indices: np.ndarray, frames: int) -> None: ...


def capture_frames(total: int, every: int) -> list[int]:
    """The frame counts after which a recording of every ``every``-th frame takes an image:
    every, 2 * every, ..., and the last frame."""
    marks = list(range(every, total + 1, every))
    if not marks or marks[-1] != total:
        marks.append(total)
    return marks


def run(
    rom: bytes,
    actions: np.ndarray,
    every: int = 1,
    sink: Sink | None = None,
    on_frame: Callable[[], None] | None = None,
) -> RunResult:
    """Power on one console (CPU backend), run ``actions`` (one mask per frame); give ``sink``
    the image after each of :func:`capture_frames`, with the frames it stands for.

    Pixels are drawn only for those frames (drawing is invisible to the game, and off is ~2x
    faster); without a sink, only the last frame is drawn.
    """
    if every < 1:
        raise RecordError(f"every must be at least 1, got {every}")
    total = len(actions)
    marks = capture_frames(total, every) if sink is not None else [total]
    durations = dict(zip(marks, [b - a for a, b in itertools.pairwise(marks)] + [every]))
    batch = _native.CpuBatch(rom, 1)
    drawing = False
    t0 = time.perf_counter()
    for f, mask in enumerate(actions, 1):
        draw = f in durations
        if draw != drawing:
            batch.set_render(draw)
            drawing = draw
        batch.step(np.full(1, mask, np.uint8), 1)
        if sink is not None and draw:
            sink.add(batch.pixels()[0], durations[f])
        if on_frame is not None:
            on_frame()
    seconds = time.perf_counter() - t0
    return RunResult(total, seconds, batch.pixels()[0], batch.ram()[0], batch.faults()[0])


def screenshot(path: str | os.PathLike[str], indices: np.ndarray) -> None:
    """Write palette indices (240, 256) as an RGB PNG."""
    png.write(path, _native.palette()[indices])


# --- GIF ---


def lzw_encode(data: bytes, min_code_size: int) -> bytes:
    """GIF's variable-width LZW (codes of min_code_size+1 up to 12 bits, LSB first; a clear
    code when the 4096-entry table is full). ``data``: one byte per pixel, < 2**min_code_size."""
    clear = 1 << min_code_size
    size = min_code_size + 1
    next_code = clear + 2
    table: dict[int, int] = {}
    out = bytearray()
    acc = clear  # the bit accumulator starts with the clear code
    nbits = size
    prefix = data[0]
    for px in data[1:]:
        key = prefix << 8 | px
        code = table.get(key)
        if code is not None:
            prefix = code
            continue
        acc |= prefix << nbits
        nbits += size
        if next_code < 4096:
            table[key] = next_code
            if next_code == 1 << size:
                size += 1
            next_code += 1
        else:  # table full: clear it (the decoder, one code behind, adds no entry for this one)
            acc |= clear << nbits
            nbits += size
            table.clear()
            size = min_code_size + 1
            next_code = clear + 2
        while nbits >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8
        prefix = px
    acc |= prefix << nbits
    nbits += size
    acc |= (clear + 1) << nbits  # end of information
    nbits += size
    while nbits > 0:
        out.append(acc & 0xFF)
        acc >>= 8
        nbits -= 8
    return bytes(out)


def _changed_box(prev: np.ndarray | None, cur: np.ndarray) -> tuple[int, int, int, int]:
    """(top, left, height, width) of the pixels that differ; the whole frame for the first; one
    pixel when nothing changed (a GIF or APNG image cannot be empty)."""
    if prev is None:
        return 0, 0, cur.shape[0], cur.shape[1]
    diff = prev != cur
    rows, cols = np.flatnonzero(diff.any(1)), np.flatnonzero(diff.any(0))
    if rows.size == 0:
        return 0, 0, 1, 1
    return int(rows[0]), int(cols[0]), int(rows[-1] - rows[0] + 1), int(cols[-1] - cols[0] + 1)


def part_path(path: str | os.PathLike[str]) -> Path:
    """Where a recording is written until it is whole (``mario.part.gif``): a file already at
    ``path`` is only replaced by a finished one (``close``), never by a run that failed."""
    p = Path(path)
    return p.with_name(f"{p.stem}.part{p.suffix}")


class _PartFile:
    """A recording's file, written under :func:`part_path` and moved to ``path`` by ``close``;
    ``abort`` deletes it instead."""

    def _open(self, path: str | os.PathLike[str]) -> None:
        self._path, self._part = Path(path), part_path(path)
        self._f: IO[bytes] = open(self._part, "wb")  # noqa: SIM115 (closed by close())

    def _finish(self) -> None:
        """Writes the format's end (the writer's own) before the file is moved into place."""

    def close(self) -> None:
        if self._f.closed:
            return
        try:
            self._finish()
            self._f.close()
            os.replace(self._part, self._path)
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        self._f.close()
        self._part.unlink(missing_ok=True)


class GifWriter(_PartFile):
    """An animated GIF of palette-index frames, written as they come (``add``), looping."""

    def __init__(self, path: str | os.PathLike[str], palette: np.ndarray, fps: float = 60.0):
        pal = np.asarray(palette, np.uint8)
        if pal.shape != (64, 3):
            raise ValueError(f"palette must be (64, 3) RGB, got {pal.shape}")
        self.fps = fps
        self._open(path)
        self._prev: np.ndarray | None = None
        self._frames_in = 0  # emulator frames written so far (for the running-clock delays)
        self._header_pal = pal.tobytes()
        self.images = 0

    def _header(self, h: int, w: int) -> None:
        # Global colour table of 2**(5+1) = 64 entries, 6 bits per primary (0xD5).
        self._f.write(b"GIF89a" + struct.pack("<HHBBB", w, h, 0xD5, 0, 0) + self._header_pal)
        # NETSCAPE2.0: loop forever.
        self._f.write(b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00")

    def add(self, indices: np.ndarray, frames: int = 1) -> None:
        """Append an image (H, W) of indices 0..63, shown for ``frames`` frames at ``fps``."""
        cur = np.asarray(indices, np.uint8)
        if cur.ndim != 2 or cur.size == 0 or cur.max() > 63:
            raise ValueError("a frame must be a non-empty (H, W) array of indices 0..63")
        if self._prev is None:
            self._header(*cur.shape)
        elif cur.shape != self._prev.shape:
            raise ValueError(f"frame shape {cur.shape} != the first frame's {self._prev.shape}")
        t0 = round(self._frames_in * 100 / self.fps)
        self._frames_in += frames
        delay = round(self._frames_in * 100 / self.fps) - t0
        top, left, h, w = _changed_box(self._prev, cur)
        # Graphic control: disposal 1 (leave the image in place: the next one covers only what
        # changed), the delay, no transparency.
        self._f.write(b"\x21\xf9\x04\x04" + struct.pack("<H", delay) + b"\x00\x00")
        self._f.write(b"\x2c" + struct.pack("<HHHHB", left, top, w, h, 0))
        data = lzw_encode(cur[top : top + h, left : left + w].tobytes(), 6)
        blocks = [data[i : i + 255] for i in range(0, len(data), 255)]
        self._f.write(b"\x06" + b"".join(bytes([len(b)]) + b for b in blocks) + b"\x00")
        self._prev = cur.copy()
        self.images += 1

    def _finish(self) -> None:
        if self._prev is not None:
            self._f.write(b"\x3b")


# --- APNG ---


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


class ApngWriter(_PartFile):
    """An animated PNG (palette colour type, exact delays of ``frames``/``fps`` s), looping."""

    def __init__(self, path: str | os.PathLike[str], palette: np.ndarray, fps: int = 60):
        self._pal = np.asarray(palette, np.uint8).tobytes()
        self.fps = fps
        self._open(path)
        self._prev: np.ndarray | None = None
        self._seq = 0
        self._actl_at = 0
        self.images = 0

    def add(self, indices: np.ndarray, frames: int = 1) -> None:
        cur = np.asarray(indices, np.uint8)
        if cur.ndim != 2 or cur.size == 0 or cur.max() > 63:
            raise ValueError("a frame must be a non-empty (H, W) array of indices 0..63")
        first = self._prev is None
        if first:
            h, w = cur.shape
            ihdr = struct.pack(">IIBBBBB", w, h, 8, 3, 0, 0, 0)
            self._f.write(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"PLTE", self._pal))
            self._actl_at = self._f.tell()
            self._f.write(_chunk(b"acTL", struct.pack(">II", 0, 0)))  # frame count set by close
        elif cur.shape != self._prev.shape:  # type: ignore[union-attr]
            raise ValueError(f"frame shape {cur.shape} != the first frame's {self._prev.shape}")  # type: ignore[union-attr]
        top, left, h, w = _changed_box(self._prev, cur)
        # fcTL: size, offset, delay frames/fps, dispose NONE, blend SOURCE.
        fctl = struct.pack(">IIIIIHHBB", self._seq, w, h, left, top, frames, self.fps, 0, 0)
        self._f.write(_chunk(b"fcTL", fctl))
        self._seq += 1
        crop = cur[top : top + h, left : left + w]
        rows = np.concatenate([np.zeros((h, 1), np.uint8), crop], axis=1)  # filter 0 per row
        data = zlib.compress(rows.tobytes(), 6)
        if first:
            self._f.write(_chunk(b"IDAT", data))
        else:
            self._f.write(_chunk(b"fdAT", struct.pack(">I", self._seq) + data))
            self._seq += 1
        self._prev = cur.copy()
        self.images += 1

    def _finish(self) -> None:
        if self._prev is not None:
            self._f.write(_chunk(b"IEND", b""))
            self._f.seek(self._actl_at)
            self._f.write(_chunk(b"acTL", struct.pack(">II", self.images, 0)))


# --- MP4 ---


class Mp4Writer:
    """H.264 through imageio-ffmpeg (optional; lossy), one video frame per image."""

    def __init__(self, path: str | os.PathLike[str], palette: np.ndarray, fps: float = 60.0):
        try:
            import imageio_ffmpeg  # type: ignore[import-not-found]
        except ImportError:
            raise RecordError(
                "writing MP4 needs the imageio-ffmpeg package (pip install imageio-ffmpeg); "
                "or record to .gif or .png (animated PNG), which need nothing"
            ) from None
        self._pal = np.asarray(palette, np.uint8)
        self._path, self._part, self._fps, self._gen = Path(path), part_path(path), fps, None
        self._module = imageio_ffmpeg
        self.images = 0

    def add(self, indices: np.ndarray, frames: int = 1) -> None:
        # One fixed frame rate: the images are taken every `every` frames (the last may be
        # shorter); the caller passes fps = 60 / every.
        rgb = self._pal[np.asarray(indices, np.uint8)]
        if self._gen is None:
            h, w = rgb.shape[:2]
            self._gen = self._module.write_frames(str(self._part), (w, h), fps=self._fps, quality=8)
            self._gen.send(None)
        self._gen.send(np.ascontiguousarray(rgb).tobytes())
        self.images += 1

    def close(self) -> None:
        if self._gen is not None:
            self._gen.close()
            self._gen = None
            os.replace(self._part, self._path)

    def abort(self) -> None:
        if self._gen is not None:
            self._gen.close()
            self._gen = None
        self._part.unlink(missing_ok=True)


def open_writer(path: str | os.PathLike[str], every: int = 1) -> Any:
    """The writer for ``path``'s suffix (.gif, .png, .mp4), for images every ``every`` frames."""
    suffix = Path(path).suffix.lower()
    palette = _native.palette()
    # An image's delay: a GIF's in 1/100 s, an APNG's in frames, each 16 bits.
    longest = {".gif": 65535 * 60 // 100, ".png": 65535}.get(suffix)
    if longest is not None and not 1 <= every <= longest:
        raise RecordError(
            f"an image every {every} frames: a {suffix} image lasts at most {longest} frames"
        )
    if suffix == ".gif":
        return GifWriter(path, palette)
    if suffix == ".png":
        return ApngWriter(path, palette)
    if suffix == ".mp4":
        return Mp4Writer(path, palette, fps=60 / every)
    raise RecordError(f"cannot record to {str(path)!r}: the file name must end in "
                      f"{', '.join(FORMATS)}")  # fmt: skip


def check_out(path: str | os.PathLike[str], suffixes: tuple[str, ...] = ()) -> None:
    """Fail early (before running) for an output file that cannot be written: a name without
    one of ``suffixes`` (any name when empty), a folder, or a missing or read-only folder."""
    p = Path(path)
    if suffixes and p.suffix.lower() not in suffixes:
        raise RecordError(f"{str(p)!r}: the file name must end in {', '.join(suffixes)}")
    if p.is_dir():
        raise RecordError(f"{str(p)!r} is a folder")
    parent = p.parent
    if not parent.is_dir():
        raise RecordError(f"{str(parent)!r}: no such folder")
    if not _writable(parent):
        raise RecordError(f"{str(parent)!r}: not writable")


def check_out_folder(path: str | os.PathLike[str]) -> None:
    """Fail early for an output folder that cannot be made or written: a file of that name, or
    a read-only folder where it or its first missing parent would go."""
    at = Path(path)
    while not at.exists() and at != at.parent:
        at = at.parent
    if not at.is_dir():
        raise RecordError(f"{str(at)!r} is a file, not a folder")
    if not _writable(at):
        raise RecordError(f"{str(at)!r}: not writable")


def _writable(folder: Path) -> bool:
    """Whether a file can be made in ``folder``, by making one: ``os.access`` answers yes to
    root for folders no file can be made in (``/proc``)."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False
