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


LINES = """\
\t.section\t.text.nesle_step,"ax",@progbits
.text.nesle_step:
\t//## File "/k/nesle.cu", line 10
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   CALL.REL.NOINC `($nesle_step$_Z8cpu_readR3Nest) ;
\t//## File "/k/cart.cuh", line 181 inlined at "/k/nesle.cu", line 12
        /*0020*/                   STL [R1], R0 ;
        /*0030*/                   STL [R1+0x4], R0 ;
\t//## File "/k/nesle.cu", line 13
        /*0040*/                   EXIT ;
$nesle_step$_Z8cpu_readR3Nest:
\t//## File "/k/cpu.cuh", line 85
        /*0050*/                   LDL R0, [R1] ;
        /*0060*/                   RET.REL.NODEC R2 `(nesle_step) ;
"""


def test_cold_lists_the_source_lines_never_run_inside_hot_functions(tmp_path):
    (tmp_path / "src.csv").write_text(csv_text([("MOV", 1, 10, 320), ("CALL", 1, 10, 320), ("STL", 0, 0, 0),
                                                ("STL", 0, 0, 0), ("EXIT", 0, 10, 320), ("LDL", 6, 40, 320),
                                                ("RET", 2, 40, 320)]))
    (tmp_path / "sass.txt").write_text(LINES)
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "src.csv"), str(tmp_path / "sass.txt"), "--cold"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    cold = out.stdout.split("source lines never run")[1].splitlines()
    # The innermost line of the two stores, never run, in nesle_step; nothing of cpu_read.
    assert "2 functions with 1% of the instructions or more: 2 instructions" in cold[0]
    assert cold[1].split() == ["cart.cuh:181", "2", "nesle_step"]
    assert len(cold) == 2


def test_cold_needs_a_listing_with_line_numbers(tmp_path):
    out = run(tmp_path, [("MOV", 1, 10, 320), ("CALL", 1, 10, 320), ("EXIT", 0, 10, 320),
                         ("LDL", 6, 40, 320), ("RET", 2, 40, 320)], "--cold")
    assert out.returncode != 0 and "-lineinfo" in out.stderr
