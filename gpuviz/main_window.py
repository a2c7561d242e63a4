"""The main window: lesson sidebar, figure area, lesson text pane, menus and shortcuts.

Figures are built the first time they are shown and then kept; the models outlive their
views, so changing the theme rebuilds views without losing anyone's settings.
"""

from __future__ import annotations

import sys
from typing import Any

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence, QTextCursor
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QSplitter,
    QStackedWidget,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gpuviz import __version__, catalog, theme
from gpuviz.clock import AppClock
from gpuviz.lessons import load_lesson_text

FIGURE_ROLE = Qt.UserRole
SHORTCUTS = (
    ("Next figure", "PageDown, Ctrl+Right"),
    ("Previous figure", "PageUp, Ctrl+Left"),
    ("Filter figures by title", "Ctrl+F, Ctrl+K"),
    ("Reset the figure", "Ctrl+R"),
    ("Explain: open the lesson text here", "F1"),
    ("Show or hide the lesson text", "Ctrl+L"),
    ("Full screen", "F11"),
    ("Quit", "Ctrl+Q"),
)


def settings() -> QSettings:
    return QSettings("gpuviz", "gpuviz")


class MainWindow(QMainWindow):
    def __init__(self, theme_name: str = "dark") -> None:
        super().__init__()
        self.setWindowTitle("gpuviz")
        self.theme_name = theme_name
        self.clock = AppClock(self)
        self.models: dict[str, Any] = {}
        self.pages: dict[str, QWidget] = {}
        self.current: str | None = None
        self._lesson_file: str | None = None
        self._lesson_headings: dict[str, str] = {}

        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter figures (Ctrl+F)")
        self.filter.setClearButtonEnabled(True)
        self.filter.setAccessibleName("Filter figures")
        self.filter.textChanged.connect(self.apply_filter)
        self.filter.returnPressed.connect(self._open_first_match)
        self.tree = QTreeWidget()
        self.tree.setHeaderHidden(True)
        self.tree.setAccessibleName("Lessons and figures")
        self.tree.currentItemChanged.connect(self._on_tree_item)
        self._fill_tree()
        sidebar = QWidget()
        side_layout = QVBoxLayout(sidebar)
        side_layout.setContentsMargins(6, 6, 0, 6)
        side_layout.addWidget(self.filter)
        side_layout.addWidget(self.tree)

        self.stack = QStackedWidget()
        self.placeholder = QLabel("Choose a figure in the sidebar.")
        self.placeholder.setAlignment(Qt.AlignCenter)
        self.stack.addWidget(self.placeholder)
        self.lesson_pane = QTextBrowser()
        self.lesson_pane.setOpenExternalLinks(False)
        self.lesson_pane.setOpenLinks(False)
        self.lesson_pane.setAccessibleName("Lesson text")
        self.lesson_pane.hide()

        self.splitter = QSplitter(Qt.Horizontal)
        self.splitter.addWidget(sidebar)
        self.splitter.addWidget(self.stack)
        self.splitter.addWidget(self.lesson_pane)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([260, 1000, 420])
        self.setCentralWidget(self.splitter)
        self._build_menus()
        self.statusBar().showMessage("PageDown / PageUp: next and previous figure · "
                                     "F1: explain · Ctrl+F: filter", 8000)

    # --- sidebar -------------------------------------------------------------------------
    def _fill_tree(self) -> None:
        for lesson in catalog.LESSONS:
            item = QTreeWidgetItem([f"{lesson.number}. {lesson.title}"])
            item.setFlags(Qt.ItemIsEnabled if lesson.figures else Qt.NoItemFlags)
            if not lesson.figures:
                item.setToolTip(0, "Not built yet")
            for spec in lesson.figures:
                child = QTreeWidgetItem([f"{spec.number}  {spec.title}"])
                child.setData(0, FIGURE_ROLE, spec.number)
                child.setToolTip(0, spec.title)
                item.addChild(child)
            self.tree.addTopLevelItem(item)
        self.tree.expandAll()

    def _items(self) -> list[QTreeWidgetItem]:
        return [self.tree.topLevelItem(i).child(j)
                for i in range(self.tree.topLevelItemCount())
                for j in range(self.tree.topLevelItem(i).childCount())]

    def apply_filter(self, text: str) -> None:
        words = text.lower().split()
        for i in range(self.tree.topLevelItemCount()):
            lesson = self.tree.topLevelItem(i)
            lesson_match = all(w in lesson.text(0).lower() for w in words)
            visible = 0
            for j in range(lesson.childCount()):
                child = lesson.child(j)
                match = lesson_match or all(w in child.text(0).lower() for w in words)
                child.setHidden(not match)
                visible += match
            lesson.setHidden(bool(words) and not lesson_match and not visible)

    def _open_first_match(self) -> None:
        match = next((item for item in self._items() if not item.isHidden()), None)
        if match is not None:
            self.show_figure(match.data(0, FIGURE_ROLE))

    def _on_tree_item(self, item: QTreeWidgetItem | None, _previous: object) -> None:
        number = item.data(0, FIGURE_ROLE) if item is not None else None
        if number and number != self.current:
            self.show_figure(number)

    # --- figures -------------------------------------------------------------------------
    def model(self, number: str):  # noqa: ANN201
        if number not in self.models:
            self.models[number] = catalog.figure(number).make_model()
        return self.models[number]

    def page(self, number: str) -> QWidget:
        if number not in self.pages:
            from gpuviz.core.figure_view import FigurePage  # pyqtgraph loads here, not at start

            spec = catalog.figure(number)
            model = self.model(number)
            page = FigurePage(spec, model, spec.make_view(model))
            page.explain_requested.connect(self.explain)
            self.pages[number] = page
            self.stack.addWidget(page)
        return self.pages[number]

    def show_figure(self, number: str) -> None:
        if self.current and self.current in self.models:
            previous = self.models[self.current]
            if hasattr(previous, "set_playing"):
                previous.set_playing(False)
        self.current = number
        page = self.page(number)
        self.stack.setCurrentWidget(page)
        self.clock.follow(self.models[number])
        spec = catalog.figure(number)
        self.setWindowTitle(f"gpuviz — {spec.number} {spec.title}")
        for item in self._items():
            if item.data(0, FIGURE_ROLE) == number and self.tree.currentItem() is not item:
                self.tree.setCurrentItem(item)
        if self.lesson_pane.isVisible():
            self.explain(spec.lesson_anchor)

    def step_figure(self, offset: int) -> None:
        numbers = [spec.number for spec in catalog.all_figures()]
        if not numbers:
            return
        index = numbers.index(self.current) if self.current in numbers else -offset
        self.show_figure(numbers[(index + offset) % len(numbers)])

    def reset_figure(self) -> None:
        if self.current:
            self.models[self.current].reset()

    # --- lesson text ---------------------------------------------------------------------
    def explain(self, anchor: str | None = None) -> None:
        if not self.current:
            return
        spec = catalog.figure(self.current)
        lesson = catalog.lesson_of(spec)
        if self._lesson_file != lesson.text_file:
            text = load_lesson_text(lesson.text_file)
            self.lesson_pane.setMarkdown(text.markdown)
            self._lesson_file = lesson.text_file
            self._lesson_headings = text.headings
        self.lesson_pane.show()
        heading = self._lesson_headings.get(anchor or spec.lesson_anchor)
        if heading:
            # Jump to the end first so the heading scrolls to the top of the pane.
            self.lesson_pane.moveCursor(QTextCursor.End)
            found = self.lesson_pane.find(heading)
            if found:
                cursor = self.lesson_pane.textCursor()
                cursor.clearSelection()
                self.lesson_pane.setTextCursor(cursor)

    def toggle_lesson_pane(self) -> None:
        if self.lesson_pane.isVisible():
            self.lesson_pane.hide()
        else:
            self.explain()

    # --- menus and shortcuts -------------------------------------------------------------
    def _action(self, menu, text: str, slot, keys: str = "") -> QAction:  # noqa: ANN001
        action = QAction(text, self)
        if keys:
            action.setShortcuts([QKeySequence(k.strip()) for k in keys.split(",")])
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self._action(file_menu, "&Quit", self.close, "Ctrl+Q")
        nav = bar.addMenu("&Navigate")
        self._action(nav, "&Next figure", lambda: self.step_figure(1), "PgDown, Ctrl+Right")
        self._action(nav, "&Previous figure", lambda: self.step_figure(-1), "PgUp, Ctrl+Left")
        self._action(nav, "&Filter figures…", self.focus_filter, "Ctrl+F, Ctrl+K")
        self._action(nav, "&Reset figure", self.reset_figure, "Ctrl+R")
        view = bar.addMenu("&View")
        self._action(view, "&Explain (lesson text)", lambda: self.explain(), "F1")
        self._action(view, "&Lesson text pane", self.toggle_lesson_pane, "Ctrl+L")
        self._action(view, "&Full screen", self.toggle_full_screen, "F11")
        themes = view.addMenu("&Theme")
        for name in ("dark", "light", "projector"):
            self._action(themes, name.capitalize(), lambda _=False, n=name: self.set_theme(n))
        help_menu = bar.addMenu("&Help")
        self._action(help_menu, "&Keyboard shortcuts", self.show_shortcuts)
        self._action(help_menu, "&About gpuviz", self.show_about)

    def focus_filter(self) -> None:
        self.filter.setFocus()
        self.filter.selectAll()

    def toggle_full_screen(self) -> None:
        self.showNormal() if self.isFullScreen() else self.showFullScreen()

    def set_theme(self, name: str) -> None:
        """Apply a theme and rebuild the built views; models (and so settings) survive."""
        self.theme_name = name
        theme.apply(name)
        settings().setValue("view/theme", name)
        current = self.current
        for page in self.pages.values():
            self.stack.removeWidget(page)
            page.deleteLater()
        self.pages.clear()
        if current:
            self.show_figure(current)

    def show_shortcuts(self) -> None:
        rows = "".join(f"<tr><td>{what}</td><td>&nbsp;&nbsp;<b>{keys}</b></td></tr>"
                       for what, keys in SHORTCUTS)
        QMessageBox.information(self, "Keyboard shortcuts", f"<table>{rows}</table>")

    def show_about(self) -> None:
        QMessageBox.about(
            self, "About gpuviz",
            f"<b>gpuviz {__version__}</b><p>Interactive figures that teach GPU and "
            "LLM-systems performance. Every number shown comes from a cited source or a "
            "formula; the sources are in the resources folder.</p><p>Works offline.</p>")

    # --- persistence ---------------------------------------------------------------------
    def restore_state(self, store: QSettings) -> None:
        geometry = store.value("window/geometry")
        if not (isinstance(geometry, QByteArray) and self.restoreGeometry(geometry)):
            self.resize(1280, 800)
        splitter = store.value("window/splitter")
        if isinstance(splitter, QByteArray):
            self.splitter.restoreState(splitter)
            self.lesson_pane.hide()

    def save_state(self, store: QSettings) -> None:
        store.setValue("window/geometry", self.saveGeometry())
        store.setValue("window/splitter", self.splitter.saveState())
        if self.current:
            store.setValue("window/figure", self.current)

    def closeEvent(self, event) -> None:  # noqa: ANN001, N802
        self.clock.stop()
        self.save_state(settings())
        super().closeEvent(event)


def saved_figure(store: QSettings) -> str | None:
    number = store.value("window/figure")
    try:
        return catalog.figure(str(number)).number if number else None
    except KeyError:
        return None


def run_window(spec, values: dict[str, Any], theme_name: str | None,  # noqa: ANN001
               warnings: list[str]) -> int:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("gpuviz")
    app.setOrganizationName("gpuviz")
    store = settings()
    name = theme.resolve(theme_name or str(store.value("view/theme", "system")), app)
    theme.apply(name, app)
    window = MainWindow(name)
    window.restore_state(store)
    window.show()
    first = spec.number if spec else (saved_figure(store) or _first_figure())

    def open_first() -> None:
        if first:
            model = window.model(first)
            with model.batch():
                for key, value in values.items():
                    model.set(key, value)
            window.show_figure(first)
        for warning in warnings:
            QMessageBox.warning(window, "Some data was left out", warning)

    QTimer.singleShot(0, open_first)  # show the window first, then build the figure
    return app.exec()


def _first_figure() -> str | None:
    figures = catalog.all_figures()
    return figures[0].number if figures else None
