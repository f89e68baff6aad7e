"""A tiny progress bar for long CLI commands, on stderr, with no dependencies.

It draws only when stderr is a terminal, so pipes, logs and CI output stay clean;
``NESLE_PROGRESS=1`` forces it on (``0`` forces it off). Redraws are limited to 10 per second, so
a bar updated every frame costs nothing next to the emulator (~800 frames/s per core).

    with Progress(total=600, label="recording") as bar:
        for _ in range(600):
            ...
            bar.update()
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self from Python 3.11

ENV = "NESLE_PROGRESS"
WIDTH = 30
#: Seconds between redraws.
INTERVAL = 0.1


def enabled(stream: IO[str] | None = None) -> bool:
    """Whether a bar on ``stream`` (default stderr) would be drawn: ``NESLE_PROGRESS=1``/``0``
    decide, else whether the stream is a terminal."""
    forced = os.environ.get(ENV, "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Progress:
    """``update(n)`` as work gets done; ``close()`` (or leaving the ``with``) ends the line."""

    def __init__(
        self, total: int, label: str = "", unit: str = "frames", stream: IO[str] | None = None
    ) -> None:
        self.total = max(int(total), 0)
        self.label = label
        self.unit = unit
        self.stream = sys.stderr if stream is None else stream
        self.on = enabled(self.stream)
        self.done = 0
        self._t0 = time.perf_counter()
        self._last = -INTERVAL
        self._closed = False

    def update(self, n: int = 1) -> None:
        self.done += n
        if not self.on:
            return
        now = time.perf_counter() - self._t0
        if now - self._last >= INTERVAL or self.done >= self.total:
            self._last = now
            self._draw(now)

    def line(self, elapsed: float) -> str:
        """The bar as text, e.g. ``recording [#######.......] 45% 270/600 frames 812/s ETA 0:00``."""
        frac = min(self.done / self.total, 1.0) if self.total else 1.0
        filled = int(frac * WIDTH)
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        eta = f"{int(left) // 60}:{int(left) % 60:02d}"
        head = f"{self.label} " if self.label else ""
        return (
            f"{head}[{'#' * filled}{'.' * (WIDTH - filled)}] {frac:4.0%} "
            f"{self.done}/{self.total} {self.unit} {rate:,.0f}/s ETA {eta}"
        )

    def _draw(self, elapsed: float) -> None:
        self.stream.write("\r" + self.line(elapsed) + "\x1b[K")  # \x1b[K: clear to end of line
        self.stream.flush()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.on:
            self._draw(time.perf_counter() - self._t0)
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
