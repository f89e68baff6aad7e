"""bench/sass_profile.py: ncu's per-instruction counts summed per device function of an nvdisasm
listing (a small made-up kernel: two functions and a call)."""

import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "bench" / "sass_profile.py"

LISTING = """\
\t.section\t.text.nesle_gather_ram,"ax",@progbits
        /*0000*/                   EXIT ;
\t.section\t.text.nesle_step,"ax",@progbits
.text.nesle_step:
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   CALL.REL.NOINC `($nesle_step$_Z8cpu_readR3Nest) ;
        /*0020*/                   EXIT ;
$nesle_step$_Z8cpu_readR3Nest:
        /*0030*/                   LDL R0, [R1] ;
.L_x_1:
        /*0040*/                   RET.REL.NODEC R2 `(nesle_step) ;
"""

HEADER = ('"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued '
          'Samples)","# Samples","Instructions Executed","Thread Instructions Executed"')


def csv_text(rows):
    lines = ['"Kernel Name","nesle_step",', HEADER]
    for addr, (src, samples, warps, threads) in enumerate(rows):
        lines.append(f'"0x{addr * 16:x}","{src}","{samples}","{samples}","{samples}","{warps}","{threads}"')
    return "\n".join(lines) + "\n"


def run(tmp_path, rows, *args):
    (tmp_path / "src.csv").write_text(csv_text(rows))
    (tmp_path / "sass.txt").write_text(LISTING)
    return subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "src.csv"), str(tmp_path / "sass.txt"), *args],
                          capture_output=True, text=True)


def test_counts_are_summed_per_function_with_threads_per_instruction(tmp_path):
    rows = [("MOV", 1, 10, 320), ("CALL", 1, 10, 320), ("EXIT", 0, 10, 320),
            ("LDL", 6, 40, 320), ("RET", 2, 40, 320)]
    out = run(tmp_path, rows, "--calls")
    assert out.returncode == 0, out.stderr
    table = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()[2:] if line and line[0] != " "}
    # cpu_read: 80 of 110 warp instructions, 8 of 10 samples, 640 threads over 80 instructions.
    assert table["cpu_read"] == ["72.7", "80.0", "8.0"]
    assert table["nesle_step"] == ["27.3", "20.0", "32.0"]
    assert "nesle_step                   -> cpu_read" in out.stdout


def test_a_listing_of_another_build_is_refused(tmp_path):
    out = run(tmp_path, [("MOV", 1, 10, 320)] * 4)
    assert out.returncode != 0 and "not the same build" in out.stderr
