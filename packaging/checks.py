"""Packaging checks: desktop entry, AppStream metainfo, app icons, and what a built wheel ships.

``scripts/validate-packaging`` runs them all (this file's ``main``); ``tests/packaging`` calls them one by
one. Each check returns a list of problems, empty when all is well; a missing validator program raises
:class:`ToolMissing` so callers decide whether that is a skip or a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import tomllib
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
APP_ID = "org.llmdyno.LLMDyno"
DESKTOP_FILE = REPO / "packaging" / f"{APP_ID}.desktop"
METAINFO_FILE = REPO / "packaging" / f"{APP_ID}.metainfo.xml"
ICON_DIR = REPO / "resources" / "icons" / "app"
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class ToolMissing(RuntimeError):
    """A validator program (desktop-file-validate, appstreamcli) is not installed."""

    def __init__(self, program: str, package: str) -> None:
        super().__init__(f"{program} not found: install it with `apt-get install {package}`")
        self.program = program
        self.package = package


def _run_tool(program: str, package: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    exe = shutil.which(program)
    if exe is None:
        raise ToolMissing(program, package)
    # a fixed argv of a program found on PATH, no shell
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=120, check=False)  # noqa: S603


def project_version() -> str:
    """The version in pyproject.toml."""
    with (REPO / "pyproject.toml").open("rb") as fh:
        return str(tomllib.load(fh)["project"]["version"])


# ---- desktop entry and metainfo ----------------------------------------------------------------


def check_desktop_file(path: Path = DESKTOP_FILE) -> list[str]:
    """``desktop-file-validate`` reports nothing, and the entry names the app id's icon."""
    result = _run_tool("desktop-file-validate", "desktop-file-utils", [str(path)])
    output = (result.stdout + result.stderr).strip()
    problems = []
    # hints are advice; errors and warnings are not (the tool exits 0 on warnings)
    bad = [line for line in output.splitlines() if "error:" in line or "warning:" in line]
    if result.returncode != 0 or bad:
        problems.append(f"desktop-file-validate {path.name} (exit {result.returncode}):\n{output}")
    keys = dict(line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines() if "=" in line)
    for key, want in (("Icon", APP_ID), ("Exec", "llm-dyno")):
        if keys.get(key) != want:
            problems.append(f"{path.name}: {key}={keys.get(key)!r}, expected {want!r}")
    for key in ("Categories", "Keywords", "StartupWMClass"):
        if not keys.get(key):
            problems.append(f"{path.name}: {key} is missing")
    return problems


def check_metainfo(path: Path = METAINFO_FILE) -> list[str]:
    """``appstreamcli validate --no-net`` passes, and the metainfo agrees with the desktop entry and
    pyproject (id, launchable, release version, licence, screenshots that exist in docs/)."""
    result = _run_tool("appstreamcli", "appstream", ["validate", "--no-net", str(path)])
    problems = []
    if result.returncode != 0:
        problems.append(
            f"appstreamcli validate --no-net {path.name} (exit {result.returncode}):\n"
            f"{(result.stdout + result.stderr).strip()}"
        )
    root = ET.parse(path).getroot()  # noqa: S314 (our own file, not untrusted input)
    if root.findtext("id") != APP_ID:
        problems.append(f"{path.name}: <id> is {root.findtext('id')!r}, expected {APP_ID!r}")
    if root.findtext("launchable") != DESKTOP_FILE.name:
        problems.append(
            f"{path.name}: <launchable> is {root.findtext('launchable')!r}, expected {DESKTOP_FILE.name!r}"
        )
    if root.findtext("project_license") != "MIT":
        problems.append(f"{path.name}: <project_license> is not MIT (pyproject says MIT)")
    releases = root.findall("releases/release")
    version = project_version()
    if not releases or releases[0].get("version") != version:
        first = releases[0].get("version") if releases else None
        problems.append(f"{path.name}: newest <release> is {first!r}, pyproject's version is {version!r}")
    for image in root.iter("image"):
        name = (image.text or "").rsplit("/", 1)[-1]
        if not (REPO / "docs" / "screenshots" / name).is_file():
            problems.append(f"{path.name}: screenshot {image.text} has no docs/screenshots/{name}")
    return problems


# ---- icons -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PngHeader:
    """The IHDR fields of a PNG file that matter for an icon."""

    width: int
    height: int
    bit_depth: int
    color_type: int  # 6 = RGBA


def read_png_header(path: Path) -> PngHeader:
    """Read width, height, bit depth and colour type from a PNG's IHDR chunk; ValueError if not a PNG."""
    with path.open("rb") as fh:
        head = fh.read(33)
    if len(head) < 33 or head[:8] != PNG_SIGNATURE or head[12:16] != b"IHDR":
        raise ValueError(f"{path} is not a PNG file")
    width, height, bit_depth, color_type = struct.unpack(">IIBB", head[16:26])
    return PngHeader(width, height, bit_depth, color_type)


def check_icons(icon_dir: Path = ICON_DIR) -> list[str]:
    """The SVG exists and every PNG size exists, is square at its size, and has an alpha channel."""
    problems = []
    if not (icon_dir / "llm-dyno.svg").is_file():
        problems.append(f"{icon_dir / 'llm-dyno.svg'} is missing")
    for size in ICON_SIZES:
        path = icon_dir / f"llm-dyno-{size}.png"
        if not path.is_file():
            problems.append(f"{path} is missing (run: python packaging/render_icons.py)")
            continue
        try:
            header = read_png_header(path)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        if (header.width, header.height) != (size, size):
            problems.append(f"{path.name} is {header.width}x{header.height}, expected {size}x{size}")
        if header.color_type != 6 or header.bit_depth != 8:
            problems.append(
                f"{path.name}: colour type {header.color_type}, depth {header.bit_depth}; "
                "expected 8-bit RGBA (type 6)"
            )
    return problems


# ---- wheel -------------------------------------------------------------------------------------


def build_wheel(out_dir: Path, python: str = sys.executable) -> Path:
    """Build the project's wheel into ``out_dir`` with ``pip wheel --no-deps``; returns its path."""
    result = subprocess.run(  # noqa: S603 (fixed argv, no shell)
        [python, "-m", "pip", "wheel", "--no-deps", "--quiet", str(REPO), "-w", str(out_dir)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=out_dir,
    )
    wheels = sorted(out_dir.glob("llm_dyno-*.whl"))
    if result.returncode != 0 or not wheels:
        raise RuntimeError(f"pip wheel failed (exit {result.returncode}):\n{result.stdout}{result.stderr}")
    return wheels[-1]


def _shipped_sources() -> dict[str, Path]:
    """Archive name -> source file for everything the wheel must ship from resources/ and profiles/."""
    wanted = {}
    for path in (REPO / "resources").rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            wanted[f"llm_dyno/_shipped/resources/{path.relative_to(REPO / 'resources').as_posix()}"] = path
    for path in (REPO / "profiles").glob("*.yaml"):
        wanted[f"llm_dyno/_shipped/profiles/{path.name}"] = path
    return wanted


def check_wheel_contents(wheel: Path) -> list[str]:
    """The wheel holds every module of app/llm_dyno, every file of resources/ and every profiles/*.yaml
    (the last two under llm_dyno/_shipped/)."""
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    modules = {
        path.relative_to(REPO / "app").as_posix()
        for path in (REPO / "app" / "llm_dyno").rglob("*.py")
        if "__pycache__" not in path.parts
    }
    problems = [f"{wheel.name} lacks {name}" for name in sorted(modules - names)]
    problems += [f"{wheel.name} lacks {name}" for name in sorted(set(_shipped_sources()) - names)]
    if not any(n.startswith("llm_dyno/_shipped/profiles/") and n.endswith(".yaml") for n in names):
        problems.append(f"{wheel.name} has no llm_dyno/_shipped/profiles/*.yaml")
    if "llm_dyno/_shipped/resources/icons/app/llm-dyno.svg" not in names:
        problems.append(f"{wheel.name} lacks the app icon llm_dyno/_shipped/resources/icons/app/llm-dyno.svg")
    return problems


_PROBE = """
import json, llm_dyno
from llm_dyno.core import paths
r, p = paths.resources_dir(), paths.shipped_profiles_dir()
print(json.dumps({"package": llm_dyno.__file__, "resources": str(r), "profiles": str(p),
    "suites": sorted(x.name for x in (r / "suites").glob("*.yaml")),
    "profile_files": sorted(x.name for x in p.glob("*.yaml"))}))
"""


def check_wheel_paths(wheel: Path, python: str = sys.executable) -> list[str]:
    """Unpacked and put on PYTHONPATH, the wheel's ``paths`` finds resources and profiles inside it."""
    with tempfile.TemporaryDirectory(prefix="llm-dyno-wheel-") as tmp:
        unpacked = Path(tmp).resolve() / "site"
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(unpacked)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env["PYTHONPATH"] = str(unpacked)
        # cwd is the temp folder so neither the checkout nor its app/ can be imported by accident
        result = subprocess.run(  # noqa: S603 (fixed argv, no shell)
            [python, "-c", _PROBE], capture_output=True, text=True, timeout=120, check=False, cwd=tmp, env=env
        )
        if result.returncode != 0:
            return [f"importing llm_dyno from the unpacked wheel failed:\n{result.stderr.strip()}"]
        found = json.loads(result.stdout.strip().splitlines()[-1])
        problems = []
        for key in ("package", "resources", "profiles"):
            if not Path(found[key]).is_relative_to(unpacked):
                problems.append(f"{key} resolves to {found[key]}, outside the unpacked wheel {unpacked}")
        if not found["suites"]:
            problems.append(f"no suites/*.yaml under resources_dir() = {found['resources']}")
        expected = sorted(p.name for p in (REPO / "profiles").glob("*.yaml"))
        if found["profile_files"] != expected:
            problems.append(f"shipped_profiles_dir() holds {found['profile_files']}, expected {expected}")
        return problems


# ---- all of it -----------------------------------------------------------------------------------


def main() -> int:
    """Run every check and print a line per check; returns 1 if any failed (a missing tool fails)."""
    failed = False

    def report(name: str, problems: list[str]) -> None:
        nonlocal failed
        failed = failed or bool(problems)
        print(f"{'FAIL' if problems else 'ok  '}  {name}")
        for problem in problems:
            print("      " + problem.replace("\n", "\n      "))

    for name, check in (("desktop entry", check_desktop_file), ("metainfo", check_metainfo)):
        try:
            report(name, check())
        except ToolMissing as exc:
            report(name, [str(exc)])
    report("icons", check_icons())
    with tempfile.TemporaryDirectory(prefix="llm-dyno-whl-") as tmp:
        try:
            wheel = build_wheel(Path(tmp))
        except RuntimeError as exc:
            report("wheel build", [str(exc)])
        else:
            report(f"wheel contents ({wheel.name})", check_wheel_contents(wheel))
            report("paths inside the unpacked wheel", check_wheel_paths(wheel))
    print("packaging: FAILED" if failed else "packaging: all checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
