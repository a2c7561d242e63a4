"""Instructions per control change of each figure, counted by valgrind: a measure of the
work a change costs that the machine's load and speed do not move (wall times on a
shared 2-core machine moved by 2x between runs; these counts repeat within 0.1%).

    python benchmarks/instructions.py [--figures 1.1,9.2] [--theme projector]
                                      [--size 1920x1080] [--scale 2]

Each figure runs in its own process under callgrind with instrumentation off while Python,
Qt and the page start, then on for the same control changes `latency.py` times (every
slider over its range and back, every combo box, every switch twice) and their repaints.
Compare two versions of the code by these counts (Minstr per change); they leave out what
an instruction count cannot see (memory bandwidth of large fills, Qt's image threads), so
confirm a real gain with `latency.py` too. Needs valgrind (Debian's `valgrind`), and takes
about a minute per figure.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def child(number: str, theme_name: str, size: str, ready: Path, go: Path) -> None:
    """Build the page, say so (`ready`), wait for instrumentation (`go`), run the sweep."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import latency
    from PySide6.QtWidgets import QApplication

    from gpuviz import catalog, theme
    from gpuviz.app import quiet_offscreen_warnings
    from gpuviz.core.figure_view import FigurePage

    quiet_offscreen_warnings()
    app = QApplication([])
    theme.apply(theme_name, app)
    spec = {spec.number: spec for spec in catalog.all_figures()}[number]
    model = spec.make_model()
    page = FigurePage(spec, model, spec.make_view(model))
    page.resize(*(int(part) for part in size.split("x")))
    page.show()
    for _ in range(3):
        app.processEvents()
    changes = latency._changes(page)
    gc.freeze()  # as the app and latency.py do once the page is built (5% of 12.1's count)
    print(len(changes), flush=True)
    ready.touch()
    while not go.exists():
        time.sleep(0.05)
    for change in changes:
        change()
        app.processEvents()


def count(number: str, args: argparse.Namespace) -> tuple[int, float]:
    """(changes, instructions) of one figure's sweep."""
    with tempfile.TemporaryDirectory() as folder:
        ready, go = Path(folder) / "ready", Path(folder) / "go"
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen",
               "QT_SCALE_FACTOR": f"{args.scale:g}"}
        process = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no",
             f"--callgrind-out-file={folder}/callgrind.out", sys.executable,
             str(Path(__file__).resolve()), "--child", number, args.theme, args.size,
             str(ready), str(go)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        while not ready.exists():
            if process.poll() is not None:
                raise SystemExit(f"{number}: the figure did not start:\n"
                                 f"{process.stderr.read()[-2000:]}")
            time.sleep(0.2)
        subprocess.run(["callgrind_control", "-i", "on", str(process.pid)],
                       capture_output=True, check=True)
        go.touch()
        out, err = process.communicate()
    found = re.search(r"Collected : (\d+)", err)
    if process.returncode != 0 or not found:
        raise SystemExit(f"{number}: valgrind failed (exit {process.returncode}):\n"
                         f"{err[-2000:]}")
    return int(out.split()[0]), float(found.group(1))


def main(argv: list[str] | None = None) -> int:
    import latency

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2], argv[3], Path(argv[4]), Path(argv[5]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", help="comma-separated figure numbers (default: all)")
    parser.add_argument("--theme", default="projector", choices=("dark", "light", "projector"))
    # The same checks of size and ratio as the latency benchmark's.
    parser.add_argument("--size", default="1920x1080", type=latency._size,
                        help="the page's size, WxH")
    parser.add_argument("--scale", default=1.0, type=latency._scale,
                        help="device pixel ratio")
    args = parser.parse_args(argv)
    args.size = "{}x{}".format(*args.size)
    if not (shutil.which("valgrind") and shutil.which("callgrind_control")):
        parser.error("needs valgrind and callgrind_control (Debian: apt install valgrind)")
    from gpuviz import catalog

    numbers = [spec.number for spec in catalog.all_figures()]
    if args.figures:
        wanted = args.figures.split(",")
        unknown = [n for n in wanted if n not in numbers]
        if unknown:
            parser.error(f"no figure {', '.join(unknown)}")
        numbers = [n for n in numbers if n in wanted]
    print(f"{args.theme} look, {args.size} at device pixel ratio {args.scale:g}")
    print(f"{'figure':<8}{'changes':>8}{'Minstr':>10}{'per change':>12}")
    for number in numbers:
        changes, instructions = count(number, args)
        print(f"{number:<8}{changes:>8}{instructions / 1e6:>10.1f}"
              f"{instructions / 1e6 / max(changes, 1):>12.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
