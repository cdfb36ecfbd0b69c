"""The user's controls, clicked: a profile in the sidebar, a view's tab, a tab of a tab widget."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QTabBar, QTabWidget, QWidget

from llm_dyno.ui.widgets.profile_list import NAME_ROLE


def click_profile(window: QWidget, name: str) -> None:
    """Click ``name`` in the window's profile list."""
    plist = window.profile_list  # type: ignore[attr-defined]
    for r in range(plist.proxy.rowCount()):
        idx = plist.proxy.index(r, 0)
        if idx.data(NAME_ROLE) == name:
            view = plist.view
            view.scrollTo(idx)
            QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.visualRect(idx).center())
            assert plist.current_name() == name
            return
    raise AssertionError(f"{name!r} is not in the profile list")


def click_tab(bar: QTabBar, label: str) -> None:
    """Click the tab whose text is ``label``."""
    texts = [bar.tabText(i) for i in range(bar.count())]
    i = texts.index(label)
    QTest.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(i).center())
    assert bar.currentIndex() == i


def click_view(window: QWidget, label: str) -> None:
    """Click one of the window's view tabs (Profile, Dashboard, Benchmark, …)."""
    click_tab(window.view_tabs, label)  # type: ignore[attr-defined]


def click_page(tabs: QTabWidget, label: str) -> None:
    """Click a tab of a tab widget."""
    click_tab(tabs.tabBar(), label)


def grab(widget: QWidget, name: str) -> str:
    """Save what ``widget`` shows to /tmp (for a person to look at); returns the path."""
    path = f"/tmp/llm-dyno-{name}.png"
    assert widget.grab().save(path)
    return path
