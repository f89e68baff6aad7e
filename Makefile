# The two entry points of the README. Each installs what it needs first.
PYTHON ?= python3

.PHONY: run test test-setup test-lint test-rust test-python test-wheel install wheel

# The main job: install nesle (with torch) and train PPO on Super Mario Bros. on the best backend
# available (80M steps on CUDA: 7 minutes on an H100; 1.5M on the CPU: 16-20 minutes on 2
# cores), then record an episode of the trained agent, its actions sampled as in training (its
# greedy play can be worse: docs/benchmarks/cpu-2026-12-05-main-job.json). The ROM is fetched
# on first use.
run: install
	$(PYTHON) -m nesle train smb --out runs/smb --overwrite
	$(PYTHON) -m nesle record --agent runs/smb/agent.pt --out mario.gif

# The CUDA compilers come first so the build embeds the kernels; without a GPU the same build
# runs on the CPU backend.
install:
	$(PYTHON) -m pip install -q --upgrade pip maturin
	$(PYTHON) -m pip install -q $(NVCC_WHEELS)
	$(PYTHON) -m pip install -q -e ".[torch]"

# The whole test suite: set-up (CUDA compilers first, as for `install`, then the Python package
# and every game's ROM: the Rust tests use Zelda's and Contra's too), the Rust code's format and
# lints, Rust (unit, test ROMs, games, kernel parity on the CPU, no_std build), then Python.
test: test-setup test-lint test-rust test-python test-wheel

test-setup:
	$(PYTHON) -m pip install -q --upgrade pip maturin
	$(PYTHON) -m pip install -q $(NVCC_WHEELS)
	$(PYTHON) -m pip install -q -e ".[test]"
	$(PYTHON) -m nesle roms fetch

# The pinned CUDA compilers from PyPI (no GPU needed to compile: nvcc 13 for sm_75+, NVRTC 12.9
# for sm_61/sm_70 and CUDA 12 drivers); NESLE_REQUIRE_KERNELS=1 turns
# a kernel that fails to compile into a failed build.
NVCC_WHEELS = nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96 \
	nvidia-cuda-nvrtc-cu12==12.9.86

# ruff's pyflakes checks (pyproject.toml); rustfmt.toml sets the Rust format; clippy and rustdoc
# warnings fail the build. The kernels are left out of these builds (the test build below
# compiles them).
test-lint:
	$(PYTHON) -m ruff check bench python tests
	cargo fmt --all -- --check
	NESLE_NVCC=none NESLE_NVRTC=none cargo clippy --workspace --all-targets -- -D warnings
	NESLE_NVCC=none NESLE_NVRTC=none RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

test-rust:
	cargo build -p nes-core --no-default-features
	NESLE_NVCC=$$($(PYTHON) -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "bin", "nvcc"))') \
	NESLE_REQUIRE_KERNELS=1 cargo test --release
	# Once more in a debug build, whose integer overflow checks turn a wrapped count into a
	# failure (release wraps silently); the GPU images are left out, the release run built them.
	NESLE_NVCC=none NESLE_NVRTC=none cargo test -p nes-core -p nes-cuda

test-python:
	$(PYTHON) -m pytest -q tests/python

# The wheel users install, in dist/: abi3 (CPython >= 3.10), the kernels embedded (a build
# whose kernels fail to compile fails), linked by zig against glibc 2.17 (manylinux2014), so
# pip takes it on distributions older than the build machine (RHEL 8, Ubuntu 20.04) too.
# maturin runs zig as `python3 -m ziglang`: PYTHON's own folder goes first on PATH, so that
# this works for a PYTHON of a virtual environment that is not activated.
ZIG = ziglang==0.17.1
PYTHON_BIN = $$(dirname "$$($(PYTHON) -c 'import sys; print(sys.executable)')")
BUILD_WHEEL = PATH="$(PYTHON_BIN):$$PATH" NESLE_REQUIRE_KERNELS=1 NESLE_PYTHON=$(PYTHON) \
	$(PYTHON) -m maturin build -q --release --zig --compatibility manylinux2014
wheel:
	$(PYTHON) -m pip install -q --upgrade pip maturin
	$(PYTHON) -m pip install -q $(NVCC_WHEELS) $(ZIG)
	$(BUILD_WHEEL) -o dist

# That wheel, installed into a fresh virtual environment, runs a CPU episode.
WHEEL_DIR = target/wheel-test
test-wheel:
	rm -rf $(WHEEL_DIR) && mkdir -p $(WHEEL_DIR)
	$(PYTHON) -m pip install -q $(ZIG)
	$(BUILD_WHEEL) -o $(WHEEL_DIR)
	$(PYTHON) -m venv $(WHEEL_DIR)/venv
	$(WHEEL_DIR)/venv/bin/python -m pip install -q $(WHEEL_DIR)/nesle-*.whl
	cd $(WHEEL_DIR) && venv/bin/python $(CURDIR)/tests/wheel_smoke.py
