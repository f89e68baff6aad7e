"""Smoke test of an installed nesle wheel, run by `make test` in a fresh virtual environment.

It checks what a user gets from `pip install nesle-*.whl` on a machine without a CUDA toolkit:
the package imports from site-packages (not this source tree), its native module asks for no
glibc newer than the wheel's manylinux2014 tag promises (2.17), a CPU-backend episode runs, and
asking for the CUDA backend without a GPU is a clear error rather than a crash.
"""

import struct
import sys

import numpy as np

import nesle

assert "site-packages" in nesle.__file__, f"nesle imported from {nesle.__file__}, not the wheel"

GLIBC_MAX = (2, 17)


def glibc_versions(path: str) -> set[str]:
    """The GLIBC_x.y versions an x86-64 ELF shared object needs (its SHT_GNU_verneed section)."""
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for _, kind, _, _, offset, _, link, count, _, _ in sections:
        if kind != 0x6FFFFFFE:  # SHT_GNU_verneed
            continue
        strtab = sections[link][4]
        entry = offset
        for _ in range(count):
            _, aux_count, _, aux, next_entry = struct.unpack_from("<HHIII", data, entry)
            at = entry + aux
            for _ in range(aux_count):
                _, _, _, name, next_aux = struct.unpack_from("<IHHII", data, at)
                end = data.index(b"\0", strtab + name)
                names.add(data[strtab + name:end].decode())
                at += next_aux
            entry += next_entry
    return {n for n in names if n.startswith("GLIBC_")}


needed = glibc_versions(nesle._native.__file__)
too_new = sorted(v for v in needed if tuple(map(int, v[6:].split(".")[:2])) > GLIBC_MAX)
assert needed, f"found no GLIBC versions in {nesle._native.__file__}: the check cannot read it"
assert not too_new, f"the native module needs {too_new}, newer than manylinux2014's glibc 2.17"

env = nesle.make_vec("smb", num_envs=2, backend="cpu", obs="ram", seed=0)
obs, info = env.reset(seed=0)
assert obs.shape == (2, 2048) and obs.dtype == np.uint8
total = np.zeros(2)
for _ in range(60):
    obs, reward, terminated, truncated, info = env.step(np.full(2, 1))  # simple: RIGHT
    total += reward
env.close()
assert (total > 0).all(), f"running right earned no reward: {total}"

ok, why = nesle._native.cuda_available()
if not ok:
    try:
        nesle.make_vec("smb", num_envs=1, backend="cuda")
    except nesle.BackendUnavailableError as e:
        print(f"cuda backend unavailable, as expected here: {e}")
    else:
        sys.exit("backend='cuda' without a GPU did not raise BackendUnavailableError")
print(f"wheel smoke test: 1 passed, 0 failed (nesle {nesle.__version__}, reward {total.tolist()}, "
      f"glibc {max(needed, key=lambda v: tuple(map(int, v[6:].split('.'))))} at most)")
