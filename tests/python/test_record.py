"""``nesle play`` / ``nesle record`` and their encoders (nesle.record, nesle.progress).

The GIF and APNG files are decoded here by minimal decoders of our own (LZW, zlib), so the
tests need no Pillow and cannot pass without checking: every image must equal, index for index,
what ``CpuBatch.pixels()`` shows at the same frame of an independent run with drawing always on.
"""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import nesle
import numpy as np
import pytest
from nesle import cli, progress, record

#: Boot Super Mario Bros., start, run right: a static title, a screen change, then scrolling.
SMB_SCRIPT = "noop*40, start*5, noop*170, right+b*45"
SMB_FRAMES = 260


# --- minimal decoders ---


def lzw_decode(data: bytes, min_code_size: int, n: int) -> bytes:
    clear, eoi = 1 << min_code_size, (1 << min_code_size) + 1
    size, pos, out = min_code_size + 1, 0, bytearray()
    table: list[bytes] = []
    prev: bytes | None = None
    bits = int.from_bytes(data, "little")
    while True:
        code = (bits >> pos) & ((1 << size) - 1)
        pos += size
        if code == clear:
            table = [bytes([i]) for i in range(clear)] + [b"", b""]
            size, prev = min_code_size + 1, None
            continue
        if code == eoi:
            break
        if prev is None:
            entry = table[code]
        else:
            if code < len(table):
                entry = table[code]
            elif code == len(table):
                entry = prev + prev[:1]
            else:
                raise AssertionError(f"LZW code {code} beyond the table ({len(table)})")
            if len(table) < 4096:
                table.append(prev + entry[:1])
                if len(table) == 1 << size and size < 12:
                    size += 1
        out += entry
        prev = entry
    assert len(out) == n, f"LZW gave {len(out)} pixels, expected {n}"
    return bytes(out)


def decode_gif(path: Path) -> tuple[np.ndarray, list[np.ndarray], list[int]]:
    """(global palette, composited frames, delays in cs) of a GIF whose images all use
    disposal 1 (keep) and the global colour table."""
    b = path.read_bytes()
    assert b[:6] == b"GIF89a"
    w, h, packed = struct.unpack_from("<HHB", b, 6)
    assert packed & 0x80, "no global colour table"
    ncol = 2 ** ((packed & 7) + 1)
    palette = np.frombuffer(b, np.uint8, ncol * 3, 13).reshape(ncol, 3)
    pos = 13 + ncol * 3
    canvas = np.zeros((h, w), np.uint8)
    frames: list[np.ndarray] = []
    delays: list[int] = []
    delay = 0

    def blocks(pos: int) -> tuple[bytes, int]:
        out = bytearray()
        while b[pos]:
            out += b[pos + 1 : pos + 1 + b[pos]]
            pos += 1 + b[pos]
        return bytes(out), pos + 1

    while True:
        tag = b[pos]
        if tag == 0x3B:
            break
        if tag == 0x21:  # extension
            label = b[pos + 1]
            data, pos = blocks(pos + 2)
            if label == 0xF9:
                assert (data[0] >> 2) & 7 == 1, "disposal must be 1 (leave in place)"
                delay = struct.unpack_from("<H", data, 1)[0]
        elif tag == 0x2C:  # image
            left, top, iw, ih, ipacked = struct.unpack_from("<HHHHB", b, pos + 1)
            assert ipacked == 0, "no local table, no interlace"
            min_size = b[pos + 10]
            data, pos = blocks(pos + 11)
            pixels = lzw_decode(data, min_size, iw * ih)
            canvas[top : top + ih, left : left + iw] = np.frombuffer(pixels, np.uint8).reshape(
                ih, iw
            )
            frames.append(canvas.copy())
            delays.append(delay)
        else:
            raise AssertionError(f"unexpected GIF block 0x{tag:02x} at {pos}")
    return palette, frames, delays


def decode_apng(path: Path) -> tuple[np.ndarray, list[np.ndarray], list[tuple[int, int]]]:
    """(palette, composited frames, delays as (num, den)) of a palette APNG as ApngWriter
    writes it (filter 0, dispose NONE, blend SOURCE); every chunk's CRC is checked."""
    b = path.read_bytes()
    assert b[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(b):
        (n,) = struct.unpack_from(">I", b, pos)
        kind, data = b[pos + 4 : pos + 8], b[pos + 8 : pos + 8 + n]
        assert struct.unpack_from(">I", b, pos + 8 + n)[0] == zlib.crc32(kind + data), kind
        chunks.append((kind, data))
        pos += 12 + n
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    w, h, depth, ctype = struct.unpack_from(">IIBB", chunks[0][1])
    assert (depth, ctype) == (8, 3)
    palette = np.frombuffer(dict(chunks)[b"PLTE"], np.uint8).reshape(-1, 3)
    num_frames = struct.unpack(">II", dict(chunks)[b"acTL"])[0]
    canvas = np.zeros((h, w), np.uint8)
    frames, delays, seq = [], [], 0
    for kind, data in chunks:
        if kind == b"fcTL":
            s, fw, fh, x, y, num, den, dispose, blend = struct.unpack(">IIIIIHHBB", data)
            assert s == seq and (dispose, blend) == (0, 0)
            seq += 1
        elif kind in (b"IDAT", b"fdAT"):
            if kind == b"fdAT":
                assert struct.unpack_from(">I", data)[0] == seq
                seq, data = seq + 1, data[4:]
            rows = np.frombuffer(zlib.decompress(data), np.uint8).reshape(fh, fw + 1)
            assert not rows[:, 0].any(), "filter type 0 only"
            canvas[y : y + fh, x : x + fw] = rows[:, 1:]
            frames.append(canvas.copy())
            delays.append((num, den))
    assert len(frames) == num_frames
    return palette, frames, delays


def decode_png_rgb(path: Path) -> np.ndarray:
    b = path.read_bytes()
    w, h, depth, ctype = struct.unpack_from(">IIBB", b, 16)
    assert (depth, ctype) == (8, 2)
    idat, pos = b"", 8
    while pos < len(b):
        (n,) = struct.unpack_from(">I", b, pos)
        if b[pos + 4 : pos + 8] == b"IDAT":
            idat += b[pos + 8 : pos + 8 + n]
        pos += 12 + n
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + 3 * w)
    assert not rows[:, 0].any()
    return rows[:, 1:].reshape(h, w, 3)


# --- the reference: every frame drawn, stepped frame by frame ---


def reference_frames(rom: bytes, actions: np.ndarray, marks: list[int]) -> list[np.ndarray]:
    batch = nesle.CpuBatch(rom, 1)
    out = []
    for f, mask in enumerate(actions, 1):
        batch.step(np.full(1, mask, np.uint8), 1)
        if f in marks:
            out.append(batch.pixels()[0])
    return out


@pytest.fixture(scope="module")
def smb_reference(smb_rom: bytes) -> tuple[np.ndarray, list[int], list[np.ndarray]]:
    actions = record.action_script(SMB_SCRIPT, SMB_FRAMES)
    marks = record.capture_frames(SMB_FRAMES, 3)
    return actions, marks, reference_frames(smb_rom, actions, marks)


# --- encoders ---


def test_lzw_round_trips_noise_through_several_table_resets() -> None:
    # 61,440 random 6-bit pixels fill the 4,096-entry table many times over.
    data = np.random.default_rng(1).integers(0, 64, 240 * 256, np.uint8).tobytes()
    assert lzw_decode(record.lzw_encode(data, 6), 6, len(data)) == data
    flat = bytes(5000)  # long runs: codes grow to 12 bits
    assert lzw_decode(record.lzw_encode(flat, 6), 6, len(flat)) == flat
    assert lzw_decode(record.lzw_encode(b"\x3f", 6), 6, 1) == b"\x3f"


@pytest.mark.rom
def test_gif_of_smb_decodes_to_the_emulators_palette_indices(
    smb_rom: bytes, smb_reference, tmp_path: Path
) -> None:
    actions, marks, expected = smb_reference
    out = tmp_path / "run.gif"
    writer = record.GifWriter(out, nesle.palette())
    r = record.run(smb_rom, actions, every=3, sink=writer)
    writer.close()
    palette, frames, delays = decode_gif(out)
    assert np.array_equal(palette, nesle.palette())
    assert len(frames) == len(expected) == len(marks)
    for i, (got, want) in enumerate(zip(frames, expected)):
        assert np.array_equal(got, want), f"image {i} (frame {marks[i]}) differs"
    assert np.array_equal(frames[-1], r.pixels)
    assert len({f.tobytes() for f in frames}) > 10, "the recording should show motion"
    # Every 3rd frame at 60 frames/s: 5 cs; the image at frame 260 = 86 * 3 + 2 stands for 2.
    assert delays == [5] * 85 + [3, 5]
    assert out.stat().st_size < 120_000, "changed rectangles only: small"


@pytest.mark.rom
def test_apng_of_smb_decodes_to_the_emulators_palette_indices(
    smb_rom: bytes, smb_reference, tmp_path: Path
) -> None:
    actions, marks, expected = smb_reference
    out = tmp_path / "run.png"
    writer = record.ApngWriter(out, nesle.palette())
    record.run(smb_rom, actions, every=3, sink=writer)
    writer.close()
    palette, frames, delays = decode_apng(out)
    assert np.array_equal(palette, nesle.palette())
    assert len(frames) == len(expected)
    for i, (got, want) in enumerate(zip(frames, expected)):
        assert np.array_equal(got, want), f"image {i} (frame {marks[i]}) differs"
    # 260 = 86 * 3 + 2; the last image stands for the `every` frames after it.
    assert delays == [(3, 60)] * 85 + [(2, 60), (3, 60)]


def test_gif_delays_follow_a_running_clock(tmp_path: Path) -> None:
    out = tmp_path / "clock.gif"
    writer = record.GifWriter(out, nesle.palette())
    for i in range(6):  # every 2nd frame: 3.33 cs each
        writer.add(np.full((4, 4), i, np.uint8), 2)
    writer.close()
    _, frames, delays = decode_gif(out)
    assert delays == [3, 4, 3, 3, 4, 3] and sum(delays) == 20  # 12 frames = 0.2 s
    assert [int(f[0, 0]) for f in frames] == list(range(6))


def test_capture_frames_ends_on_the_last_frame() -> None:
    assert record.capture_frames(10, 3) == [3, 6, 9, 10]
    assert record.capture_frames(9, 3) == [3, 6, 9]
    assert record.capture_frames(2, 5) == [2]


# --- action scripts ---


def test_scripts_parse_buttons_counts_and_masks(tmp_path: Path) -> None:
    got = record.action_script("noop*2, right+b*3, 0x08 # start\nA")
    assert got.tolist() == [0, 0, 0x82, 0x82, 0x82, 0x08, 0x01]
    script = tmp_path / "run.txt"
    script.write_text("# boot\nnoop*40\nstart*5\n\nright+b*10\n")
    assert len(record.action_script(str(script))) == 55
    assert record.action_script(str(script), 60)[-5:].tolist() == [0] * 5  # padded
    assert len(record.action_script(str(script), 20)) == 20  # cut


def test_random_actions_are_seeded() -> None:
    a, b = record.action_script("random", 400, seed=3), record.action_script("random", 400, 3)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, record.action_script("random", 400, seed=4))
    assert (a[::4] == a[3::4]).all(), "held for RANDOM_HOLD frames"
    assert (record.action_script("right", 7) == nesle.BUTTON_RIGHT).all()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("bogus", "not 'random' or 'right', no such file"),
        ("right+x*3", "unknown button 'x'"),
        ("start*0", "between 1 and"),
        ("a*many", "must be an integer"),
        ("0x100", "0..255"),
        ("left+right+", "line 1: 'left+right+': unknown button ''"),
    ],
)
def test_bad_scripts_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(record.RecordError) as e:
        record.action_script(spec)
    assert message in str(e.value)


def test_a_binary_file_is_not_taken_for_a_script(tmp_path: Path) -> None:
    binary = tmp_path / "game.nes"
    binary.write_bytes(b"NES\x1a\xff\xfe" + bytes(range(256)))
    with pytest.raises(record.RecordError, match="not a text action script"):
        record.action_script(str(binary))


def test_an_empty_script_file_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "empty.txt"
    script.write_text("# nothing\n\n")
    with pytest.raises(record.RecordError, match="holds no actions"):
        record.action_script(str(script))


# --- the CLI ---


@pytest.mark.rom
def test_play_writes_the_last_frame_as_png(smb_rom: bytes, tmp_path: Path, capsys) -> None:
    out = tmp_path / "shot.png"
    rc = cli.main(["play", "smb", "--frames", "90", "--seed", "7", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    actions = record.action_script("random", 90, seed=7)
    (want,) = reference_frames(smb_rom, actions, [90])
    assert np.array_equal(decode_png_rgb(out), nesle.palette()[want])
    assert "90 frames" in capsys.readouterr().out


@pytest.mark.rom
def test_record_writes_a_gif(smb_rom: bytes, tmp_path: Path, capsys) -> None:
    out = tmp_path / "run.gif"
    rc = cli.main(["record", "smb", "--out", str(out), "--actions", "right*60", "--every", "4"])
    assert rc == 0, capsys.readouterr().err
    _, frames, delays = decode_gif(out)
    assert len(frames) == 15 and sum(delays) == 100  # 60 frames = 1 s
    assert "15 images" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["record", "smb", "--out", "run.avi"], "must end in .gif, .png, .mp4"),
        (["play", "smb", "--out", "shot.gif"], "must end in .png"),
        (["play", "smb", "--actions", "bogus"], "no such file"),
        (["play", "smb", "--out", "/no/such/dir/shot.png"], "no such folder"),
        (["demo", "--out", "/no/such/dir/shot.png"], "no such folder"),
        (["demo", "--out", "shot.jpg"], "must end in .png"),
        (["bench", "--backend", "cpu", "--json", "/no/such/dir/b.json"], "no such folder"),
        (["play", "no-such-game"], "neither a ROM file nor a known game"),
        (["play", "smb", "--frames", str(2**33)], "frames must be between 1 and 4,294,967,296"),
        (["play", "smb", "--actions", f"right*{10**23}"], "frame count must be between 1 and"),
        (["roms", "fetch", "smb", "foo"], "unknown game 'foo'"),  # before smb is looked at
        (["demo", "--frames", str(2**40)], "--frames must be at most 4,294,967,296"),
        (["record", "smb", "--out", "r.gif", "--greedy"], "--greedy is for --agent's recording"),
        (["record", "--agent", "a.pt", "--out", "r.gif", "--every", "4"], "--every is for a ROM's"),
        (["record", "--agent", "a.pt", "--out", "r.gif", "--actions", "right"], "--actions is for"),
        (["roms", "fetch", "smb", "--dest", "/proc/no-such/roms"], "not writable"),  # before pip runs
    ],
)
def test_bad_arguments_give_clear_errors(argv: list[str], message: str, capsys) -> None:
    assert cli.main(argv) == 2
    out = capsys.readouterr()
    assert message in out.err
    assert out.out == ""  # refused before running anything


@pytest.mark.parametrize("command", ["record", "play", "info"])
def test_a_bad_rom_is_one_line_and_leaves_an_existing_output_as_it_was(command, tmp_path, capsys):
    bad = tmp_path / "bad.nes"
    bad.write_bytes(b"NES\x1a" + bytes(12))  # an iNES header with no PRG ROM
    out = tmp_path / ("keep.png" if command == "play" else "keep.gif")
    out.write_bytes(b"an earlier recording")
    argv = [command, str(bad)] + (["--out", str(out), "--frames", "5"] if command != "info" else [])
    assert cli.main(argv) == 2
    got = capsys.readouterr()
    assert got.out == "" and got.err.startswith("error:") and got.err.count("\n") == 1
    assert out.read_bytes() == b"an earlier recording"


def test_an_output_folder_or_file_that_cannot_be_written_is_refused_first(tmp_path, monkeypatch):
    a_file = tmp_path / "a_file"
    a_file.write_bytes(b"")
    with pytest.raises(record.RecordError, match="is a file, not a folder"):
        record.check_out_folder(a_file)
    with pytest.raises(record.RecordError, match="is a file, not a folder"):
        record.check_out_folder(a_file / "run")
    record.check_out_folder(tmp_path / "new" / "run")  # made when training starts
    with pytest.raises(record.RecordError, match="is a folder"):
        record.check_out(tmp_path)
    record.check_out(tmp_path / "any.name")  # no suffixes asked for: any name
    # A folder no file can be made in, even by root (whom os.access tells it may write there).
    if Path("/proc/self").is_dir():
        with pytest.raises(record.RecordError, match="'/proc': not writable"):
            record.check_out("/proc/shot.png", (".png",))
        with pytest.raises(record.RecordError, match="'/proc': not writable"):
            record.check_out_folder("/proc/runs/a")
    # A read-only folder (tests may run as root, who may write anywhere else).
    monkeypatch.setattr(record, "_writable", lambda folder: Path(folder) != tmp_path)
    with pytest.raises(record.RecordError, match="not writable"):
        record.check_out(tmp_path / "shot.png", (".png",))
    with pytest.raises(record.RecordError, match="not writable"):
        record.check_out_folder(tmp_path / "new" / "run")


def test_train_refuses_an_out_that_is_a_file_before_training(tmp_path, capsys) -> None:
    pytest.importorskip("torch")
    a_file = tmp_path / "a_file"
    a_file.write_bytes(b"")
    argv = ["train", "smb", "--backend", "cpu", "--steps", "64", "--out", str(a_file)]
    assert cli.main(argv) == 2
    out = capsys.readouterr()
    assert "is a file, not a folder" in out.err and "update" not in out.out


def test_a_file_system_error_is_one_line_not_a_traceback(monkeypatch, capsys) -> None:
    def fail(args):
        raise PermissionError(13, "Permission denied", "/somewhere/agent.pt")

    monkeypatch.setattr(cli, "_info", fail)  # the parser is built at each call: it takes this
    assert cli.main(["info", "smb"]) == 2
    assert capsys.readouterr().err == "error: [Errno 13] Permission denied: '/somewhere/agent.pt'\n"


@pytest.mark.parametrize("argv", [["play", "smb", "--frames", "0"], ["record", "smb",
                         "--out", "a.gif", "--every", "-1"], ["record", "smb"],
                         ["play", "smb", "--seed", "-1"], ["play", "smb", "--frames", str(10**23)],
                         ["bench", "--envs", str(2**63)]])  # fmt: skip
def test_bad_numbers_are_refused_by_the_parser(argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert any(m in err for m in ("must be a positive integer", "must be an integer >= 0", "required: --out"))


def test_mp4_without_imageio_ffmpeg_says_what_to_install(tmp_path: Path, capsys) -> None:
    try:
        import imageio_ffmpeg  # noqa: F401
    except ImportError:
        rc = cli.main(["record", "smb", "--out", str(tmp_path / "a.mp4"), "--frames", "4"])
        assert rc == 2
        assert "pip install imageio-ffmpeg" in capsys.readouterr().err
    else:  # installed here: it must then write a video
        rc = cli.main(["record", "smb", "--out", str(tmp_path / "a.mp4"), "--frames", "20"])
        assert rc == 0 and (tmp_path / "a.mp4").stat().st_size > 0


# --- progress ---


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_terminal_only(monkeypatch) -> None:
    monkeypatch.delenv(progress.ENV, raising=False)
    pipe = io.StringIO()
    with progress.Progress(10, "x", stream=pipe) as bar:
        bar.update(10)
    assert pipe.getvalue() == ""
    tty = _Tty()
    with progress.Progress(10, "x", stream=tty) as bar:
        bar.update(10)
    assert "100% 10/10 frames" in tty.getvalue() and tty.getvalue().endswith("\n")
    monkeypatch.setenv(progress.ENV, "1")
    assert progress.enabled(io.StringIO())
    monkeypatch.setenv(progress.ENV, "0")
    assert not progress.enabled(_Tty())


def _main_keeping_ctrl_c(argv: list[str]) -> int:
    """cli.main, failing the test (not stopping pytest) if a KeyboardInterrupt escapes it."""
    try:
        return cli.main(argv)
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C escaped nesle's command as a KeyboardInterrupt")


def test_ctrl_c_while_recording_keeps_a_whole_file_of_the_images_so_far(smb_rom, tmp_path,
                                                                         monkeypatch, capsys):
    real_run = record.run

    def run_then_interrupt(rom, actions, every, sink, on_frame=None):
        # The user's Ctrl-C after 30 frames: run those, then the interrupt.
        real_run(rom, actions[:30], every, sink)
        raise KeyboardInterrupt

    monkeypatch.setattr(record, "run", run_then_interrupt)
    out = tmp_path / "cut.gif"
    argv = ["record", "smb", "--out", str(out), "--frames", "600", "--every", "10"]
    assert _main_keeping_ctrl_c(argv) == 130
    assert "interrupted; wrote" in capsys.readouterr().err
    assert out.read_bytes().endswith(b";")  # the trailer: a whole GIF
    _, frames, _ = decode_gif(out)
    assert len(frames) == 3  # frames 0, 10 and 20


@pytest.mark.parametrize("suffix", [".gif", ".png"])
def test_a_recording_that_fails_midway_leaves_an_earlier_file_as_it_was(smb_rom, tmp_path, monkeypatch,
                                                                         suffix):
    real_run = record.run

    def run_then_fail(rom, actions, every, sink, on_frame=None):
        real_run(rom, actions[:30], every, sink)
        raise RuntimeError("a failure midway")

    monkeypatch.setattr(record, "run", run_then_fail)
    out = tmp_path / f"keep{suffix}"
    out.write_bytes(b"an earlier recording")
    with pytest.raises(RuntimeError, match="a failure midway"):
        cli.main(["record", "smb", "--out", str(out), "--frames", "600", "--every", "10"])
    assert out.read_bytes() == b"an earlier recording"
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]  # no part file left


@pytest.mark.parametrize(("suffix", "every"), [(".gif", 39322), (".png", 65536)])
def test_images_longer_than_the_format_holds_are_refused_before_running(tmp_path, capsys, suffix, every):
    out = tmp_path / f"keep{suffix}"
    out.write_bytes(b"an earlier recording")
    argv = ["record", "smb", "--out", str(out), "--frames", "5", "--every", str(every)]
    assert cli.main(argv) == 2
    got = capsys.readouterr()
    assert got.err.startswith(f"error: an image every {every} frames") and got.err.count("\n") == 1
    assert out.read_bytes() == b"an earlier recording"
    record.open_writer(tmp_path / f"ok{suffix}", every - 1).abort()  # the longest is taken


def test_ctrl_c_in_any_command_is_one_line_and_the_shells_code(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_info", interrupted)
    assert _main_keeping_ctrl_c(["info", "smb"]) == 130
    assert capsys.readouterr().err == "interrupted\n"
