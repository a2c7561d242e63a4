"""Soak test: the real kiosk (or lecture mode) left running, its memory sampled over time.

    python benchmarks/soak.py --minutes 120 --json soak.json
    python benchmarks/soak.py --present --figure 8.3 --minutes 60 --json lecture.json

The default is the lab kiosk of issue 36: `gpuviz --kiosk` with idle_reset = 3, countdown
= 2, attract = 2 and the projector theme, nobody touching it, so after the first countdown
it runs its attract loop (every figure in turn, the animated ones playing) until stopped.
`--present --figure L.F` instead opens lecture mode on one figure and plays its animation
again whenever it ends.

The app runs in a child process under a fresh X server (xvfb-run, Qt's xcb platform, no
window manager, as a lab kiosk) when xvfb-run is installed, offscreen otherwise. Every
`--every` seconds the child records its resident memory (RSS), the bytes glibc's malloc
has handed out and not got back (`mallinfo2`: when RSS grows and this does not, it is
fragmentation, not a leak), and the live QObjects of the window. With `--json` it rewrites
the file after every sample (a run cut short is still readable): both series, and the RSS
slope in MB per hour by least squares over the samples after the warm-up (every figure of
the kiosk shown once, and at least `--warmup` minutes). Budget: slope under 2 MB/h and RSS
under 300 MB throughout.

The live QObjects of a sample depend on the figure shown and the pages kept, so a kiosk
also records them once a lap (`laps`): shortly after its attract loop is back at its first
figure, with the same pages kept each time, so any change from lap to lap is a leak.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET_SLOPE_MB_PER_H = 2.0
BUDGET_RSS_MB = 300.0
LAB_KIOSK = {"idle_reset": 3, "countdown": 2, "attract": 2, "theme": "projector"}
REPLAY_CHECK_MS = 250  # lecture mode: how soon an animation that ended plays again
LAP_SETTLE_MS = 500  # a lap's count waits for the page the step dropped to be deleted


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def malloc_in_use_mb() -> float | None:
    """Bytes malloc has handed out and not got back (glibc 2.33+), else None."""
    try:
        mallinfo2 = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return None
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return (info.uordblks + info.hblkhd) / 2**20


def slope_mb_per_h(times_s: list[float], values: list[float]) -> float | None:
    """Least-squares slope of `values` against time, per hour; None below 3 samples."""
    n = len(times_s)
    if n < 3:
        return None
    mean_t = sum(times_s) / n
    mean_v = sum(values) / n
    spread = sum((t - mean_t) ** 2 for t in times_s)
    if spread == 0:
        return None
    covariance = sum((t - mean_t) * (v - mean_v) for t, v in zip(times_s, values, strict=True))
    return covariance / spread * 3600


def summary(series: dict, laps: dict, warmup_s: float | None) -> dict:
    """The slopes after the warm-up, the largest RSS and the verdict against the budget."""
    after = [i for i, t in enumerate(series["t_s"]) if warmup_s is not None and t >= warmup_s]
    times = [series["t_s"][i] for i in after]

    def slope(key: str) -> float | None:
        values = [series[key][i] for i in after]
        if None in values:
            return None
        value = slope_mb_per_h(times, values)
        return None if value is None else round(value, 2)

    rss_slope = slope("rss_mb")
    max_rss = max(series["rss_mb"], default=0.0)
    lap_after = [(t, value) for t, value in zip(laps["t_s"], laps["malloc_mb"], strict=True)
                 if warmup_s is not None and t >= warmup_s and value is not None]
    lap_slope = slope_mb_per_h([t for t, _ in lap_after], [v for _, v in lap_after])
    return {"warmup_s": warmup_s, "samples_after_warmup": len(after),
            "slope_mb_per_h": rss_slope, "malloc_slope_mb_per_h": slope("malloc_mb"),
            "malloc_slope_per_lap_mb_per_h": None if lap_slope is None else round(lap_slope, 2),
            "qobjects_first_last_after_warmup":
                [series["qobjects"][after[0]], series["qobjects"][after[-1]]] if after else None,
            "qobjects_per_lap_after_warmup": [count for t, count in zip(
                laps["t_s"], laps["qobjects"], strict=True)
                if warmup_s is not None and t >= warmup_s],
            "max_rss_mb": round(max_rss, 1),
            "within_budget": rss_slope is not None and rss_slope < BUDGET_SLOPE_MB_PER_H
            and max_rss < BUDGET_RSS_MB}


# --- the child: the app itself, sampled from inside --------------------------------------
def run_child(options: dict) -> int:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from gpuviz import app as gpuviz_app
    from gpuviz.core.model import AnimatedModel
    from gpuviz.kiosk import Kiosk, live_qobjects
    from gpuviz.main_window import MainWindow

    app = QApplication(sys.argv[:1])
    started = time.monotonic()
    series: dict[str, list] = {"t_s": [], "rss_mb": [], "malloc_mb": [], "qobjects": [],
                               "figure": []}
    # A kiosk also samples at its first figure, once a lap: the same figure and pages each
    # time, so these series are free of the differences between figures.
    laps: dict[str, list] = {"t_s": [], "qobjects": [], "malloc_mb": []}
    shown: set[str] = set()
    state = {"warmup_s": None, "window": None}
    result = {"mode": "present" if options["present"] else "kiosk", "options": options,
              "platform": app.platformName(), "interval_s": options["every"],
              "series": series, "laps": laps, "finished": False}

    def window() -> MainWindow | None:
        if state["window"] is None:
            windows = [w for w in app.topLevelWidgets() if isinstance(w, MainWindow)]
            if windows:
                state["window"] = windows[0]
                windows[0].figure_shown.connect(shown.add)
                windows[0].figure_shown.connect(lap)
        return state["window"]

    def warmed_up(now_s: float, main: MainWindow) -> bool:
        if now_s < options["warmup"] * 60:
            return False
        if options["present"]:
            return True
        kiosk = Kiosk.of(main)
        return kiosk is not None and shown >= set(kiosk.config.figures)

    def lap(number: str) -> None:
        kiosk = Kiosk.of(state["window"])
        if kiosk is not None and kiosk.attracting and number == kiosk.config.first:
            QTimer.singleShot(LAP_SETTLE_MS, record_lap)

    def record_lap() -> None:
        kiosk = Kiosk.of(state["window"])
        if kiosk is not None and state["window"].current == kiosk.config.first:
            laps["t_s"].append(round(time.monotonic() - started, 1))
            laps["qobjects"].append(live_qobjects().total())
            laps["malloc_mb"].append(round(malloc_in_use_mb() or 0.0, 3) or None)
            print(f"  lap {len(laps['t_s'])}: malloc {laps['malloc_mb'][-1]} MB", flush=True)

    def write() -> None:
        result.update(summary(series, laps, state["warmup_s"]))
        if options["json"]:
            path = Path(options["json"])
            partial = path.with_name(path.name + ".partial")
            partial.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
            partial.replace(path)

    def sample() -> None:
        main = window()
        if main is None:
            return
        now_s = round(time.monotonic() - started, 1)
        if state["warmup_s"] is None and warmed_up(now_s, main):
            state["warmup_s"] = now_s
        values = {"t_s": now_s, "rss_mb": round(rss_mb(), 2),
                  "malloc_mb": round(malloc_in_use_mb() or 0.0, 2) or None,
                  "qobjects": live_qobjects().total(), "figure": main.current}
        for key, value in values.items():
            series[key].append(value)
        write()
        print(f"{now_s / 60:6.1f} min  RSS {values['rss_mb']:6.1f} MB  malloc "
              f"{values['malloc_mb'] or 0:6.1f} MB  QObjects {values['qobjects']:5d}  "
              f"figure {values['figure']}", flush=True)

    def finish() -> None:
        sample()
        result["finished"] = True
        write()
        app.exit(0)

    def replay() -> None:  # lecture mode: a lecturer's figure left playing
        main = window()
        model = main.models.get(main.current or "") if main is not None else None
        if isinstance(model, AnimatedModel) and not model.playing:
            model.set_playing(True)

    timers = []
    for interval_ms, slot in ((int(options["every"] * 1000), sample),
                              (REPLAY_CHECK_MS if options["present"] else 0, replay)):
        if interval_ms:
            timer = QTimer(app)
            timer.timeout.connect(slot)
            timer.start(interval_ms)
            timers.append(timer)
    QTimer.singleShot(int(options["minutes"] * 60_000), finish)
    QTimer.singleShot(1000, sample)  # the window as first shown
    return gpuviz_app.main(options["argv"])


# --- the parent: sets up the display and the config, starts the child --------------------
def child_argv(args: argparse.Namespace, config_dir: Path) -> list[str]:
    if args.present:
        return ["--present", "--figure", args.figure, "--theme", args.theme]
    config = config_dir / "kiosk.toml"
    settings = {"idle_reset": args.idle_reset, "countdown": args.countdown,
                "attract": args.attract, "theme": args.theme}
    lines = [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
    if args.lessons:
        lines.append(f"lessons = {json.dumps(args.lessons)}")
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = ["--kiosk", "--config", str(config)]
    return argv + (["--figure", args.figure] if args.figure else [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=120.0, help="how long (default 120)")
    parser.add_argument("--json", type=Path, help="write the series and the slope here")
    parser.add_argument("--every", type=float, default=30.0, metavar="SECONDS",
                        help="seconds between samples (default 30)")
    parser.add_argument("--warmup", type=float, default=10.0, metavar="MINUTES",
                        help="minutes left out of the slope at least (default 10)")
    parser.add_argument("--present", action="store_true",
                        help="lecture mode on --figure, its animation replayed, not a kiosk")
    parser.add_argument("--figure", help="the figure lecture mode shows (or the kiosk starts at)")
    parser.add_argument("--lessons", help="the kiosk's lessons, e.g. 1-4 (default: all)")
    parser.add_argument("--idle-reset", type=float, default=LAB_KIOSK["idle_reset"])
    parser.add_argument("--countdown", type=float, default=LAB_KIOSK["countdown"])
    parser.add_argument("--attract", type=float, default=LAB_KIOSK["attract"])
    parser.add_argument("--theme", default=LAB_KIOSK["theme"])
    parser.add_argument("--screen", default="1920x1080", help="the X server's screen size")
    parser.add_argument("--offscreen", action="store_true",
                        help="Qt's offscreen platform even when xvfb-run is installed")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return run_child(json.loads(args.child))
    if args.present and not args.figure:
        parser.error("--present needs --figure")
    with tempfile.TemporaryDirectory() as config_dir:
        options = {"argv": child_argv(args, Path(config_dir)), "minutes": args.minutes,
                   "every": args.every, "warmup": args.warmup, "present": args.present,
                   "json": str(args.json.resolve()) if args.json else None}
        command = [sys.executable, str(Path(__file__).resolve()), "--child",
                   json.dumps(options)]
        env = {**os.environ, "XDG_CONFIG_HOME": config_dir}  # the user's settings untouched
        if shutil.which("xvfb-run") and not args.offscreen:
            env["QT_QPA_PLATFORM"] = "xcb"
            command = ["xvfb-run", "-a", "-s", f"-screen 0 {args.screen}x24"] + command
        else:
            env["QT_QPA_PLATFORM"] = "offscreen"
        status = subprocess.run(command, env=env, cwd=ROOT).returncode
    if args.json and args.json.exists():
        result = json.loads(args.json.read_text(encoding="utf-8"))
        print(f"{result['mode']} on {result['platform']}: RSS slope after warm-up "
              f"{result['slope_mb_per_h']} MB/h (budget < {BUDGET_SLOPE_MB_PER_H:g}), "
              f"malloc {result['malloc_slope_mb_per_h']} MB/h, max RSS "
              f"{result['max_rss_mb']} MB (budget < {BUDGET_RSS_MB:g}), QObjects per lap "
              f"{sorted(set(result['qobjects_per_lap_after_warmup'])) or '-'}: "
              f"{'ok' if result['within_budget'] else 'OVER BUDGET'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
