"""Native controls bound to model parameters, and the panels every figure shares.

Widget-to-model updates go through `model.set`; model-to-widget updates (reset, command
line, another control) happen in `sync()` under a QSignalBlocker, so there are no loops.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QObject, QPoint, QPointF, QRectF, QSignalBlocker, Qt
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QColor,
    QFont,
    QFontMetricsF,
    QGuiApplication,
    QPainter,
    QPalette,
    QStaticText,
    QTextDocument,
    QTransform,
)
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QSizePolicy,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from gpuviz import theme
from gpuviz.core.model import AnimatedModel, FigureModel, Parameter, decimal_places, format_value

LOG_SLIDER_STEPS = 1000
CONTROL_COLUMN_WIDTH = 330  # pixels at text scale 1; the projector theme scales it


def fix_size(label: QLabel, width: int | Callable[[], int]) -> None:
    """Fix a label's size: Qt then skips re-laying out the figure when its text changes.
    When the label's font changes (a new look or text size), the height is measured again,
    and the width too when it is given as a function (of the label's new metrics)."""
    refit = label.findChild(_Refit)
    if refit is None:
        refit = _Refit(label)
        label.installEventFilter(refit)
    refit.width = width
    refit.fit()


class _Refit(QObject):
    """fix_size's watcher: fixes its label's size again when the label's font changes."""

    def __init__(self, label: QLabel) -> None:
        super().__init__(label)
        self.label = label
        self.width: int | Callable[[], int] = 0

    def fit(self) -> None:
        width = self.width() if callable(self.width) else self.width
        self.label.setFixedSize(width, self.label.fontMetrics().height() + 2)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched is self.label and event.type() == QEvent.FontChange:
            self.fit()
        return False


class Combo(QComboBox):
    """A QComboBox that measures itself again when its font changes: Qt forgets the size
    hint then but keeps the minimum size hint of the old font, so a combo box would stay
    as tall as in a larger look it left."""

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.FontChange:
            style_change = QEvent(QEvent.StyleChange)  # clears both cached hints
            QComboBox.changeEvent(self, style_change)
            self.updateGeometry()


def _tooltip(param: Parameter) -> str:
    parts = [param.help] if param.help else []
    parts.append(param.allowed().capitalize())
    return "\n".join(parts)


class BoundControl(QWidget):
    """Base of the controls that show and edit one parameter."""

    def __init__(self, model: FigureModel, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.name = name
        self.param = model.parameter(name)
        self.setToolTip(_tooltip(self.param))
        self.setAccessibleName(self.param.label)

    def sync(self) -> None:
        raise NotImplementedError


class ParameterSlider(BoundControl):
    """Label, slider and the current value with its unit; linear or logarithmic."""

    def __init__(self, model: FigureModel, name: str, parent: QWidget | None = None) -> None:
        super().__init__(model, name, parent)
        p = self.param
        # A slider in fractional steps shows as many places as its step: 0.05 -> "0.50";
        # a ratio has the places of every ratio (format_value: 4.00 × d, not 4.0000 × d).
        self._decimals = (decimal_places(p.step) if p.step and not p.log
                          and not float(p.step).is_integer() and not p.unit.startswith("×")
                          else None)
        self.label = QLabel(p.label)
        self.value_label = QLabel()
        self.value_label.setTextFormat(Qt.PlainText)
        self.value_label.setAlignment(Qt.AlignRight | Qt.AlignVCenter)
        fix_size(self.value_label, lambda: max(
            self.value_label.fontMetrics().horizontalAdvance(
                self.shown(v) + "00") for v in (p.minimum, p.maximum, -1.5)))
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setFocusPolicy(Qt.StrongFocus)
        self.slider.setAccessibleName(p.label)
        self.slider.setToolTip(self.toolTip())
        if p.log:
            self._positions = LOG_SLIDER_STEPS
        elif p.step:
            self._positions = max(1, round((p.maximum - p.minimum) / p.step))
        elif p.kind is int:
            self._positions = int(p.maximum - p.minimum)
        else:
            self._positions = LOG_SLIDER_STEPS
        self.slider.setRange(0, self._positions)
        self.slider.setPageStep(max(1, self._positions // 10))
        self.slider.valueChanged.connect(self._on_slider)
        self.label.setBuddy(self.slider)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.setSpacing(1)
        top = QHBoxLayout()
        top.addWidget(self.label)
        top.addStretch(1)
        top.addWidget(self.value_label)
        layout.addLayout(top)
        layout.addWidget(self.slider)
        self.sync()

    def value_at(self, position: int) -> float:
        p = self.param
        fraction = position / self._positions
        if p.log:
            low, high = math.log(p.minimum), math.log(p.maximum)
            return math.exp(low + fraction * (high - low))
        return p.minimum + fraction * (p.maximum - p.minimum)

    def position_of(self, value: float) -> int:
        p = self.param
        if p.log:
            low, high = math.log(p.minimum), math.log(p.maximum)
            fraction = (math.log(max(value, p.minimum)) - low) / (high - low)
        else:
            fraction = (value - p.minimum) / (p.maximum - p.minimum)
        return round(fraction * self._positions)

    def _on_slider(self, position: int) -> None:
        self.model.set(self.name, self.value_at(position))
        self.sync()

    def sync(self) -> None:
        value = self.model.get(self.name)
        with QSignalBlocker(self.slider):
            self.slider.setValue(self.position_of(value))
        self.value_label.setText(self.shown(value))

    def shown(self, value: float) -> str:
        return format_value(value, self.param.unit, digits=4, decimals=self._decimals)


class ChoiceBox(BoundControl):
    """A labelled combo box for a parameter with named choices."""

    def __init__(self, model: FigureModel, name: str, parent: QWidget | None = None) -> None:
        super().__init__(model, name, parent)
        self.combo = Combo()
        self.combo.setAccessibleName(self.param.label)
        self.combo.setToolTip(self.toolTip())
        for value, label in self.param.choices:
            self.combo.addItem(label, value)
        self.combo.currentIndexChanged.connect(self._on_index)
        label = QLabel(self.param.label)
        label.setBuddy(self.combo)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.addWidget(label)
        layout.addWidget(self.combo, 1)
        self.sync()

    def _on_index(self, index: int) -> None:
        if index >= 0:
            self.model.set(self.name, self.combo.itemData(index))

    def sync(self) -> None:
        with QSignalBlocker(self.combo):
            self.combo.setCurrentIndex(self.combo.findData(self.model.get(self.name)))


class ChoiceButtons(BoundControl):
    """Exclusive push buttons for a few choices that are worth seeing at once."""

    def __init__(self, model: FigureModel, name: str, parent: QWidget | None = None) -> None:
        super().__init__(model, name, parent)
        self.group = QButtonGroup(self)
        self.group.setExclusive(True)
        self._restyle()
        # Qt keeps the font a widget with a style sheet (and its buttons) had when the
        # sheet was set: set it again when the look (or the lecture scale) changes.
        theme.look.changed.connect(self._restyle)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.setSpacing(2)
        self.buttons: dict[str, QPushButton] = {}
        for value, label in self.param.choices:
            button = QPushButton(label)
            button.setCheckable(True)
            button.setMinimumWidth(24)  # five or six choices must fit the control column
            button.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
            button.setToolTip(f"{self.param.label}: {label}")
            button.setAccessibleName(f"{self.param.label}: {label}")
            button.clicked.connect(lambda _=False, v=value: self.model.set(self.name, v))
            self.group.addButton(button)
            self.buttons[value] = button
            layout.addWidget(button)
        self.sync()

    def _restyle(self) -> None:
        selected = theme.color("compute")
        self.setStyleSheet(f"QPushButton:checked {{ background-color: {selected.name()}; "
                           f"color: {theme.readable_on(selected).name()}; "
                           f"border: 1px solid {selected.name()}; }}")

    def sync(self) -> None:
        current = self.model.get(self.name)
        for value, button in self.buttons.items():
            with QSignalBlocker(button):
                button.setChecked(value == current)


class ToggleBox(BoundControl):
    """A check box for a boolean parameter."""

    def __init__(self, model: FigureModel, name: str, parent: QWidget | None = None) -> None:
        super().__init__(model, name, parent)
        self.box = QCheckBox(self.param.label)
        self.box.setToolTip(self.toolTip())
        self.box.setAccessibleName(self.param.label)
        self.box.toggled.connect(lambda checked: self.model.set(self.name, checked))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.addWidget(self.box)
        self.sync()

    def sync(self) -> None:
        with QSignalBlocker(self.box):
            self.box.setChecked(bool(self.model.get(self.name)))


def error_label() -> QLabel:
    """A hidden wrapping label in the warning colour, for text refused inline (a palette,
    not a style sheet: a style sheet would keep the font of the look it was set in)."""
    label = QLabel()
    label.setWordWrap(True)
    palette = label.palette()
    palette.setColor(QPalette.WindowText, theme.text_color("highlight"))
    label.setPalette(palette)
    label.hide()
    return label


class NumberEntry(BoundControl):
    """Typed entry of a number; text that is not an allowed number is refused inline."""

    def __init__(self, model: FigureModel, name: str, parent: QWidget | None = None) -> None:
        super().__init__(model, name, parent)
        self.edit = QLineEdit()
        self.edit.setAccessibleName(self.param.label)
        self.edit.setToolTip(self.toolTip())
        self.error = error_label()
        label = QLabel(f"{self.param.label} ({self.param.unit})" if self.param.unit
                       else self.param.label)
        label.setBuddy(self.edit)
        self.edit.editingFinished.connect(self._on_edit)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.setSpacing(1)
        layout.addWidget(label)
        layout.addWidget(self.edit)
        layout.addWidget(self.error)
        self.sync()

    def _on_edit(self) -> None:
        text = self.edit.text().strip().replace(",", "").replace("_", "")
        try:
            value = self.param.parse(text)
        except ValueError as error:
            self.error.setText(f"Not accepted: {error}")
            self.error.show()
            return
        self.error.hide()
        self.model.set(self.name, value)

    def sync(self) -> None:
        if not self.edit.hasFocus():
            with QSignalBlocker(self.edit):
                value = self.model.get(self.name)
                whole = float(value).is_integer() and abs(value) < 1e15
                text = f"{value:,.0f}" if whole else f"{value:g}"
                if text != self.edit.text():  # setText resets the cursor and repaints
                    self.edit.setText(text)


class ExpressionEntry(BoundControl):
    """Free text for a parameter with `free_text` (a typed number or expression), with its
    examples in the drop-down list. Text the parameter refuses is refused inline: the
    reason shows under the field and the model keeps its value."""

    def __init__(self, model: FigureModel, name: str, parent: QWidget | None = None) -> None:
        super().__init__(model, name, parent)
        self.combo = Combo()
        self.combo.setEditable(True)
        self.combo.setInsertPolicy(QComboBox.NoInsert)
        self.combo.setAccessibleName(self.param.label)
        self.combo.setToolTip(self.toolTip())
        for value, label in self.param.choices:
            self.combo.addItem(label, value)
        self.error = error_label()
        label = QLabel(self.param.label)
        label.setBuddy(self.combo)
        self.combo.lineEdit().editingFinished.connect(self._on_edit)
        self.combo.activated.connect(self._on_pick)
        self.combo.currentIndexChanged.connect(self._on_pick)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.setSpacing(1)
        layout.addWidget(label)
        layout.addWidget(self.combo)
        layout.addWidget(self.error)
        self.sync()

    def _on_pick(self, index: int) -> None:
        if index >= 0:
            self._accept(self.combo.itemData(index))

    def _on_edit(self) -> None:
        self._accept(self.combo.lineEdit().text())

    def _accept(self, text: str) -> None:
        try:
            value = self.param.coerce(text)
        except ValueError as error:
            self.error.setText(f"Not accepted: {error}")
            self.error.show()
            return
        self.error.hide()
        self.model.set(self.name, value)

    def sync(self) -> None:
        if self.combo.lineEdit().hasFocus():
            return
        value = self.model.get(self.name)
        with QSignalBlocker(self.combo):
            index = self.combo.findData(value)
            if index != self.combo.currentIndex() and index >= 0:
                self.combo.setCurrentIndex(index)
            if self.combo.lineEdit().text() != value:
                self.combo.lineEdit().setText(value)
                self.error.hide()  # the refused text is gone (Reset, another control)


def control_for(model: FigureModel, name: str, style: str | None = None) -> BoundControl:
    """The natural control for a parameter: slider, combo box, buttons, check box, entry."""
    param = model.parameter(name)
    if style == "buttons":
        return ChoiceButtons(model, name)
    if style == "entry":
        return NumberEntry(model, name)
    if param.free_text is not None:
        return ExpressionEntry(model, name)
    if param.kind is bool:
        return ToggleBox(model, name)
    if param.kind is str:
        return ChoiceBox(model, name)
    return ParameterSlider(model, name)


class ControlPanel(QWidget):
    """The column of a figure's controls; `add` builds and binds one by parameter name."""

    def __init__(self, model: FigureModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.controls: list[BoundControl] = []
        self.layout_ = QVBoxLayout(self)
        self.layout_.setContentsMargins(0, 0, 0, 0)
        self.layout_.setSpacing(4)

    def add(self, name: str, style: str | None = None) -> BoundControl:
        control = control_for(self.model, name, style)
        self.controls.append(control)
        self.layout_.addWidget(control)
        return control

    def add_widget(self, widget: QWidget) -> QWidget:
        self.layout_.addWidget(widget)
        return widget

    def add_grid(self, names: tuple[str, ...], columns: int = 2) -> list[BoundControl]:
        """Short controls (check boxes) side by side, row by row, so that a long list of
        switches does not push the readouts out of a lecture-size column."""
        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(self.layout_.spacing())
        added = []
        for index, name in enumerate(names):
            control = control_for(self.model, name, None)
            self.controls.append(control)
            grid.addWidget(control, *divmod(index, columns))
            added.append(control)
        for column in range(columns):
            grid.setColumnStretch(column, 1)
        self.layout_.addLayout(grid)
        return added

    def sync(self) -> None:
        for control in self.controls:
            control.sync()


class TimeControls(QWidget):
    """Play/Pause, Step, Rewind and speed for an AnimatedModel."""

    SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0)

    def __init__(self, model: AnimatedModel, parent: QWidget | None = None,
                 step_label: str = "Step") -> None:
        super().__init__(parent)
        self.model = model
        self.play = QPushButton("Play")
        self.play.setToolTip("Play or pause the animation (Space)")
        self.play.clicked.connect(model.toggle_playing)
        self.step = QPushButton(step_label)
        self.step.setToolTip("Advance by one step")
        self.step.clicked.connect(model.step)
        self.rewind = QPushButton("Rewind")
        self.rewind.setToolTip("Back to the start, keeping the settings")
        self.rewind.clicked.connect(model.rewind)
        self.speed = Combo()
        self.speed.setToolTip("Animation speed")
        self.speed.setAccessibleName("Speed")
        for factor in self.SPEEDS:
            self.speed.addItem(f"{factor:g}×", factor)
        self.speed.currentIndexChanged.connect(
            lambda i: model.set("speed", self.speed.itemData(i)) if i >= 0 else None)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        for widget in (self.play, self.step, self.rewind, self.speed):
            layout.addWidget(widget)
        model.playing_changed.connect(self.sync)
        self.sync()

    def sync(self, *_: object) -> None:
        self.play.setText("Pause" if self.model.playing else "Play")
        with QSignalBlocker(self.speed):
            index = self.speed.findData(self.model.speed)
            self.speed.setCurrentIndex(index if index >= 0 else self.SPEEDS.index(1.0))


class ReadoutPanel(QFrame):
    """Label: value unit, for every readout of the model, updated in place.

    The values are plain labels, copied through the context menu or the main window's
    Copy readouts (Ctrl+Alt+C): a mouse-selectable
    label rebuilds a text document on every new value (~0.3 ms each, measured)."""

    def __init__(self, model: FigureModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.setFrameShape(QFrame.StyledPanel)
        self.setContextMenuPolicy(Qt.CustomContextMenu)
        self.customContextMenuRequested.connect(self._show_copy_menu)
        self.form = QFormLayout(self)
        self.form.setContentsMargins(8, 6, 8, 6)
        self.form.setHorizontalSpacing(12)
        self.form.setVerticalSpacing(1)
        self.rows: dict[str, tuple[QLabel, QLabel]] = {}
        self.shown: dict[str, str | None] = {}
        self.name_width = self.value_width = 0
        # The values end at the panel's right edge, with or without the column's scroll
        # bar: the widths follow the panel's own (see resizeEvent), which may shrink.
        self._panel_width = int(CONTROL_COLUMN_WIDTH * theme.ui_scale())
        self.setMinimumWidth(1)
        self._names: list[str] = []
        self.sync()

    def sync(self) -> None:
        readouts = self.model.readouts()
        if list(readouts) != list(self.rows):
            self._build_rows(readouts)
        names = [readout.label for readout in readouts.values()]
        if names != self._names:
            self._names = names
            needed = max((self.fontMetrics().horizontalAdvance(name) for name in names),
                         default=0) + 2
            if needed > self.name_width:  # grow for a longer name, never shrink
                self._set_column_widths(needed)
        for (key, readout), label in zip(readouts.items(), names, strict=True):
            name, value = self.rows[key]
            if name.text() != label:
                name.setText(label)
            text = readout.text
            if self.shown[key] != text:
                self.shown[key] = text
                shortened = value.fontMetrics().elidedText(text, Qt.ElideRight,
                                                           self.value_width)
                value.setText(shortened)
                tip = text if shortened != text else ""  # the full text, when shortened
                if value.toolTip() != tip:
                    value.setToolTip(tip)

    def _build_rows(self, readouts: dict[str, object]) -> None:
        while self.form.rowCount():
            self.form.removeRow(0)
        self.rows, self.shown, self.name_width, self._names = {}, {}, 0, []
        for key in readouts:
            name, value = QLabel(), QLabel()
            for label in (name, value):
                label.setTextFormat(Qt.PlainText)
            value.setAlignment(Qt.AlignRight | Qt.AlignVCenter)
            self.form.addRow(name, value)
            self.rows[key] = (name, value)
            self.shown[key] = None

    def _set_column_widths(self, name_width: int) -> None:
        """Fixed-size labels: a new value or name then repaints its label alone instead
        of laying out the column again."""
        margins = self.form.contentsMargins()
        self.name_width = name_width
        self.value_width = max(60, self._panel_width - 2 * self.frameWidth()
                               - name_width - self.form.horizontalSpacing()
                               - margins.left() - margins.right() - 4)
        for name, value in self.rows.values():
            fix_size(name, name_width)
            fix_size(value, self.value_width)
        for key in self.shown:
            self.shown[key] = None  # elide again at the new width

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.FontChange and self.rows:
            # A new look or text size: measure the names again, from nothing.
            self.name_width, self._names = 0, []
            for key in self.shown:
                self.shown[key] = None
            self.sync()

    def resizeEvent(self, event: object) -> None:  # noqa: N802
        super().resizeEvent(event)
        if self.width() != self._panel_width:
            self._panel_width = self.width()
            if self.name_width:
                self._set_column_widths(self.name_width)
                self.sync()

    def texts(self) -> dict[str, str]:
        return {key: text or "" for key, text in self.shown.items()}

    def row_text(self, key: str) -> str:
        return f"{self.rows[key][0].text()}\t{self.shown[key]}"

    def _show_copy_menu(self, position: QPoint) -> None:
        menu = QMenu(self)
        under_mouse = self.childAt(position)
        for key, (name, value) in self.rows.items():
            if under_mouse in (name, value):
                menu.addAction(f"Copy {name.text()}", lambda key=key: QGuiApplication
                               .clipboard().setText(self.row_text(key)))
        menu.addAction("Copy all readouts", self.copy_all)
        menu.exec(self.mapToGlobal(position))

    def copy_all(self) -> None:
        """Every readout as "label<TAB>value unit" lines on the clipboard."""
        QGuiApplication.clipboard().setText("\n".join(self.row_text(key) for key in self.rows))


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
    more than a whole refresh to lay out."""

    PADDING = 6

    def __init__(self, header: Sequence[str], rows: int, accessible_name: str = "",
                 left: Sequence[int] = ()) -> None:
        super().__init__()
        self.header = list(header)
        self._left = frozenset(left)
        self.rows: list[tuple[list[str], QColor]] = []
        self.setAccessibleName(accessible_name)
        self._body_rows = rows
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Fixed)
        self._fit_font()

    def _fit_font(self) -> None:
        """Row height, fonts and column widths from the widget's font (at build and when
        the look or text size changes it)."""
        self._line = self.fontMetrics().height() + 1  # the row height of the HTML table
        self.setFixedHeight(self._line * (self._body_rows + 1) + 2)
        self._header_font = QFont(self.font())
        self._header_font.setBold(True)
        self._text_height = QFontMetricsF(self.font()).height()
        self._widths = [0.0] * len(self.header)
        self._texts: dict[tuple[str, bool], tuple[QStaticText, float]] = {}

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.FontChange:
            self._fit_font()
            self.update()

    def set_rows(self, rows: Sequence[tuple[Sequence[str], QColor]]) -> None:
        new = [(list(cells), QColor(color)) for cells, color in rows]
        if [(c, q.rgba()) for c, q in new] != [(c, q.rgba()) for c, q in self.rows]:
            self.rows = new
            self.update()

    def text(self) -> str:
        """The table as tab-separated text (for tests and accessibility)."""
        lines = ["\t".join(self.header)] + ["\t".join(cells) for cells, _ in self.rows]
        return "\n".join(lines)

    def paintEvent(self, event: object) -> None:  # noqa: N802
        painter = QPainter(self)
        header = [self._static(h, self._header_font) for h in self.header]
        body = [([self._static(cell, self.font()) for cell in cells], color)
                for cells, color in self.rows]
        # Columns grow to fit and never shrink, so numbers do not jump sideways.
        for cells in [header] + [cells for cells, _ in body]:
            for i, (_, width) in enumerate(cells[:len(self._widths)]):
                self._widths[i] = max(self._widths[i], width)
        x, rights = 0.0, []
        for width in self._widths:
            x += width + 2 * self.PADDING
            rights.append(x - self.PADDING)
        if x > self.width() > 0:  # too narrow for the columns: shrink the table, never clip it
            painter.scale(self.width() / x, self.width() / x)
        painter.setFont(self._header_font)
        painter.setPen(theme.color("muted"))
        self._row(painter, header, rights, 0)
        painter.setFont(self.font())
        for r, (cells, color) in enumerate(body, start=1):
            painter.setPen(color)
            self._row(painter, cells, rights, r)
        painter.end()

    def _static(self, text: str, font: QFont) -> tuple[QStaticText, float]:
        """The cell's text laid out once (drawText lays it out on every paint)."""
        key = (text, font.bold())
        if key not in self._texts:
            if len(self._texts) > 4096:
                self._texts.clear()
            static = QStaticText(text)
            static.prepare(QTransform(), font)
            self._texts[key] = (static, QFontMetricsF(font).horizontalAdvance(text))
        return self._texts[key]

    def _row(self, painter: QPainter, cells: Sequence[tuple[QStaticText, float]],
             rights: list[float], row: int) -> None:
        top = row * self._line + (self._line - self._text_height) / 2
        for column, ((static, width), right) in enumerate(zip(cells, rights, strict=False)):
            x = (right - self._widths[column] if column in self._left
                 else right - width)
            painter.drawStaticText(QPointF(x, top), static)


class PredictReveal(QFrame):
    """Predict first: the learner sets a guess (a parameter), presses Reveal (a boolean
    parameter), and sees guess and answer side by side. The model clears `revealed`
    whenever the guess changes, so a new guess hides the answer again."""

    def __init__(self, model: FigureModel, guess: str, revealed: str,
                 answer_text: Callable[[], str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.revealed = revealed
        self.answer_text = answer_text
        self.setFrameShape(QFrame.StyledPanel)
        self.guess = control_for(model, guess)
        self.button = QPushButton("Reveal")
        self.button.setToolTip("Show the answer next to your guess")
        self.button.clicked.connect(lambda: model.set(revealed, True))
        self.result = MessageLabel(
            width=lambda: int((CONTROL_COLUMN_WIDTH - 40) * theme.ui_scale()))
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("<b>Predict first</b>"))
        layout.addWidget(self.guess)
        layout.addWidget(self.button)
        layout.addWidget(self.result)
        self.sync()

    def sync(self) -> None:
        self.guess.sync()
        shown = bool(self.model.get(self.revealed))
        self.button.setEnabled(not shown)
        self.result.show_message(self.answer_text() if shown else
                                 "Set your guess, then press Reveal.")
