"""Settings… (theme, default Docker host, sampling interval, data folder) and the remembered layout.

The theme applies live while the dialog is open (Cancel puts the previous one back); OK saves the
settings file. :func:`remember_layout` restores the window's geometry, splitter sizes, last view and
last profile, and saves them when the window closes (``config_dir()/layout.ini``).
"""

from __future__ import annotations

import contextlib
from typing import Any

from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core import paths
from llm_dyno.core import settings as core_settings
from llm_dyno.core.errors import DynoError
from llm_dyno.core.settings import MAX_SAMPLE_S, MIN_SAMPLE_S, Settings, Theme
from llm_dyno.ui import theme as ui_theme
from llm_dyno.ui.messages import window_message

LAYOUT_FILE = "layout.ini"


def apply_theme(setting: Theme | str, app: QApplication | None = None) -> None:
    """Apply a theme setting: ``system`` follows the desktop, ``light`` / ``dark`` force one."""
    target = app or QApplication.instance()
    if not isinstance(target, QApplication):
        return
    value = Theme(setting)
    ui_theme.apply(target, dark=None if value is Theme.SYSTEM else value is Theme.DARK)


def load_settings() -> Settings:
    """The saved settings, or the defaults when the file is broken (the error is printed)."""
    try:
        return core_settings.load()
    except DynoError as exc:
        print(f"warning: {exc}")
        return Settings()


class SettingsDialog(QDialog):
    """Edits :class:`Settings`; the theme previews live."""

    def __init__(self, parent: QWidget | None = None, settings: Settings | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.setMinimumWidth(520)
        self.original = settings or load_settings()
        self.saved: Settings | None = None
        layout = QVBoxLayout(self)
        title = QLabel("Settings")
        title.setObjectName("sectionTitle")
        layout.addWidget(title)
        form = QFormLayout()
        self.theme = QComboBox()
        for value, label in (
            (Theme.SYSTEM, "Follow the system"),
            (Theme.LIGHT, "Light"),
            (Theme.DARK, "Dark"),
        ):
            self.theme.addItem(label, value.value)
        self.theme.setCurrentIndex(self.theme.findData(self.original.theme.value))
        self.theme.currentIndexChanged.connect(lambda _i: apply_theme(self.theme_value()))
        form.addRow("Theme", self.theme)
        self.docker_host = QLineEdit(self.original.docker_host or "")
        self.docker_host.setPlaceholderText("DOCKER_HOST / the active docker context")
        self.docker_host.setToolTip(
            "Used by profiles that name no docker.host: unix://, ssh://user@box, tcp://… or a docker context"
        )
        form.addRow("Default Docker host", self.docker_host)
        self.interval = QDoubleSpinBox()
        self.interval.setRange(MIN_SAMPLE_S, MAX_SAMPLE_S)
        self.interval.setDecimals(1)
        self.interval.setSingleStep(0.5)
        self.interval.setSuffix(" s")
        self.interval.setValue(self.original.sample_interval_s)
        form.addRow("Sampling interval", self.interval)
        row = QHBoxLayout()
        self.data_dir = QLineEdit(self.original.data_dir or "")
        self.data_dir.setPlaceholderText(str(paths.data_dir()))
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        row.addWidget(self.data_dir, 1)
        row.addWidget(browse)
        form.addRow("Data folder", row)
        layout.addLayout(form)
        self.error = QLabel()
        self.error.setObjectName("fieldError")
        self.error.setWordWrap(True)
        self.error.hide()
        layout.addWidget(self.error)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def theme_value(self) -> Theme:
        """The theme picked in the dialog."""
        return Theme(str(self.theme.currentData()))

    def value(self) -> Settings:
        """The settings as edited (validated like the file)."""
        return self.original.with_changes(
            theme=self.theme_value().value,
            docker_host=self.docker_host.text(),
            sample_interval_s=round(self.interval.value(), 1),
            data_dir=self.data_dir.text(),
        )

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, "Data folder", self.data_dir.text() or str(paths.data_dir())
        )
        if folder:
            self.data_dir.setText(folder)

    def accept(self) -> None:
        """Validate and save; stay open with the problem shown when that fails."""
        try:
            self.saved = self.value()
            core_settings.save(self.saved)
        except DynoError as exc:
            self.error.setText(window_message(exc))
            self.error.show()
            return
        core_settings.apply(self.saved)  # launches and history from now on use them
        super().accept()

    def reject(self) -> None:
        """Put the theme back as it was."""
        if self.theme_value() is not self.original.theme:
            apply_theme(self.original.theme)
        super().reject()


# ---- window layout ------------------------------------------------------------------------------


def layout_store() -> QSettings:
    """The layout file (in the config folder, so ``LLM_DYNO_HOME`` keeps tests apart)."""
    return QSettings(str(paths.config_dir() / LAYOUT_FILE), QSettings.Format.IniFormat)


def _splitter(window: QMainWindow) -> QSplitter | None:
    central = window.centralWidget()
    return central if isinstance(central, QSplitter) else None


def save_layout(window: QMainWindow) -> None:
    """Store geometry, splitter sizes, the view shown and the profile selected."""
    store = layout_store()
    store.setValue("window/geometry", window.saveGeometry())
    split = _splitter(window)
    if split is not None:
        store.setValue("window/splitter", split.saveState())
    view = getattr(window, "current_view", None)
    if callable(view):
        store.setValue("window/view", str(view()))
    editor: Any = getattr(window, "editor", None)
    name = getattr(editor, "profile_name", None)
    store.setValue("window/profile", name or "")
    store.sync()


def restore_layout(window: QMainWindow) -> None:
    """Put back what :func:`save_layout` stored (a missing or odd value is skipped)."""
    store = layout_store()
    geometry = store.value("window/geometry")
    if isinstance(geometry, QByteArray | bytes):
        window.restoreGeometry(QByteArray(geometry))
    state = store.value("window/splitter")
    split = _splitter(window)
    if split is not None and isinstance(state, QByteArray | bytes):
        split.restoreState(QByteArray(state))
    profile = store.value("window/profile")
    select = getattr(window, "select_profile", None)
    if isinstance(profile, str) and profile and callable(select):
        select(profile)
    view = store.value("window/view")
    show_view = getattr(window, "show_view", None)
    if isinstance(view, str) and view and callable(show_view):
        with contextlib.suppress(ValueError):
            show_view(view)


class _LayoutKeeper(QObject):
    """Saves the layout when the window closes."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.window = window
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.window and event.type() == QEvent.Type.Close:
            save_layout(self.window)
        return False


def remember_layout(window: QMainWindow) -> None:
    """Restore the last layout now and save it whenever the window closes."""
    restore_layout(window)
    _LayoutKeeper(window)
