"""Packaging: desktop entry and AppStream metainfo validate, app icons have their sizes, the wheel ships
resources/ and profiles/ where ``llm_dyno.core.paths`` finds them, and the desktop-entry installer
installs and uninstalls cleanly.

The checks themselves live in packaging/checks.py (``scripts/validate-packaging`` runs the same ones).
Without desktop-file-validate / appstreamcli the validator tests skip, or fail when CI is set.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.parts import missing

REPO = Path(__file__).resolve().parents[2]


def _load_checks() -> ModuleType:
    # packaging/ is not a Python package (and `packaging` is a PyPI name): load the file by path
    path = REPO / "packaging" / "checks.py"
    spec = importlib.util.spec_from_file_location("llm_dyno_packaging_checks", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


checks = _load_checks()


def _run_validator(check: Callable[[], list[str]]) -> list[str]:
    try:
        return check()
    except checks.ToolMissing as exc:
        missing(str(exc), "apt-get install -y desktop-file-utils appstream")


# ---- desktop entry and metainfo ---------------------------------------------------------------------


def test_desktop_entry_validates() -> None:
    assert _run_validator(checks.check_desktop_file) == []


def test_metainfo_validates() -> None:
    assert _run_validator(checks.check_metainfo) == []


def test_desktop_validator_reports_a_broken_entry(tmp_path: Path) -> None:
    broken = tmp_path / f"{checks.APP_ID}.desktop"
    broken.write_text("[Desktop Entry]\nType=Application\nExec=llm-dyno\nIcon=llm-dyno\n", encoding="utf-8")
    problems = _run_validator(lambda: checks.check_desktop_file(broken))
    assert any("desktop-file-validate" in p for p in problems)  # Name is required
    assert any("Icon=" in p for p in problems)


def test_metainfo_release_matches_project_version() -> None:
    text = checks.METAINFO_FILE.read_text(encoding="utf-8")
    assert f'<release version="{checks.project_version()}"' in text


# ---- icons ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", checks.ICON_SIZES)
def test_icon_png_has_its_size(size: int) -> None:
    header = checks.read_png_header(checks.ICON_DIR / f"llm-dyno-{size}.png")
    assert (header.width, header.height) == (size, size)
    assert header.color_type == 6  # RGBA: the rounded corners are transparent


def test_icon_check_passes() -> None:
    assert checks.check_icons() == []


def test_icon_check_reports_wrong_and_missing_sizes(tmp_path: Path) -> None:
    shutil.copy(checks.ICON_DIR / "llm-dyno.svg", tmp_path)
    shutil.copy(checks.ICON_DIR / "llm-dyno-32.png", tmp_path / "llm-dyno-16.png")
    (tmp_path / "llm-dyno-24.png").write_bytes(b"GIF89a not a png at all, but long enough to be read")
    problems = checks.check_icons(tmp_path)
    assert any("llm-dyno-16.png is 32x32, expected 16x16" in p for p in problems)
    assert any("llm-dyno-24.png is not a PNG" in p for p in problems)
    assert any("llm-dyno-512.png is missing" in p for p in problems)


# ---- wheel ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(checks.build_wheel(tmp_path_factory.mktemp("wheel")))


def test_wheel_ships_resources_and_profiles(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    assert any(n.startswith("llm_dyno/_shipped/resources/suites/") for n in names), names
    assert any(n.startswith("llm_dyno/_shipped/profiles/") and n.endswith(".yaml") for n in names), names
    assert checks.check_wheel_contents(wheel) == []


def test_paths_resolve_inside_the_unpacked_wheel(wheel: Path) -> None:
    assert checks.check_wheel_paths(wheel) == []


# ---- install-desktop-entry --------------------------------------------------------------------------


def _install(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(REPO / "packaging" / "install-desktop-entry"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_install_desktop_entry_round_trip(tmp_path: Path) -> None:
    share = tmp_path / "share"
    result = _install("--prefix", str(tmp_path), "--exec", "/opt/llm dyno/llm-dyno")
    assert result.returncode == 0, result.stderr
    desktop = share / "applications" / f"{checks.APP_ID}.desktop"
    lines = desktop.read_text(encoding="utf-8").splitlines()
    assert 'Exec="/opt/llm dyno/llm-dyno"' in lines
    assert "TryExec=/opt/llm dyno/llm-dyno" in lines
    assert (share / "metainfo" / f"{checks.APP_ID}.metainfo.xml").is_file()
    assert (share / "icons/hicolor/scalable/apps" / f"{checks.APP_ID}.svg").is_file()
    for size in checks.ICON_SIZES:
        png = share / f"icons/hicolor/{size}x{size}/apps/{checks.APP_ID}.png"
        assert checks.read_png_header(png).width == size
    if shutil.which("desktop-file-validate"):
        assert checks.check_desktop_file(desktop) == [
            f"{desktop.name}: Exec='\"/opt/llm dyno/llm-dyno\"', expected 'llm-dyno'"
        ]

    result = _install("--prefix", str(tmp_path), "--uninstall")
    assert result.returncode == 0, result.stderr
    left = [p for p in share.rglob("*") if p.is_file() and checks.APP_ID in p.name]
    assert left == []


def test_install_desktop_entry_rejects_unsafe_exec(tmp_path: Path) -> None:
    result = _install("--prefix", str(tmp_path), "--exec", "/opt/$HOME/llm-dyno")
    assert result.returncode == 2
    assert not (tmp_path / "share" / "applications").exists()
