"""ROM lookup and fetching, the PNG writer and the CLI's small commands."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from nesle import cli, png, roms


def test_a_missing_rom_says_how_to_fetch_it(tmp_path, monkeypatch):
    monkeypatch.setenv("NESLE_ROM_DIR", str(tmp_path / "roms"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(roms.RomNotFoundError, match="nesle roms fetch smb"):
        roms.find("smb")
    missing = str(tmp_path / "missing.nes")
    assert cli.main(["demo", "--rom", missing, "--out", str(tmp_path / "x.png")]) == 2


def test_unknown_games_are_named_in_the_error():
    with pytest.raises(roms.UnknownGameError, match="known games: smb, tetris"):
        roms.game("pacman")
    with pytest.raises(roms.RomNotFoundError, match="neither a ROM file nor a known game"):
        roms.find("pacman")


def test_rom_dir_is_searched_by_md5(smb_rom, tmp_path, monkeypatch):
    (tmp_path / "Super Mario Bros. (World).nes").write_bytes(smb_rom)
    (tmp_path / "other.nes").write_bytes(b"junk")
    monkeypatch.setenv("NESLE_ROM_DIR", str(tmp_path))
    assert roms.find("mario").name == "Super Mario Bros. (World).nes"
    assert roms.load("super-mario-bros") == smb_rom


def test_a_wrong_dump_in_the_rom_dir_is_not_taken(tmp_path, monkeypatch):
    (tmp_path / "super-mario-bros.nes").write_bytes(b"NES\x1a" + bytes(100))
    monkeypatch.setenv("NESLE_ROM_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(roms.RomNotFoundError):
        roms.find("smb")


def test_an_explicit_path_is_taken_as_is(tmp_path):
    p = tmp_path / "hack.nes"
    p.write_bytes(b"anything")
    assert roms.find(p) == p


def test_fetch_into_a_folder_finds_an_existing_copy_without_pip(smb_rom, tmp_path, monkeypatch):
    (tmp_path / "super-mario-bros.nes").write_bytes(smb_rom)
    monkeypatch.setattr(roms.subprocess, "run", None)  # pip must not run
    assert roms.fetch("smb", tmp_path) == tmp_path / "super-mario-bros.nes"


def test_fetch_takes_a_copy_in_the_rom_dir_without_pip(smb_rom, tmp_path, monkeypatch):
    (tmp_path / "roms").mkdir()
    (tmp_path / "roms" / "smb.nes").write_bytes(smb_rom)
    monkeypatch.setenv("NESLE_ROM_DIR", str(tmp_path / "roms"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(roms.subprocess, "run", None)  # pip must not run
    assert roms.fetch("smb") == tmp_path / "roms" / "smb.nes"
    assert not (tmp_path / "cache").exists()


def test_png_encodes_rgb_scanlines():
    img = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    data = png.encode(img)
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    idat = data.index(b"IDAT")
    length = int.from_bytes(data[idat - 4 : idat], "big")
    raw = zlib.decompress(data[idat + 4 : idat + 4 + length])
    assert raw == b"\x00" + img[0].tobytes() + b"\x00" + img[1].tobytes()


def test_cli_info_prints_the_header(smb_rom, capsys):
    assert cli.main(["info", "smb"]) == 0
    out = capsys.readouterr().out
    assert "673913a23cd612daf5ad32d4085e0760" in out and "mapper:     0" in out
