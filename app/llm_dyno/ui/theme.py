"""Look and feel: Fusion style, a light and a dark palette following the system, and the stylesheet."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from llm_dyno.core import paths
from llm_dyno.ui import tooltips


@dataclass(frozen=True)
class Colors:
    """Named colours of one scheme; the stylesheet's ``@tokens`` and the widgets read them."""

    dark: bool
    window: str
    panel: str
    base: str
    alt: str
    text: str
    muted: str
    border: str
    hover: str
    pressed: str
    accent: str
    accenthover: str
    onaccent: str
    green: str
    greenhover: str
    amber: str
    amberbg: str
    amberfg: str
    red: str
    grey: str
    infobg: str
    badgebg: str
    badgefg: str
    disabledbg: str
    added: str
    removed: str
    changed: str


LIGHT = Colors(
    dark=False,
    window="#f4f5f7",
    panel="#fbfbfc",
    base="#ffffff",
    alt="#f7f8fa",
    text="#1f2328",
    muted="#6b7280",
    border="#dcdfe4",
    hover="#eceef2",
    pressed="#e1e4ea",
    accent="#2563eb",
    accenthover="#1d4ed8",
    onaccent="#ffffff",
    green="#16a34a",
    greenhover="#15803d",
    amber="#d97706",
    amberbg="#fff7e6",
    amberfg="#7c4a03",
    red="#dc2626",
    grey="#9ca3af",
    infobg="#eef4ff",
    badgebg="#e8eefc",
    badgefg="#1e40af",
    disabledbg="#eef0f3",
    added="#e7f6ec",
    removed="#fdecec",
    changed="#fff5db",
)

DARK = Colors(
    dark=True,
    window="#1b1d21",
    panel="#212429",
    base="#26292f",
    alt="#2b2f35",
    text="#e6e8eb",
    muted="#9aa3ae",
    border="#3a3f47",
    hover="#30343b",
    pressed="#383d45",
    accent="#4f8cff",
    accenthover="#3b7bf0",
    onaccent="#ffffff",
    green="#22a55a",
    greenhover="#1c8f4d",
    amber="#f0a020",
    amberbg="#3a2f1a",
    amberfg="#f5d49a",
    red="#f05252",
    grey="#6b7280",
    infobg="#1e2a40",
    badgebg="#263556",
    badgefg="#b8ccff",
    disabledbg="#2a2d33",
    added="#1d3526",
    removed="#42211f",
    changed="#3d3420",
)

_current: Colors = LIGHT


def colors() -> Colors:
    """The scheme in use."""
    return _current


def system_is_dark() -> bool:
    """Whether the desktop asks for a dark colour scheme."""
    hints = QGuiApplication.styleHints()
    return bool(hints.colorScheme() == Qt.ColorScheme.Dark)


def _palette(c: Colors) -> QPalette:
    pal = QPalette()
    roles = {
        QPalette.ColorRole.Window: c.window,
        QPalette.ColorRole.WindowText: c.text,
        QPalette.ColorRole.Base: c.base,
        QPalette.ColorRole.AlternateBase: c.alt,
        QPalette.ColorRole.Text: c.text,
        QPalette.ColorRole.Button: c.panel,
        QPalette.ColorRole.ButtonText: c.text,
        QPalette.ColorRole.Highlight: c.accent,
        QPalette.ColorRole.HighlightedText: c.onaccent,
        QPalette.ColorRole.ToolTipBase: c.base,
        QPalette.ColorRole.ToolTipText: c.text,
        QPalette.ColorRole.PlaceholderText: c.muted,
        QPalette.ColorRole.Link: c.accent,
        QPalette.ColorRole.Mid: c.border,
        QPalette.ColorRole.Midlight: c.hover,
    }
    for role, value in roles.items():
        pal.setColor(role, QColor(value))
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText, QPalette.ColorRole.ButtonText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, QColor(c.muted))
    return pal


def stylesheet(c: Colors) -> str:
    """The app stylesheet with the scheme's colours filled in."""
    text = (paths.resources_dir() / "styles" / "app.qss").read_text(encoding="utf-8")
    text = text.replace("@icons", (paths.resources_dir() / "icons").as_posix())
    # longest names first so @accenthover is not read as @accent + "hover"
    for name in sorted(vars(c), key=len, reverse=True):
        value = getattr(c, name)
        if isinstance(value, str):
            text = text.replace("@" + name, value)
    return text


def apply(app: QApplication, dark: bool | None = None) -> Colors:
    """Apply Fusion, the palette and the stylesheet for the system's (or the given) scheme."""
    global _current
    app.setStyle("Fusion")
    _current = DARK if (system_is_dark() if dark is None else dark) else LIGHT
    app.setPalette(_palette(_current))
    app.setStyleSheet(stylesheet(_current))
    tooltips.install(app)  # elided table and tree cells show their full text on hover
    return _current
