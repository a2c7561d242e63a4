"""Figure 13.4: a small function's source lines with its kernels beside them (eager: one
per op; compiled: fused, coloured by graph), graph breaks as dashed lines, and on the
right the calls with new shapes: compile, recompile or reuse."""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFontMetricsF

from gpuviz import theme
from gpuviz.core.figure_view import FigureView
from gpuviz.core.model import plural
from gpuviz.core.plots import CellGrid, Segment, diagram_widget, pen, untouched
from gpuviz.core.text import TextLayer, wrap_lines
from gpuviz.core.widgets import PredictReveal
from gpuviz.models.profiling.compile import Call, CompileOut, Kernel, groupings

CODE_SIZE = 9  # points, the source lines and the boxes' texts
MAX_LINES = max(len(v.source) for v in groupings().variants.values())
MAX_BREAKS = max(len(v.breaks) for v in groupings().variants.values())
CALLS = len(groupings().variants[(False, False)].calls["auto"])
ROWS = [call.rows for call in groupings().variants[(False, False)].calls["auto"]]
X_COLUMNS = groupings().x_columns
STATUS_ROLES = {"compile": "compute", "recompile": "highlight", "reuse": "neutral",
                "eager": "neutral"}


def columns(kernels: tuple[Kernel, ...], host_reads: tuple[int, ...]
            ) -> list[tuple[int, int, int]]:
    """(column, first line, last line) of each kernel, then of each host read: each in
    the leftmost column where the rows of its lines are free, in the order they run."""
    taken: list[set[int]] = []
    spans = [(min(k.lines), max(k.lines)) for k in kernels] + [(n, n) for n in host_reads]
    placed = []
    for first, last in spans:
        rows = set(range(first, last + 1))
        column = next((c for c, used in enumerate(taken) if not used & rows), len(taken))
        if column == len(taken):
            taken.append(set())
        taken[column] |= rows
        placed.append((column, first, last))
    return placed


def _most_columns() -> int:
    return max(1 + max(c for c, _, _ in columns(kernels, v.host_reads))
               for v in groupings().variants.values() for kernels in (v.eager, v.compiled))


def call_text(call: Call, status: str) -> str:
    if status in ("reuse", "eager"):
        return "reuse" if status == "reuse" else "eager: no compile"
    shape = ", dynamic" if call.dynamic else ""
    return f"{status}: {plural(call.graphs_compiled, 'graph')}{shape}"


class CompileView(FigureView):
    step_label = "Next call"

    def build(self) -> None:
        self.controls.add("mode")
        self.controls.add_grid(("with_print", "with_if"), columns=2)
        self.controls.add("dynamic")
        self.predict = PredictReveal(self.model)
        self.controls.add_widget(self.predict)
        canvas, self.box = diagram_widget()
        self.box.setAspectLocked(False)
        self.cells = CellGrid(font_size=CODE_SIZE)
        self.box.addItem(self.cells)
        self.breaks = [Segment(pen("highlight", 1.5, Qt.DashLine)) for _ in range(MAX_BREAKS)]
        for segment in self.breaks:
            self.box.addItem(segment)
        self.text = TextLayer(QRectF(0, 0, 4000, 4000))
        self.numbers = [self.text.add(str(n + 1), role="muted", size=CODE_SIZE,
                                      anchor=(1, 0.5), mono=True) for n in range(MAX_LINES)]
        self.code = [self.text.add(size=CODE_SIZE, anchor=(0, 0.5), mono=True)
                     for _ in range(MAX_LINES)]
        # A break's label goes over its line or under it, where no box is (the host
        # reads on the break's own line; a kernel of the next graph under it).
        # Failing both, after the source line under it (or over it) where it is short.
        self.break_labels = [tuple(self.text.add("graph break", role="highlight", size=8,
                                                 anchor=anchor)
                                   for anchor in ((1, 0), (1, 1), (0, 0), (0, 1)))
                             for _ in range(MAX_BREAKS)]
        self.code_header = self.text.add("The function", size=CODE_SIZE, bold=True)
        self.kernel_header = self.text.add(size=CODE_SIZE, bold=True)
        self.calls_header = self.text.add(size=CODE_SIZE, bold=True)
        self.call_labels = [self.text.add(role="muted", size=CODE_SIZE, anchor=(0, 0.5))
                            for _ in range(CALLS)]
        self.box.addItem(self.text)
        self.box.sigResized.connect(self._resized)
        self.add_plot(canvas)
        self._most_columns = _most_columns()

    def _resized(self) -> None:
        self.forget_shown("layout")
        self.refresh()

    def _measure(self, width: float, height: float) -> dict[str, float]:
        """Pixel sizes of the layout, from the look's fonts and the canvas size (on a
        resize or look change). The calls stand right of the kernels where the width
        allows, else in a row under the function (a projector's large text); rows of
        1.7 to 3 lines of text as the height allows, the calls' boxes fill the width."""
        text = QFontMetricsF(theme.font(CODE_SIZE))
        mono = QFontMetricsF(theme.font(CODE_SIZE, mono=True))
        line = text.height()
        variants = groupings().variants.values()
        labels = [f"{len(k)} {kernel.label}" for v in variants for k in (v.eager, v.compiled)
                  for kernel in k] + ["host reads"]
        size = {"line": line, "pad": 0.6 * line, "gap": 0.3 * line, "width": width}
        size["top"] = size["pad"] + 1.6 * line
        size["numbers"] = size["pad"] + mono.horizontalAdvance("9")
        size["stripe"] = size["numbers"] + 0.4 * line
        size["code"] = size["stripe"] + 0.9 * line
        code_width = max(mono.horizontalAdvance(s) for v in variants for s in v.source)
        size["kernels"] = size["code"] + code_width + line
        # As wide as the widest label, narrower where the canvas is (a text that does
        # not fit its box is left out)
        room = (width - size["pad"] - size["kernels"]) / self._most_columns - size["gap"]
        size["column"] = max(line, min(max(text.horizontalAdvance(t) for t in labels) + line,
                                       room))
        size["calls"] = (size["kernels"] + self._most_columns * (size["column"] + size["gap"])
                         + 1.5 * line)
        size["call_label"] = text.horizontalAdvance(
            f"{CALLS}: x {max(ROWS)} × {X_COLUMNS}") + 0.6 * line
        widest = text.horizontalAdvance("recompile: 3 graphs, dynamic") + line
        size["stacked"] = size["calls"] + size["call_label"] + widest > width - size["pad"]
        # stacked: a header, the shapes and boxes of two lines of text under the function
        below = 7 * line if size["stacked"] else 0.0
        size["row"] = min(3 * line, max(1.7 * line, (height - size["top"] - size["pad"]
                                                       - below) / MAX_LINES))
        if size["stacked"]:
            size["calls_top"] = size["top"] + MAX_LINES * size["row"] + 0.6 * line
            size["call_box"] = (width - 2 * size["pad"] - (CALLS - 1) * size["gap"]) / CALLS
        else:
            size["call_box"] = max(widest, width - size["pad"] - size["calls"]
                                   - size["call_label"])
        return size

    def refresh(self) -> None:
        out: CompileOut = self.model.out
        m = self.model
        compiled, revealed = m.mode == "compiled", m.revealed
        look = (self.box.width(), self.box.height(), theme.font_factor())
        if self.needs_update("layout", look):
            self._size = self._measure(look[0], look[1])
            self.box.setRange(xRange=(0, max(look[0], 1)), yRange=(0, max(look[1], 1)),
                              padding=0)
            self.forget_shown("drawing")
        key = (id(out.variant), compiled, revealed, m.dynamic, out.calls_done)
        if self.needs_update("drawing", key):
            self._draw(out, compiled, revealed)
        self.predict.sync()
        self.message.show_message(self._describe(out, compiled, revealed),
                                  warn=compiled and "recompile" in out.statuses()[-1:])

    def _draw(self, out: CompileOut, compiled: bool, revealed: bool) -> None:
        s, variant = self._size, out.variant
        row, top = s["row"], s["top"]
        for n, (number, code) in enumerate(zip(self.numbers, self.code, strict=True)):
            shown = n < len(variant.source)
            number.setVisible(shown)
            code.setVisible(shown)
            if shown:
                y = top + (n + 0.5) * row
                number.setPos(s["numbers"], y)
                code.setText(variant.source[n])
                code.setPos(s["code"], y)
        self.code_header.setPos(s["code"], s["pad"])
        rects, fills, texts, outlines = [], [], [], []

        def box(x: float, first: int, last: int, width: float, fill: QColor, text: str,
                outline: QColor | None = None) -> None:
            rects.append((x, top + (first - 1 + 0.1) * row, width,
                          (last - first + 0.8) * row))
            fills.append(fill)
            texts.append(text)
            outlines.append(outline)

        if compiled:
            for g, lines in enumerate(variant.graphs):
                box(s["stripe"], min(lines), max(lines), 0.35 * s["line"], theme.series(g),
                    "")
        kernels = variant.compiled if compiled else variant.eager
        placed = columns(kernels, variant.host_reads)
        step = s["column"] + s["gap"]
        for n, (kernel, (column, first, last)) in enumerate(
                zip(kernels, placed[:len(kernels)], strict=True)):
            if compiled and not revealed:
                continue
            fill = theme.series(kernel.graph) if compiled else theme.color("compute")
            box(s["kernels"] + column * step, first, last, s["column"], fill,
                self._fitted(f"{n + 1} {kernel.label}", first, last, str(n + 1)))
        if compiled and not revealed:
            for lines in variant.graphs:
                box(s["kernels"], min(lines), max(lines), s["column"], untouched(), "?")
        for column, first, last in placed[len(kernels):]:
            box(s["kernels"] + column * step, first, last, s["column"],
                theme.color("highlight"), self._fitted("host reads", first, last, "host"))
        kind = "by graph" if compiled else "one per op"
        version = "" if s["stacked"] else f" (PyTorch {groupings().torch_version})"
        self.kernel_header.setText(f"Kernels, {kind}{version}")
        self.kernel_header.setPos(s["kernels"], s["pad"])
        right = min(s["kernels"] + self._most_columns * step, s["width"] - s["pad"])
        label_width = QFontMetricsF(theme.font(8)).horizontalAdvance("graph break") + 4

        def free(line: int) -> bool:  # no box on that line under the label
            return not any(first <= line <= last
                           and s["kernels"] + column * step < right
                           and s["kernels"] + column * step + s["column"] > right - label_width
                           for column, first, last in placed)

        mono = QFontMetricsF(theme.font(CODE_SIZE, mono=True))

        def after_code(line: int) -> float | None:  # where a label fits after the line
            if not 1 <= line <= len(variant.source):
                return None
            x = s["code"] + mono.horizontalAdvance(variant.source[line - 1]) + s["line"]
            return x if x + label_width <= s["kernels"] else None

        for n, (segment, labels) in enumerate(zip(self.breaks, self.break_labels,
                                                  strict=True)):
            shown = compiled and n < len(variant.breaks)
            segment.setVisible(shown)
            line = variant.breaks[n] if shown else 0
            y = top + line * row
            segment.set_line(s["stripe"], y, right if shown else s["stripe"], y)
            places = [(right, y + 2) if free(line + 1) else None,
                      (right, y - 2) if free(line) else None]
            places += [(x, y + dy) if x is not None else None
                       for x, dy in ((after_code(line + 1), 2), (after_code(line), -2))]
            chosen = next((i for i, place in enumerate(places) if place), 0)
            for i, label in enumerate(labels):
                label.setVisible(shown and i == chosen)
                label.setPos(*(places[i] or (right, y + 2)))
        self._draw_calls(out, rects, fills, texts, outlines)
        self.cells.set_cells(rects, fills, outlines=outlines, texts=texts)

    def _fitted(self, text: str, first: int, last: int, short: str) -> str:
        """A kernel's label as it fits its box (a narrow column: a projector's large text
        on a small screen): on one line, broken over two where the box is tall enough,
        or only its short form (the kernel's number), rather than left out."""
        s = self._size
        metrics = QFontMetricsF(theme.font(CODE_SIZE))
        room = s["column"] - 2  # the air CellGrid leaves beside a text
        if metrics.horizontalAdvance(text) <= room:
            return text
        wrapped = wrap_lines(text, room, metrics.horizontalAdvance)
        lines = wrapped.split("\n")
        height = (last - first + 0.8) * s["row"]
        if (len(lines) == 2 and len(lines) * metrics.height() <= height
                and max(metrics.horizontalAdvance(t) for t in lines) <= room):
            return wrapped
        return short

    def _draw_calls(self, out: CompileOut, rects: list, fills: list, texts: list,
                    outlines: list) -> None:
        """The calls: right of the kernels, a row each; stacked, side by side under the
        function, each box under its shape."""
        s = self._size
        statuses = out.statuses()
        dynamic = self.model.parameter("dynamic").choice_label(self.model.dynamic)
        version = f", PyTorch {groupings().torch_version}" if s["stacked"] else ""
        how = "eager" if out.eager else f"dynamic={dynamic}"
        self.calls_header.setText(f"Calls, {how}{version}")
        for n, (call, label) in enumerate(zip(out.calls, self.call_labels, strict=True)):
            label.setText(f"{n + 1}: x {call.rows} × {X_COLUMNS}")
            if s["stacked"]:
                x = s["pad"] + n * (s["call_box"] + s["gap"])
                label.setPos(x, s["calls_top"] + 2.2 * s["line"])
                rects.append((x, s["calls_top"] + 3 * s["line"], s["call_box"],
                              3.6 * s["line"]))
            else:
                label.setPos(s["calls"], s["top"] + (n + 0.5) * s["row"])
                rects.append((s["calls"] + s["call_label"], s["top"] + (n + 0.1) * s["row"],
                              s["call_box"], 0.8 * s["row"]))
            done = n < len(statuses)
            status = statuses[n] if done else ""
            fills.append(theme.color(STATUS_ROLES[status]) if done else untouched())
            text = call_text(call, status) if done else ""
            texts.append(text.replace(": ", "\n").replace(", ", "\n") if s["stacked"]
                         else text)
            latest = n == len(statuses) - 1
            outlines.append(theme.text_color("text") if latest else None)
        self.calls_header.setPos(s["pad"] if s["stacked"] else s["calls"],
                                 s["calls_top"] if s["stacked"] else s["pad"])

    @staticmethod
    def _describe(out: CompileOut, compiled: bool, revealed: bool) -> str:
        variant = out.variant
        if not compiled:
            text = (f"Eager: every op launches its own kernels, {len(variant.eager)} in all "
                    "(dropout alone is three on a CPU: draw the mask, scale it, multiply).")
        elif not revealed:
            text = "Guess how many kernels the compiled function runs, then press Reveal."
        elif variant.breaks:
            text = (f"{plural(len(variant.breaks), 'graph break')}: the host must read a "
                    f"value, so the compiled code stops there and the ops after it form a "
                    f"new graph with kernels of its own.")
        else:
            text = ("One graph: the matmul and the bias become one library call (addmm), "
                    "GeLU, dropout's multiply and the sum one generated kernel; dropout's "
                    "random numbers take two small kernels.")
        if not out.calls_done:
            return text + " Press Next call to call it with new shapes."
        n = out.calls_done
        if out.eager:
            return text + f" Call {n}: eager mode compiles nothing, whatever the shape."
        call = out.calls[n - 1]
        guard = f" (guard failed: {call.guard_failed})" if call.guard_failed else ""
        if call.guard_failed.startswith("2 <="):  # Dynamo's 0/1 specialisation
            guard += "; a size of 1 always gets a graph of its own"
        return text + f" Call {n}: {out.statuses()[-1]}{guard}."
