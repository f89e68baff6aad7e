"""bench/sass_sizes.py: the step kernel's instructions per device function, and their change
between two nvdisasm listings (made-up listings)."""

import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "bench" / "sass_sizes.py"


def listing(read_instructions):
    body = "\n".join(f"        /*{0x40 + 16 * i:04x}*/                   NOP ;" for i in range(read_instructions))
    return f"""\
\t.section\t.text.nesle_gather_ram,"ax",@progbits
        /*0000*/                   EXIT ;
\t.section\t.text.nesle_step,"ax",@progbits
.text.nesle_step:
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   CALL.REL.NOINC `($nesle_step$_Z8cpu_readR3Nest) ;
        /*0020*/                   EXIT ;
$nesle_step$_Z8cpu_readR3Nest:
        /*0030*/                   LDL R0, [R1] ;
{body}
        /*0100*/                   RET.REL.NODEC R2 `(nesle_step) ;
"""


def run(tmp_path, *listings):
    paths = []
    for i, text in enumerate(listings):
        p = tmp_path / f"k{i}.sass"
        p.write_text(text)
        paths.append(str(p))
    return subprocess.run([sys.executable, str(SCRIPT), *paths], capture_output=True, text=True)


def test_one_listing_gives_each_function_its_instructions(tmp_path):
    out = run(tmp_path, listing(3))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "nesle_step: 8 instructions"
    assert lines[1].split() == ["cpu_read", "5"] and lines[2].split() == ["nesle_step", "3"]


def test_two_listings_give_the_change_of_each_function_that_moved(tmp_path):
    out = run(tmp_path, listing(3), listing(1))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "nesle_step: 8 -> 6 instructions"
    assert lines[1].split() == ["cpu_read", "5", "->", "3", "(-2)"]
    assert len(lines) == 2


def test_a_listing_without_the_kernel_is_refused(tmp_path):
    out = run(tmp_path, "\t.section\t.text.nesle_gather_ram,\"ax\",@progbits\n        /*0000*/ EXIT ;\n")
    assert out.returncode != 0 and "no .text.nesle_step" in out.stderr


def test_functions_are_named_by_their_mangled_length_whatever_their_arguments(tmp_path):
    text = listing(0).replace("$nesle_step$_Z8cpu_readR3Nest", "$nesle_step$_Z13nes_step_slotPhjjPKhS1_")
    out = run(tmp_path, text)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[1].split() == ["nesle_step", "3"]
    assert out.stdout.splitlines()[2].split() == ["nes_step_slot", "2"]
