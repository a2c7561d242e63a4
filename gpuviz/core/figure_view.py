"""FigureView, the base of every figure's widget, and FigurePage, the frame around it
(title, caption, Reset, Explain) that the main window and the command line show."""

from __future__ import annotations

import html
import math

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QFontMetricsF, QTextDocumentFragment
from PySide6.QtWidgets import (
    QFrame,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from gpuviz import theme
from gpuviz.core.model import AnimatedModel, FigureModel
from gpuviz.core.plots import apply_look, drawn_texts, repaint_together
from gpuviz.core.widgets import (
    CONTROL_COLUMN_WIDTH,
    ControlPanel,
    MessageLabel,
    ReadoutPanel,
    TimeControls,
)

REFRESH_EVENT = QEvent.Type(QEvent.registerEventType())  # a view's pending refresh


class FigureView(QWidget):
    """Controls on the left with the readouts under them; plots on the right with a
    comment (`self.message`) under them, where it stays in view however tall the
    control column gets.

    Subclasses implement `build()` (create controls with `self.controls.add(name)` and
    plot items once, adding plots with `self.add_plot`) and `refresh()` (update those
    items in place from `self.model.out`). A model change schedules one refresh per pass
    of the event loop, however many parameters changed.
    """

    def __init__(self, model: FigureModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        # One refresh per pass of the event loop, as a posted event (not
        # QTimer.singleShot(0, self, ...): PySide keeps that call's slot, and so this whole
        # view, when the view is deleted before it fires, as a kiosk's start-over does; nor
        # a timer, which fires after the window has repainted the control alone, so a
        # change repainted the window twice). Qt drops it with a deleted view.
        self._refresh_pending = False
        self._shown: dict[object, object] = {}
        self.controls = ControlPanel(model)
        self.readouts = ReadoutPanel(model)
        self.message = MessageLabel(self.message_lines)
        self.time_controls: TimeControls | None = None

        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        if isinstance(model, AnimatedModel):
            self.time_controls = TimeControls(model, step_label=self.step_label)
            left_layout.addWidget(self.time_controls)
        left_layout.addWidget(self.controls)
        left_layout.addWidget(self.readouts)
        left_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidget(left)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self._column = scroll
        left.installEventFilter(self)  # its needed height changed: column_changed
        self._fit_column()

        self.plot_area = QVBoxLayout()
        self.plot_area.setContentsMargins(0, 0, 0, 0)
        right = QVBoxLayout()
        right.addLayout(self.plot_area, 1)
        right.addWidget(self.message)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll)
        layout.addLayout(right, 1)

        self.build()
        # pyqtgraph applies a new view range to the items when the plot is painted, which
        # changes them again and paints the whole plot a second time; applying it right
        # after refresh() makes one paint do (see _refresh_now).
        self._scenes = [view.scene() for view in self.findChildren(QGraphicsView)]
        self._factors = (theme.font_factor(), theme.line_factor())
        self._look_stale = False
        model.changed.connect(self.schedule_refresh)
        theme.look.changed.connect(self.apply_look)
        self._refresh_now()

    step_label = "Step"
    # Lines the comment under the plots keeps room for (it grows for a longer one, which
    # shrinks and repaints the plots): a figure whose comments run longer asks for more.
    message_lines = 2
    # The control column's needed height may have changed (fonts, rows shown or hidden).
    column_changed = Signal()

    def _fit_column(self) -> None:
        # Room for the scroll bar too, so it never covers the right-aligned values.
        scroll_bar = self._column.style().pixelMetric(QStyle.PM_ScrollBarExtent)
        self._column.setFixedWidth(int(CONTROL_COLUMN_WIDTH * theme.ui_scale()) + scroll_bar)

    def apply_look(self) -> None:
        """The look changed (theme, text size, or the window a growing look scales with):
        rescale, in place, what build() drew (fonts, pens, markers: see plots.apply_look)
        and the control column, then refresh everything, so that sizes a refresh derives
        from fonts are measured again. Qt's font change re-measures the widgets."""
        if not self.isVisible():
            self._look_stale = True  # a hidden page (another figure) catches up when shown
            return
        self._look_stale = False
        factors = (theme.font_factor(), theme.line_factor())
        if factors != self._factors:
            font_ratio = factors[0] / self._factors[0]
            line_ratio = factors[1] / self._factors[1]
            self._factors = factors
            apply_look(self._scenes, font_ratio, line_ratio)
        self._fit_column()
        self._shown.clear()
        self.schedule_refresh()

    def showEvent(self, event: object) -> None:  # noqa: N802
        super().showEvent(event)
        if self._look_stale:
            self.apply_look()

    def text_items(self) -> list[tuple[str, float]]:
        """Every text drawn in this figure's plots, with its font's pixel size: labels,
        layers, cell texts, tick labels and axis titles (for tests of legibility)."""
        return drawn_texts(self._scenes)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched is self._column.widget() and event.type() == QEvent.LayoutRequest:
            self.column_changed.emit()
        return False

    def column_height(self) -> int:
        """The height the control column needs to show everything without scrolling."""
        return self._column.widget().minimumSizeHint().height()

    def add_plot(self, widget: QWidget, stretch: int = 1) -> QWidget:
        self.plot_area.addWidget(widget, stretch)
        return widget

    def schedule_refresh(self) -> None:
        if not self._refresh_pending:
            self._refresh_pending = True
            QCoreApplication.postEvent(self, QEvent(REFRESH_EVENT))

    def event(self, event: QEvent) -> bool:
        if event.type() == REFRESH_EVENT:
            if self._refresh_pending:  # not refreshed directly meanwhile
                self._refresh_now()
            return True
        return super().event(event)

    def _refresh_now(self) -> None:
        self._refresh_pending = False  # called directly: no second refresh
        self.controls.sync()
        if self.time_controls is not None:
            self.time_controls.sync()
        self.readouts.sync()
        self.refresh()
        repaint_together(self, self._scenes)

    def needs_update(self, key: object, value: object) -> bool:
        """True (and remember `value`) when `value` differs from what was last shown under
        `key`. Guard the costly updates of `refresh()` with it (text relayouts, setData):
        most refreshes change only a few of the items."""
        if key in self._shown and self._shown[key] == value:
            return False
        self._shown[key] = value
        return True

    def forget_shown(self, key: object) -> None:
        """Make the next `needs_update(key, ...)` true (the item was changed elsewhere)."""
        self._shown.pop(key, None)

    def build(self) -> None:
        raise NotImplementedError

    def refresh(self) -> None:
        raise NotImplementedError


class FigurePage(QWidget):
    """Title, caption with "try this" prompts, Reset and Explain around one FigureView
    (and Questions, which the window shows and connects where it offers them)."""

    explain_requested = Signal(str)

    def __init__(self, spec: object, model: FigureModel, view: FigureView,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.spec = spec
        self.model = model
        self.view = view
        # A long title must not hold the page wider than its screen, nor run under the
        # buttons beside it (13.4 on a 1024x768 projector): it is cut with "…" there.
        title = ElidedLabel(spec.title, lead=f"Figure {spec.number}")
        self.title = title
        title.setFont(theme.font(14))
        title.setToolTip(f"Figure {spec.number}: {spec.title}")
        title.setMinimumWidth(1)
        theme.look.changed.connect(self._apply_look)
        self._fit_timer = QTimer(self)
        self._fit_timer.setSingleShot(True)
        self._fit_timer.setInterval(self.FIT_DELAY_MS)
        self._fit_timer.timeout.connect(self._fit)
        title.setAccessibleName(f"Figure {spec.number}: {spec.title}")
        self.caption = QLabel(spec.caption)
        self.caption.setWordWrap(True)
        self.caption.setTextFormat(Qt.RichText)
        self.caption.setAlignment(Qt.AlignLeft | Qt.AlignTop)
        policy = QSizePolicy(QSizePolicy.Preferred, QSizePolicy.Fixed)
        policy.setHeightForWidth(True)
        self.caption.setSizePolicy(policy)
        # A wrapping label asks for its height at 80 characters' width; the caption gets
        # the page's width, and the window must not grow taller than a 1280x800 screen.
        self.caption.setMinimumSize(1, 1)
        # In the lecture hall a page too small for the caption and the control column
        # folds the caption into the header's line (see _fold_caption); the button opens
        # it again.
        self.caption_line = ElidedLabel(QTextDocumentFragment.fromHtml(spec.caption)
                                        .toPlainText())
        self.caption_line.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
        self.caption_line.setToolTip(spec.caption)
        self.caption_line.hide()
        self.caption_button = QPushButton("Caption")
        self.caption_button.setCheckable(True)
        self.caption_button.setToolTip("Show the whole caption (folded to one line to "
                                       "leave the controls room)")
        self.caption_button.toggled.connect(self._show_caption)
        self.caption_button.hide()
        self.reset_button = QPushButton("Reset")
        self.reset_button.setToolTip("Restore this figure's defaults (Ctrl+R)")
        self.reset_button.clicked.connect(model.reset)
        self.explain_button = QPushButton("Explain")
        self.explain_button.setToolTip("Open the lesson text at this figure's section (F1)")
        self.explain_button.clicked.connect(
            lambda: self.explain_requested.emit(spec.lesson_anchor))
        self.questions_button = QPushButton("Questions")
        self.questions_button.setToolTip("This lesson's worked questions (F2)")
        self.questions_button.hide()
        header = QHBoxLayout()
        header.addWidget(title, 1)
        header.addWidget(self.caption_line, 1)
        header.addWidget(self.caption_button)
        header.addWidget(self.reset_button)
        header.addWidget(self.explain_button)
        header.addWidget(self.questions_button)
        self._header = header
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.addLayout(header)
        layout.addWidget(self.caption)
        layout.addWidget(view, 1)
        view.column_changed.connect(self._fold_caption)

    def _apply_look(self) -> None:
        self.title.setFont(theme.font(14))
        self._fold_caption()

    def _fold_caption(self) -> None:
        """Fold the caption to one line when, in a look that grows (the lecture hall), the
        whole caption would leave the control column too little height: a class sees
        every control and readout at once, and the caption is a click away."""
        layout = self.layout()
        margins = layout.contentsMargins()
        width = self.width() - margins.left() - margins.right()
        room = (self.height() - margins.top() - margins.bottom() - 2 * layout.spacing()
                - self._header.sizeHint().height() - self.caption.heightForWidth(width))
        folded = theme.current().grows and self.view.column_height() > room
        if folded == self.caption_button.isHidden():
            self.caption_button.setVisible(folded)
            self._show_caption(self.caption_button.isChecked() or not folded)

    def _show_caption(self, whole: bool) -> None:
        self.caption.setVisible(whole)
        self.caption_line.setVisible(not whole)
        self._header.setStretchFactor(self.title, 1 if whole else 0)

    # A scale step this large (full screen on or off, a new screen) is taken at once;
    # smaller ones (a window edge dragged) once the size has rested for FIT_DELAY_MS:
    # rescaling lays out and redraws the whole figure (tens of ms).
    FIT_AT_ONCE = 0.2
    FIT_DELAY_MS = 150

    def resizeEvent(self, event: object) -> None:  # noqa: N802
        super().resizeEvent(event)
        # A look that grows scales everything drawn with the page (the whole screen, in
        # lecture mode); the theme does nothing when the scale is unchanged. Only the page
        # in view fits: hidden ones (other figures, closed windows) are resized too, and
        # fit to their size once shown.
        if not self.isVisible():
            return
        step = abs(theme.scale_for(self.width(), self.height()) - theme.screen_scale())
        if step >= self.FIT_AT_ONCE:
            self._fit_timer.stop()
            self._fit()
        else:
            self._fit_timer.start()

    def showEvent(self, event: object) -> None:  # noqa: N802
        super().showEvent(event)
        self._fit_timer.stop()
        self._fit()

    def hideEvent(self, event: object) -> None:  # noqa: N802
        super().hideEvent(event)
        self._fit_timer.stop()

    def _fit(self) -> None:
        theme.fit_to(self.width(), self.height())
        self._fold_caption()  # also at an unchanged scale: the page's height changed


class ElidedLabel(QLabel):
    """One line of text, cut with "…" to the width it is given (a folded caption, a long
    title on a small projector); `lead`, in bold before it, is never cut. It asks for the
    width of its whole text, so it grows back when the room comes back."""

    LEAD_GAP = "\u00a0\u00a0"

    def __init__(self, text: str, lead: str = "") -> None:
        super().__init__()
        self._full, self._lead = text, lead
        self.setTextFormat(Qt.RichText if lead else Qt.PlainText)
        self._elide()

    def sizeHint(self) -> QSize:  # noqa: N802
        whole = QFontMetricsF(self.font()).horizontalAdvance(self._full)
        return QSize(math.ceil(self._lead_width()) + math.ceil(whole) + 4,
                     super().sizeHint().height())

    def resizeEvent(self, event: object) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._elide()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.FontChange:  # a new look: the same width holds less
            self._elide()
            self.updateGeometry()

    def _lead_width(self) -> float:
        if not self._lead:
            return 0.0
        bold = QFont(self.font())
        bold.setBold(True)
        return QFontMetricsF(bold).horizontalAdvance(self._lead + self.LEAD_GAP)

    def _elide(self) -> None:
        room = max(0, self.width() - math.ceil(self._lead_width()) - 2)
        text = QFontMetricsF(self.font()).elidedText(self._full, Qt.ElideRight, room)
        self.setText(f"<b>{html.escape(self._lead)}</b>{self.LEAD_GAP}{html.escape(text)}"
                     if self._lead else text)

