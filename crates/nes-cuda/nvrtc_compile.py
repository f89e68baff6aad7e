#!/usr/bin/env python3
"""Compiles a CUDA source with NVRTC 12.x (pip wheel nvidia-cuda-nvrtc-cu12) into cubins and PTX.

Run by crates/nes-cuda/build.rs; standard library only (ctypes), no GPU or driver needed.

    nvrtc_compile.py SRC [-I DIR ...] [-D NAME=VALUE ...] --out-dir DIR [--sm 61,70,...] [--ptx 75]
                     [--ptx-isa 8.0] [--ptxas PATH] [--jobs N] [--nvrtc LIBPATH]

writes OUT_DIR/nesle.sm_XX.cubin per --sm and OUT_DIR/nesle.compute_XX.ptx for --ptx.

CUDA 13 dropped sm_61/sm_70; NVRTC 12.x still emits cubins for sm_50 and newer. The library
is found at --nvrtc, else $NESLE_NVRTC, else nvidia/cuda_nvrtc/lib/libnvrtc.so.12 in this
Python's site-packages / sys.path.

--ptx-isa rewrites the PTX's `.version` line (NVRTC 12.9 writes 8.8, which only drivers of
CUDA 12.9 or newer can JIT; 8.0 is what a CUDA 12.0 driver accepts). With --ptxas (CUDA 13's
ptxas, from the nvcc wheel) the rewritten PTX is assembled once as a check: ptxas rejects any
instruction or directive that the declared ISA version does not have.

Exit status: 0 ok; 2 NVRTC 12.x not found (build.rs may treat that as optional); 1 any other
failure (a compile error: always a build error for build.rs when NVRTC was found).
"""

import argparse
import concurrent.futures
import ctypes
import multiprocessing
import os
import re
import site
import subprocess
import sys
import tempfile

NOT_FOUND = 2
WHEEL = "nvidia-cuda-nvrtc-cu12==12.9.86"


def find_nvrtc(explicit):
    if explicit:
        return explicit
    env = os.environ.get("NESLE_NVRTC")
    if env:
        return env
    dirs = []
    try:
        dirs += site.getsitepackages()
    except AttributeError:
        pass
    try:
        dirs.append(site.getusersitepackages())
    except AttributeError:
        pass
    dirs += sys.path
    for d in dirs:
        cand = os.path.join(d, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12")
        if os.path.isfile(cand):
            return cand
    return None


class Nvrtc:
    def __init__(self, path):
        libdir = os.path.dirname(os.path.abspath(path))
        # libnvrtc loads its builtins library at compile time; preload it by full path so the
        # lookup never depends on RPATH/LD_LIBRARY_PATH (the 13.0.88 wheel's library has no RPATH).
        for name in sorted(os.listdir(libdir)):
            if name.startswith("libnvrtc-builtins.so."):
                ctypes.CDLL(os.path.join(libdir, name), mode=ctypes.RTLD_GLOBAL)
                break
        self.lib = lib = ctypes.CDLL(path)
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.check(lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
        self.version = (major.value, minor.value)

    def check(self, status, what):
        if status != 0:
            raise RuntimeError(f"{what}: {self.lib.nvrtcGetErrorString(status).decode()}")

    def compile(self, source, name, options, want_cubin):
        lib = self.lib
        prog = ctypes.c_void_p()
        self.check(
            lib.nvrtcCreateProgram(ctypes.byref(prog), source, name.encode(), 0, None, None),
            "nvrtcCreateProgram",
        )
        try:
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            status = lib.nvrtcCompileProgram(prog, len(options), opts)
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            log = log.value.decode(errors="replace").strip()
            if status != 0:
                raise RuntimeError(
                    f"NVRTC {self.version[0]}.{self.version[1]} failed for {' '.join(options)}: "
                    f"{lib.nvrtcGetErrorString(status).decode()}\n{log}"
                )
            get_size, get = (
                (lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN) if want_cubin else (lib.nvrtcGetPTXSize, lib.nvrtcGetPTX)
            )
            self.check(get_size(prog, ctypes.byref(size)), "get size")
            buf = ctypes.create_string_buffer(size.value)
            self.check(get(prog, buf), "get code")
            data = buf.raw
            if not want_cubin:
                data = data.rstrip(b"\0")  # the PTX comes NUL-terminated
            return data, log
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))


def set_ptx_isa(ptx, isa):
    text, n = re.subn(rb"^\.version\s+\d+\.\d+\s*$", b".version " + isa.encode(), ptx, count=1, flags=re.M)
    if n != 1:
        raise RuntimeError("no .version line in NVRTC's PTX")
    if tuple(int(x) for x in isa.split(".")) < (8, 3):
        # `.pragma "used_bytes_mask N";` (PTX ISA 8.3) only tells ptxas which bytes of the next
        # load are used: a performance hint, safe to drop for older ISAs.
        text = re.sub(rb'^[ \t]*\.pragma\s+"used_bytes_mask[^"]*";[ \t]*\n', b"", text, flags=re.M)
    return text


def ptx_isa(ptx):
    m = re.search(rb"^\.version\s+(\d+\.\d+)", ptx, flags=re.M)
    return m.group(1).decode() if m else "?"


def cubin_arch(data):
    """The SASS architecture in a cubin's ELF header (what `cuobjdump -lelf` prints as sm_XX)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or int.from_bytes(data[18:20], "little") != 190:  # EM_CUDA
        raise RuntimeError("NVRTC's cubin is not a 64-bit CUDA ELF file")
    osabi, abi_version, flags = data[7], data[8], int.from_bytes(data[48:52], "little")
    if osabi == 0x33 and abi_version == 7:  # CUDA 12 and older: EF_CUDA_SM in bits 0-7
        return flags & 0xFF, abi_version
    if osabi == 0x41:  # CUDA 13's ELF ABI: bits 8-15
        return (flags >> 8) & 0xFF, abi_version
    raise RuntimeError(f"unknown cubin ELF ABI (OS/ABI {osabi:#x}, version {abi_version})")


def check_with_ptxas(ptxas, ptx, arch):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.ptx")
        with open(src, "wb") as f:
            f.write(ptx)
        r = subprocess.run(
            [ptxas, f"-arch=sm_{arch}", "-O0", src, "-o", os.path.join(tmp, "k.cubin")],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            raise RuntimeError(f"{ptxas} rejected the PTX with its .version rewritten:\n{r.stdout}{r.stderr}")


def run_job(path, source, name, common, kind, arch, out_dir, stem, isa, ptxas):
    nvrtc = Nvrtc(path)
    data, log = nvrtc.compile(source, name, common + [f"--gpu-architecture={kind}_{arch}"], kind == "sm")
    if kind == "compute":
        note = f"PTX ISA {ptx_isa(data)}"
        if isa:
            data = set_ptx_isa(data, isa)
            note += f" rewritten to {isa}"
            if ptxas:
                check_with_ptxas(ptxas, data, arch)
                note += f" (checked by {os.path.basename(ptxas)})"
            else:
                note += " (not checked: no ptxas)"
        out = os.path.join(out_dir, f"{stem}.compute_{arch}.ptx")
    else:
        out = os.path.join(out_dir, f"{stem}.sm_{arch}.cubin")
        sm, abi = cubin_arch(data)
        if sm != int(arch):
            raise RuntimeError(f"asked for sm_{arch}, the cubin's ELF header says sm_{sm}")
        note = f"cubin, ELF header: sm_{sm}, CUDA ELF ABI {abi}"
    with open(out, "wb") as f:
        f.write(data)
    # NVRTC warns that sm_61/sm_70 are deprecated: expected, not worth repeating.
    log = "\n".join(l for l in log.splitlines() if "are deprecated" not in l)
    return f"{os.path.basename(out)}: {len(data)} bytes, {note}" + (f"\n{log}" if log.strip() else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("-I", dest="includes", action="append", default=[])
    ap.add_argument("-D", dest="defines", action="append", default=[], help="NAME[=VALUE], passed to NVRTC")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--sm", default="", help="comma-separated cubin architectures, e.g. 61,70")
    ap.add_argument("--ptx", default="", help="one PTX architecture, e.g. 75")
    ap.add_argument("--ptx-isa", default="", help="rewrite the PTX .version to this, e.g. 8.0")
    ap.add_argument("--ptxas", default="", help="ptxas used to check the rewritten PTX")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--nvrtc", default="")
    ap.add_argument("--std", default="c++17")
    a = ap.parse_args()

    path = find_nvrtc(a.nvrtc)
    if not path or not os.path.isfile(path):
        print(f"NVRTC 12.x not found (pip install {WHEEL}, or set NESLE_NVRTC=/path/to/libnvrtc.so.12)", file=sys.stderr)
        return NOT_FOUND
    try:
        nvrtc = Nvrtc(path)
    except OSError as e:
        print(f"could not load {path}: {e}", file=sys.stderr)
        return NOT_FOUND
    if nvrtc.version[0] != 12:
        print(
            f"{path} is NVRTC {nvrtc.version[0]}.{nvrtc.version[1]}; sm_61/sm_70 need NVRTC 12.x (pip install {WHEEL})",
            file=sys.stderr,
        )
        return NOT_FOUND

    with open(a.src, "rb") as f:
        source = f.read()
    name = os.path.basename(a.src)
    stem = os.path.splitext(name)[0]
    common = [f"--std={a.std}"] + [f"-I{d}" for d in a.includes] + [f"-D{d}" for d in a.defines]
    jobs = [("sm", s.strip()) for s in a.sm.split(",") if s.strip()]
    if a.ptx:
        jobs.append(("compute", a.ptx.strip()))

    os.makedirs(a.out_dir, exist_ok=True)
    args = [(path, source, name, common, kind, arch, a.out_dir, stem, a.ptx_isa, a.ptxas) for kind, arch in jobs]
    errors = []
    # One process per compile: NVRTC serialises concurrent compiles inside one process.
    n = max(1, min(a.jobs, len(jobs)))
    with concurrent.futures.ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn")) as pool:
        for (kind, arch), fut in zip(jobs, [pool.submit(run_job, *x) for x in args]):
            try:
                print(fut.result(), flush=True)
            except Exception as e:  # report every failing architecture, not just the first
                errors.append(f"{kind}_{arch}: {e}")
    print(f"NVRTC {nvrtc.version[0]}.{nvrtc.version[1]} ({path})")
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
