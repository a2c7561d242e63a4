"""The main window: lesson sidebar, figure area, lesson text pane, menus and shortcuts.

Figures are built when shown; the last MAX_PAGES built pages are kept, older ones are
deleted (a revisit builds the page again). The models outlive their views, so a rebuilt
page (after eviction or on a new theme) shows the learner's settings as left. Each
figure's parameter values are saved in the settings (gpuviz.state) and come back at the
next start. Export lives in gpuviz.export.

The window knows nothing of the modes that wrap it (lecture mode in gpuviz.presentation,
kiosk mode in gpuviz.kiosk; gpuviz.app composes them): they use its public methods,
`add_action`, `keep_actions`, `stepper`, `override_theme`, `remember_layout`,
`docks_float` and the `figure_shown` signal.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QAction,
    QActionGroup,
    QKeySequence,
    QTextCursor,
    QTextLength,
    QTextOption,
    QTextTable,
)
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QFileDialog,
    QFormLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QMessageBox,
    QSplitter,
    QStackedWidget,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gpuviz import __version__, catalog, export, imports, questions, state, theme
from gpuviz.clock import AppClock
from gpuviz.core.trace import has_trace
from gpuviz.data import DataError
from gpuviz.figure_settings import SettingsError, apply_settings, parse_settings
from gpuviz.imports.nccl_tests import read_nccl_tests
from gpuviz.lessons import lesson_text
from gpuviz.playlist import (
    PLAYLIST_SUFFIX,
    PlaylistEntry,
    PlaylistError,
    read_playlist,
    write_playlist,
)

FIGURE_ROLE = Qt.UserRole
LESSON_ROLE = Qt.UserRole + 1  # a lesson's number, on its sidebar item
MEASUREMENTS_KEY = "measurements/folder"  # where File > Open measurements last looked
OWN_FILES_KEY = "own/folder"  # where File > Add GPU… or Add model… last looked
# File > Add GPU… and Add model…: the dialog's title and filter (either takes either kind:
# gpuviz.imports tells them apart by content)
OWN_FILE_DIALOGS = {
    imports.GPU: ("Add GPU (a TOML file like resources/hardware/*.toml)",
                  "GPU files (*.toml);;All files (*)"),
    imports.MODEL: ("Add model (a Hugging Face config.json)",
                    "Model configs (*.json);;All files (*)"),
}
# Built figure pages kept at once (the current one among them); a page costs several MB,
# and a kiosk visits every figure all day.
MAX_PAGES = 4
# The lesson pane takes this share of the window's width, within LESSON_PANE_WIDTHS (px at
# normal text size); when the figure beside it would be narrower than MIN_FIGURE_WIDTH (px
# at normal text size; its design width is 1280), the sidebar collapses while the pane is
# open.
LESSON_PANE_SHARE = 0.3
LESSON_PANE_WIDTHS = (300, 600)
MIN_FIGURE_WIDTH = 760
# In a look that grows (whose text cannot shrink below 16 px), a figure narrower than this
# even so (px at normal text size: a 1024x768 projector) gives way while the pane is open:
# the lesson text takes its place, and closing the pane (Ctrl+L) brings the figure back.
# The sidebar starts folded below it too.
LEAST_FIGURE_WIDTH = 600
# The sidebar is as wide as its widest title, but at most this share of the window (a few
# long titles are elided and have a tooltip; the splitter widens the list).
SIDEBAR_MAX_SHARE = 0.28
QUESTIONS_WIDTH = 380  # the Questions panel's width at first (px at normal text size)
SHORTCUTS = (
    ("Next figure", "PageDown, Ctrl+Right"),
    ("Previous figure", "PageUp, Ctrl+Left"),
    ("Filter figures by title", "Ctrl+F, Ctrl+K"),
    ("Reset the figure", "Ctrl+R"),
    ("Explain: open the lesson text here", "F1"),
    ("Show or hide the lesson text", "Ctrl+L"),
    ("Lecture mode (presentation)", "F5; Esc leaves"),
    ("In lecture mode: next / previous step or figure", "PageDown / PageUp"),
    ("In lecture mode: blank the screen", "B or ."),
    ("In lecture mode: play or pause", "Space"),
    ("Export figure", "Ctrl+E"),
    ("Copy figure", "Ctrl+Shift+C"),
    ("Copy the readouts as text", "Ctrl+Alt+C"),
    ("Full screen", "F11"),
    ("Quit", "Ctrl+Q"),
)


def settings() -> QSettings:
    return state.settings()


class Stepper(Protocol):
    """What PageDown and PageUp do instead of the next and previous figure."""

    def forward(self) -> None: ...
    def back(self) -> None: ...


class MainWindow(QMainWindow):
    figure_shown = Signal(str)  # a figure's page was shown (also when rebuilt in place)

    def __init__(self, theme_name: str = "dark", *, lessons: Iterable[int] | None = None,
                 remember: bool = True, text_scale: float = 1.0) -> None:
        super().__init__()
        self.setWindowTitle("gpuviz")
        self.theme_override: str | None = None
        self.theme_name = theme.resolve(theme_name)
        self.theme_preference = theme_name
        self.text_scale = text_scale
        self.lessons = tuple(lessons) if lessons is not None else None
        self.remember = remember
        self.remember_layout = True  # off while a mode rearranges the window
        self.docks_float = True  # off in a kiosk: a torn-off panel there has no way back
        self.stepper: Stepper | None = None
        self.clock = AppClock(self)
        self.models: dict[str, Any] = {}
        self.pages: OrderedDict[str, QWidget] = OrderedDict()  # least recently shown first
        self.current: str | None = None
        self.playlist: list[PlaylistEntry] = []
        self.messages: list[str] = []  # every message shown to the user, newest last
        self._lesson_file: str | None = None
        self._lesson_headings: dict[str, str] = {}
        self.actions: dict[str, QAction] = {}
        self.theme_actions: dict[str, QAction] = {}  # the Theme menu's, by theme name

        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter figures (Ctrl+F)")
        self.filter.setClearButtonEnabled(True)
        self.filter.setAccessibleName("Filter figures")
        self.filter.textChanged.connect(self.apply_filter)
        self.filter.returnPressed.connect(self._open_first_match)
        self.tree = QTreeWidget()
        self.tree.setHeaderHidden(True)
        self.tree.setColumnCount(2)  # a lesson's title, and its questions answered right
        self.tree.header().setStretchLastSection(False)
        self.tree.header().setSectionResizeMode(0, QHeaderView.Stretch)
        self.tree.header().setSectionResizeMode(1, QHeaderView.ResizeToContents)
        self.tree.setAccessibleName("Lessons and figures")
        self.tree.currentItemChanged.connect(self._on_tree_item)
        self._fill_tree()
        self.sidebar = QWidget()
        side_layout = QVBoxLayout(self.sidebar)
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
        self.lesson_pane.anchorClicked.connect(self._follow_lesson_link)  # its questions'
        # Code blocks wrap too (see _fit_text_to_pane); how words break: _choose_wrap.
        self.lesson_pane.viewport().installEventFilter(self)
        self._wrapped_for: int | None = None  # the pane width the wrap mode was chosen for
        self._wrap_timer = QTimer(self, singleShot=True, interval=50, timeout=self._choose_wrap)
        self.lesson_pane.hide()
        self.lesson_pane.installEventFilter(self)
        self._sidebar_before_pane: int | None = None  # its width, while the pane collapsed it
        self._laid_out = False  # the splitter's sizes are set (or restored)
        self._sidebar_crowded = False  # folded by _fit_sidebar, not by the user

        self.splitter = QSplitter(Qt.Horizontal)
        self.splitter.addWidget(self.sidebar)
        self.splitter.addWidget(self.stack)
        self.splitter.addWidget(self.lesson_pane)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setCollapsible(1, False)  # the figure never goes
        self.setCentralWidget(self.splitter)
        QApplication.styleHints().colorSchemeChanged.connect(self._follow_system_look)
        self.menus: dict[str, QMenu] = {}
        # Worked questions: the ones answered right are remembered unless a mode (kiosk,
        # lecture) turns that off; the panel is built when first asked for.
        self.remember_progress = remember
        self.progress = state.load_progress(settings()) if remember else set()
        self.questions_dock: QDockWidget | None = None
        self._build_actions()
        self._build_menus()
        self._mark_progress()
        self.statusBar().showMessage("PageDown / PageUp: next and previous figure · "
                                     "F1: explain · F5: lecture mode · Ctrl+F: filter", 8000)

    # --- sidebar -------------------------------------------------------------------------
    def _lessons(self) -> list[catalog.Lesson]:
        if self.lessons is None:
            return list(catalog.LESSONS)
        return [lesson for lesson in catalog.LESSONS if lesson.number in self.lessons]

    def _fill_tree(self) -> None:
        for lesson in self._lessons():
            item = QTreeWidgetItem([f"{lesson.number}. {lesson.title}"])
            item.setData(0, LESSON_ROLE, lesson.number)
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

    def _sidebar_width(self) -> int:
        """Wide enough for the longest title in the sidebar's font, within
        SIDEBAR_MAX_SHARE of the window."""
        tree = self.tree
        metrics = tree.fontMetrics()
        widest = 0
        for i in range(tree.topLevelItemCount()):
            lesson = tree.topLevelItem(i)
            widest = max(widest, metrics.horizontalAdvance(lesson.text(0)))
            for j in range(lesson.childCount()):
                widest = max(widest, tree.indentation()
                             + metrics.horizontalAdvance(lesson.child(j).text(0)))
        margins = self.sidebar.layout().contentsMargins()
        chrome = (tree.indentation() + 2 * tree.frameWidth() + margins.left() + margins.right()
                  + tree.header().sectionSize(1)  # the questions' count
                  + tree.style().pixelMetric(tree.style().PixelMetric.PM_ScrollBarExtent)
                  + 2 * metrics.averageCharWidth())  # the item's own padding, and a little
        return min(widest + chrome, round(SIDEBAR_MAX_SHARE * self.width()))

    def _fit_sidebar(self) -> None:
        """Give the sidebar its width (unless hidden, or collapsed once laid out); the
        figure the rest. Where that would leave the figure too narrow (`_crowded`: a small
        screen in the projector look), the sidebar starts folded: its handle opens it, and
        a look with room (or a larger window, shown anew) gives it back."""
        sizes = self.splitter.sizes()
        if self.sidebar.isHidden() or (sizes[0] == 0 and self._laid_out
                                       and not self._sidebar_crowded):
            return
        width = self._sidebar_width()
        self._sidebar_crowded = self._crowded(sizes[0] + sizes[1] - width)
        if self._sidebar_crowded:
            width = 0
        self.splitter.setSizes([width, max(sizes[0] + sizes[1] - width, 0), sizes[2]])
        self._laid_out = True

    def resizeEvent(self, event) -> None:  # noqa: ANN001, N802
        super().resizeEvent(event)
        if not self.lesson_pane.isHidden():
            self._fit_lesson_pane()  # its share of the new width
        if self.questions_dock is not None and not self.questions_dock.isHidden():
            self._fit_questions()

    def showEvent(self, event) -> None:  # noqa: ANN001, N802
        super().showEvent(event)
        if not self._laid_out:
            self._fit_sidebar()

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
            model = catalog.figure(number).make_model()
            if self.remember:
                state.load_figure(settings(), number, model)
            self.models[number] = model
        return self.models[number]

    def page(self, number: str) -> QWidget:
        """The figure's page, built from its model unless it is among the kept ones."""
        if number in self.pages:
            self.pages.move_to_end(number)
            return self.pages[number]
        from gpuviz.core.figure_view import FigurePage  # pyqtgraph loads here, not at start

        spec = catalog.figure(number)
        model = self.model(number)
        page = FigurePage(spec, model, spec.make_view(model))
        page.explain_requested.connect(self.explain)
        page.questions_button.clicked.connect(self.toggle_questions)
        page.reset_button.clicked.connect(lambda _=False, n=number: self._forget(n))
        self.pages[number] = page
        self.stack.addWidget(page)
        for old in [n for n in self.pages if n not in (number, self.current)]:
            if len(self.pages) <= MAX_PAGES:
                break
            self._drop_page(old)
        return page

    def _drop_page(self, number: str) -> None:
        """Delete a page (its model stays): out of the stack, then deleted by Qt."""
        page = self.pages.pop(number)
        self.stack.removeWidget(page)
        page.deleteLater()

    def sequence(self) -> list[str]:
        """The figures PageDown walks: the playlist, or the listed lessons' figures."""
        if self.playlist:
            return [entry.number for entry in self.playlist]
        return [spec.number for lesson in self._lessons() for spec in lesson.figures]

    def show_figure(self, number: str) -> None:
        if self.current and self.current in self.models:
            previous = self.models[self.current]
            if hasattr(previous, "set_playing"):
                previous.set_playing(False)
            self.save_figure(self.current)
        self.current = number
        page = self.page(number)
        self.stack.setCurrentWidget(page)
        self._show_header_buttons()
        self.clock.follow(self.models[number])
        if "export_trace" in self.actions:  # only a figure with a timeline has a trace
            self.actions["export_trace"].setEnabled(has_trace(self.models[number]))
        if "open_measurements" in self.actions:  # only 7.3 and 7.4 draw nccl-tests output
            self.actions["open_measurements"].setEnabled(
                hasattr(self.models[number], "load_measurements"))
        spec = catalog.figure(number)
        self.setWindowTitle(f"gpuviz — {spec.number} {spec.title}")
        for item in self._items():
            if item.data(0, FIGURE_ROLE) == number and self.tree.currentItem() is not item:
                self.tree.setCurrentItem(item)
        if self.lesson_pane.isVisible():
            self.explain(spec.lesson_anchor)
        if self.questions_dock is not None and self.questions_dock.isVisible():
            self.show_questions()  # the new figure's lesson, if another
        self.figure_shown.emit(number)

    def step_figure(self, offset: int, wrap: bool = True) -> bool:
        """Show the figure `offset` places along the sequence; False when there is none."""
        numbers = self.sequence()
        if not numbers:
            return False
        if self.current in numbers:
            index = numbers.index(self.current) + offset
        else:
            index = 0 if offset > 0 else len(numbers) - 1
        if not wrap and not 0 <= index < len(numbers):
            return False
        self.show_figure(numbers[index % len(numbers)])
        self._go_to_playlist_step()
        return True

    def playlist_step(self, number: str) -> int | str | None:
        """The step the playlist opens figure `number` at (None: it gives none)."""
        return next((entry.step for entry in self.playlist if entry.number == number), None)

    def _go_to_playlist_step(self) -> None:
        step = self.playlist_step(self.current) if self.current else None
        if step is not None:
            self.models[self.current].go_to_step(step)

    def next_item(self) -> None:
        self.stepper.forward() if self.stepper is not None else self.step_figure(1)

    def previous_item(self) -> None:
        self.stepper.back() if self.stepper is not None else self.step_figure(-1)

    def reset_figure(self) -> None:
        if self.current:
            self.models[self.current].reset()
            self._forget(self.current)

    def reset_everything(self, first: str | None = None) -> None:
        """Every figure back to its defaults, then `first` (default: the first listed)."""
        for number, model in self.models.items():
            if hasattr(model, "set_playing"):
                model.set_playing(False)
            model.reset()
            self._forget(number)
        self.filter.clear()
        self.lesson_pane.hide()
        if self.questions_dock is not None:
            self.questions_dock.hide()
            self.questions_dock.widget().lesson = None  # the next visitor's answers are blank
        numbers = self.sequence()
        if first or numbers:
            self.show_figure(first or numbers[0])

    # --- remembered parameter values -----------------------------------------------------
    def save_figure(self, number: str) -> None:
        if self.remember and number in self.models:
            state.save_figure(settings(), number, self.models[number])

    def _forget(self, number: str) -> None:
        if self.remember:
            state.forget_figure(settings(), number)

    # --- lesson text ---------------------------------------------------------------------
    def explain(self, anchor: str | None = None) -> None:
        """Open the lesson text at the figure's section, unless a mode turned that off."""
        if not self.current or not self.offers("explain"):
            return
        spec = catalog.figure(self.current)
        lesson = catalog.lesson_of(spec)
        if self._lesson_file != lesson.text_file:
            text = lesson_text(lesson)
            self.lesson_pane.setMarkdown(text.markdown)
            self._fit_text_to_pane()
            self._wrapped_for = None  # new text: choose again (below, at the pane's width)
            self._lesson_file = lesson.text_file
            self._lesson_headings = text.headings
        if self.lesson_pane.isHidden():
            self.lesson_pane.show()
            self._fit_lesson_pane()
        self._choose_wrap()
        heading = self._lesson_headings.get(anchor or spec.lesson_anchor)
        if heading:
            found = self._find_heading(heading)
            if found is not None:
                self.lesson_pane.setTextCursor(found)
                self._scroll_lesson_to(found.block())
                # A pane shown just now has no final width yet, so the text will be laid
                # out again: scroll once more when that has happened.
                QTimer.singleShot(0, lambda: self._scroll_lesson_to(found.block()))

    def _fit_text_to_pane(self) -> None:
        """Markdown code blocks come as lines that never break: at the pane's width they
        ran off its edge behind a horizontal scroll bar. Let them wrap like the text, and
        tables take the pane's width (their cells wrap). Qt draws a table of 100% a pixel
        past the text's edge (its border), which brings the scroll bar back: 99%."""
        document = self.lesson_pane.document()
        block = document.begin()
        while block.isValid():
            fmt = block.blockFormat()
            if fmt.nonBreakableLines():
                fmt.setNonBreakableLines(False)
                QTextCursor(block).setBlockFormat(fmt)
            block = block.next()
        for frame in document.rootFrame().childFrames():
            if isinstance(frame, QTextTable):
                fmt = frame.format()
                fmt.setWidth(QTextLength(QTextLength.PercentageLength, 99))
                fmt.setCellPadding(2)  # less than Qt gives markdown tables: 7 columns need room
                fmt.setCellSpacing(0)
                frame.setFormat(fmt)

    def _fit_lesson_pane(self) -> None:
        """Size the open pane from the window's width, and collapse the sidebar while the
        figure would be left narrower than MIN_FIGURE_WIDTH (back when the pane closes,
        or when the window grows enough); where even so it would be too narrow
        (`_crowded`), the lesson text takes the figure's place."""
        scale = theme.current().font_scale * self.text_scale
        low, high = (round(width * scale) for width in LESSON_PANE_WIDTHS)
        pane = max(low, min(high, round(LESSON_PANE_SHARE * self.width())))
        shown = [not widget.isHidden() for widget in (self.sidebar, self.lesson_pane)]
        room = self.splitter.width() - self.splitter.handleWidth() * sum(shown)
        sidebar = (self.splitter.sizes()[0] or self._sidebar_before_pane or 0) if shown[0] else 0
        self._sidebar_before_pane = None
        if sidebar and room - sidebar - pane < MIN_FIGURE_WIDTH * scale:
            self._sidebar_before_pane = sidebar
            sidebar = 0
        crowded = self._crowded(room - sidebar - pane)
        if crowded and not self.stack.isHidden():
            self.statusBar().showMessage("The lesson text is in the figure's place (the "
                                         "window is narrow): Ctrl+L shows the figure", 8000)
        self.stack.setHidden(crowded)
        figure = 0 if crowded else room - sidebar - pane
        self.splitter.setSizes([sidebar, figure, room - sidebar - figure])

    def _crowded(self, figure_width: int) -> bool:
        """Whether a figure this wide is too narrow to lay out (LEAST_FIGURE_WIDTH)."""
        scale = theme.current().font_scale * self.text_scale
        return theme.current().grows and figure_width < LEAST_FIGURE_WIDTH * scale

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        # The pane closed (by any means, not with the window): the sidebar comes back.
        if (watched is self.lesson_pane and event.type() == QEvent.Hide
                and self.lesson_pane.isHidden()):
            self.stack.show()
            self._restore_sidebar()
        elif watched is self.lesson_pane.viewport() and event.type() == QEvent.Resize:
            self._wrap_timer.start()  # once the width settles (a splitter drag resizes often)
        return super().eventFilter(watched, event)

    def _choose_wrap(self) -> None:
        """Break lines at spaces only, so a number in a narrow table cell stays whole
        ("65,50|4" reads as two numbers); only where that leaves a table wider than the
        pane (no sideways scrolling for the text) may words break anywhere. Tried on a
        copy of the text: switching the pane's own mode back and forth left its scroll
        bar behind."""
        pane = self.lesson_pane
        width = pane.viewport().width()
        if width == self._wrapped_for:
            return  # a scroll bar came or went: same width, same choice
        self._wrapped_for = width
        trial = pane.document().clone()
        option = trial.defaultTextOption()
        option.setWrapMode(QTextOption.WordWrap)
        trial.setDefaultTextOption(option)
        trial.setTextWidth(width)
        fits = trial.size().width() <= width + 1
        pane.setWordWrapMode(QTextOption.WordWrap if fits
                             else QTextOption.WrapAtWordBoundaryOrAnywhere)

    def _restore_sidebar(self) -> None:
        width, self._sidebar_before_pane = self._sidebar_before_pane, None
        sizes = self.splitter.sizes()
        if width and sizes[0] == 0:
            self.splitter.setSizes([width, max(sizes[0] + sizes[1] - width, 0), sizes[2]])

    def _scroll_lesson_to(self, block) -> None:  # noqa: ANN001 - QTextBlock
        """Put a block's top line at the top of the lesson pane."""
        layout = self.lesson_pane.document().documentLayout()
        top = layout.blockBoundingRect(block).top()
        self.lesson_pane.verticalScrollBar().setValue(int(top))

    def _find_heading(self, heading: str) -> QTextCursor | None:
        """The first heading block whose text is `heading` (body text may repeat it)."""
        document = self.lesson_pane.document()
        block = document.begin()
        fallback = None
        while block.isValid():
            if block.text().strip() == heading.strip():
                cursor = QTextCursor(block)
                if block.blockFormat().headingLevel() > 0:
                    return cursor
                fallback = fallback or cursor
            block = block.next()
        return fallback

    def _follow_lesson_link(self, url: QUrl) -> None:
        """A link of the lesson's Questions section: Answer it opens the question in the
        Questions panel, Set it up its figure at its settings (and the panel too)."""
        found = questions.linked_question(url.toString())
        if found is None:
            return
        kind, question = found
        if kind == questions.SETUP_LINK:
            self.set_up_question(question)
            if self._questions_crowded():
                return  # the figure it set up would give way to the panel at once
        self.show_questions(question)

    def toggle_lesson_pane(self) -> None:
        if self.lesson_pane.isVisible():
            self.lesson_pane.hide()
        else:
            self.explain()

    # --- actions, menus and shortcuts ----------------------------------------------------
    def add_action(self, key: str, text: str, slot: Callable[[], object], keys: str = "",
                   enabled: bool = True, *, menu: str | None = None,
                   before: str | None = None) -> QAction:
        """An action with its shortcuts, in `menu` (before the action `before`, if there)."""
        action = QAction(text, self)
        if keys:
            action.setShortcuts([QKeySequence(k.strip()) for k in keys.split(",")])
        action.triggered.connect(slot)
        action.setEnabled(enabled)
        self.addAction(action)  # shortcuts work with the menu bar hidden
        self.actions[key] = action
        if menu is not None:
            self.menus[menu].insertAction(self.actions.get(before), action)
        return action

    def keep_actions(self, keys: Iterable[str]) -> None:
        """Offer only these actions: the others leave the window and its menus, and what
        they did is refused (a public screen has no files and no quitting)."""
        for key in set(self.actions) - set(keys):
            action = self.actions.pop(key)
            self.removeAction(action)
            action.deleteLater()  # and so out of the menus

    def _show_header_buttons(self) -> None:
        """The page's Explain and Questions buttons where the mode offers them: they are
        how a kiosk visitor or a lecturer (no menu bar) finds them; no dead button."""
        page = self.pages.get(self.current or "")
        if page is not None:
            page.explain_button.setVisible(self.offers("explain"))
            page.questions_button.setVisible(self.offers("questions"))

    def offers(self, key: str) -> bool:
        action = self.actions.get(key)
        return action is not None and action.isEnabled()

    def _build_actions(self) -> None:
        add = self.add_action
        add("next", "&Next", self.next_item, "PgDown, Ctrl+Right")
        add("previous", "&Previous", self.previous_item, "PgUp, Ctrl+Left")
        add("filter", "&Filter figures…", self.focus_filter, "Ctrl+F, Ctrl+K")
        add("reset", "&Reset figure", self.reset_figure, "Ctrl+R")
        add("explain", "&Explain (lesson text)", lambda: self.explain(), "F1")
        add("lesson", "&Lesson text pane", self.toggle_lesson_pane, "Ctrl+L")
        add("quit", "&Quit", self.close, "Ctrl+Q")
        add("full_screen", "&Full screen", self.toggle_full_screen, "F11")
        add("export", "&Export figure…", lambda: self.export_figure(), "Ctrl+E")
        add("copy", "&Copy figure", self.copy_figure, "Ctrl+Shift+C")
        add("copy_readouts", "Copy &readouts", self.copy_readouts, "Ctrl+Alt+C")
        add("export_data", "Export &data (CSV)…", lambda: self.export_data())
        add("export_trace", "Export &trace (Perfetto, chrome://tracing)…",
            lambda: self.export_trace())
        add("open_trace", "&Open trace in 13.1 (torch.profiler, Chrome trace)…",
            lambda: self.open_trace())
        add("open_measurements", "Open &measurements (nccl-tests)…",
            lambda: self.open_measurements())
        add("add_gpu", "Add &GPU…", lambda: self.add_own_file(imports.GPU))
        add("add_model", "Add mode&l (config.json)…", lambda: self.add_own_file(imports.MODEL))
        add("open_playlist", "&Open playlist…", lambda: self.open_playlist())
        add("save_playlist", "&Save playlist…", lambda: self.save_playlist())
        add("clear_playlist", "C&lear playlist", lambda: self.set_playlist([]))
        add("preferences", "&Preferences…", self.show_preferences, "Ctrl+,")
        add("reset_all", "Reset &all figures", self.reset_all_figures)
        add("questions", "&Questions of this lesson", self.toggle_questions, "F2")
        add("export_questions", "Export &questions (PDF handout)…",
            lambda: self.export_questions())
        add("reset_progress", "Forget &answered questions", self.reset_progress)
        add("tour", "&Tour", self.start_tour)
        for key in ("explain", "questions"):  # lecture mode and a kiosk turn them off
            self.actions[key].changed.connect(self._show_header_buttons)

    def _build_menus(self) -> None:
        bar = self.menuBar()
        a = self.actions
        file_menu = self.menus["file"] = bar.addMenu("&File")
        for key in ("export", "copy", "copy_readouts", "export_data", "export_trace",
                    "open_trace"):
            file_menu.addAction(a[key])
        file_menu.addAction(a["open_measurements"])
        file_menu.addAction(a["add_gpu"])
        file_menu.addAction(a["add_model"])
        file_menu.addAction(a["export_questions"])
        file_menu.addSeparator()
        for key in ("open_playlist", "save_playlist", "clear_playlist"):
            file_menu.addAction(a[key])
        file_menu.addSeparator()
        file_menu.addAction(a["quit"])
        edit = bar.addMenu("&Edit")
        edit.addAction(a["reset_all"])
        edit.addAction(a["reset_progress"])
        edit.addAction(a["preferences"])
        nav = bar.addMenu("&Navigate")
        for key in ("next", "previous", "filter", "reset"):
            nav.addAction(a[key])
        view = self.menus["view"] = bar.addMenu("&View")  # lecture mode adds itself here
        for key in ("explain", "lesson", "questions", "full_screen"):
            view.addAction(a[key])
        themes = view.addMenu("&Theme")
        group = QActionGroup(self)  # exclusive: one theme marked
        for name in state.THEME_CHOICES:
            action = self.theme_actions[name] = QAction(f"&{name.capitalize()}", group)
            action.setCheckable(True)
            action.triggered.connect(lambda _=False, n=name: self.set_theme(n))
            themes.addAction(action)
        self._mark_theme()
        help_menu = bar.addMenu("&Help")
        help_menu.addAction(a["tour"])
        action = QAction("&Keyboard shortcuts", self)
        action.triggered.connect(self.show_shortcuts)
        help_menu.addAction(action)
        action = QAction("&About gpuviz", self)
        action.triggered.connect(self.show_about)
        help_menu.addAction(action)

    def focus_filter(self) -> None:
        self.filter.setFocus()
        self.filter.selectAll()

    def toggle_full_screen(self) -> None:
        if not self.offers("full_screen"):
            return
        self.showNormal() if self.isFullScreen() else self.showFullScreen()

    # --- theme and preferences -----------------------------------------------------------
    def set_theme(self, name: str) -> None:
        """Apply a theme (or "system") and remember it; models (and values) survive."""
        self.apply_theme(name, remember=True)

    def _follow_system_look(self) -> None:
        """The desktop switched between dark and light: follow it when told to."""
        if self.theme_preference == "system":
            self.apply_theme("system", remember=False)
        else:
            self._mark_theme()  # the System entry names the desktop's look

    def apply_theme(self, name: str, remember: bool = True) -> None:
        """The user's theme `name` (shown unless a mode overrides it); pages are rebuilt,
        since views read their colours when built."""
        self.theme_preference = name
        self.theme_name = theme.resolve(self.theme_override or name)
        theme.apply(self.theme_name, text_scale=self.text_scale)
        if self.isVisible():
            self._fit_sidebar()  # to the titles in the new font
        if remember and self.remember:
            settings().setValue(state.THEME_KEY, name)
        self._mark_theme()
        self._rebuild_pages()

    def _rebuild_pages(self) -> None:
        current = self.current
        for number in list(self.pages):
            self._drop_page(number)
        if current:
            self.current = None
            self.show_figure(current)

    def _mark_theme(self) -> None:
        """Mark the theme shown in the Theme menu: a mode's (lecture mode's projector) while
        it overrides the user's choice; "System" names the look it follows now."""
        shown = self.theme_override or self.theme_preference
        for name, action in self.theme_actions.items():
            action.setChecked(name == shown)
        if "system" in self.theme_actions:
            self.theme_actions["system"].setText(
                f"&System ({theme.resolve('system').capitalize()})")

    def override_theme(self, name: str | None) -> None:
        """Show theme `name` whatever the user's choice (None: the user's choice again)."""
        self.theme_override = name
        self.apply_theme(self.theme_preference, remember=False)

    def preferences(self) -> state.Preferences:
        return state.Preferences(self.theme_preference, self.text_scale,
                                 self.clock.reduced_motion)

    def apply_preferences(self, prefs: state.Preferences) -> None:
        self.text_scale = prefs.text_scale
        self.clock.reduced_motion = prefs.reduced_motion
        if self.remember:
            state.save_preferences(settings(), prefs)
        self.apply_theme(prefs.theme, remember=False)

    def show_preferences(self) -> QDialog:
        from gpuviz.preferences import PreferencesDialog

        dialog = PreferencesDialog(self.preferences(), self)
        dialog.own_files_changed.connect(self.own_files_changed)
        dialog.accepted.connect(lambda: self.apply_preferences(dialog.preferences()))
        dialog.setAttribute(Qt.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def reset_all_figures(self) -> None:
        for number, model in self.models.items():
            model.reset()
            self._forget(number)
        store = settings()
        store.remove(state.FIGURES_GROUP)

    # --- worked questions ----------------------------------------------------------------
    def _current_lesson(self) -> catalog.Lesson | None:
        if self.current:
            return catalog.lesson_of(catalog.figure(self.current))
        lessons = [lesson for lesson in self._lessons() if lesson.figures]
        return lessons[0] if lessons else None

    def toggle_questions(self) -> None:
        if self.questions_dock is not None and self.questions_dock.isVisible():
            self.questions_dock.hide()
        else:
            self.show_questions()

    def show_questions(self, question: questions.Question | None = None) -> None:
        """The Questions panel, at `question` (and its lesson) or else at the current
        figure's lesson; the answers are computed by the figures' models now. Typed answers
        stay while the lesson does (the panel closed and opened again)."""
        from gpuviz.questions_panel import QuestionsPanel

        lesson = (catalog.LESSONS[question.lesson - 1] if question is not None
                  else self._current_lesson())
        if lesson is None or not self.offers("questions"):
            return
        if self.questions_dock is None:
            panel = QuestionsPanel()
            panel.set_up.connect(self.set_up_question)
            panel.answered_right.connect(self.answered_right)
            self.questions_dock = QDockWidget("Questions", self)
            self.questions_dock.setObjectName("questions")
            if not self.docks_float:
                self.questions_dock.setFeatures(QDockWidget.DockWidgetClosable)
            self.questions_dock.setWidget(panel)
            panel.close_requested.connect(self.questions_dock.hide)
            self.questions_dock.visibilityChanged.connect(self._questions_closed)
            self.addDockWidget(Qt.RightDockWidgetArea, self.questions_dock)
            self.resizeDocks([self.questions_dock], [self._questions_width()], Qt.Horizontal)
        panel = self.questions_dock.widget()
        if panel.lesson != lesson.number:
            try:
                answered: list[questions.Answered] | str = questions.answered(lesson.number)
            except questions.QuestionError as error:
                answered = f"The questions could not be loaded: {error}."
            panel.show_lesson(lesson, answered, self.progress)
        self.questions_dock.show()
        if question is not None:
            panel.focus_question(question.key)
        self._fit_questions()
        QTimer.singleShot(0, self._fit_questions)  # again once the dock has its width

    def _questions_width(self) -> int:
        return round(QUESTIONS_WIDTH * theme.ui_scale())

    def _questions_crowded(self) -> bool:
        """Whether the panel beside the figure leaves it too narrow (`_crowded`: a small
        screen in the projector look)."""
        return self._crowded(self.width() - self._questions_width())

    def _fit_questions(self) -> None:
        """The panel takes its width from the figure: where that leaves the figure narrower
        than MIN_FIGURE_WIDTH, the sidebar folds (its handle opens it again), then the
        lesson text closes; where even so the figure would be too narrow, the panel takes
        the window (figure and lesson text) until it closes or Set it up brings the figure
        back."""
        dock = self.questions_dock
        if dock is None or dock.isHidden():
            return
        crowded = self._questions_crowded()
        if crowded != self.splitter.isHidden():
            self.splitter.setHidden(crowded)
            if not crowded:
                self.resizeDocks([dock], [self._questions_width()], Qt.Horizontal)
        sizes = self.splitter.sizes()
        scale = theme.current().font_scale * self.text_scale
        if crowded or sizes[1] >= MIN_FIGURE_WIDTH * scale:
            return
        if sizes[0]:
            sizes = [0, sizes[0] + sizes[1], sizes[2]]
            self.splitter.setSizes(sizes)
        if sizes[1] < MIN_FIGURE_WIDTH * scale and not self.lesson_pane.isHidden():
            self.lesson_pane.hide()  # answering needs the figure; F1 brings the text back

    def _questions_closed(self) -> None:
        if self.questions_dock.isHidden() and self.splitter.isHidden():
            self.splitter.show()  # the figure (and lesson text) back in their place

    def start_tour(self) -> None:
        """The tour of the window's parts (gpuviz.tour); remembered as seen."""
        from gpuviz.tour import Tour

        if not self.offers("tour") or Tour.of(self) is not None:
            return
        if self.remember:
            settings().setValue(state.TOUR_SEEN_KEY, True)
        Tour(self).start()

    def set_up_question(self, question: questions.Question) -> None:
        """Open the question's figure at its settings (and step), from its defaults."""
        spec = catalog.figure(question.figure)
        try:
            values = parse_settings(spec, list(question.settings))
        except SettingsError as error:
            self.notify("Cannot set it up", f"{question.source}: {error}.")
            return
        self.show_figure(spec.number)
        model = self.models[spec.number]
        model.reset()
        apply_settings(model, values)
        # Where the panel or the lesson text has taken the figure's place, the figure comes
        # back (the header's Questions button, or F2, opens the panel as it was).
        if self.splitter.isHidden():
            self.questions_dock.hide()
        if self.stack.isHidden():
            self.lesson_pane.hide()

    def answered_right(self, question: questions.Question) -> None:
        if not self.remember_progress or question.key in self.progress:
            return
        self.progress.add(question.key)
        state.save_progress(settings(), question.key)
        self._mark_progress()

    def reset_progress(self) -> None:
        self.progress.clear()
        if self.questions_dock is not None:  # no "answered right before" left on a card
            self.questions_dock.widget().lesson = None
            if not self.questions_dock.isHidden():
                self.show_questions()
        if self.remember:
            state.forget_progress(settings())
        self._mark_progress()

    def _mark_progress(self) -> None:
        """Each lesson's sidebar line ends with its count of questions answered right."""
        for i in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(i)
            lesson = next(x for x in catalog.LESSONS if x.number == item.data(0, LESSON_ROLE))
            try:
                keys = [q.key for q in questions.load_questions(lesson.number)]
            except questions.QuestionError:
                keys = []
            item.setText(1, f"{len(self.progress.intersection(keys))}/{len(keys)}" if keys
                         else "")
            item.setToolTip(1, "Questions answered right (F2 shows them)")

    def export_questions(self, path: Path | str | None = None) -> bool:
        """The current lesson's questions as a PDF handout, answers on a page of their own;
        asks for a file when `path` is None."""
        from gpuviz.questions_panel import write_handout

        lesson = self._current_lesson()
        if lesson is None or not self.offers("export_questions"):
            return False
        if path is None:
            default = Path(self._folder(state.EXPORT_FOLDER_KEY)) / (
                f"lesson-{lesson.number}-questions.pdf")
            name, _ = QFileDialog.getSaveFileName(self, "Export questions", str(default),
                                                  "PDF (*.pdf)")
            if not name:
                return False
            path = name
        path = Path(path)
        try:
            write_handout(lesson, questions.answered(lesson.number), path)
        except (questions.QuestionError, OSError) as error:
            self.notify("Export failed", str(error))
            return False
        settings().setValue(state.EXPORT_FOLDER_KEY, str(path.parent))
        self.statusBar().showMessage(f"Saved {path}", 5000)
        return True

    # --- messages ------------------------------------------------------------------------
    def notify(self, title: str, text: str, warn: bool = True) -> None:
        """A non-modal message box (and the status bar), never blocking the window."""
        self.messages.append(text)
        self.statusBar().showMessage(text, 10000)
        box = QMessageBox(QMessageBox.Warning if warn else QMessageBox.Information, title,
                          text, QMessageBox.Ok, self)
        box.setAttribute(Qt.WA_DeleteOnClose)
        box.setWindowModality(Qt.NonModal)
        box.show()

    def show_shortcuts(self) -> QDialog:
        from gpuviz.shortcuts_dialog import ShortcutsDialog

        dialog = ShortcutsDialog(SHORTCUTS, self)
        dialog.setAttribute(Qt.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def show_about(self) -> None:
        QMessageBox.about(
            self, "About gpuviz",
            f"<b>gpuviz {__version__}</b><p>Interactive figures that teach GPU and "
            "LLM-systems performance. Every number shown comes from a cited source or a "
            "formula; the sources are in the resources folder.</p><p>Works offline.</p>")

    # --- playlist ------------------------------------------------------------------------
    def set_playlist(self, entries: list[PlaylistEntry]) -> None:
        self.playlist = list(entries)
        if entries:
            self.statusBar().showMessage(
                f"Playlist: {len(entries)} figures; PageDown walks them in order.", 8000)
            self.show_figure(entries[0].number)
            self._go_to_playlist_step()

    def _folder(self, key: str) -> str:
        folder = str(settings().value(key, "") or "")
        return folder if folder and Path(folder).is_dir() else str(Path.home())

    def open_trace(self, path: Path | str | None = None) -> bool:
        """Show a trace file in figure 13.1, read off the UI thread (asks for the file when
        `path` is None); a file that cannot be read is said in a message. False when no
        file was picked."""
        from gpuviz.trace_reading import PUZZLE_FIGURE, start_reading  # models: not at start

        if not self.offers("open_trace"):
            return False
        if path is None:
            path, _ = QFileDialog.getOpenFileName(
                self, "Open trace (torch.profiler, Chrome trace)",
                self._folder(state.EXPORT_FOLDER_KEY), "Chrome traces (*.json);;All files (*)")
            if not path:
                return False
        path = Path(path)
        self.show_figure(PUZZLE_FIGURE)
        model = self.models[PUZZLE_FIGURE]
        start_reading(path, self, lambda profile: model.open_trace(path.name, profile),
                      lambda line: self.notify("Trace not opened", line))
        return True

    def open_measurements(self, path: Path | str | None = None) -> bool:
        """nccl-tests output over the figure's model (7.3, 7.4); a bad file: one line."""
        if not self.offers("open_measurements"):
            return False
        if path is None:
            path, _ = QFileDialog.getOpenFileName(
                self, "Open measurements (nccl-tests output)", self._folder(MEASUREMENTS_KEY),
                "nccl-tests output (*.txt *.log *.out);;All files (*)")
            if not path:
                return False
        try:
            table = read_nccl_tests(path)
        except DataError as error:
            self.notify("Measurements not opened", f"{error}. Nothing was changed.")
            return False
        settings().setValue(MEASUREMENTS_KEY, str(Path(path).parent))
        self.models[self.current].load_measurements(table)
        return True

    # --- the user's own GPUs and models ---------------------------------------------------
    def add_own_file(self, kind: str, path: Path | str | None = None) -> bool:
        """File > Add GPU… or Add model…: check the file, copy it into the user's data
        folder (the original is never written) and list it in every selector."""
        if not self.offers(f"add_{kind}"):
            return False
        if path is None:
            title, file_filter = OWN_FILE_DIALOGS[kind]
            path, _ = QFileDialog.getOpenFileName(self, title, self._folder(OWN_FILES_KEY),
                                                  file_filter)
            if not path:
                return False
        try:
            added = imports.add_to_user_folder(path)
        except DataError as error:
            self.notify("Not added", f"{error}. Nothing was changed.")
            return False
        settings().setValue(OWN_FILES_KEY, str(Path(path).parent))
        self.own_files_changed()
        self.notify("Added", f"{added.summary()}: in every selector, marked (yours).",
                    warn=False)
        return True

    def own_files_changed(self) -> None:
        """A GPU or model came or went: a figure set to one that went goes back to its
        default, and the pages are built again, so every selector lists what is there."""
        for model in self.models.values():
            gone = {name: p.default for name, p in model.parameters().items()
                    if p.kind is str and p.free_text is None
                    and model.get(name) not in p.choice_values()}
            if gone:
                with model.batch():
                    for name, default in gone.items():
                        model.set(name, default)
        self._rebuild_pages()

    def open_playlist(self, path: Path | str | None = None) -> bool:
        if not self.offers("open_playlist"):
            return False
        if path is None:
            name, _ = QFileDialog.getOpenFileName(
                self, "Open playlist", self._folder(state.PLAYLIST_FOLDER_KEY),
                f"Playlists (*{PLAYLIST_SUFFIX} *.txt *.json);;All files (*)")
            if not name:
                return False
            path = name
        path = Path(path)
        try:
            entries = read_playlist(path)
        except PlaylistError as error:
            self.notify("Playlist not opened", f"{path.name}: {error}. Nothing was changed.")
            return False
        settings().setValue(state.PLAYLIST_FOLDER_KEY, str(path.parent))
        self.set_playlist(entries)
        return True

    def save_playlist(self, path: Path | str | None = None) -> bool:
        if not self.offers("save_playlist"):
            return False
        entries = self.playlist or ([PlaylistEntry(self.current)] if self.current else [])
        if not entries:
            self.notify("Nothing to save", "Open a figure or a playlist first.")
            return False
        if path is None:
            name, _ = QFileDialog.getSaveFileName(
                self, "Save playlist",
                str(Path(self._folder(state.PLAYLIST_FOLDER_KEY)) / f"lecture{PLAYLIST_SUFFIX}"),
                f"Playlists (*{PLAYLIST_SUFFIX} *.txt)")
            if not name:
                return False
            path = name
        path = Path(path)
        try:
            write_playlist(path, entries)
        except OSError as error:
            self.notify("Playlist not saved", f"Cannot write {path}: {error.strerror}.")
            return False
        settings().setValue(state.PLAYLIST_FOLDER_KEY, str(path.parent))
        return True

    # --- export --------------------------------------------------------------------------
    def _current_page(self) -> Any:
        return self.pages.get(self.current) if self.current else None

    def export_figure(self, path: Path | str | None = None, scale: float | None = None) -> bool:
        """PNG (at `scale`) or SVG by the file name; asks for both when `path` is None."""
        page = self._current_page()
        if not self.offers("export") or page is None:
            return False
        if path is None:
            chosen = self._ask_export_file()
            if chosen is None:
                return False
            path, scale = chosen
        path = Path(path)
        try:
            export.export_image(page, path, export.metadata(page.spec, page.model), scale or 1)
        except export.ExportError as error:
            self.notify("Export failed", str(error))
            return False
        settings().setValue(state.EXPORT_FOLDER_KEY, str(path.parent))
        self.statusBar().showMessage(f"Saved {path}", 5000)
        return True

    def _ask_export_file(self) -> tuple[Path, float] | None:
        dialog = QDialog(self)
        dialog.setWindowTitle("Export figure")
        kind = QComboBox()
        kind.addItem("PNG image", ".png")
        kind.addItem("SVG drawing (scalable)", ".svg")
        scale = QComboBox()
        for factor in export.SCALES:
            scale.addItem(f"{factor:g}×", factor)
        scale.setCurrentIndex(export.SCALES.index(2.0))
        kind.currentIndexChanged.connect(lambda: scale.setEnabled(kind.currentData() == ".png"))
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(dialog.accept)
        buttons.rejected.connect(dialog.reject)
        form = QFormLayout(dialog)
        form.addRow("&Format:", kind)
        form.addRow("&Scale:", scale)
        form.addRow(buttons)
        if dialog.exec() != QDialog.Accepted:
            return None
        suffix = kind.currentData()
        default = Path(self._folder(state.EXPORT_FOLDER_KEY)) / (
            f"figure-{self.current}{suffix}")
        name, _ = QFileDialog.getSaveFileName(self, "Export figure", str(default),
                                              f"{export.FORMATS[suffix]} (*{suffix})")
        if not name:
            return None
        path = Path(name)
        if path.suffix.lower() not in export.FORMATS:
            path = path.with_suffix(suffix)
        return path, float(scale.currentData())

    def copy_figure(self) -> bool:
        page = self._current_page()
        if not self.offers("copy") or page is None:
            return False
        export.copy_image(page, export.metadata(page.spec, page.model))
        self.statusBar().showMessage("Figure copied to the clipboard", 4000)
        return True

    def copy_readouts(self) -> bool:
        page = self._current_page()
        if not self.offers("copy_readouts") or page is None:
            return False
        page.view.readouts.copy_all()
        self.statusBar().showMessage("Readouts copied to the clipboard", 4000)
        return True

    def export_data(self, path: Path | str | None = None) -> bool:
        """The figure's parameters and readouts as CSV; asks for a file when `path` is
        None."""
        return self._export_file(
            "export_data", path, "Export data", ".csv", "CSV table (*.csv)",
            lambda page, target: export.export_csv(page.spec, page.model, target))

    def export_trace(self, path: Path | str | None = None) -> bool:
        """The figure's timeline as a Chrome trace (JSON); asks for a file when `path` is
        None."""
        return self._export_file(
            "export_trace", path, "Export trace", "-trace.json", "Chrome trace (*.json)",
            lambda page, target: export.export_trace(page.model, target))

    def _export_file(self, key: str, path: Path | str | None, title: str, suffix: str,
                     file_filter: str, write: Callable[[Any, Path], None]) -> bool:
        """Save the current figure with `write(page, path)`, asking for the file (default
        figure-L.F<suffix> in the last export folder) when `path` is None; a failed write
        is said in a message."""
        page = self._current_page()
        if not self.offers(key) or page is None:
            return False
        if path is None:
            default = Path(self._folder(state.EXPORT_FOLDER_KEY)) / (
                f"figure-{self.current}{suffix}")
            name, _ = QFileDialog.getSaveFileName(self, title, str(default), file_filter)
            if not name:
                return False
            path = name
        path = Path(path)
        try:
            write(page, path)
        except export.ExportError as error:
            self.notify("Export failed", str(error))
            return False
        settings().setValue(state.EXPORT_FOLDER_KEY, str(path.parent))
        self.statusBar().showMessage(f"Saved {path}", 5000)
        return True

    # --- persistence ---------------------------------------------------------------------
    def restore_state(self, store: QSettings) -> None:
        geometry = store.value("window/geometry")
        if not (isinstance(geometry, QByteArray) and self.restoreGeometry(geometry)):
            self.resize(1280, 800)
        splitter = store.value("window/splitter")
        if isinstance(splitter, QByteArray) and self.splitter.restoreState(splitter):
            self.lesson_pane.hide()
            # Saved while the lesson pane had collapsed the sidebar: open it as shown first.
            self._laid_out = self.splitter.sizes()[0] > 0

    def save_state(self, store: QSettings) -> None:
        if not self.remember:
            return
        if self.remember_layout:
            store.setValue("window/geometry", self.saveGeometry())
            store.setValue("window/splitter", self.splitter.saveState())
        if self.current:
            store.setValue("window/figure", self.current)
        for number, model in self.models.items():
            state.save_figure(store, number, model)
        store.sync()

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
