"""Export a figure: PNG at a chosen scale, SVG, the clipboard, its numbers as CSV, and
its timeline as a Chrome trace.

Images carry what is needed to reproduce them: the figure number, the parameters (JSON)
and the caption, as PNG text chunks ("Figure", "Title", "Parameters", "Caption",
"Software") or as the SVG's <title> and <desc>. Reproduce one with
`gpuviz --figure N --set name=value ...`.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from html import unescape
from pathlib import Path
from typing import Any

from PySide6.QtCore import QPoint, QRect, QSize
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QApplication, QWidget

from gpuviz import __version__
from gpuviz.core.plots import markers_drawn_at
from gpuviz.core.trace import write_trace

SCALES = (1.0, 1.5, 2.0, 3.0, 4.0)
MIN_SCALE, MAX_SCALE = 0.5, 4.0
FORMATS = {".png": "PNG image", ".svg": "SVG drawing"}
CSV_FORMAT = {".csv": "CSV table"}


class ExportError(Exception):
    """An export that could not be written, with the reason."""


def plain_text(rich: str) -> str:
    """Caption rich text -> plain text (tags dropped, entities decoded)."""
    return " ".join(unescape(re.sub(r"<[^>]+>", "", rich)).split())


def _json_value(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def metadata(spec: Any, model: Any) -> dict[str, str]:
    parameters = {name: _json_value(v) for name, v in model.values().items()}
    return {
        "Figure": str(spec.number),
        "Title": f"Figure {spec.number}: {spec.title}",
        "Parameters": json.dumps(parameters, ensure_ascii=False, sort_keys=True),
        "Caption": plain_text(spec.caption),
        "Software": f"gpuviz {__version__}",
    }


def render_image(widget: QWidget, scale: float = 1.0) -> QImage:
    """The widget drawn into an image `scale` times its size (sharp, not upsampled)."""
    if not (math.isfinite(scale) and MIN_SCALE <= scale <= MAX_SCALE):
        raise ExportError(f"scale {scale} is out of range; allowed: {MIN_SCALE:g} to "
                          f"{MAX_SCALE:g}")
    size = widget.size()
    image = QImage(QSize(max(1, round(size.width() * scale)),
                         max(1, round(size.height() * scale))), QImage.Format_ARGB32)
    image.setDevicePixelRatio(scale)
    image.fill(widget.palette().window().color())
    painter = QPainter(image)
    try:
        with markers_drawn_at(widget, scale):
            widget.render(painter, QPoint(), QRect(QPoint(), size))
    finally:
        painter.end()
    return image


def export_png(widget: QWidget, path: Path, info: dict[str, str], scale: float = 1.0) -> QImage:
    image = render_image(widget, scale)
    for key, value in info.items():
        image.setText(key, value)
    if not image.save(str(path), "PNG"):
        raise ExportError(f"cannot write '{path}'")
    return image


def export_svg(widget: QWidget, path: Path, info: dict[str, str]) -> None:
    try:
        from PySide6.QtSvg import QSvgGenerator
    except ImportError as error:  # pragma: no cover - QtSvg ships with PySide6-Essentials
        raise ExportError(f"SVG export needs the QtSvg module ({error})") from None
    size = widget.size()
    generator = QSvgGenerator()
    generator.setFileName(str(path))
    generator.setSize(size)
    generator.setViewBox(QRect(QPoint(), size))
    generator.setTitle(info.get("Title", ""))
    generator.setDescription(
        "\n".join(f"{key}: {value}" for key, value in info.items() if key != "Title"))
    painter = QPainter()
    if not painter.begin(generator):
        raise ExportError(f"cannot write '{path}'")
    try:
        painter.fillRect(QRect(QPoint(), size), widget.palette().window().color())
        widget.render(painter, QPoint(), QRect(QPoint(), size))
    finally:
        painter.end()
    if not path.exists() or path.stat().st_size == 0:
        raise ExportError(f"cannot write '{path}'")


def export_image(widget: QWidget, path: Path, info: dict[str, str], scale: float = 1.0) -> None:
    suffix = path.suffix.lower()
    if suffix == ".svg":
        export_svg(widget, path, info)
    elif suffix == ".png":
        export_png(widget, path, info, scale)
    else:
        raise ExportError(f"'{path.name}': choose a name ending in .png or .svg")


def copy_image(widget: QWidget, info: dict[str, str], scale: float = 2.0) -> QImage:
    image = render_image(widget, scale)
    for key, value in info.items():
        image.setText(key, value)
    QApplication.clipboard().setImage(image)
    return image


def readouts_csv(spec: Any, model: Any) -> str:
    """The figure's parameters and readouts as CSV: kind, key, label, value, unit, and for
    readouts their total (a count out of one) and the text the window shows. A name has
    no value; a predict-first answer not revealed yet shows none either."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["figure", "kind", "key", "label", "value", "unit", "total", "text"])
    for name, param in model.parameters().items():
        writer.writerow([spec.number, "parameter", name, param.label,
                         _json_value(model.get(name)), param.unit, "", ""])
    for key, readout in model.readouts().items():
        entry = readout.json()
        value = None if readout.hidden else entry.get("value")
        writer.writerow([spec.number, "readout", key, readout.label, value, readout.unit,
                         entry.get("total"), readout.text])
    return buffer.getvalue()


def export_csv(spec: Any, model: Any, path: Path) -> None:
    try:
        path.write_text(readouts_csv(spec, model), encoding="utf-8")
    except OSError as error:
        raise ExportError(f"cannot write '{path}': {error.strerror or error}") from None


def export_trace(model: Any, path: Path) -> None:
    """The figure's timeline (its model's `trace()`) as a Chrome trace file."""
    trace = model.trace()
    if trace is None:
        raise ExportError("this figure has no timeline to save as a trace")
    try:
        write_trace(trace, path)
    except OSError as error:
        raise ExportError(f"cannot write '{path}': {error.strerror or error}") from None


def fill_colour(widget: QWidget) -> QColor:
    return widget.palette().window().color()
