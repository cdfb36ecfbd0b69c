"""The power helper's hardening: an isolated interpreter, a polkit action for every place the app
looks for the helper, the decision on auth_admin_keep written down, and an override variable that
only names a root-owned program."""

from __future__ import annotations

import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from llm_dyno.core.telemetry.power import HELPER_ENV, HELPER_PATHS, PowerLimitError, find_helper

PACKAGING = Path(__file__).resolve().parents[2] / "packaging"
HELPER = PACKAGING / "llm-dyno-power-helper"
POLICY = PACKAGING / "org.llmdyno.power.policy"


def test_every_place_the_helper_is_looked_for_has_its_polkit_action() -> None:
    root = ET.parse(POLICY).getroot()  # noqa: S314 - our own file
    paths = []
    for action in root.iter("action"):
        annotations = {a.get("key"): a.text for a in action.iter("annotate")}
        paths.append(annotations["org.freedesktop.policykit.exec.path"])
        defaults = {d.tag: d.text for d in action.find("defaults") or ()}
        assert defaults == {
            "allow_any": "auth_admin",
            "allow_inactive": "auth_admin",
            "allow_active": "auth_admin_keep",
        }
        assert annotations["org.freedesktop.policykit.exec.allow_gui"] == "false"
    assert sorted(paths) == sorted(HELPER_PATHS)
    assert "Decision on auth_admin_keep" in POLICY.read_text()


@pytest.mark.skipif(
    not Path("/usr/bin/python3").exists(), reason="the helper's interpreter is /usr/bin/python3"
)
def test_the_helper_runs_isolated_from_the_callers_environment(tmp_path: Path) -> None:
    assert HELPER.read_text().startswith("#!/usr/bin/python3 -I\n")
    evil = tmp_path / "evil"
    evil.mkdir()
    marker = tmp_path / "imported"
    (evil / "re.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    env = {**os.environ, "PYTHONPATH": str(evil), "PYTHONSTARTUP": str(evil / "re.py")}
    for cwd in (evil, tmp_path):
        done = subprocess.run(
            [str(HELPER), "set", "0", "1; rm -rf /"],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 2 and "refused: watts must be a positive integer" in done.stderr
    assert not marker.exists()


def _helper_copy(folder: Path, mode: int = 0o755) -> Path:
    path = folder / "llm-dyno-power-helper"
    path.write_text(HELPER.read_text())
    path.chmod(mode)
    return path


def test_the_override_must_be_a_root_owned_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to make root-owned and other-owned files")
    folder = tmp_path / "root-owned"
    folder.mkdir(mode=0o755)
    good = _helper_copy(folder)
    monkeypatch.setenv(HELPER_ENV, str(good))
    assert find_helper() == good

    monkeypatch.setenv(HELPER_ENV, "llm-dyno-power-helper")
    with pytest.raises(PowerLimitError, match="is refused: not an absolute path"):
        find_helper()

    (tmp_path / "w").mkdir()
    writable = _helper_copy(tmp_path / "w", 0o775)
    monkeypatch.setenv(HELPER_ENV, str(writable))
    with pytest.raises(PowerLimitError, match="is writable by others than root"):
        find_helper()

    (tmp_path / "x").mkdir()
    theirs = _helper_copy(tmp_path / "x")
    os.chown(theirs, 65534, 65534)  # nobody
    monkeypatch.setenv(HELPER_ENV, str(theirs))
    with pytest.raises(PowerLimitError, match="is not owned by root"):
        find_helper()

    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)  # anyone could replace the program inside
    inside = _helper_copy(open_folder)
    monkeypatch.setenv(HELPER_ENV, str(inside))
    with pytest.raises(PowerLimitError, match=f"{open_folder} is writable by others than root"):
        find_helper()
