"""`nesle bench`: the protocols run and report a consistent table (throughput itself is measured
by running the command, not by tests)."""

import json

import pytest

import nesle
from nesle import bench, cli


@pytest.mark.rom
def test_protocol_a_runs_every_env_right_from_world_1_1(smb_rom):
    row = bench.run("A", 2, warmup=1, steps=3, rom=smb_rom)
    assert (row.protocol, row.backend, row.envs, row.steps) == ("A", "cpu", 2, 3)
    assert row.env_steps_per_s == pytest.approx(2 * 3 / row.seconds)
    assert row.frames_per_s == pytest.approx(4 * row.env_steps_per_s)


def test_the_env_layer_runs_the_same_protocol_through_make_vec(smb_rom):
    raw = bench.run("B", 2, warmup=0, steps=4, rom=smb_rom)
    env = bench.run("B", 2, warmup=0, steps=4, rom=smb_rom, env=True)
    assert (env.protocol, env.envs, env.steps) == ("B/env", 2, 4)
    assert raw.protocol == "B" and env.env_steps_per_s > 0


@pytest.mark.rom
def test_the_cli_writes_json_rows(tmp_path):
    out = tmp_path / "bench.json"
    assert cli.main(["bench", "--backend", "cpu", "--protocol", "B", "--envs", "1", "--warmup", "1",
                     "--steps", "2", "--pixels", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["rows"][0]["protocol"] == "B+pixels"
    assert doc["machine"]["cores"] >= 1


@pytest.mark.rom
@pytest.mark.parametrize("extra", [[], ["--pixels"], ["--env"], ["--compare-env"]])
def test_too_many_envs_is_an_error_before_any_row_runs(extra, tmp_path, monkeypatch, capsys):
    timed = []
    monkeypatch.setattr(bench, "_timed", lambda *a, **k: timed.append(a))
    out = tmp_path / "bench.json"
    assert cli.main(["bench", "--backend", "cpu", "--protocol", "B", "--envs", "1", str(2**40),
                     "--warmup", "0", "--steps", "1", "--json", str(out), *extra]) == 2
    assert timed == [] and not out.exists()
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1 and str(2**40) in err


@pytest.mark.rom
def test_a_run_stopped_by_an_error_keeps_its_rows_in_the_json(tmp_path, monkeypatch, capsys):
    run = bench.run

    def second_fails(protocol, n, **kw):
        if n == 2:
            raise MemoryError(f"{n} environments need more memory")
        return run(protocol, n, **kw)

    monkeypatch.setattr(bench, "run", second_fails)
    out = tmp_path / "bench.json"
    assert cli.main(["bench", "--backend", "cpu", "--protocol", "B", "--envs", "1", "2",
                     "--warmup", "0", "--steps", "1", "--json", str(out)]) == 2
    doc = json.loads(out.read_text())
    assert [r["envs"] for r in doc["rows"]] == [1]
    assert doc["stopped"].startswith("MemoryError") and "2 environments" in doc["stopped"]
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1


@pytest.mark.rom
def test_the_rgb_observation_runs_on_the_batch_and_through_make_vec(tmp_path):
    out = tmp_path / "rgb.json"
    assert cli.main(["bench", "--backend", "cpu", "--protocol", "B", "--envs", "2", "--warmup", "0",
                     "--steps", "2", "--rgb", "--compare-env", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [r["protocol"] for r in doc["rows"]] == ["B+rgb", "B+rgb/env"]


@pytest.mark.rom
def test_compare_env_reports_the_python_layer_cost_from_both_rows(tmp_path, capsys):
    out = tmp_path / "layer.json"
    assert cli.main(["bench", "--backend", "cpu", "--protocol", "B", "--envs", "2", "--warmup", "0",
                     "--steps", "2", "--compare-env", "--rounds", "2", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [r["protocol"] for r in doc["rows"]] == ["B", "B/env", "B", "B/env"]
    (layer,) = doc["python_layer"]
    raw = max(r["env_steps_per_s"] for r in doc["rows"] if r["protocol"] == "B")
    env = max(r["env_steps_per_s"] for r in doc["rows"] if r["protocol"] == "B/env")
    assert (layer["raw"], layer["env"]) == (raw, env)
    assert layer["cost"] == pytest.approx(raw / env - 1)
    assert "Python layer (B, 2 envs)" in capsys.readouterr().out


def test_the_cuda_backend_is_a_clear_error_without_a_gpu_build(capsys):
    if nesle.vector.cuda_available()[0]:
        pytest.skip("a GPU is here: test_cuda_backend_choice.py runs the bench on it")
    assert cli.main(["bench", "--backend", "cuda", "--envs", "1", "--steps", "1"]) == 2
    out = capsys.readouterr()
    assert "backend='cuda' is unavailable" in out.err
    assert out.out == ""  # refused before the table's header


@pytest.mark.parametrize("argv", [["--envs", "0"], ["--envs", "4", "-2"], ["--steps", "0"], ["--rounds", "0"],
                                  ["--warmup", "-3"]])  # fmt: skip
def test_counts_below_one_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["bench", "--backend", "cpu", *argv])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "must be" in err and "Traceback" not in err


def test_demo_frames_below_one_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["demo", "--frames", "-5"])
    assert e.value.code == 2
    assert "--frames: must be a positive integer, got -5" in capsys.readouterr().err


@pytest.mark.parametrize("protocol, kw, error, match", [
    ("C", {}, ValueError, "protocol must be one of"),
    ("a", {}, ValueError, "protocol must be one of"),
    ("B", {"backend": "tpu"}, ValueError, "backend must be one of"),
    ("B", {"backend": "auto"}, ValueError, "backend must be one of"),  # pick_backend resolves it
    ("B", {"n": 0}, ValueError, "envs must be at least 1"),
    ("B", {"steps": 0}, ValueError, "steps must be at least 1"),
    ("B", {"warmup": -1}, ValueError, "warmup must be at least 0"),
    ("B", {"frameskip": 0}, ValueError, "frameskip must be between 1 and 1024"),
    ("B", {"steps": 2.5}, TypeError, "steps must be an int"),
])  # fmt: skip
def test_run_refuses_a_protocol_or_count_it_would_not_measure(protocol, kw, error, match,
                                                              monkeypatch):
    # Before the ROM is read, so the refusal is bench.run's own and not a later layer's (the
    # batch refuses 0 envs in the same words): e.g. a "C" would otherwise run as B.
    def no_rom(name):
        raise AssertionError(f"bench.run read the {name} ROM before checking its arguments")

    monkeypatch.setattr(bench.roms, "load", no_rom)
    kw = dict(kw)
    n = kw.pop("n", 2)
    with pytest.raises(error, match=match):
        bench.run(protocol, n, rom=None, **kw)


def test_a_cpu_row_carries_no_device_report_and_its_json_names_no_gpu(tmp_path):
    out = tmp_path / "cpu.json"
    assert cli.main(["bench", "--backend", "cpu", "--protocol", "A", "--envs", "1", "--warmup", "0",
                     "--steps", "1", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["rows"][0]["device"] is None and "gpu" not in doc["machine"]


def test_a_cuda_rows_report_is_printed_as_the_gpu_line_and_the_step_line():
    # The keys of `CudaBatch.device_report()` (tests/python/test_cuda.py checks them on a GPU).
    report = {"device": "NVIDIA H200", "compute_capability": "9.0", "sms": 132, "driver": "13.0",
              "image": "nvcc 13 fatbin", "step_registers": 128, "step_local_bytes": 23176,
              "step_block": 512, "step_blocks_per_sm": 1, "step_warps_per_sm": 16,
              "max_warps_per_sm": 64, "occupancy": 0.25, "device_bytes": 845_545_472,
              "bytes_per_env": 12_902}  # fmt: skip
    assert bench.describe_gpu(report) == (
        "GPU: NVIDIA H200 (compute 9.0, 132 SMs, driver CUDA 13.0); kernels: nvcc 13 fatbin")
    assert bench.describe_step(report) == (
        "  nesle_step: 128 registers, 23,176 B of stack a thread, blocks of 512, 1 an SM = 16 of "
        "64 warps (25% occupancy); device memory 12,902 B an env")


class _ReportingBatch:
    """A CpuBatch standing in for a CudaBatch, whose device report is `report` (an exception
    instance is raised)."""

    def __init__(self, rom, n, report):
        self._batch, self._report = nesle.CpuBatch(rom, n), report

    def __getattr__(self, name):
        return getattr(self._batch, name)

    def device_report(self):
        if isinstance(self._report, Exception):
            raise self._report
        return self._report


@pytest.mark.rom
def test_a_cuda_row_takes_the_batchs_report_and_survives_a_failed_one(smb_rom, monkeypatch, capsys):
    monkeypatch.setattr(bench, "_batch", lambda backend, rom, n: _ReportingBatch(rom, n, {"device": "X"}))
    assert bench.run("B", 2, backend="cuda", warmup=0, steps=1, rom=smb_rom).device == {"device": "X"}
    failing = RuntimeError("CUDA_ERROR_INVALID_CONTEXT")
    monkeypatch.setattr(bench, "_batch", lambda backend, rom, n: _ReportingBatch(rom, n, failing))
    row = bench.run("B", 2, backend="cuda", warmup=0, steps=1, rom=smb_rom)
    assert row.device is None and row.env_steps_per_s > 0
    assert "no device report for B at 2 envs: CUDA_ERROR_INVALID_CONTEXT" in capsys.readouterr().err


def test_the_default_backend_is_cuda_where_it_runs_else_the_cpu(monkeypatch):
    monkeypatch.setattr(nesle.vector, "cuda_available", lambda device=0: (True, "CUDA device 0: X"))
    assert bench.pick_backend("auto") == "cuda"
    monkeypatch.setattr(nesle.vector, "cuda_available", lambda device=0: (False, "no driver"))
    assert bench.pick_backend("auto") == "cpu"
    # Asked for by name: refused where it cannot run, kept where it can, and the CPU always.
    with pytest.raises(nesle.BackendUnavailableError, match="no driver"):
        bench.pick_backend("cuda")
    assert bench.pick_backend("cpu") == "cpu"
    monkeypatch.setattr(nesle.vector, "cuda_available", lambda device=0: (True, "CUDA device 0: X"))
    assert bench.pick_backend("cuda") == "cuda"


@pytest.mark.rom
def test_without_env_counts_a_run_takes_its_backends_defaults(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(nesle.vector, "cuda_available", lambda device=0: (False, "no driver"))
    out = tmp_path / "defaults.json"
    assert cli.main(["bench", "--protocol", "A", "--warmup", "0", "--steps", "1", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [(r["backend"], r["envs"]) for r in doc["rows"]] == [("cpu", n) for n in bench.DEFAULT_ENVS["cpu"]]
    assert "backend: cpu" in capsys.readouterr().out
    assert bench.DEFAULT_ENVS["cuda"] == [1, 4096, 16384, 65536, 131072]
