"""The extension module: it imports, its stub matches it, and arrays come back as promised."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

import nesle
from nesle import _native

STUB = Path(nesle.__file__).with_name("_native.pyi")


def _stub_names() -> tuple[set[str], dict[str, set[str]]]:
    tree = ast.parse(STUB.read_text())
    top: set[str] = set()
    classes: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top.add(node.target.id)
        if isinstance(node, ast.ClassDef):
            classes[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
    return top, classes


def test_the_package_imports_and_has_a_version():
    assert nesle.__version__ == _native.__version__
    assert nesle.WIDTH == 256 and nesle.HEIGHT == 240 and nesle.RAM_SIZE == 2048


def test_the_stub_declares_exactly_what_the_module_exports():
    top, classes = _stub_names()
    public = {n for n in dir(_native) if not n.startswith("_")} | {"__version__"}
    assert top == public
    for name, methods in classes.items():
        cls = getattr(_native, name)
        native = {n for n in vars(cls) if not n.startswith("_")}
        assert {m for m in methods if not m.startswith("_")} == native, name
        for dunder in {m for m in methods if m.startswith("__")}:
            assert hasattr(cls, dunder), f"{name}.{dunder}"


def test_errors_are_value_errors_in_the_nesle_namespace():
    assert issubclass(nesle.RomError, ValueError)
    assert issubclass(nesle.StateError, ValueError)
    assert nesle.RomError.__module__ == "nesle"


def test_arrays_have_documented_shapes_and_dtypes(blank_rom):
    b = nesle.CpuBatch(blank_rom, 3)
    assert b.num_envs == len(b) == 3
    b.step(np.zeros(3, np.uint8), 2)
    assert b.ram().shape == (3, 2048) and b.ram().dtype == np.uint8
    assert b.pixels().shape == (3, 240, 256) and b.pixels().dtype == np.uint8
    assert b.rgb().shape == (3, 240, 256, 3) and b.rgb().dtype == np.uint8
    before = b.frame_counts()
    b.step(np.zeros(3, np.uint8), 5)
    assert b.frame_counts().dtype == np.uint64
    assert (b.frame_counts() - before).tolist() == [5, 5, 5]
    assert b.faults() == [None, None, None]
    assert nesle.palette().shape == (64, 3)


def test_rgb_is_pixels_through_the_palette(smb_rom):
    b = nesle.CpuBatch(smb_rom, 1)
    b.step(np.zeros(1, np.uint8), 40)
    np.testing.assert_array_equal(b.rgb(), nesle.palette()[b.pixels()])


def test_arrays_are_copies_not_views_of_live_consoles(blank_rom):
    b = nesle.CpuBatch(blank_rom, 1)
    ram = b.ram()
    ram[0, :] = 0xAA
    assert not (b.ram() == 0xAA).all()


def test_rom_info_reads_the_header(smb_rom):
    info = nesle.rom_info(smb_rom)
    assert info["mapper"] == 0
    assert info["prg_rom"] == 32 * 1024 and info["chr_rom"] == 8 * 1024
    assert info["mirroring"] == "vertical"
