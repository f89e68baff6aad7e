"""Smoke test of an installed nesle wheel, run by `make test` in a fresh virtual environment.

It checks what a user gets from `pip install nesle-*.whl` on a machine without a CUDA toolkit:
the package imports from site-packages (not this source tree), a CPU-backend episode runs, and
asking for the CUDA backend without a GPU is a clear error rather than a crash.
"""

import sys

import numpy as np

import nesle

assert "site-packages" in nesle.__file__, f"nesle imported from {nesle.__file__}, not the wheel"

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
print(f"wheel smoke test: 1 passed, 0 failed (nesle {nesle.__version__}, reward {total.tolist()})")
