"""Panels of text beside or under the plots: a formula or explanation (TextPanel),
the comment under the plots (MessageLabel) and small numeric tables (TextTable), each
painting its own text so that a new value never lays out the figure again."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QPointF, QRect, QRectF
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QColor,
    QFont,
    QFontMetricsF,
    QPainter,
    QPaintEvent,
    QPalette,
    QStaticText,
    QTextDocument,
)
from PySide6.QtWidgets import QFrame, QSizePolicy, QWidget

from gpuviz import theme
from gpuviz.core.text import laid_out


class TextPanel(QFrame):
    """A framed panel of (rich) text with a fixed height (`lines` lines), for a formula or
    an explanation beside a plot (MessageLabel is the comment under the plots).

    It paints one QTextDocument that it keeps: new text is parsed and laid out once and
    repaints the panel alone (a rich-text QLabel builds a new document on every change,
    measures it for its size hint and relayouts its parent; twice the time). Text equal
    to the shown one is not set again."""

    def __init__(self, lines: float, rich: bool = True, accessible_name: str = "",
                 framed: bool = True, margin: int = 6) -> None:
        super().__init__()
        self.setFrameShape(QFrame.StyledPanel if framed else QFrame.NoFrame)
        self._rich = rich
        self._document = QTextDocument(self)
        self._document.setDocumentMargin(margin)
        if accessible_name:
            self.setAccessibleName(accessible_name)
        self._lines, self._margin = lines, margin
        self._fit_font()
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Fixed)
        # It fills its own background, so Qt takes it for opaque: a new text repaints
        # the panel alone, not the page and the figure beneath it as well.
        self.setAutoFillBackground(True)
        self._text = ""

    def _fit_font(self) -> None:
        """The document's font and the panel's height follow the widget's font."""
        self._document.setDefaultFont(self.font())
        line = self.fontMetrics().lineSpacing()
        self._least_height = int(line * self._lines + 2 * self._margin + 2 * self.frameWidth()
                                 + 2)
        self.setFixedHeight(self._least_height)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.FontChange:
            self._fit_font()
            self.update()

    def resizeEvent(self, event: object) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._document.setTextWidth(self.contentsRect().width())

    def setText(self, text: str) -> None:  # noqa: N802
        if text != self._text:
            self._text = text
            if self._rich:
                self._document.setHtml(text)
            else:
                self._document.setPlainText(text)
            self.setAccessibleDescription(self._document.toPlainText())
            self.update(self.contentsRect())

    def text(self) -> str:
        return self._text

    def paintEvent(self, event: object) -> None:  # noqa: N802
        super().paintEvent(event)  # the frame
        painter = QPainter(self)
        area = self.contentsRect()
        painter.translate(area.topLeft())
        context = QAbstractTextDocumentLayout.PaintContext()
        context.palette.setColor(QPalette.Text, self.palette().color(QPalette.WindowText))
        context.clip = QRectF(0, 0, area.width(), area.height())
        painter.setClipRect(context.clip)
        self._document.documentLayout().draw(painter, context)
        painter.end()


class MessageLabel(TextPanel):
    """A sentence or two of comment; `warn=True` shows it in the highlight colour.

    Its height is fixed (at least `lines` lines, growing when a longer message needs it
    and fitted again only when its width changes), and it paints its own text: a new
    message repaints the label alone, never lays out the figure again (a QLabel whose
    width is not fixed does, on every setText), and nothing jumps while a control is
    dragged. Without `width` it takes the width its layout gives it. Plain text unless
    `rich=True`."""

    def __init__(self, lines: int = 2, width: int | Callable[[], int] | None = None,
                 rich: bool = False) -> None:
        self._width = width
        self._warn = False
        self._least_height = 0
        self._fitted_width = -1
        super().__init__(lines, rich=rich, framed=False, margin=0)

    def _fit_font(self) -> None:
        """Width (when given), least height and bold follow the widget's font."""
        super()._fit_font()
        if self._width is not None:
            width = self._width() if callable(self._width) else self._width
            self.setFixedWidth(width)
            self._document.setTextWidth(width - 2 * self.frameWidth())
        font = QFont(self.font())
        font.setBold(self._warn)
        self._document.setDefaultFont(font)
        # The least height holds `lines` lines in bold too: a warning must not grow the
        # label (and shrink the plots, repainting them whole) by the bold font's extra pixel.
        bold = QFont(self.font())
        bold.setBold(True)
        sample = QTextDocument()
        sample.setDocumentMargin(0)
        sample.setDefaultFont(bold)
        sample.setPlainText("\n".join(["Xg"] * int(self._lines)))
        self._least_height = max(self._least_height, math.ceil(sample.size().height()) + 2)
        self._fit_height(grow_only=False)

    def show_message(self, text: str, warn: bool = False) -> None:
        """Cheap to call on every refresh: does nothing when text and warn are unchanged."""
        if warn != self._warn:
            self._warn = warn
            palette, font = QPalette(), QFont(self.font())
            if warn:
                palette.setColor(QPalette.WindowText, theme.text_color("highlight"))
            font.setBold(warn)
            self.setPalette(palette)
            self._document.setDefaultFont(font)
            self.update()
        if text != self.text():
            self.setText(text)
            self._fit_height(grow_only=True)

    def set_rich(self, rich: bool) -> None:
        """Take the messages that follow as HTML (True) or as plain text."""
        self._rich = rich

    def resizeEvent(self, event: object) -> None:  # noqa: N802
        super().resizeEvent(event)
        if self.width() != self._fitted_width:
            self._fitted_width = self.width()
            self._fit_height(grow_only=False)

    def _fit_height(self, grow_only: bool) -> None:
        needed = max(self._least_height, math.ceil(self._document.size().height()) + 2)
        # maximumHeight: the fixed height, set already while height() waits for the layout
        if needed > self.maximumHeight() or (needed < self.maximumHeight() and not grow_only):
            self.setFixedHeight(needed)


class TextTable(QWidget):
    """Rows of text cells painted by one widget: a muted header row, then rows each in one
    colour; numbers right-aligned, the columns named in `left` (words) left-aligned. Fixed
    height (`rows` body rows), so updates never relayout; an HTML table in a QLabel costs
    more than a whole refresh to lay out.

    Too narrow for its columns, the widest word column wraps its cells onto more lines
    (the height then grows, on a resize or when a longer text arrives); only a table that
    is still too wide is drawn smaller, never clipped."""

    PADDING = 6
    # A word column wraps only while it keeps this share of its one-line width (narrower,
    # it would take many lines: the table is drawn smaller instead).
    MIN_WRAP_SHARE = 0.3

    def __init__(self, header: Sequence[str], rows: int, accessible_name: str = "",
                 left: Sequence[int] = ()) -> None:
        super().__init__()
        self.header = list(header)
        self._left = frozenset(left)
        self.rows: list[tuple[list[str], QColor]] = []
        self.setAccessibleName(accessible_name)
        self._body_rows = rows
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Fixed)
        self.setAutoFillBackground(True)  # opaque: new rows repaint the table alone
        self._fit_font()

    def _fit_font(self) -> None:
        """Row height, fonts and column widths from the widget's font (at build and when
        the look or text size changes it)."""
        self._line = self.fontMetrics().height() + 1  # the row height of the HTML table
        self._header_font = QFont(self.font())
        self._header_font.setBold(True)
        self._text_height = QFontMetricsF(self.font()).height()
        self._widths = [0.0] * len(self.header)
        self._texts: dict[tuple[str, bool, float], tuple[QStaticText, float]] = {}
        self._lay_out()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.FontChange:
            self._fit_font()
            self.update()

    def resizeEvent(self, event: object) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._lay_out()

    def set_rows(self, rows: Sequence[tuple[Sequence[str], QColor]]) -> None:
        new = [(list(cells), QColor(color)) for cells, color in rows]
        shown = [(c, q.rgba()) for c, q in self.rows]
        wanted = [(c, q.rgba()) for c, q in new]
        if wanted == shown:
            return
        before = (self._column_widths(), self._lines)
        self.rows = new
        self._lay_out()
        if (self._column_widths(), self._lines) != before or len(wanted) != len(shown) or (
                self.painted_width() > self.width()):
            self.update()
            return
        # Same columns and lines: repaint the rows that changed (a fix toggled in 6.5
        # changes one or two numbers of a table that fills the width of the page).
        for row, (old, now) in enumerate(zip(shown, wanted, strict=True)):
            if old != now:
                self.update(self._row_rect(row + 1))

    def _row_rect(self, index: int) -> QRect:
        """The pixels of row `index` (0: the header), unscaled."""
        top = self._line * sum(self._lines[:index])
        return QRect(0, top, self.width(), self._line * self._lines[index])

    def text(self) -> str:
        """The table as tab-separated text (for tests and accessibility)."""
        lines = ["\t".join(self.header)] + ["\t".join(cells) for cells, _ in self.rows]
        return "\n".join(lines)

    def _lay_out(self) -> None:
        """Column widths (they grow to fit and never shrink, so numbers do not jump
        sideways), the wrapped column and its width when the widget is too narrow, the
        lines of each row, and the height they take (set again only when it changes)."""
        cells = [(self.header, self._header_font)] + [(row, self.font()) for row, _ in
                                                      self.rows]
        for texts, font in cells:
            for i, text in enumerate(texts[:len(self._widths)]):
                self._widths[i] = max(self._widths[i], self._static(text, font)[1])
        self._wrap, self._wrap_width = -1, 0.0
        natural = sum(self._widths) + 2 * self.PADDING * len(self._widths)
        if natural > self.width() > 0 and self._left:
            column = max(self._left, key=lambda i: self._widths[i])
            room = self.width() - (natural - self._widths[column])
            if room >= self.MIN_WRAP_SHARE * self._widths[column]:
                self._wrap, self._wrap_width = column, float(room)
        self._lines = [self._row_lines(texts, font) for texts, font in cells]
        height = self._line * (sum(self._lines) + self._body_rows + 1 - len(cells)) + 2
        if height != self.maximumHeight():
            self.setFixedHeight(height)

    def _row_lines(self, texts: Sequence[str], font: QFont) -> int:
        if self._wrap < 0 or self._wrap >= len(texts):
            return 1
        static, _ = self._static(texts[self._wrap], font, self._wrap_width)
        return max(1, round(static.size().height() / self._text_height))

    def _column_widths(self) -> list[float]:
        widths = list(self._widths)
        if self._wrap >= 0:
            widths[self._wrap] = self._wrap_width
        return widths

    def painted_width(self) -> float:
        """The width the columns take (wrapped), before any shrinking to the widget."""
        return sum(self._column_widths()) + 2 * self.PADDING * len(self._widths)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802
        painter = QPainter(self)
        widths = self._column_widths()
        x, rights = 0.0, []
        for width in widths:
            x += width + 2 * self.PADDING
            rights.append(x - self.PADDING)
        if x > self.width() > 0:  # too narrow even wrapped: shrink the table, never clip it
            painter.scale(self.width() / x, self.width() / x)
        top, exposed = 0, event.rect()
        for (cells, color), lines in zip([(self.header, None)] + self.rows, self._lines,
                                         strict=True):
            height = lines * self._line
            # Rows outside the repainted area are skipped (unscaled rows only).
            if x <= self.width() and not (top < exposed.bottom() + 1
                                          and exposed.top() < top + height):
                top += height
                continue
            font = self._header_font if color is None else self.font()
            painter.setFont(font)
            painter.setPen(theme.color("muted") if color is None else color)
            self._row(painter, cells, font, widths, rights, top)
            top += height
        painter.end()

    def _static(self, text: str, font: QFont, wrap: float = -1.0,
                ) -> tuple[QStaticText, float]:
        """The cell's text laid out once (drawText lays it out on every paint), wrapped
        at `wrap` pixels when given."""
        key = (text, font.bold(), wrap)
        if key not in self._texts:
            if len(self._texts) > 4096:
                self._texts.clear()
            static = laid_out(text, font, plain=False, width=wrap)
            self._texts[key] = (static, QFontMetricsF(font).horizontalAdvance(text))
        return self._texts[key]

    def _row(self, painter: QPainter, cells: Sequence[str], font: QFont,
             widths: list[float], rights: list[float], top: int) -> None:
        top += (self._line - self._text_height) / 2
        for column, (text, right) in enumerate(zip(cells, rights, strict=False)):
            wrapped = column == self._wrap
            static, width = self._static(text, font, self._wrap_width if wrapped else -1.0)
            x = right - widths[column] if column in self._left else right - width
            painter.drawStaticText(QPointF(x, top), static)
