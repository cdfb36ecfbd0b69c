"""What the Diagnostics view shows instead of an empty findings list: how many rules looked at what, and
for each input that is missing (a launch log, a benchmark) the button in the window that makes one."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

# what a diagnosis read, by the start of its source line (core/diagnose/gather.py), in plain words
_READ = (
    ("log ", "the launch log"),
    ("benchmark", "the last benchmark"),
    ("live /metrics", "the live /metrics"),
    ("GPU", "the GPU"),
    ("spec-decode A/B", "the last spec-decode A/B"),
    ("typed TPS", "your typed TPS"),
)


def _words(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def read_words(sources: Sequence[str]) -> list[str]:
    """What the rules looked at: the profile, then each source the diagnosis read, in plain words."""
    out = ["the profile"]
    for head, words in _READ:
        if any(s.startswith(head) for s in sources) and words not in out:
            out.append(words)
    return out


class NoFindings(QWidget):
    """ "N rules looked at …: nothing to report", and what to do in the window for what was missing."""

    launchRequested = Signal(str)  # the profile to launch, for a launch log
    benchmarkRequested = Signal()  # open the Benchmark view, for a benchmark

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._profile = ""
        # its buttons never widen the view: on a laptop's window the sidebar keeps its width
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 8, 4, 8)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setStyleSheet("font-weight: 600;")
        layout.addWidget(self.summary)
        self.missing = QLabel()
        self.missing.setWordWrap(True)
        layout.addWidget(self.missing)
        row = QHBoxLayout()
        self.launch_button = QPushButton("Launch")
        self.launch_button.clicked.connect(lambda: self.launchRequested.emit(self._profile))
        self.bench_button = QPushButton("Open Benchmark")
        self.bench_button.setToolTip("The Benchmark view, where Run benchmark measures the server")
        self.bench_button.clicked.connect(self.benchmarkRequested)
        row.addWidget(self.launch_button)
        row.addWidget(self.bench_button)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addStretch(1)

    def show_state(self, profile: str, rules: int, sources: Sequence[str], *, running: bool) -> None:
        """``rules`` looked at ``sources`` (the diagnosis's source lines) and found nothing; ``running``:
        the profile's server is ready (no Launch needed)."""
        self._profile = profile
        read = read_words(sources)
        self.summary.setText(
            f"{rules} rule{'s' if rules != 1 else ''} looked at {_words(read)}: nothing to report."
        )
        no_log = "the launch log" not in read
        no_bench = "the last benchmark" not in read
        lines = []
        if no_log:
            lines.append(
                f"No launch log of “{profile}” yet: Launch it, and the rules that read the log look again."
                if not running
                else f"No launch log of “{profile}” yet: it was not launched from this app."
            )
        if no_bench:
            lines.append(
                "No benchmark yet: Run benchmark in the Benchmark view, and the speed rules have its "
                "figures to read."
            )
        self.missing.setText("\n".join(lines))
        self.missing.setVisible(bool(lines))
        self.launch_button.setText(f"Launch “{profile}”")
        self.launch_button.setVisible(no_log and not running)
        self.bench_button.setVisible(no_bench)
