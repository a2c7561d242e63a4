"""Native controls bound to model parameters, and the column that holds them.

Widget-to-model updates go through `model.set`; model-to-widget updates (reset, command
line, another control) happen in `sync()` under a QSignalBlocker, so there are no loops."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QSignalBlocker, Qt
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from gpuviz import theme
from gpuviz.core.model import FigureModel, Parameter, decimal_places, format_value

LOG_SLIDER_STEPS = 1000
_DIGITS = re.compile(r"\d")
_TRAILING_ZEROS = re.compile(r"(\.\d*?[1-9])0+(?!\d)|\.0+(?!\d)")
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
        # a ratio the two places of every ratio (4.00 × d, not 4.0000 × d for steps of
        # 1/16), fixed where its step allows (0.05 × target, not the 0.05000 × target of
        # format_value's significant digits below 0.1).
        fractional = p.step and not p.log and not float(p.step).is_integer()
        places = decimal_places(p.step) if fractional else None
        self._decimals = (places if not p.unit.startswith("×") else
                          2 if places is not None and places <= 2 else None)
        self.label = QLabel(p.label)
        self.value_label = QLabel()
        self.value_label.setTextFormat(Qt.PlainText)
        self.value_label.setAlignment(Qt.AlignRight | Qt.AlignVCenter)
        # Opaque, as the slider: a drag repaints the two alone, not the column beneath.
        self.value_label.setAutoFillBackground(True)
        fix_size(self.value_label, lambda: max(
            self.value_label.fontMetrics().horizontalAdvance(
                self.shown(v) + "00") for v in (p.minimum, p.maximum, -1.5)))
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setAutoFillBackground(True)
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
        text = format_value(value, self.param.unit, digits=4, decimals=self._decimals)
        if self.param.log and self._decimals is None and not self.param.unit.startswith("×"):
            # A log slider's value has four significant digits, less its trailing zeros
            # ("0.1 B params" at its least, not "0.1000 B params"; "7 B" stays; a ratio
            # keeps the places of every ratio, 1.00×).
            text = _TRAILING_ZEROS.sub(r"\1", text, count=1)
        return text


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


class ChoiceButton(QPushButton):
    """A checkable push button that paints itself checked in the "compute" colour.

    Not by a style sheet: setting or clearing a button's sheet on every choice restyled it
    and repainted the page's caption as well (13.1's case buttons at ratio 2: a p95 of
    5.4 ms, 4.0 painted so); the pixels are those the sheet
    `QPushButton:checked { background-color; color; border: 1px solid }` gave, at every
    look and ratio. An unchecked button is Fusion's, drawn from its pixmap cache. A checked
    one with the keyboard focus gets a ring in its text colour (the sheet showed none)."""

    def paintEvent(self, event: object) -> None:  # noqa: N802
        if not self.isChecked():
            super().paintEvent(event)
            return
        selected = theme.color("compute")
        ink = theme.readable_on(selected)
        painter = QPainter(self)
        painter.fillRect(self.rect(), selected)
        inside = self.rect().adjusted(1, 1, -1, -1)  # inside the sheet's 1 px border
        painter.setPen(ink)
        if self.hasFocus():
            painter.drawRect(inside.adjusted(1, 1, -2, -2))
        painter.setClipRect(inside)
        painter.setFont(self.font())
        painter.drawText(inside, Qt.AlignCenter, self.text())


class ChoiceButtons(BoundControl):
    """Exclusive push buttons for a few choices that are worth seeing at once."""

    def __init__(self, model: FigureModel, name: str, parent: QWidget | None = None) -> None:
        super().__init__(model, name, parent)
        self.group = QButtonGroup(self)
        self.group.setExclusive(True)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.setSpacing(2)
        self.buttons: dict[str, ChoiceButton] = {}
        for value, label in self.param.choices:
            button = ChoiceButton(label)
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
        self._share_width()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.FontChange:  # a new look's font comes after look.changed
            self._share_width()

    def set_labels(self, texts: dict[object, str]) -> None:
        """The buttons' texts by value (they may have lines, e.g. a count under the name);
        the row is shared out again once, and only when a text changed."""
        changed = False
        for value, text in texts.items():
            if self.buttons[value].text() != text:
                self.buttons[value].setText(text)
                changed = True
        if changed:
            self._share_width()

    def _share_width(self) -> None:
        """The buttons share the row by their widest line: a longer text is not cut at
        both ends while a short one has room to spare. Digits are measured as zeros, so
        a count that changes while a slider moves (1.1's levels) leaves the buttons where
        they are until it gains a digit: a new share lays out the row and repaints every
        button at its new size (0.5 ms a change at 1920x1080), and the buttons jumped.
        They are as tall as the tallest: a text of two lines stands no taller than its
        neighbours."""
        height = max(button.sizeHint().height() for button in self.buttons.values())
        for button in self.buttons.values():
            if (button.minimumHeight(), button.maximumHeight()) != (height, height):
                button.setFixedHeight(height)
        layout = self.layout()
        for index, button in enumerate(self.buttons.values()):
            metrics = button.fontMetrics()
            widest = max(metrics.horizontalAdvance(_DIGITS.sub("0", line))
                         for line in button.text().split("\n"))
            stretch = widest + metrics.averageCharWidth() * 2
            if layout.stretch(index) != stretch:  # setStretch lays the row out again
                layout.setStretch(index, stretch)

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


class TypedEntry(BoundControl):
    """A label, a field to type in and, under it, the reason typed text was refused."""

    def _stack(self, title: str, field: QWidget) -> None:
        field.setAccessibleName(self.param.label)
        field.setToolTip(self.toolTip())
        self.error = error_label()
        label = QLabel(title)
        label.setBuddy(field)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.setSpacing(1)
        layout.addWidget(label)
        layout.addWidget(field)
        layout.addWidget(self.error)

    def _accept(self, convert: Callable[[str], object], text: str) -> None:
        """Set the parameter to convert(text), or say inline why the text is refused (the
        model keeps its value)."""
        try:
            value = convert(text)
        except ValueError as error:
            self.error.setText(f"Not accepted: {error}")
            self.error.show()
            return
        self.error.hide()
        self.model.set(self.name, value)


class NumberEntry(TypedEntry):
    """Typed entry of a number; text that is not an allowed number is refused inline."""

    def __init__(self, model: FigureModel, name: str, parent: QWidget | None = None) -> None:
        super().__init__(model, name, parent)
        self.edit = QLineEdit()
        self._stack(f"{self.param.label} ({self.param.unit})" if self.param.unit
                    else self.param.label, self.edit)
        self.edit.editingFinished.connect(self._on_edit)
        self.sync()

    def _on_edit(self) -> None:
        text = self.edit.text().strip().replace(",", "").replace("_", "")
        self._accept(self.param.parse, text)

    def sync(self) -> None:
        if not self.edit.hasFocus():
            with QSignalBlocker(self.edit):
                value = self.model.get(self.name)
                whole = float(value).is_integer() and abs(value) < 1e15
                text = f"{value:,.0f}" if whole else f"{value:g}"
                if text != self.edit.text():  # setText resets the cursor and repaints
                    self.edit.setText(text)


class ExpressionEntry(TypedEntry):
    """Free text for a parameter with `free_text` (a typed number or expression), with its
    examples in the drop-down list. Text the parameter refuses is refused inline: the
    reason shows under the field and the model keeps its value."""

    def __init__(self, model: FigureModel, name: str, parent: QWidget | None = None) -> None:
        super().__init__(model, name, parent)
        self.combo = Combo()
        self.combo.setEditable(True)
        self.combo.setInsertPolicy(QComboBox.NoInsert)
        for value, label in self.param.choices:
            self.combo.addItem(label, value)
        self._stack(self.param.label, self.combo)
        self.combo.lineEdit().editingFinished.connect(self._on_edit)
        self.combo.activated.connect(self._on_pick)
        self.combo.currentIndexChanged.connect(self._on_pick)
        self.sync()

    def _on_pick(self, index: int) -> None:
        if index >= 0:
            self._accept(self.param.coerce, self.combo.itemData(index))

    def _on_edit(self) -> None:
        self._accept(self.param.coerce, self.combo.lineEdit().text())

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
