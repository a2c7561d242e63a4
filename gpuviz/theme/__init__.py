"""Colours by meaning, pens and fonts. Views ask for a role ("compute", "memory"), never
for a colour, so the projector look changes the palette and not the views."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication

# Okabe & Ito (2008), the colour-blind-safe categorical list, for ranks and series.
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
             "#999999")


@dataclass(frozen=True, eq=False)
class Theme:
    name: str
    background: str
    panel: str
    text: str
    muted: str
    grid: str
    roles: dict[str, str]
    line_scale: float = 1.0
    font_scale: float = 1.0
    series: tuple[str, ...] = field(default=OKABE_ITO)


# The meanings every figure shares (see the design): work is blue, idle hardware violet,
# memory/HBM orange, on-chip storage yellow, network aqua, highlight or warning magenta.
DARK = Theme(
    name="dark",
    background="#16181d",
    panel="#1f2229",
    text="#e8e8ea",
    muted="#9aa0ab",
    grid="#3a3f4a",
    roles={
        "compute": "#4ba3f0",
        "compute_light": "#a8d1f7",
        "idle": "#9b7fe0",
        "memory": "#f09a2a",
        "memory_light": "#f6c98e",
        "onchip": "#ecd43c",
        "network": "#35c9c0",
        "highlight": "#ef3fa3",
        "neutral": "#7d838f",
    },
)

LIGHT = Theme(
    name="light",
    background="#ffffff",
    panel="#f3f4f6",
    text="#1b1d22",
    muted="#5b606b",
    grid="#d5d8de",
    roles={
        "compute": "#1f6fc4",
        "compute_light": "#8fbbe9",
        "idle": "#7a55c7",
        "memory": "#d9770b",
        "memory_light": "#f1bd80",
        "onchip": "#b89b00",
        "network": "#0f9e96",
        "highlight": "#d41b86",
        "neutral": "#8a8f99",
    },
)

# For projectors: white background, dark text, saturated colours, thick lines, big type.
PROJECTOR = Theme(
    name="projector",
    background="#ffffff",
    panel="#ffffff",
    text="#000000",
    muted="#333333",
    grid="#bbbbbb",
    roles={
        "compute": "#0057b8",
        "compute_light": "#6fa3e0",
        "idle": "#6a3fc0",
        "memory": "#e06900",
        "memory_light": "#f2a860",
        "onchip": "#a88c00",
        "network": "#008a82",
        "highlight": "#cc0077",
        "neutral": "#666666",
    },
    line_scale=2.0,
    font_scale=1.5,
)

THEMES = {t.name: t for t in (DARK, LIGHT, PROJECTOR)}
_current = DARK
_text_scale = 1.0


def current() -> Theme:
    return _current


def color(role: str, alpha: int = 255) -> QColor:
    """The colour of a role ("compute", "memory", ...) or of a theme field ("text")."""
    return QColor(_color(_current, role, alpha))


@functools.cache
def _color(theme: Theme, role: str, alpha: int) -> QColor:
    qcolor = QColor(theme.roles.get(role) or getattr(theme, role))
    qcolor.setAlpha(alpha)
    return qcolor


def ui_scale() -> float:
    """How much larger than normal text and the widths that hold it are drawn."""
    return _current.font_scale * _text_scale


def series(index: int) -> QColor:
    return QColor(_current.series[index % len(_current.series)])


def line_width(base: float = 2.0) -> float:
    return base * _current.line_scale


def font(point_size: float = 10.0, bold: bool = False) -> QFont:
    qfont = QFont()
    qfont.setPointSizeF(point_size * _current.font_scale)
    qfont.setBold(bold)
    return qfont


def apply(name: str, app: QApplication | None = None, text_scale: float = 1.0) -> Theme:
    """Make `name` the current theme: Qt palette and base font. Plots read the theme when
    they are built (gpuviz.core.plots), so views built afterwards follow it."""
    global _current, _text_scale
    _current = THEMES.get(name, DARK)
    _text_scale = text_scale
    app = app or QApplication.instance()
    if app is not None:
        palette = QPalette()
        bg, panel, text = QColor(_current.background), QColor(_current.panel), QColor(
            _current.text)
        for role, value in (
            (QPalette.Window, panel), (QPalette.Base, bg), (QPalette.AlternateBase, panel),
            (QPalette.Text, text), (QPalette.WindowText, text), (QPalette.ButtonText, text),
            (QPalette.Button, panel), (QPalette.ToolTipBase, panel), (QPalette.ToolTipText, text),
            (QPalette.Highlight, QColor(_current.roles["compute"])),
            (QPalette.HighlightedText, QColor("#ffffff")),
            (QPalette.PlaceholderText, QColor(_current.muted)),
        ):
            palette.setColor(role, value)
        palette.setColor(QPalette.Disabled, QPalette.Text, QColor(_current.muted))
        palette.setColor(QPalette.Disabled, QPalette.WindowText, QColor(_current.muted))
        palette.setColor(QPalette.Disabled, QPalette.ButtonText, QColor(_current.muted))
        app.setPalette(palette)
        base = QFont(app.font())
        base.setPointSizeF(10.0 * _current.font_scale * text_scale)
        app.setFont(base)
    return _current


def resolve(name: str, app: QApplication | None = None) -> str:
    """A theme name; "system" follows the desktop's light or dark preference."""
    if name in THEMES:
        return name
    app = app or QApplication.instance()
    if app is not None and app.styleHints().colorScheme() == Qt.ColorScheme.Light:
        return LIGHT.name
    return DARK.name
