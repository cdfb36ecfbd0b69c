"""Sleep and Wake for the selected server (vLLM sleep mode; see core/runtime/sleep.py), as the servers
overview offers them: a level choice, the two buttons, and a line saying what the last one did (how
long it took, what it freed). The requests run in a worker thread; their outcome comes back by signal.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QWidget

from llm_dyno.core.runtime.base import ServerHandle, ServerState
from llm_dyno.ui.jobs import run_task


def sleep_problem(handle: ServerHandle | None) -> str | None:
    """Why the server cannot be slept or woken from here, or None."""
    from llm_dyno.core.runtime.sleep import sleep_enabled

    if handle is None:
        return "select a server launched from a profile"
    if handle.status.state is not ServerState.READY:
        return f"'{handle.profile_name}' is {handle.status.state.value}, not ready"
    if not sleep_enabled(handle.plan):
        return (
            f"'{handle.profile_name}' was launched without sleep mode (set sleep_mode: true in its profile)"
        )
    return None


class SleepControls(QWidget):
    """Level, Sleep, Wake and the last outcome, for the server ``selected()`` returns."""

    done = Signal(str)  # what the last sleep or wake did (or why it failed)

    def __init__(self, selected: Callable[[], ServerHandle | None]) -> None:
        super().__init__()
        self._selected = selected
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.level = QComboBox()
        self.level.addItem("Level 1 (weights to RAM)", 1)
        self.level.addItem("Level 2 (weights discarded)", 2)
        self.sleep_button = QPushButton("Sleep")
        self.wake_button = QPushButton("Wake")
        self.outcome = QLabel()
        self.outcome.setObjectName("sectionSubtitle")
        for widget in (self.level, self.sleep_button, self.wake_button, self.outcome):
            layout.addWidget(widget)
        self.sleep_button.clicked.connect(self.sleep)
        self.wake_button.clicked.connect(self.wake)
        self.done.connect(self._show)
        self.busy = False

    def update_for(self, handle: ServerHandle | None) -> None:
        """Enable the buttons for ``handle`` (the selected server), or say why they are off."""
        from llm_dyno.core.runtime.sleep import sleep_state

        problem = sleep_problem(handle)
        asleep = handle is not None and sleep_state(handle.plan, handle.status.since) is not None
        self.sleep_button.setEnabled(problem is None and not asleep and not self.busy)
        self.wake_button.setEnabled(problem is None and asleep and not self.busy)
        self.level.setEnabled(problem is None and not asleep)
        tip = problem or ""
        self.sleep_button.setToolTip(tip or "free the server's GPU memory; requests in flight finish first")
        self.wake_button.setToolTip(tip or "bring the server back (level 2 reloads its weights first)")

    def sleep(self) -> None:
        """Put the selected server to sleep at the chosen level (in a worker)."""
        handle = self._selected()
        if sleep_problem(handle) is not None or handle is None:
            return
        level = int(self.level.currentData())
        plan = handle.plan

        def work() -> None:
            from llm_dyno.core.runtime.sleep import freed_text, sleep_server

            record = sleep_server(plan, level)
            self.done.emit(
                f"{plan.profile.name}: {record.state} in {record.sleep_s:.2f} s; {freed_text(record)}"
            )

        self._start(f"sleep of {plan.profile.name}", work)

    def wake(self) -> None:
        """Wake the selected server (in a worker)."""
        handle = self._selected()
        if sleep_problem(handle) is not None or handle is None:
            return
        plan = handle.plan

        def work() -> None:
            from llm_dyno.core.runtime.sleep import wake_server

            result = wake_server(plan)
            self.done.emit(f"{plan.profile.name}: awake in {result.wake_s:.2f} s")

        self._start(f"wake of {plan.profile.name}", work)

    def _start(self, name: str, work: Callable[[], None]) -> None:
        self.busy = True
        self.sleep_button.setEnabled(False)
        self.wake_button.setEnabled(False)
        self.outcome.setText("…")
        run_task(name, work, lambda message: self.done.emit(f"failed: {message}"))

    def _show(self, text: str) -> None:
        self.busy = False
        self.outcome.setText(text)
        self.update_for(self._selected())
