"""Icons from ``resources/icons``, recoloured to the current scheme (they draw with ``currentColor``)."""

from __future__ import annotations

from functools import lru_cache

from PySide6.QtCore import QByteArray, QRectF, QSize, Qt
from PySide6.QtGui import QIcon, QPainter, QPixmap
from PySide6.QtSvg import QSvgRenderer

from llm_dyno.core import paths
from llm_dyno.ui import theme


def icon_path(name: str) -> str:
    """Path of an icon file by name (without ``.svg``)."""
    return str(paths.resources_dir() / "icons" / f"{name}.svg")


@lru_cache(maxsize=128)
def _svg(name: str) -> str:
    # read once per name: each icon renders 8 pixmaps, and finding the resources folder resolves paths
    return (paths.resources_dir() / "icons" / f"{name}.svg").read_text(encoding="utf-8")


@lru_cache(maxsize=256)
def _pixmap(name: str, color: str, size: int, ratio: float) -> QPixmap:
    svg = _svg(name)
    renderer = QSvgRenderer(QByteArray(svg.replace("currentColor", color).encode()))
    px = QPixmap(int(size * ratio), int(size * ratio))
    px.fill(Qt.GlobalColor.transparent)
    painter = QPainter(px)
    renderer.render(painter, QRectF(0, 0, size * ratio, size * ratio))
    painter.end()
    px.setDevicePixelRatio(ratio)
    return px


def icon(name: str, color: str | None = None) -> QIcon:
    """An icon in the scheme's text colour (or ``color``), with a muted disabled state."""
    c = theme.colors()
    result = QIcon()
    for size in (16, 20, 24, 32):
        result.addPixmap(_pixmap(name, color or c.text, size, 2.0), QIcon.Mode.Normal)
        result.addPixmap(_pixmap(name, c.grey, size, 2.0), QIcon.Mode.Disabled)
    return result


def app_icon() -> QIcon:
    """The application icon."""
    return QIcon(icon_path("app"))


ICON_SIZE = QSize(18, 18)
