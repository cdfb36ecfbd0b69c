"""Render the app icon SVG to the PNG sizes that desktops and bundles ask for.

Usage: ``python packaging/render_icons.py [--check]`` (from any folder). Renders
``resources/icons/app/llm-dyno.svg`` to ``resources/icons/app/llm-dyno-<N>.png`` with QtSvg, offscreen,
so the PNGs match exactly what the app itself would draw. ``--check`` renders to memory and exits 1
when a committed PNG is missing or differs from a fresh render (a stale icon after an SVG edit).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ICON_DIR = REPO / "resources" / "icons" / "app"
SVG = ICON_DIR / "llm-dyno.svg"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def png_path(size: int) -> Path:
    """Where the PNG of one size lives in the repository."""
    return ICON_DIR / f"llm-dyno-{size}.png"


def render(size: int) -> bytes:
    """The icon at ``size`` x ``size`` pixels, as PNG bytes."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF, Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(SVG))
    if not renderer.isValid():
        raise SystemExit(f"error: {SVG} is not an SVG that QtSvg can render")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter, QRectF(0, 0, size, size))
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    # convert so the PNG is plain RGBA, not premultiplied (exact colours in semi-transparent edges)
    image.convertToFormat(QImage.Format.Format_ARGB32).save(buffer, "PNG")
    buffer.close()
    return bytes(data.data())


def main(argv: list[str] | None = None) -> int:
    """Render (or with ``--check`` compare) every size; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed PNGs; write nothing")
    args = parser.parse_args(argv)

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    stale = []
    for size in SIZES:
        png = render(size)
        target = png_path(size)
        if args.check:
            if not target.is_file() or target.read_bytes() != png:
                stale.append(target)
            continue
        target.write_bytes(png)
        print(f"{target.relative_to(REPO)}  {len(png)} bytes")
    if stale:
        for target in stale:
            print(f"stale or missing: {target.relative_to(REPO)}", file=sys.stderr)
        print("run: python packaging/render_icons.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
