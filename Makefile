# The two entry points of the README. Each installs what it needs first.
PYTHON ?= python3

.PHONY: run test test-rust test-python install

# The main job: install nesle and run it on the best backend available.
run: install
	$(PYTHON) -m nesle demo --out mario.png

install:
	$(PYTHON) -m pip install -q --upgrade pip maturin
	$(PYTHON) -m pip install -q -e .

# The whole test suite: Rust (unit, test ROMs, no_std build) then Python.
test: test-rust test-python

test-rust:
	cargo build -p nes-core --no-default-features
	cargo test --release

test-python:
	$(PYTHON) -m pip install -q --upgrade pip maturin
	$(PYTHON) -m pip install -q -e ".[test]"
	$(PYTHON) -m nesle roms fetch smb tetris
	$(PYTHON) -m pytest -q tests/python
