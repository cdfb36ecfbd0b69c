"""Views built on first show: the window starts with the views it shows, the rest come when wanted.

A deferred view stands in the window's stack as an empty :class:`DeferredPage`; the page builds the
real view (importing its module then) the first time it is shown, or the first time code asks for it
through :class:`DeferredViews` or a :class:`DeferredView` attribute (``window.bench_view``), so that
callers and tests see the view itself either way. Building is what costs at start-up: the benchmark
view imports the benchmark client and HTTP, reads NVML for the power controls, and so on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar, cast, overload

from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QVBoxLayout, QWidget

W = TypeVar("W", bound=QWidget)


class DeferredPage(QWidget):
    """A page of the view stack that builds its view when first shown."""

    def __init__(self, factory: Callable[[], QWidget], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._factory = factory
        self._view: QWidget | None = None
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)

    @property
    def is_built(self) -> bool:
        """Whether the view exists yet."""
        return self._view is not None

    def view(self) -> QWidget:
        """The view (built now if it was not)."""
        if self._view is None:
            view = self._factory()
            self._view = view
            self._layout.addWidget(view)
            if self.isVisible():
                view.show()
        return self._view

    def showEvent(self, event: QShowEvent) -> None:
        self.view()
        super().showEvent(event)


class DeferredViews(Mapping[str, QWidget]):
    """The window's views by key, in tab order: ``views[key]`` is the view itself (a deferred one is
    built on that access); :meth:`page` is what the stack holds for it."""

    def __init__(self) -> None:
        self._pages: dict[str, QWidget] = {}

    def add(self, key: str, view: QWidget) -> None:
        """A view built already."""
        self._pages[key] = view

    def defer(self, key: str, factory: Callable[[], QWidget]) -> None:
        """A view built by ``factory`` on first show or first access."""
        self._pages[key] = DeferredPage(factory)

    def page(self, key: str) -> QWidget:
        """The widget the view stack holds for ``key``."""
        return self._pages[key]

    def is_built(self, key: str) -> bool:
        """Whether the view of ``key`` exists (a deferred one may not yet)."""
        page = self._pages[key]
        return not isinstance(page, DeferredPage) or page.is_built

    def __getitem__(self, key: str) -> QWidget:
        page = self._pages[key]
        return page.view() if isinstance(page, DeferredPage) else page

    def __iter__(self) -> Iterator[str]:
        return iter(self._pages)

    def __len__(self) -> int:
        return len(self._pages)


class DeferredView(Generic[W]):
    """A window attribute that is the view of ``key`` in the window's ``views`` (built on access)."""

    def __init__(self, key: str) -> None:
        self.key = key

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> DeferredView[W]: ...
    @overload
    def __get__(self, obj: object, owner: type[Any]) -> W: ...
    def __get__(self, obj: object | None, owner: type[Any]) -> DeferredView[W] | W:
        if obj is None:
            return self
        views: DeferredViews = cast(Any, obj).views
        return cast(W, views[self.key])
