"""Update + repaint latency of every catalog figure, frame rate while playing, cold start,
resident memory.

    python benchmarks/latency.py [--json out.json] [--figures 1.1,1.3] [--theme projector]
                                 [--size 1920x1080] [--scale 2] [--switches 1000]
                                 [--animate 300] [--no-latency] [--no-startup] [--no-memory]
                                 [--pixels]
    python benchmarks/latency.py --screens [--figures 8.2,1.1] [--passes 3]
                                                        (make bench-screens [PASSES=3])

For each figure (1280x800 unless --size, offscreen, at device pixel ratio --scale: 2 is
a 4K or Retina laptop, through QT_SCALE_FACTOR): every slider is swept over its range
and back and every combo box through its entries; one sample is the time from the
control's change to the end of the event-loop pass that refreshes the figure and repaints
what changed (the budget is on this wall time; "cpu p95" is the CPU time this process
spent on it, which other processes on a busy machine do not inflate: compare changes by
it there; "max ms" is the slowest change, which a p95 does not show).
--pixels also counts the device pixels repainted per change (Mpx/chg: every widget's
paint region, in a second, untimed sweep), which load does not change: back a claim
about speed with it.
A figure during whose sweep the machine slowed down (the reference workload, taken every
25 changes and after the sweep, took over 1.2 times its fastest time in the run so far,
or given by --reference-ms) is measured again, up to three times, each time once the
reference is back within that (or after 30 s; 3 minutes in all), and the run whose
slowest reference was the fastest kept; the output names those figures.
--screens passes each screen the fastest reference of the screens before it.
Animated figures play for a while under the app clock and report frames per second.
Cold start is the wall time from spawning a fresh Python process to a painted main window
(and to its first figure built).
Memory, in a fresh process running the real main window (with its modes) under an event
loop: resident memory (RSS) at start, with the window shown, after visiting every figure,
then every tenth of `--switches` random figure switches and of `--animate` seconds of
animation (the animated figures in turn, each replayed when it ends).
--screens measures the latency and frame rate of the figures on the four screens of
SCREENS, each in a fresh process, and prints one table of figures by screens.
Budgets: p95 <= 8 ms (6 ms on the 1920x1080 projector, so that a slower lecture-hall PC
keeps 8 ms), >= 60 fps (the clock ticks every 16 ms, so ~62 is the ceiling),
start-up <= 1.0 s, RSS after visiting every figure < 300 MB and flat after that.
--screens also judges every p95 scaled to the machine the budgets were set on (its
reference workload took BUDGET_REFERENCE_MS): p95 x that / the run's fastest reference.
--passes N runs the screens N times over and judges each figure by the median of its N
scaled p95s, the highest beside it: one sweep's p95 moves by about a fifth from run to run.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SWEEP_POINTS = 24
SLOW_FACTOR, RUNS_WHEN_SLOW = 1.2, 3  # see measure_steadily
REFERENCE_EVERY = 25  # changes between two takes of the machine's speed in a sweep
# How long a run waits for the machine to be back at its speed, and all runs of a process
# together (a machine slow for an hour would otherwise take that long).
QUIET_WAIT_S, QUIET_WAIT_TOTAL_S = 30.0, 180.0
_waited = 0.0
PLAY_SECONDS = 1.5
STARTUP_RUNS = 5
BUDGET_P95_MS, BUDGET_FPS, BUDGET_STARTUP_S = 8.0, 60.0, 1.0
BUDGET_RSS_MB = 300.0
# The reference workload's time on this machine when the budgets were set (issue 29: "on
# your machine", whose reference then took about 6 ms; its author scaled the times of a
# machine at 8 ms by 0.75 to compare). --screens also judges each p95 scaled to it.
BUDGET_REFERENCE_MS = 6.0
# The screens a learner meets: (name, look, page size, device pixel ratio, p95 budget ms).
SCREENS = (
    ("1280x800 dark", "dark", "1280x800", 1.0, 8.0),
    ("1920x1080 projector", "projector", "1920x1080", 1.0, 6.0),
    ("2560x1440 projector", "projector", "2560x1440", 1.0, 8.0),
    ("1280x800 dark, ratio 2", "dark", "1280x800", 2.0, 8.0),
)
# The heap grows to its working size over the first switches (freed pages stay with the
# allocator: malloc_trim gives back ~15 MB), then stays: "flat" judges the second half.
FLAT_MB = 5.0
ANIMATION_TURN_S = 20.0  # seconds each animated figure plays in --animate

STARTUP_CHILD = r"""
import sys, time
spawned = float(sys.argv[1])
from PySide6.QtWidgets import QApplication
import gpuviz.app

def exec_and_measure(app):
    shown = time.time()
    app.processEvents()  # first paint and the deferred build of the first figure
    app.processEvents()
    print(json.dumps({"shown": shown - spawned, "figure": time.time() - spawned}))
    return 0

import json
QApplication.exec = exec_and_measure
sys.exit(gpuviz.app.main([]))
"""


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def _changes(page) -> list:  # noqa: ANN001
    """The control changes a figure is measured by: every slider over its range and back,
    every combo box through its entries and back, switches and choice buttons (a figure
    may have no other control: 13.1) each pressed twice (a check box goes back, an
    exclusive choice stays). Each slider ends at its least value, not where it started:
    `model.reset()` before running the list again, or the second run measures other
    states (the later sliders' sweeps then run with the earlier ones at their least)."""
    from PySide6.QtWidgets import QAbstractButton, QComboBox, QSlider

    changes = []
    for slider in page.findChildren(QSlider):
        low, high = slider.minimum(), slider.maximum()
        positions = [low + (high - low) * i // SWEEP_POINTS for i in range(SWEEP_POINTS + 1)]
        changes += [lambda s=slider, p=position: s.setValue(p)
                    for position in positions + positions[::-1]]
    for combo in page.findChildren(QComboBox):
        changes += [lambda c=combo, i=index: c.setCurrentIndex(i)
                    for index in [*range(combo.count()), combo.currentIndex()]]
    for button in page.view.controls.findChildren(QAbstractButton):
        if button.isCheckable() and button.isVisible():
            changes += [button.click, button.click]
    return changes


def measure_repainted(page, changes: list, app) -> float:  # noqa: ANN001
    """Device pixels (millions) that widgets are asked to repaint per change, over the
    page's widgets and plot viewports: a count that a busy machine does not change. A
    widget painted under a child counts its region too, as it costs its paint."""
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QWidget

    class Count(QObject):
        pixels = 0

        def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
            if event.type() == QEvent.Paint:
                self.pixels += sum(rect.width() * rect.height() for rect in event.region())
            return False

    count = Count()
    widgets = [page, *page.findChildren(QWidget)]
    for widget in widgets:
        widget.installEventFilter(count)
    for change in changes:
        change()
        app.processEvents()
    for widget in widgets:
        widget.removeEventFilter(count)
    ratio = page.devicePixelRatio()
    return round(count.pixels * ratio * ratio / max(1, len(changes)) / 1e6, 3)


def measure_figure(spec, app, size=(1280, 800),  # noqa: ANN001
                   pixels: bool = False) -> dict[str, float | None]:
    from PySide6.QtCore import QEvent

    from gpuviz.core.figure_view import FigurePage

    model = spec.make_model()
    page = FigurePage(spec, model, spec.make_view(model))
    page.resize(*size)
    page.show()
    for _ in range(3):  # a look that grows with the window rescales after the first resize
        app.processEvents()
    if page.devicePixelRatio() != app.devicePixelRatio():
        raise SystemExit(f"the page paints at ratio {page.devicePixelRatio()}, "
                         f"not {app.devicePixelRatio()}")
    gc.freeze()  # as the app does once its window is built
    samples: list[float] = []
    cpu_samples: list[float] = []  # this thread's CPU time: what other processes cannot inflate

    def timed(action) -> None:  # noqa: ANN001
        start, cpu_start = time.perf_counter(), time.thread_time()
        action()
        # The scheduled refresh runs here, and so does the repaint of everything it
        # changed (Qt paints and flushes the dirty regions while processing the update
        # requests). A forced repaint of the whole page would add widgets that did not
        # change, which no user waits for.
        app.processEvents()
        samples.append((time.perf_counter() - start) * 1000)
        cpu_samples.append((time.thread_time() - cpu_start) * 1000)

    changes = _changes(page)
    # The machine's speed is taken during the sweep too (untimed): the host slows it
    # for seconds at a time, which a reference taken only after the sweep can miss.
    references = []
    for index, change in enumerate(changes):
        if index and index % REFERENCE_EVERY == 0:
            references.append(reference_ms())
        timed(change)
    references.append(reference_ms())
    repainted = measure_repainted(page, changes, app) if pixels else None
    model.reset()
    app.processEvents()

    fps = None
    if spec.animated and hasattr(model, "advance"):
        fps = measure_fps(page, model, app)
    page.close()
    page.deleteLater()
    # Outside a running event loop a deferred delete waits until asked for: without this
    # every page measured stayed alive behind the next figures' runs.
    app.sendPostedEvents(None, QEvent.DeferredDelete)
    # The page's Python objects were frozen with it, and the collector never frees frozen
    # objects: every page measured stayed behind (after the 58 figures, 70 of their plot
    # menus were still alive). The app frees a page it closes; so does this.
    gc.unfreeze()
    gc.collect()
    return {"p50_ms": round(statistics.median(samples), 2) if samples else None,
            "p95_ms": round(percentile(samples, 0.95), 2) if samples else None,
            "cpu_p95_ms": round(percentile(cpu_samples, 0.95), 2) if samples else None,
            # The slowest change, which a p95 over a hundred changes does not see: 11.1's
            # five changes to 6-8 bits took up to 83 ms while its p95 read 8.4 ms.
            "max_ms": round(max(samples), 2) if samples else None,
            "samples": len(samples), "fps": fps, "mpx_per_change": repainted,
            # the slowest the machine was during the sweep
            "reference_ms": max(references)}


def measure_steadily(spec, app, size: tuple[int, int], pixels: bool,  # noqa: ANN001
                     baseline_ms: float) -> dict[str, float | None]:
    """measure_figure, again (up to RUNS_WHEN_SLOW runs) when the reference workload
    during or right after its sweep took over SLOW_FACTOR times `baseline_ms` (the fastest
    of the run so far): on a shared virtual machine the host can halve the speed for
    seconds or minutes, which says nothing about the figure. The run whose slowest
    reference was the fastest is kept, and the row tells how many runs there were and
    that reference."""
    best = None
    for run in range(1, RUNS_WHEN_SLOW + 1):
        if run > 1:
            wait_for_speed(baseline_ms)
        row = measure_figure(spec, app, size, pixels)
        row["runs"] = run
        if best is None or row["reference_ms"] < best["reference_ms"]:
            best = {**row}
        best["runs"] = run
        if row["reference_ms"] <= SLOW_FACTOR * baseline_ms:
            break
    return best


def wait_for_speed(baseline_ms: float) -> None:
    """Wait (up to QUIET_WAIT_S, QUIET_WAIT_TOTAL_S in all) until the reference workload
    takes at most SLOW_FACTOR times `baseline_ms` again: a run made while the host slows
    the machine down measures the host."""
    global _waited
    start = time.monotonic()
    deadline = start + min(QUIET_WAIT_S, QUIET_WAIT_TOTAL_S - _waited)
    while reference_ms() > SLOW_FACTOR * baseline_ms and time.monotonic() < deadline:
        time.sleep(1.0)
    _waited += time.monotonic() - start


def measure_fps(page, model, app) -> float:  # noqa: ANN001
    from PySide6.QtCore import QEventLoop, QTimer

    from gpuviz.clock import AppClock

    frames = 0
    original_refresh = page.view.refresh

    def counting_refresh() -> None:
        nonlocal frames
        frames += 1
        original_refresh()

    page.view.refresh = counting_refresh
    clock = AppClock()
    clock.follow(model)
    keep_playing = lambda playing: None if playing else model.set_playing(True)  # noqa: E731
    model.playing_changed.connect(keep_playing)
    model.set_playing(True)
    loop = QEventLoop()
    start = time.perf_counter()
    QTimer.singleShot(int(PLAY_SECONDS * 1000), loop.quit)
    loop.exec()
    elapsed = time.perf_counter() - start
    model.playing_changed.disconnect(keep_playing)
    clock.stop()
    page.view.refresh = original_refresh
    return round(frames / elapsed, 1)


def reference_ms() -> float:
    """Milliseconds for a fixed piece of work (Python, numpy and software painting, like a
    figure update): the machine's speed at the time of the run. On a shared virtual
    machine it can change by 2x between minutes; compare runs only at similar values."""
    import numpy as np
    from PySide6.QtCore import QPointF, Qt
    from PySide6.QtGui import QImage, QPainter, QPen

    image = QImage(800, 400, QImage.Format_ARGB32_Premultiplied)
    points = [QPointF(x, 200 + 150 * np.sin(x / 40)) for x in range(0, 800, 2)]
    times = []
    for _ in range(5):
        start = time.perf_counter()
        total = sum(i * i for i in range(20_000))
        np.sort(np.random.default_rng(total % 7).random(50_000))
        painter = QPainter(image)
        painter.setRenderHint(QPainter.Antialiasing)
        painter.setPen(QPen(Qt.GlobalColor.blue, 3))
        for _ in range(4):
            painter.drawPolyline(points)
        painter.end()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 2)


def measure_startup() -> dict[str, float]:
    shown, figure = [], []
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    with tempfile.TemporaryDirectory() as config:
        env["XDG_CONFIG_HOME"] = config
        for _ in range(STARTUP_RUNS):
            spawned = time.time()
            result = subprocess.run([sys.executable, "-c", STARTUP_CHILD, repr(spawned)],
                                    capture_output=True, text=True, env=env, cwd=ROOT,
                                    timeout=60)
            line = result.stdout.strip().splitlines()[-1]
            times = json.loads(line)
            shown.append(times["shown"])
            figure.append(times["figure"])
    return {"startup_s": round(statistics.median(shown), 3),
            "first_figure_s": round(statistics.median(figure), 3)}


def rss_mb() -> float:
    """Resident memory of this process now (Linux /proc); elsewhere the peak so far."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def memory_child(options: dict) -> dict:
    """Runs in a fresh process: the main window visits every figure, switches, animates;
    prints each RSS sample as it is taken and returns them all."""
    import random

    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from gpuviz import app as gpuviz_app
    from gpuviz import catalog, theme

    gpuviz_app.quiet_offscreen_warnings()
    app = QApplication.instance() or QApplication([])
    theme.apply(options["theme"], app)
    samples: dict[str, object] = {}

    def sample(key: str, label: str) -> float:
        value = rss_mb()
        samples[key] = value
        print(f"  RSS {value:7.1f} MB  {label}", flush=True)
        return value

    def run_steps(steps, pause_ms: int = 0) -> None:  # noqa: ANN001
        """Each step in its own pass of a running event loop, as in the app: pages are
        painted, and deleted pages (deleteLater) are freed, between steps."""
        loop = QEventLoop()
        pending = iter(steps)

        def next_step() -> None:
            step = next(pending, None)
            if step is None:
                loop.quit()
                return
            step()
            QTimer.singleShot(pause_ms, next_step)

        QTimer.singleShot(0, next_step)
        loop.exec()

    sample("start", "Qt and gpuviz loaded, no window")
    window = gpuviz_app.make_window(options["theme"], remember=False)
    window.resize(*options["size"])
    window.show()
    numbers = [spec.number for spec in catalog.all_figures()]
    run_steps([lambda: window.show_figure(numbers[0])])
    gc.freeze()  # as the app does once its first figure is built
    sample("first_figure", f"window shown with figure {numbers[0]}")
    run_steps([lambda n=n: window.show_figure(n) for n in numbers[1:]])
    sample("after_all", f"after visiting all {len(numbers)} figures "
           f"({len(window.pages)} pages kept)")

    switches = options["switches"]
    if switches:
        rng = random.Random(0)
        every = max(1, switches // 10)
        steps = []
        for i, number in enumerate(rng.choices(numbers, k=switches), start=1):
            steps.append(lambda n=number: window.show_figure(n))
            if i % every == 0 or i == switches:
                steps.append(lambda i=i: sample(f"switch_{i}", f"after {i} switches"))
        run_steps(steps)

    seconds = options["animate"]
    if seconds:
        animated = [spec.number for spec in catalog.all_figures() if spec.animated]
        turns = iter(range(10**9))
        started = time.perf_counter()

        def next_turn() -> None:
            window.show_figure(animated[next(turns) % len(animated)])

        def keep_playing() -> None:  # an animation that ended plays again
            model = window.models[window.current]
            if not model.playing:
                model.set_playing(True)

        def take_sample() -> None:
            elapsed = time.perf_counter() - started
            sample(f"animate_{elapsed:.0f}s", f"after {elapsed:.0f} s of animation "
                   f"(figure {window.current})")

        next_turn()
        timers = []
        for interval_s, slot in ((ANIMATION_TURN_S, next_turn), (0.25, keep_playing),
                                 (seconds / 10, take_sample)):
            timer = QTimer()
            timer.timeout.connect(slot)
            timer.start(max(1, int(interval_s * 1000)))
            timers.append(timer)
        loop = QEventLoop()
        QTimer.singleShot(int(seconds * 1000) + 50, loop.quit)
        loop.exec()
        for timer in timers:
            timer.stop()
        window.models[window.current].set_playing(False)
    window.clock.stop()
    return {"rss_mb": samples, "pages_kept": len(window.pages), "figures": len(numbers)}


def measure_memory(args: argparse.Namespace) -> dict:
    """The memory run in a fresh process, so nothing else measured here inflates it."""
    options = {"theme": args.theme, "size": list(args.size), "switches": args.switches,
               "animate": args.animate}
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    with tempfile.TemporaryDirectory() as config:
        env["XDG_CONFIG_HOME"] = config
        child = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--memory-child",
             json.dumps(options)], stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        last = ""
        for line in child.stdout:
            if line.startswith("{"):
                last = line
            else:
                print(line, end="", flush=True)
        child.wait()
    if child.returncode != 0 or not last:
        raise SystemExit(f"the memory run failed (exit status {child.returncode})")
    return json.loads(last)


def memory_verdict(result: dict) -> str:
    samples = result["rss_mb"]
    after_all = samples["after_all"]
    lines = [f"resident memory after visiting all {result['figures']} figures: "
             f"{after_all:.1f} MB (budget {BUDGET_RSS_MB:.0f} MB: "
             f"{'ok' if after_all < BUDGET_RSS_MB else 'OVER BUDGET'}); "
             f"{result['pages_kept']} figure pages kept"]
    for kind, label in (("switch_", "switches"), ("animate_", "animation")):
        series = [value for key, value in samples.items() if key.startswith(kind)]
        if len(series) >= 2:
            growth = series[-1] - series[len(series) // 2]
            flat = abs(growth) <= FLAT_MB
            lines.append(f"{label}: {series[0]:.1f} -> {series[-1]:.1f} MB from the first "
                         f"to the last sample (max {max(series):.1f}); second half "
                         f"{growth:+.1f} MB: {'flat' if flat else 'GROWING'} "
                         f"(within {FLAT_MB:.0f} MB)")
    return "\n".join(lines)


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not WxH: {text!r}") from None
    if width < 200 or height < 200:
        raise argparse.ArgumentTypeError(f"too small: {text!r}")
    return width, height


def _scale(text: str) -> float:
    try:
        ratio = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 1.0 <= ratio <= 4.0:
        raise argparse.ArgumentTypeError(f"a device pixel ratio from 1 to 4: {text!r}")
    return ratio


def measure_screens(figures: str | None, passes: int = 1) -> int:
    """Every screen of SCREENS in a fresh process (the ratio is fixed when Qt starts), then
    one table: a row per figure, p95 (and fps) per screen, with each run's reference
    workload. With `passes` > 1 all of that again, `passes` times, then the median of each
    figure's scaled p95s over the passes (see print_median_verdict)."""
    budgets = {name: budget for name, *_, budget in SCREENS}
    fastest = math.inf  # the least reference workload of the screens so far, in any pass
    passes_run = []
    for number in range(1, passes + 1):
        if passes > 1:
            print(f"=== pass {number} of {passes}", flush=True)
        runs, fastest = _measure_screens_once(figures, fastest)
        print_screens_table(runs, budgets)
        print_scaled_verdict(runs, budgets, fastest)
        passes_run.append(runs)
    if passes > 1:
        print_median_verdict(passes_run, budgets, fastest)
    return 0


def _measure_screens_once(figures: str | None, fastest: float) -> tuple[dict, float]:
    runs = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, look, size, ratio, budget in SCREENS:
            print(f"== {name}", flush=True)
            out = Path(folder) / "screen.json"
            command = [sys.executable, str(Path(__file__).resolve()), "--no-startup",
                       "--no-memory", "--theme", look, "--size", size, "--scale", str(ratio),
                       "--budget", str(budget), "--json", str(out)]
            command += ["--figures", figures] if figures else []
            command += ["--reference-ms", str(fastest)] if math.isfinite(fastest) else []
            if subprocess.run(command, cwd=ROOT).returncode != 0:
                raise SystemExit(f"the run on {name} failed")
            runs[name] = json.loads(out.read_text())
            fastest = min(fastest, runs[name]["reference_ms_before"],
                          runs[name]["reference_ms_after"],
                          *(row["reference_ms"] for row in runs[name]["figures"].values()))
    return runs, fastest


def print_screens_table(runs: dict, budgets: dict[str, float]) -> None:
    width = max(len(name) for name in runs) + 2
    print(f"\np95 ms (fps when animated) per screen; budget p95 and >= {BUDGET_FPS:.0f} fps")
    print(f"{'figure':<8}" + "".join(f"{name:>{width}}" for name in runs))
    numbers = list(next(iter(runs.values()))["figures"])
    over = 0
    for number in numbers:
        cells = []
        for name, run in runs.items():
            row = run["figures"][number]
            ok = (row["p95_ms"] is None or row["p95_ms"] <= budgets[name]) and (
                row["fps"] is None or row["fps"] >= BUDGET_FPS - 2)
            over += not ok
            fps = "" if row["fps"] is None else f" ({row['fps']:.0f})"
            again = "*" if row.get("runs", 1) > 1 else ""
            cells.append(f"{row['p95_ms']}{fps}{again}{'' if ok else ' !'}")
        print(f"{number:<8}" + "".join(f"{cell:>{width}}" for cell in cells))
    print(f"{'budget':<8}" + "".join(f"{budgets[name]:>{width}.1f}" for name in runs))
    references = [f"{run['reference_ms_before']:.2f} / {run['reference_ms_after']:.2f}"
                  for run in runs.values()]
    print(f"{'ref ms':<8}" + "".join(f"{cell:>{width}}" for cell in references))
    print("ref ms: the reference workload before / after each run (lower is faster); "
          f"! marks a figure over budget ({over} of {len(numbers) * len(runs)}); * one "
          "measured again, the machine having slowed down during its first run")


def print_scaled_verdict(runs: dict, budgets: dict[str, float], fastest: float) -> None:
    """The same p95s judged on the machine the budgets were set on: each scaled by
    BUDGET_REFERENCE_MS over the fastest reference of the whole run, this pass and those
    before it (the machine at its quickest, so a figure measured while it was slow keeps
    its slowness: conservative)."""
    factor = BUDGET_REFERENCE_MS / fastest
    print(f"\nscaled to the machine the budgets were set on (reference "
          f"{BUDGET_REFERENCE_MS:g} ms; the fastest so far {fastest:.2f} ms: p95 x "
          f"{factor:.2f}), over budget:")
    for name, run in runs.items():
        over = [f"{number} {row['p95_ms'] * factor:.2f}"
                for number, row in run["figures"].items()
                if row["p95_ms"] is not None and row["p95_ms"] * factor > budgets[name]]
        print(f"  {name}: {', '.join(over) if over else 'none'}")


def print_median_verdict(passes: list[dict], budgets: dict[str, float],
                         fastest: float) -> None:
    """Each figure's p95 per screen as the median over the passes, scaled as in
    print_scaled_verdict (by the fastest reference of all passes), with the highest pass
    beside it. One sweep's p95 moves by about a fifth between runs at the same reference
    workload (12.1 at 1920x1080: 5.9 to 8.4 ms over sixteen sweeps at 7.7 to 8.6 ms), and
    a host that slows down for a minute moves the figures measured then: the median of
    passes made minutes apart is the figure's, the highest pass the host's worst minute."""
    factor = BUDGET_REFERENCE_MS / fastest
    names = list(passes[0])
    width = max(len(name) for name in names) + 2
    print(f"\nmedian (highest) of {len(passes)} passes, scaled (p95 x {factor:.2f}: the "
          f"fastest reference of all passes, {fastest:.2f} ms)")
    print(f"{'figure':<8}" + "".join(f"{name:>{width}}" for name in names))
    over = {name: [] for name in names}
    for number in passes[0][names[0]]["figures"]:
        cells = []
        for name in names:
            scaled = sorted(run[name]["figures"][number]["p95_ms"] * factor
                            for run in passes
                            if run[name]["figures"][number]["p95_ms"] is not None)
            if not scaled:
                cells.append("-")
                continue
            median = statistics.median(scaled)
            if median > budgets[name]:
                over[name].append(f"{number} {median:.2f}")
            cells.append(f"{median:.2f} ({scaled[-1]:.2f})")
        print(f"{number:<8}" + "".join(f"{cell:>{width}}" for cell in cells))
    print("median over budget:")
    for name in names:
        print(f"  {name}: {', '.join(over[name]) if over[name] else 'none'}")


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:2] == ["--memory-child"]:
        print(json.dumps(memory_child(json.loads(sys.argv[2]))), flush=True)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    parser.add_argument("--figures", help="comma-separated figure numbers (default: all)")
    parser.add_argument("--no-startup", action="store_true", help="skip the cold start runs")
    parser.add_argument("--theme", default="dark", choices=("dark", "light", "projector"),
                        help="the look to measure in (default: dark)")
    parser.add_argument("--size", default="1280x800", type=_size,
                        help="the figure page's size, WxH (default: 1280x800)")
    parser.add_argument("--scale", default=1.0, type=_scale,
                        help="device pixel ratio (QT_SCALE_FACTOR), e.g. 2 for a 4K laptop "
                             "(default: 1)")
    parser.add_argument("--reference-ms", type=float, metavar="MS",
                        help="the reference workload's time when the machine is quiet, "
                             "from an earlier run: a figure measured while it took over "
                             f"{SLOW_FACTOR:g} times that is measured again")
    parser.add_argument("--budget", default=BUDGET_P95_MS, type=float, metavar="MS",
                        help=f"the p95 budget to judge by (default: {BUDGET_P95_MS:g} ms)")
    parser.add_argument("--screens", action="store_true",
                        help="latency and fps on the four screens of a lecture, one table")
    parser.add_argument("--passes", type=int, default=1, metavar="N",
                        help="--screens: measure every screen N times over, then judge "
                             "each figure by the median of its passes (default 1)")
    parser.add_argument("--pixels", action="store_true",
                        help="also count the device pixels repainted per change (Mpx, a "
                             "second sweep of each figure, untimed)")
    parser.add_argument("--no-latency", action="store_true",
                        help="skip the latency sweep of every figure")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory run")
    parser.add_argument("--switches", type=int, default=0, metavar="N",
                        help="memory: N random figure switches after visiting all "
                             "(default 0)")
    parser.add_argument("--animate", type=float, default=0.0, metavar="SECONDS",
                        help="memory: then SECONDS of animation (default 0)")
    args = parser.parse_args(argv)
    if args.switches < 0 or args.animate < 0:
        parser.error("--switches and --animate take a number >= 0")
    if args.passes < 1:
        parser.error("--passes takes a number >= 1")
    if args.screens:
        return measure_screens(args.figures, args.passes)
    # Read by Qt when the application starts; the child processes inherit it.
    os.environ["QT_SCALE_FACTOR"] = f"{args.scale:g}"

    from PySide6.QtWidgets import QApplication

    from gpuviz import catalog, theme
    from gpuviz.app import quiet_offscreen_warnings

    quiet_offscreen_warnings()
    app = QApplication.instance() or QApplication([])
    if app.devicePixelRatio() != args.scale:
        raise SystemExit(f"Qt paints at ratio {app.devicePixelRatio()}, not {args.scale}")
    theme.apply(args.theme, app)
    specs = catalog.all_figures()
    if args.figures:
        wanted = set(args.figures.split(","))
        specs = [spec for spec in specs if spec.number in wanted]

    results: dict[str, object] = {"reference_ms_before": reference_ms()}
    if not args.no_startup:
        results.update(measure_startup())
    figures: dict[str, dict] = {}
    # The machine's speed when least disturbed (by this run, or by the runs before it:
    # --screens passes on the fastest reference of the screens measured so far).
    fastest = min(results["reference_ms_before"], args.reference_ms or math.inf)
    for spec in [] if args.no_latency else specs:
        figures[spec.number] = measure_steadily(spec, app, args.size, args.pixels, fastest)
        fastest = min(fastest, figures[spec.number]["reference_ms"])
    results["figures"] = figures
    again = [number for number, row in figures.items() if row["runs"] > 1]
    if again:
        print(f"measured again, the machine having slowed down during the first run: "
              f"{', '.join(again)}")
    results["reference_ms_after"] = reference_ms()

    print(f"{args.theme} look, {args.size[0]}x{args.size[1]} at device pixel ratio "
          f"{args.scale:g}; reference workload {results['reference_ms_before']} ms")
    if not args.no_memory:
        print("memory (a fresh process with the main window):")
        results["memory"] = measure_memory(args)
        print(memory_verdict(results["memory"]))
    if figures:
        print(f"{'figure':<8}{'samples':>8}{'p50 ms':>9}{'p95 ms':>9}{'cpu p95':>9}"
              f"{'max ms':>9}{'fps':>8}{'Mpx/chg':>9}  verdict")
    for number, row in figures.items():
        ok = (row["p95_ms"] is None or row["p95_ms"] <= args.budget) and (
            row["fps"] is None or row["fps"] >= BUDGET_FPS - 2)
        fps = "-" if row["fps"] is None else f"{row['fps']:.1f}"
        mpx = "-" if row["mpx_per_change"] is None else f"{row['mpx_per_change']:.3f}"
        print(f"{number:<8}{row['samples']:>8}{row['p50_ms']:>9}{row['p95_ms']:>9}"
              f"{row['cpu_p95_ms']:>9}{row['max_ms']:>9}{fps:>8}{mpx:>9}  "
              f"{'ok' if ok else 'OVER BUDGET'}")
    if "startup_s" in results:
        print(f"cold start to a painted window: {results['startup_s']:.3f} s "
              f"(first figure built: {results['first_figure_s']:.3f} s; "
              f"budget {BUDGET_STARTUP_S} s)")
    print(f"machine speed: a fixed reference workload took {results['reference_ms_before']} ms "
          f"before and {results['reference_ms_after']} ms after (lower is faster)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
