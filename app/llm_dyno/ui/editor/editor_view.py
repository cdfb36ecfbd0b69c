"""The Profile view: a header, the form and the YAML tab over one draft, Save and Revert."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.model import Profile, profile_from_yaml
from llm_dyno.core.profiles.yamlio import dump, load_with_lines
from llm_dyno.core.runtime.base import LaunchPlan
from llm_dyno.core.runtime.launch_spec import PlanWarning, WarningKind
from llm_dyno.ui.editor.draft import Draft, Validation
from llm_dyno.ui.editor.form import ProfileForm
from llm_dyno.ui.editor.yaml_editor import YamlEditor
from llm_dyno.ui.icons import icon
from llm_dyno.ui.text import subtitle_of
from llm_dyno.ui.widgets.empty_state import EmptyState


class ProfileEditor(QWidget):
    """Edits one profile. Emits ``saveRequested(profile, original_name)``; the window writes it."""

    saveRequested = Signal(object, str)
    dirtyChanged = Signal(bool)
    createRequested = Signal()
    importRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._original: Profile | None = None
        self._draft = Draft({})
        self._validation = Validation(None)
        self._dirty = False
        self._yaml_error = False

        self.stack = QStackedWidget()
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.stack)

        self.empty = EmptyState(
            "profile",
            "No profile selected",
            "Pick a profile on the left, or create one from scratch or from a docker-compose file, "
            "a “docker run” line or a “vllm serve” command.",
        )
        self.empty.add_action("New profile", primary=True).clicked.connect(self.createRequested)
        self.empty.add_action("Import…").clicked.connect(self.importRequested)
        self.stack.addWidget(self.empty)

        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        header = QWidget()
        header.setObjectName("editorHeader")
        hrow = QHBoxLayout(header)
        hrow.setContentsMargins(20, 14, 20, 10)
        titles = QVBoxLayout()
        titles.setSpacing(2)
        self.title = QLabel()
        self.title.setObjectName("profileTitle")
        self.subtitle = QLabel()
        self.subtitle.setObjectName("profileSubtitle")
        titles.addWidget(self.title)
        titles.addWidget(self.subtitle)
        hrow.addLayout(titles, 1)
        self.revert_button = QPushButton("Revert")
        self.revert_button.setToolTip("Discard unsaved changes")
        self.revert_button.clicked.connect(self.revert)
        self.save_button = QPushButton(icon("save", "#ffffff"), "Save")
        self.save_button.setObjectName("primaryButton")
        self.save_button.setToolTip("Save the profile (Ctrl+S)")
        self.save_button.clicked.connect(self.save)
        hrow.addWidget(self.revert_button)
        hrow.addWidget(self.save_button)
        layout.addWidget(header)

        self.tabs = QTabWidget()
        self.tabs.setObjectName("editorTabs")
        self.tabs.setDocumentMode(True)
        self.form = ProfileForm()
        self.form.fieldEdited.connect(self._field_edited)
        self.yaml = YamlEditor()
        self.yaml.edited.connect(self._yaml_edited)
        self.tabs.addTab(self.form, "Form")
        self.tabs.addTab(self.yaml, "YAML")
        self.tabs.currentChanged.connect(lambda _i: self.yaml.flush())
        layout.addWidget(self.tabs, 1)
        self.stack.addWidget(page)
        self._update_state()

    # ---- public --------------------------------------------------------------------------------
    @property
    def profile_name(self) -> str | None:
        """Name of the profile being edited, as stored."""
        return self._original.name if self._original is not None else None

    @property
    def saved_profile(self) -> Profile | None:
        """The stored version the draft started from."""
        return self._original

    @property
    def validation(self) -> Validation:
        """The latest validation of the draft."""
        return self._validation

    def is_dirty(self) -> bool:
        """Whether there are unsaved changes."""
        return self._dirty

    def set_profile(self, profile: Profile | None) -> None:
        """Edit ``profile`` (or show the empty state); discards any draft."""
        self._original = profile
        if profile is None:
            self.stack.setCurrentWidget(self.empty)
            self._set_dirty(False)
            return
        self.stack.setCurrentIndex(1)
        self._draft = Draft.of(profile)
        self._yaml_error = False
        self.form.load(self._draft)
        self.yaml.set_text(profile.to_yaml())
        self._revalidate()

    def revert(self) -> None:
        """Throw away the draft and show the saved profile again."""
        self.set_profile(self._original)

    def save(self) -> None:
        """Ask for the draft to be saved when it is valid."""
        self.yaml.flush()
        if self._original is None or not self._validation.ok or self._validation.profile is None:
            return
        self.saveRequested.emit(self._validation.profile, self._original.name)

    def mark_saved(self, profile: Profile) -> None:
        """The window wrote ``profile``: it is the new baseline."""
        self._original = profile
        self._revalidate()

    # ---- edits ---------------------------------------------------------------------------------
    def _field_edited(self, key: str, value: Any) -> None:
        self._draft.set(key, value)
        self._yaml_error = False
        self.yaml.set_text(dump(self._draft.data))
        # keep the field being typed in untouched; refresh the others that derive from it
        self.form.load(self._draft, skip=key)
        self._revalidate()

    def _yaml_edited(self, text: str) -> None:
        data = _safe_mapping(text)
        try:
            profile_from_yaml(text)
        except DynoError as exc:
            line = exc.where.line if exc.where is not None else None
            field = f" (field '{exc.where.field}')" if exc.where is not None and exc.where.field else ""
            self._yaml_error = True
            self.yaml.show_error(exc.message + field, line or 1)
            if data is not None:
                self._draft = Draft(data, self._original)
                self.form.load(self._draft)
                self.form.show_errors(self._draft.validate().errors)
            self._validation = Validation(None, {"": exc.message})
            self._set_dirty(True)
            self._update_state()
            return
        self._yaml_error = False
        self._draft = Draft(data or {}, self._original)
        self.form.load(self._draft)
        self._revalidate()

    def _revalidate(self) -> None:
        self._validation = self._draft.validate()
        self.form.show_errors(self._validation.errors)
        if not self._yaml_error:
            message = next(iter(self._validation.errors.values()), None)
            self.yaml.show_error(message, None)
        profile = self._validation.profile
        plan = plan_of(profile) if profile is not None else None
        self.form.show_plan_warnings(plan_warnings(plan) if profile is not None else [])
        self.form.memory.show_estimate(plan.memory if isinstance(plan, LaunchPlan) else None)
        self._set_dirty(self._original is not None and (profile is None or profile != self._original))
        self._update_state()

    def _set_dirty(self, dirty: bool) -> None:
        if dirty != self._dirty:
            self._dirty = dirty
            self.dirtyChanged.emit(dirty)

    def _update_state(self) -> None:
        ok = self._validation.ok and not self._yaml_error
        self.save_button.setEnabled(ok and self._dirty)
        self.revert_button.setEnabled(self._dirty)
        if self._original is None:
            return
        shown = self._validation.profile or self._original
        self.title.setText(("• " if self._dirty else "") + str(self._draft.get("name") or shown.name))
        self.subtitle.setText(subtitle_of(shown))
        if not ok:
            self.save_button.setToolTip("Fix the problems marked in red to save")
        else:
            self.save_button.setToolTip("Save the profile (Ctrl+S)")


def plan_of(profile: Profile) -> LaunchPlan | str:
    """What a launch of the profile would run (the plan is pure: nothing is started), or why it cannot."""
    from llm_dyno.core.runtime.manager import ServerManager

    try:
        return ServerManager().plan(profile)
    except DynoError as exc:
        return exc.message


def plan_warnings(plan: LaunchPlan | str | None) -> list[PlanWarning]:
    """What the launch would warn about (the memory fit included), or the reason there is no plan."""
    if plan is None:
        return []
    return [PlanWarning(WarningKind.INVALID, plan)] if isinstance(plan, str) else list(plan.warnings)


def _safe_mapping(text: str) -> dict[str, Any] | None:
    try:
        data, _ = load_with_lines(text)
    except DynoError:
        return None
    return data if isinstance(data, dict) else None
