"""Power limits: validation, the NO_PERMISSION path, remembering the previous limit (replayed H200)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from llm_dyno.core.errors import DynoError
from llm_dyno.core.telemetry.nvml import Nvml
from llm_dyno.core.telemetry.power import (
    PowerLimitError,
    helper_command,
    read_power_limit,
    remembered_limits,
    restore_power_limit,
    set_power_limit,
    set_power_limits,
)
from tests.core.telemetry.nvml_replay import ReplayNvml, load_recording

HELPER = Path(__file__).resolve().parents[3] / "packaging" / "llm-dyno-power-helper"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path))
    monkeypatch.setenv("LLM_DYNO_POWER_HELPER", str(tmp_path / "not-installed"))
    return tmp_path


def test_read_constraints() -> None:
    limit = read_power_limit(0, Nvml(ReplayNvml(load_recording("raw_idle"))))
    assert (limit.current_w, limit.default_w, limit.min_w, limit.max_w, limit.enforced_w) == (
        700.0, 700.0, 200.0, 700.0, 700.0,
    )  # fmt: skip


@pytest.mark.parametrize("watts", [150, 199.4, 701, 1000])
def test_out_of_range_refused_with_range_before_nvml(watts: float) -> None:
    lib = ReplayNvml(load_recording("raw_idle"))
    with pytest.raises(PowerLimitError, match="allowed range 200–700 W"):
        set_power_limit(0, watts, session=Nvml(lib))
    assert lib.set_calls == []
    assert remembered_limits() == {}


def test_no_permission_without_helper_explains(home: Path) -> None:
    lib = ReplayNvml(load_recording("raw_idle"))
    with pytest.raises(PowerLimitError) as err:
        set_power_limit(0, 330, session=Nvml(lib))
    assert lib.set_calls == [(0, 330_000)]
    assert "needs root" in str(err.value) and "run as root" in str(err.value) and "helper" in str(err.value)
    # the limit in force before was remembered (atomically, as JSON) for a later reset
    saved = json.loads((home / "data" / "power" / "previous.json").read_text())
    assert saved == {"0": {"watts": 700.0, "uuid": "GPU-e6300354-ff09-488f-96b5-85c16bbe7c39"}}
    assert not list((home / "data" / "power").glob(".*.tmp"))


def test_no_permission_with_helper_runs_pkexec_argument_list(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    helper = home / "llm-dyno-power-helper"
    helper.write_text("#!/bin/sh\nexit 0\n")
    helper.chmod(helper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("LLM_DYNO_POWER_HELPER", str(helper))
    monkeypatch.setenv("PATH", f"{home}:{os.environ['PATH']}")
    (home / "pkexec").write_text("#!/bin/sh\nexit 0\n")
    (home / "pkexec").chmod(0o755)
    seen: list[list[str]] = []

    def runner(cmd: list[str]) -> subprocess.CompletedProcess[str]:
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 126, "", "Not authorized")  # pkexec's "dismissed" code

    with pytest.raises(PowerLimitError, match=r"helper failed \(exit 126\): Not authorized"):
        set_power_limit(0, 330, session=Nvml(ReplayNvml(load_recording("raw_idle"))), runner=runner)
    assert seen == [["pkexec", str(helper), "set", "0", "330"]]


def test_root_path_sets_and_restore_puts_back_first_limit() -> None:
    lib = ReplayNvml(load_recording("raw_idle"), set_error=0)  # as root the driver accepts it
    s = Nvml(lib)
    assert set_power_limit(0, 400, session=s).current_w == 400.0
    assert set_power_limit(0, 330, session=s).current_w == 330.0
    assert remembered_limits()["0"]["watts"] == 700.0  # the first one, not 400
    assert restore_power_limit(0, session=s).current_w == 700.0
    assert remembered_limits() == {}
    assert lib.set_calls == [(0, 400_000), (0, 330_000), (0, 700_000)]


class TwoH200(ReplayNvml):
    """Two GPUs of the recorded H200 (same constraints), each with its own limit; run as root."""

    def __init__(self) -> None:
        super().__init__(load_recording("raw_idle"), set_error=0)
        self.limits = {"handle0": self.limit_mw, "handle1": self.limit_mw}

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetPowerManagementLimit(self, h: str) -> int:
        return int(self.limits[h])

    def nvmlDeviceSetPowerManagementLimit(self, h: str, limit_mw: int) -> None:
        self.set_calls.append((int(h[-1]), limit_mw))
        self.limits[h] = limit_mw


def test_tensor_parallel_gpus_get_the_same_limit() -> None:
    lib = TwoH200()
    after = set_power_limits((0, 1), 330, session=Nvml(lib))
    assert [(x.gpu, x.current_w) for x in after] == [(0, 330.0), (1, 330.0)]
    assert lib.set_calls == [(0, 330_000), (1, 330_000)]
    assert set(remembered_limits()) == {"0", "1"}  # each GPU's limit before, for a reset
    with pytest.raises(PowerLimitError, match="allowed range 200–700 W"):
        set_power_limits((0, 1), 150, session=Nvml(lib))
    assert len(lib.set_calls) == 2  # checked on every GPU before any is changed
    with pytest.raises(DynoError, match="no GPU 2: this machine has 2"):
        set_power_limits((0, 2), 400, session=Nvml(lib))
    assert len(lib.set_calls) == 2


def test_helper_command_shape() -> None:
    assert helper_command(Path("/h"), "set", 1, 300) == ["pkexec", "/h", "set", "1", "300"]
    assert helper_command(Path("/h"), "reset", 0) == ["pkexec", "/h", "reset", "0"]
    with pytest.raises(ValueError):
        helper_command(Path("/h"), "rm -rf", 0)


@pytest.mark.parametrize(
    "argv",
    [[], ["set"], ["set", "0"], ["set", "0", "300", "x"], ["set", "-1", "300"], ["set", "0", "300.5"],
     ["set", "0", "3e2"], ["reset", "0;id"], ["set", "0", "$(id)"], ["frob", "0"], ["reset"]],
)  # fmt: skip
def test_helper_refuses_anything_else(argv: list[str]) -> None:
    done = subprocess.run([sys.executable, str(HELPER), *argv], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "refused" in done.stderr and "usage:" in done.stderr
