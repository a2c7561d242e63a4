"""Command line and start-up: `gpuviz`, `python -m gpuviz`.

Wrong input exits with status 2 and one line on stderr saying what was wrong and what is
allowed; never a traceback. `--list` and `--readout` need no window (and no pyqtgraph).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from gpuviz import __version__, figure_settings
from gpuviz.data import DataError
from gpuviz.figure_settings import STEP, SettingsError, apply_settings, make_model

USAGE_ERROR = 2
MIN_SIZE, MAX_SIZE = 320, 7680
THEME_NAMES = ("system", "dark", "light", "projector")


class UsageError(Exception):
    """Input the user typed that we refuse, with the sentence that says why."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see gpuviz --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gpuviz",
        description="Interactive figures that teach GPU and LLM-systems performance.",
        epilog="Examples:\n"
               "  gpuviz --figure 1.3\n"
               "  gpuviz --figure 1.3 --set threads_per_block=1024 "
               "--set registers_per_thread=65 --readout\n"
               "  gpuviz --figure 6.3 --set step=end --screenshot walk.png\n"
               "  gpuviz --figure 1.3 --screenshot occupancy.png --size 1600x1000 "
               "--theme projector",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--figure", metavar="L.F",
                        help="open at figure L.F (lesson.figure), e.g. 1.3")
    parser.add_argument("--set", metavar="NAME=VALUE", action="append", default=[],
                        help="set a parameter of the figure (repeatable); step=N or "
                             "step=end opens an animated figure at that step")
    parser.add_argument("--readout", action="store_true",
                        help="print the figure's parameters and numbers as JSON and exit")
    parser.add_argument("--screenshot", metavar="PNG", type=Path,
                        help="render the figure offscreen to a PNG file and exit")
    parser.add_argument("--trace", metavar="JSON", type=Path,
                        help="save the figure's timeline as a Chrome trace (Perfetto, "
                             "chrome://tracing) and exit")
    parser.add_argument("--open-trace", metavar="JSON", type=Path,
                        help="show a Chrome trace (as torch.profiler writes it) in figure "
                             "13.1; with --readout, print its numbers")
    parser.add_argument("--size", metavar="WxH", default="1280x800",
                        help="screenshot size in pixels (default 1280x800)")
    parser.add_argument("--theme", choices=THEME_NAMES, default=None,
                        help="colour theme (default: the saved one, else follow the system)")
    parser.add_argument("--import", metavar="FILE", dest="imports", type=Path,
                        action="append", default=[],
                        help="add a GPU (TOML), a model (Hugging Face config.json) or "
                             "nccl-tests output for this run (repeatable); alone, print "
                             "what each file holds as JSON")
    parser.add_argument("--list", action="store_true",
                        help="print the lessons and figures and exit")
    parser.add_argument("--questions", metavar="L",
                        help="print lesson L's worked questions with the answers the "
                             "figures compute, as JSON, and exit")
    lecture = parser.add_argument_group("lecture mode")
    lecture.add_argument("--present", action="store_true",
                         help="start in lecture mode: projector theme, full screen, "
                              "PageDown/PageUp step, B blanks, Space plays, Esc leaves")
    lecture.add_argument("--playlist", metavar="L.F,...",
                         help="the figures to step through, in order: numbers separated "
                              "by commas, or a playlist file")
    kiosk = parser.add_argument_group(
        "kiosk mode", "full screen, no menus, no export, no quitting; the operator leaves "
                      "with Ctrl+Alt+Shift+Q (and the PIN, if the config sets one)")
    kiosk.add_argument("--kiosk", action="store_true", help="start in kiosk mode")
    kiosk.add_argument("--lessons", metavar="RANGE",
                       help="only these lessons, e.g. 1-4 or 1,3,5-6")
    kiosk.add_argument("--idle-reset", metavar="SECONDS",
                       help="seconds without input before the start-over countdown "
                            "(default 120; 0 never)")
    kiosk.add_argument("--config", metavar="TOML", type=Path,
                       help="kiosk settings file (lessons, idle_reset, countdown, attract, "
                            "pin, theme); command-line options win")
    parser.add_argument("--reset-settings", action="store_true",
                        help="forget every saved setting (figure values, theme, window) "
                             "and exit")
    parser.add_argument("--version", action="version", version=f"gpuviz {__version__}")
    return parser


def parse_size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise UsageError(f"--size '{text}' is not WIDTHxHEIGHT, e.g. 1600x1000") from None
    if not (MIN_SIZE <= width <= MAX_SIZE and MIN_SIZE <= height <= MAX_SIZE):
        raise UsageError(f"--size {text}: each side must be from {MIN_SIZE} to {MAX_SIZE}")
    return width, height


def resolve_figure(number: str | None):  # noqa: ANN201 - FigureSpec
    from gpuviz import catalog

    if number is None:
        return None
    try:
        return catalog.figure(number)
    except KeyError as error:
        raise UsageError(error.args[0]) from None


def parse_settings(spec, assignments: list[str]) -> dict[str, Any]:  # noqa: ANN001
    """--set NAME=VALUE (and step=N or step=end) checked against the figure."""
    try:
        return figure_settings.parse_settings(spec, assignments)
    except SettingsError as error:
        raise UsageError(f"--set {error}") from None


def _json_value(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def readout_json(spec, model) -> dict[str, Any]:  # noqa: ANN001
    """The figure's parameters and readouts; an animated one's step and steps too (steps
    is null for a figure that cannot count them in advance)."""
    position = {"step": model.current_step, "steps": model.steps} if spec.animated else {}
    return {
        "figure": spec.number,
        "parameters": {name: _json_value(v) for name, v in model.values().items()},
        **position,
        "readouts": {key: r.json() for key, r in model.readouts().items()},
    }


def list_text() -> str:
    from gpuviz import catalog

    lines = []
    for lesson in catalog.LESSONS:
        suffix = "" if lesson.figures else "  (not built yet)"
        lines.append(f"Lesson {lesson.number}: {lesson.title}{suffix}")
        for spec in lesson.figures:
            lines.append(f"  {spec.number:<5} {spec.title}")
    return "\n".join(lines)


def questions_json(lesson: str) -> list[dict[str, Any]]:
    """--questions L: the lesson's questions, each answered by its figure's model."""
    from gpuviz import questions

    try:
        number = int(lesson)
    except ValueError:
        raise UsageError(f"--questions '{lesson}' is not a lesson number; lessons: "
                         f"{', '.join(map(str, questions.lesson_numbers()))}") from None
    try:
        return questions.questions_json(number)
    except questions.QuestionError as error:
        raise UsageError(f"--questions: {error}") from None


def render_screenshot(spec, model, path: Path, size: tuple[int, int],  # noqa: ANN001
                      theme_name: str) -> None:
    """Render one figure offscreen (no window appears) and save it as PNG."""
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtWidgets import QApplication

    quiet_offscreen_warnings()

    from gpuviz import theme
    from gpuviz.core.figure_view import FigurePage

    app = QApplication.instance() or QApplication([])
    theme.apply(theme.resolve(theme_name, app), app)
    page = FigurePage(spec, model, spec.make_view(model))
    page.resize(*size)
    page.show()
    for _ in range(3):
        app.processEvents()
    if not page.grab().save(str(path), "PNG"):
        raise UsageError(f"cannot write the screenshot to '{path}'")


def save_trace(spec, model, path: Path) -> None:  # noqa: ANN001
    """The figure's timeline as a Chrome trace file (no window)."""
    from gpuviz import catalog, export
    from gpuviz.core.trace import has_trace

    if not has_trace(model):
        with_timeline = [s.number for s in catalog.all_figures()
                         if has_trace(s.make_model())]
        raise UsageError(f"figure {spec.number} has no timeline to save as a trace; "
                         f"figures with one: {', '.join(with_timeline)}")
    try:
        export.export_trace(model, path)
    except export.ExportError as error:
        raise UsageError(f"--trace: {error}") from None


def trace_figure(spec):  # noqa: ANN001, ANN201 - FigureSpec
    """The figure --open-trace shows a trace in: 13.1, given or not."""
    from gpuviz.trace_reading import PUZZLE_FIGURE

    if spec is not None and spec.number != PUZZLE_FIGURE:
        raise UsageError(f"--open-trace shows a trace in figure {PUZZLE_FIGURE}, "
                         f"not {spec.number}")
    return resolve_figure(PUZZLE_FIGURE)


def open_trace_file(model, path: Path) -> None:  # noqa: ANN001
    """Read a trace into 13.1's model (no window)."""
    from gpuviz.trace_reading import TraceError, read_profile

    try:
        model.open_trace(path.name, read_profile(path))
    except TraceError as error:
        raise UsageError(f"--open-trace {error}") from None


def quiet_offscreen_warnings() -> None:
    """Drop the offscreen platform's warnings about window hints it cannot honour
    (harmless when rendering offscreen); every other Qt message still goes to stderr."""
    from PySide6.QtCore import qInstallMessageHandler

    qInstallMessageHandler(_print_unless_size_hints)


def _print_unless_size_hints(mode, context, message: str) -> None:  # noqa: ANN001
    if "propagateSizeHints" not in message:
        print(message, file=sys.stderr)


def check_data() -> list[str]:
    """Load the shipped data once, and the user's GPUs and models; return warnings for
    files that had to be left out."""
    from gpuviz.data.hardware import load_gpus, load_problems
    from gpuviz.imports import load_user_folder

    load_gpus()
    return [str(problem) for problem in (*load_problems(), *load_user_folder())]


def import_files(paths: list[Path]) -> list[dict[str, Any]]:
    """--import: add each file for this run; what each holds, as JSON."""
    from gpuviz.imports import import_file

    try:
        return [import_file(path).json() for path in paths]
    except DataError as error:
        raise UsageError(f"--import: {error}") from None


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.list:
            print(list_text())
            return 0
        if args.questions is not None:
            print(json.dumps(questions_json(args.questions), indent=2, ensure_ascii=False))
            return 0
        if args.reset_settings:
            from gpuviz import state

            path = state.reset_all()
            print(f"gpuviz: settings cleared ({path})")
            return 0
        size = parse_size(args.size)
        warnings = check_data()
        for warning in warnings:
            print(f"gpuviz: warning: {warning} (left out)", file=sys.stderr)
        imported = import_files(args.imports)
        if imported and not (args.figure or args.present or args.playlist or args.kiosk):
            print(json.dumps(imported, indent=2, ensure_ascii=False))
            return 0
        spec = resolve_figure(args.figure)
        if args.open_trace is not None:
            spec = trace_figure(spec)
        if (args.readout or args.screenshot or args.trace or args.set) and spec is None:
            raise UsageError("--set, --readout, --screenshot and --trace need --figure L.F")
        values = parse_settings(spec, args.set) if spec else {}
        playlist = parse_playlist_option(args.playlist)
        # The kiosk keeps the step: it goes back there when it starts over.
        kiosk = parse_kiosk(args, spec, values.pop(STEP, None) if args.kiosk and spec
                            and spec.animated else None)
        if kiosk is not None and (args.present or playlist):
            raise UsageError("--kiosk cannot be combined with --present or --playlist")
        if args.readout or args.screenshot or args.trace:
            model = make_model(spec, values)
            if args.open_trace is not None:
                open_trace_file(model, args.open_trace)
            if args.trace:
                save_trace(spec, model, args.trace)
            if args.screenshot:
                render_screenshot(spec, model, args.screenshot, size, args.theme or "dark")
            if args.readout:
                print(json.dumps(readout_json(spec, model), indent=2, ensure_ascii=False))
            return 0
    except UsageError as error:
        print(f"gpuviz: error: {error}", file=sys.stderr)
        return USAGE_ERROR
    except DataError as error:
        print(f"gpuviz: error: broken data file: {error}", file=sys.stderr)
        return USAGE_ERROR
    except BrokenPipeError:
        # The reader left early (`gpuviz --readout ... | head`): no traceback, and
        # nothing more for Python to flush into the closed pipe at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    opening = {"trace_file": args.open_trace} if args.open_trace else {}
    return run_window(spec, values, args.theme, warnings, present=args.present,
                      playlist=playlist, kiosk=kiosk, **opening)


def parse_playlist_option(text: str | None):  # noqa: ANN201 - list[PlaylistEntry], None
    """--playlist: figure numbers separated by commas, or the path of a playlist file."""
    if text is None:
        return None
    from gpuviz.playlist import PlaylistError, parse_playlist, read_playlist

    path = Path(text)
    try:
        if path.suffix and path.is_file():
            return read_playlist(path)
        return parse_playlist(text)
    except PlaylistError as error:
        raise UsageError(f"--playlist: {error}") from None


def parse_kiosk(args: argparse.Namespace, spec=None, step=None):  # noqa: ANN001, ANN201
    """The kiosk settings (a KioskConfig, or None) from --config, then --lessons,
    --idle-reset, --figure and its --set step (where it starts); checked fully here so a
    bad value stops before any window opens."""
    if not args.kiosk:
        if args.lessons or args.idle_reset is not None or args.config:
            raise UsageError("--lessons, --idle-reset and --config need --kiosk")
        return None
    from gpuviz.kiosk import KioskConfig, KioskConfigError, config_from_mapping, load_config

    try:
        config = load_config(args.config) if args.config else KioskConfig()
        overrides: dict[str, Any] = {}
        if args.lessons is not None:
            overrides["lessons"] = args.lessons
        if args.idle_reset is not None:
            try:
                overrides["idle_reset"] = float(args.idle_reset)
            except ValueError:
                raise KioskConfigError(f"idle_reset: '{args.idle_reset}' is not a number "
                                       "of seconds") from None
        config = config_from_mapping(overrides, config)
        config = config.with_figures()
        return config.starting_at(spec.number, step) if spec else config.starting_at(
            config.start, config.step)
    except KioskConfigError as error:
        raise UsageError(f"kiosk: {error}") from None


# --- the window and the modes that wrap it ----------------------------------------------
def make_window(theme_name: str, *, kiosk=None, remember: bool = True,  # noqa: ANN001, ANN201
                text_scale: float = 1.0):
    """The main window wrapped in its mode: kiosk mode (a KioskConfig), or else with lecture
    mode at hand (F5). The window knows neither; each wraps it through its public methods."""
    from gpuviz.main_window import MainWindow

    if kiosk is not None:
        from gpuviz.kiosk import Kiosk

        window = MainWindow(theme_name, lessons=kiosk.lessons, remember=False,
                            text_scale=text_scale)
        Kiosk(window, kiosk)
        return window
    from gpuviz.presentation import Presenter

    window = MainWindow(theme_name, remember=remember, text_scale=text_scale)
    Presenter(window)
    return window


GLIBC_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
LARGE_BLOCK_BYTES = 1 << 20


def keep_large_blocks_out_of_the_heap() -> None:
    """Ask glibc to give every block of 1 MiB or more its own mapping.

    By default glibc raises its mapping threshold each time a large block is freed, so
    later page images and plot buffers (several MB each) come from the heap and leave
    holes it cannot hand back: a kiosk that builds and drops pages all day then grows by
    fragmentation alone (benchmarks/soak.py). A fixed threshold returns such blocks to
    the system whole. Elsewhere (no glibc) this does nothing."""
    if not sys.platform.startswith("linux"):
        return
    import contextlib
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").mallopt(GLIBC_M_MMAP_THRESHOLD, LARGE_BLOCK_BYTES)


def run_window(spec, values: dict[str, Any], theme_name: str | None,  # noqa: ANN001
               warnings: list[str], *, present: bool = False,
               playlist=None, kiosk=None, trace_file: Path | None = None) -> int:  # noqa: ANN001
    import gc

    keep_large_blocks_out_of_the_heap()

    from PySide6.QtCore import QTimer
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from gpuviz import catalog, state, theme
    from gpuviz.kiosk import Kiosk
    from gpuviz.main_window import saved_figure, settings
    from gpuviz.paths import resource
    from gpuviz.presentation import Presenter

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("gpuviz")
    app.setOrganizationName("gpuviz")
    app.setDesktopFileName("gpuviz")  # matches packaging/linux/gpuviz.desktop
    app.setWindowIcon(QIcon(str(resource("icons", "gpuviz-256.png"))))
    settings_message = state.recover_corrupt_settings()
    store = settings()
    prefs = state.load_preferences(store)
    if kiosk is not None and kiosk.theme:
        theme_name = kiosk.theme
    preference = theme_name or prefs.theme
    theme.apply(theme.resolve(preference, app), app, text_scale=prefs.text_scale)
    window = make_window(preference, kiosk=kiosk, text_scale=prefs.text_scale)
    window.clock.reduced_motion = prefs.reduced_motion
    if kiosk is not None:
        window.resize(1280, 800)
        Kiosk.of(window).show()
        first = kiosk.first
    else:
        window.restore_state(store)
        window.show()
        if playlist:
            first = playlist[0].number
        else:
            figures = catalog.all_figures()
            first = spec.number if spec else (
                saved_figure(store) or (figures[0].number if figures else None))

    def open_first() -> None:
        if first:
            if spec is not None and spec.number == first:  # --set is for --figure
                apply_settings(window.model(first), values)  # after the saved ones
            window.show_figure(first)
            if kiosk is not None:
                Kiosk.of(window).go_to_start_step()
        if trace_file is not None:
            window.open_trace(trace_file)
        # What exists now lives as long as the window: keep the garbage collector from
        # walking it again on every collection while the user drags a slider.
        gc.freeze()
        if playlist:
            window.set_playlist(playlist)
        if present:
            Presenter.of(window).enter()
        elif kiosk is None and not state.tour_seen(store):
            window.start_tour()  # the first run
        if settings_message:
            window.notify("Settings reset", settings_message)
        for warning in warnings:
            window.notify("Some data was left out", warning)
        QTimer.singleShot(0, import_on_first_use)  # once the figure is painted

    def import_on_first_use() -> None:
        """What numpy imports the first time it is used, imported now rather than in a
        learner's first drag or press: numpy.ma on the first np.unique (numpy 2.x; 7-20
        ms in the first drag of 12.1's context slider when it was opened first) and
        numpy.random (16 ms: the first Sample of 12.4, Simulate of 12.5)."""
        import numpy.ma  # noqa: F401
        import numpy.random  # noqa: F401
        gc.freeze()  # these live as long as the window too

    QTimer.singleShot(0, open_first)  # show the window first, then build the figure
    return app.exec()
