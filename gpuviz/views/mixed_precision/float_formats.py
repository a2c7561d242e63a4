"""Figure 5.1: a typed value stored in a float format: bits, neighbours, range."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QRectF, Qt

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import signed, superscript
from gpuviz.core.plots import (
    CellGrid,
    Dots,
    Legend,
    curve,
    diagram_widget,
    opaque_blend,
    pen,
)
from gpuviz.core.text import TextLayer
from gpuviz.models.mixed_precision import FORMATS, exact_decimal, power_text, value_text

WIDTH = 34.0  # diagram units across
BIT_TOP, BIT_HEIGHT = 1.2, 1.3
LINE_Y = 6.6  # the number line
DIAGRAM_HEIGHT = 9.2
LINE_LEFT, LINE_RIGHT = 3.0, 31.0
ROW_HEIGHT = 0.62
STRIP_LEFT, STRIP_RIGHT = 16.0, 100.0  # the strip's bars, in canvas units
MAX_TICKS = 9
BITS_WIDTH = 29.0  # canvas units for 32 bits, leaving room for the sign label
FEW_BITS_WIDTH = 6.0  # canvas units per bit of a format under 8 bits
FIELD_ROLE = {"sign": "neutral", "exponent": "compute", "mantissa": "memory"}


def _log2(value: float) -> float:
    return math.log2(value) if value > 0 else -math.inf


class FloatFormatsView(FigureView):
    def build(self) -> None:
        self.controls.add("fmt")
        self.controls.add("value")

        widget, box = diagram_widget()
        box.setAspectLocked(False)
        box.setRange(xRange=(0, WIDTH), yRange=(0, DIAGRAM_HEIGHT), padding=0)
        self.diagram = widget
        self.bits = CellGrid(font_size=9)
        box.addItem(self.bits)
        self.line = curve(box, pen("text", 1.5))  # baseline and ticks, one path
        self.points = Dots(box, 2 * 2 + 1, 9, theme.color("text"))
        self.stored_dot = Dots(box, 1, 15, theme.color("compute"), pen("text", 1.0))
        self.typed_line = curve(box, pen("highlight", 2.0, Qt.DashLine))
        labels = TextLayer(QRectF(0, 0, WIDTH, DIAGRAM_HEIGHT), keep_inside=True)
        self.field_labels = [labels.add(role=FIELD_ROLE[name], size=9, bold=True,
                                        anchor=(0.5, 1)) for name in FIELD_ROLE]
        self.formula = labels.add(size=9, anchor=(0.5, 0))
        # Close neighbours' values would run together on a small screen: every other one.
        # On plates: the dashed typed line passes behind them, not through them.
        self.value_labels = [labels.add(size=8, anchor=(0.5, 1), give_way=True, plate=True)
                             for _ in range(5)]
        self.ulp_labels = [labels.add(role="muted", size=8, anchor=(0.5, 0), give_way=True)
                           for _ in range(4)]
        self.typed_label = labels.add(role="highlight", size=9, bold=True, anchor=(0.5, 1))
        self.line_title = labels.add("representable neighbours (ulp under each gap)",
                                     role="muted", size=8, anchor=(0, 1))
        self.line_title.setPos(0.3, LINE_Y - 2.1)
        box.addItem(labels)
        # The key of the range strip, just above it.
        strip_key = Legend(box, anchor=(0, 1), columns=3, offset=2)
        strip_key.add_box("normal range", theme.color("compute"))
        strip_key.add_box("subnormal (fewer bits)", theme.color("compute_light"))
        strip_key.add_box("lost: 0 or inf", theme.color("highlight"))
        self.add_plot(widget, 3)

        # The range strip: one row per format on a log2 scale. Drawn on a diagram canvas
        # with its own ticks: its range changes with the format, and re-ranging a plot's
        # axes and grid cost more than the 8 ms budget on a slow machine.
        strip, strip_box = diagram_widget()
        strip_box.setAspectLocked(False)
        rows = len(FORMATS)
        strip_box.setRange(xRange=(0, STRIP_RIGHT), yRange=(-0.9, rows + 0.6), padding=0)
        self.grid = curve(strip_box, pen("grid", 1.0))
        self.zones = CellGrid()
        strip_box.addItem(self.zones)
        self.marker = curve(strip_box, pen("text", 2.0))
        self.strip_labels = TextLayer(QRectF(0, -0.9, STRIP_RIGHT, rows + 1.5),
                                      keep_inside=True)
        for row, f in enumerate(FORMATS.values()):
            self.strip_labels.add(f.label, size=9, anchor=(1, 0.5)).setPos(STRIP_LEFT - 0.5, row)
        self.tick_labels = [self.strip_labels.add(size=8, anchor=(0.5, 0))
                            for _ in range(MAX_TICKS)]
        self.marker_label = self.strip_labels.add(size=9, bold=True, anchor=(-0.1, 0))
        strip_box.addItem(self.strip_labels)
        self.strip = strip
        self._range_key: str | None = None
        self._scale = (0.0, 1.0)
        self.add_plot(strip, 2)

    def refresh(self) -> None:
        out = self.model.out
        self._draw_bits(out)
        self._draw_line(out)
        self._draw_strip(out)
        text, warn = self.model.comment()
        self.message.show_message(text, warn)

    # --- bits ---------------------------------------------------------------------------
    def _draw_bits(self, out: object) -> None:
        fmt = out.fmt
        # A 4-bit format gets wider cells: its field names need room above 1 or 2 bits.
        width = min(2.5 if fmt.bits >= 8 else FEW_BITS_WIDTH, BITS_WIDTH / fmt.bits)
        left = max(WIDTH - BITS_WIDTH - 0.5, (WIDTH - width * fmt.bits) / 2)
        fields = [("sign", out.sign_bits), ("exponent", out.exponent_bits),
                  ("mantissa", out.mantissa_bits)]
        rects, fills, texts = [], [], []
        x = left
        for (name, bits), label in zip(fields, self.field_labels, strict=True):
            start = x
            for bit in bits:
                rects.append((x + 0.04, BIT_TOP, width - 0.08, BIT_HEIGHT))
                fills.append(theme.color(FIELD_ROLE[name]))
                texts.append(bit)
                x += width
            count = len(bits)
            label.setText({"sign": "sign", "exponent": f"exponent ({count}, bias {fmt.bias})",
                           "mantissa": f"mantissa ({count})"}[name])
            if name == "sign":  # left of its bit: one narrow cell has no room above
                label.setAnchor((1, 0.5))
                label.setPos(start - 0.2, BIT_TOP + BIT_HEIGHT / 2)
            else:
                label.setPos((start + x) / 2, BIT_TOP - 0.1)
        self.bits.set_cells(np.array(rects), fills, texts=texts,
                            text_color=theme.color("background"))
        self.formula.setText(self._decoded(out))
        self.formula.setPos(WIDTH / 2, BIT_TOP + BIT_HEIGHT + 0.2)

    @staticmethod
    def _decoded(out: object) -> str:
        """The bits read back: (−1)ˢ × 2ᴱ⁻ᵇⁱᵃˢ × 1.m, or what the pattern means."""
        fmt = out.fmt
        e = int(out.exponent_bits, 2)
        sign = "−" if out.sign_bits == "1" else "+"
        if math.isnan(out.stored):
            return "a NaN pattern: not a number"
        if math.isinf(out.stored):
            return f"{sign}inf: exponent all ones, mantissa zero"
        if e == 0:
            if int(out.mantissa_bits or "0", 2) == 0:
                return f"{sign}0: exponent and mantissa all zero"
            head = (f"{sign} 2{superscript(1 - fmt.bias)} × 0.{out.mantissa_bits}₂ (subnormal: "
                    "exponent field 0) =")
        else:
            head = f"{sign} 2{superscript(e)}⁻{superscript(fmt.bias)} × 1.{out.mantissa_bits}₂ ="
        tail = f"{exact_decimal(out.stored)} exactly"
        return head + ("\n" if len(head) + len(tail) > 56 else " ") + tail

    # --- the number line ----------------------------------------------------------------
    def _draw_line(self, out: object) -> None:
        points = [*reversed(out.below)]
        if math.isfinite(out.stored) and not math.isnan(out.value):
            points.append(out.stored)
        points += out.above
        points = sorted(set(points))
        typed = out.value
        shown = len(points) >= 2
        if not shown:
            self.line.set_data([], [])
            self.points.set_points([math.nan] * 5, [math.nan] * 5)
            self.stored_dot.set_points([math.nan], [math.nan])
            self.typed_line.set_data([], [])
            for label in (*self.value_labels, *self.ulp_labels):
                label.setText("")
            self.typed_label.setText("")
            return
        low, high = points[0], points[-1]
        span = high - low

        def place(v: float) -> float:
            return LINE_LEFT + (v - low) / span * (LINE_RIGHT - LINE_LEFT)

        xs = [place(v) for v in points]
        path_x, path_y = [LINE_LEFT - 2, LINE_RIGHT + 2], [LINE_Y, LINE_Y]
        for x in xs:
            path_x += [math.nan, x, x]
            path_y += [math.nan, LINE_Y - 0.35, LINE_Y + 0.35]
        self.line.set_data(path_x, path_y)
        pad = [math.nan] * (5 - len(xs))
        self.points.set_points(xs + pad, [LINE_Y] * len(xs) + pad)
        stored_x = place(out.stored) if math.isfinite(out.stored) else math.nan
        self.stored_dot.set_points([stored_x], [LINE_Y])
        for i, label in enumerate(self.value_labels):
            if i < len(points):
                label.setText(value_text(points[i]),
                              theme.color("compute" if points[i] == out.stored else "text"))
                label.setPos(xs[i], LINE_Y - 0.45)
            else:
                label.setText("")
        for i, label in enumerate(self.ulp_labels):
            if i + 1 < len(points):
                label.setText(power_text(points[i + 1] - points[i]))
                label.setPos((xs[i] + xs[i + 1]) / 2, LINE_Y + 0.45)
            else:
                label.setText("")
        if math.isfinite(typed):
            x = place(typed)
            note = ""
            if x > LINE_RIGHT + 1.5:
                x, note = LINE_RIGHT + 1.5, " →"
            elif x < LINE_LEFT - 1.5:
                x, note = LINE_LEFT - 1.5, "← "
        else:
            x = LINE_RIGHT + 1.5 if typed > 0 else LINE_LEFT - 1.5
            note = ""
        self.typed_line.set_data([x, x], [LINE_Y - 1.5, LINE_Y + 0.3])
        text = f"typed {value_text(typed)}"
        self.typed_label.setText(f"{note.strip()} {text}" if note.startswith("←")
                                 else text + note)
        self.typed_label.setPos(x, LINE_Y - 1.55)

    # --- the range strip ----------------------------------------------------------------
    def _draw_strip(self, out: object) -> None:
        fmt = out.fmt
        rows = len(FORMATS)
        if self._range_key != fmt.key:
            self._range_key = fmt.key
            low = math.floor(_log2(fmt.min_subnormal)) - 5
            high = math.ceil(_log2(fmt.max)) + 3
            per = (STRIP_RIGHT - STRIP_LEFT) / (high - low)
            self._scale = (STRIP_LEFT - low * per, per)  # x = offset + per * log2
            step = next(s for s in (1, 2, 4, 8, 16, 32, 64) if (high - low) / s <= MAX_TICKS - 1)
            ticks = list(range(math.ceil(low / step) * step, high + 1, step))
            xs, ys = [], []
            for k, label in zip(ticks + [None] * MAX_TICKS, self.tick_labels, strict=False):
                if k is None:
                    label.setText("")
                    continue
                x = self._x(k)
                xs += [x, x, math.nan]
                ys += [-0.6, rows - 0.4, math.nan]
                label.setText(f"2{superscript(k)}")
                label.setPos(x, rows - 0.42)
            self.grid.set_data(xs, ys)
            rects, fills = [], []
            for row, f in enumerate(FORMATS.values()):
                edges = [_log2(f.min_subnormal / 2), _log2(f.min_normal),
                         _log2(f.overflow_threshold)]
                xs = [STRIP_LEFT, *(min(max(self._x(e), STRIP_LEFT), STRIP_RIGHT)
                                    for e in edges), STRIP_RIGHT]
                strong = 255 if f is fmt else 110
                height = ROW_HEIGHT if f is fmt else ROW_HEIGHT * 0.6
                for i, role in enumerate(("highlight", "compute_light", "compute",
                                          "highlight")):
                    rects.append((xs[i], row - height / 2, xs[i + 1] - xs[i], height))
                    fills.append(opaque_blend(role, strong))
            self.zones.set_cells(np.array(rects), fills)
        magnitude = abs(out.value)
        if math.isfinite(magnitude) and magnitude > 0:
            x = min(max(self._x(_log2(magnitude)), STRIP_LEFT + 0.3), STRIP_RIGHT - 0.3)
            self.marker.set_data([x, x], [-0.6, rows - 0.4])
            self.marker_label.setText(f"log₂|typed| = {signed(f'{_log2(magnitude):.2f}')}")
            self.marker_label.setPos(x, -0.85)
        else:
            self.marker.set_data([], [])
            self.marker_label.setText("")

    def _x(self, log2_value: float) -> float:
        offset, per = self._scale
        return offset + per * log2_value
