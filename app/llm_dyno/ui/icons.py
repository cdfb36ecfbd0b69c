"""Icons from ``resources/icons``, recoloured to the current scheme (they draw with ``currentColor``)."""

from __future__ import annotations

from functools import lru_cache

from PySide6.QtCore import QByteArray, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QIcon, QIconEngine, QPainter, QPixmap
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


class _RecolouredIcon(QIconEngine):
    """Renders the SVG in its colours at the size asked for, when first painted (not when made: the
    window makes ~45 icons at start-up and shows a few of them at one or two sizes)."""

    def __init__(self, name: str, normal: str, disabled: str) -> None:
        super().__init__()
        self._name, self._normal, self._disabled = name, normal, disabled

    def clone(self) -> QIconEngine:
        return _RecolouredIcon(self._name, self._normal, self._disabled)

    def _color(self, mode: QIcon.Mode) -> str:
        return self._disabled if mode == QIcon.Mode.Disabled else self._normal

    def scaledPixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State, scale: float) -> QPixmap:
        side = max(1, min(size.width(), size.height()))
        return _pixmap(self._name, self._color(mode), side, max(1.0, scale))

    def pixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QPixmap:
        return self.scaledPixmap(size, mode, state, 1.0)

    def paint(self, painter: QPainter, rect: QRect, mode: QIcon.Mode, state: QIcon.State) -> None:
        device = painter.device()
        ratio = device.devicePixelRatioF() if device is not None else 1.0
        painter.drawPixmap(rect, self.scaledPixmap(rect.size(), mode, state, ratio))


def icon(name: str, color: str | None = None) -> QIcon:
    """An icon in the scheme's text colour (or ``color``), with a muted disabled state."""
    c = theme.colors()
    _svg(name)  # a missing icon file fails here, where it is named, not at the first paint
    return QIcon(_RecolouredIcon(name, color or c.text, c.grey))


def app_icon() -> QIcon:
    """The application icon."""
    return QIcon(icon_path("app"))


ICON_SIZE = QSize(18, 18)
