"""Running gpuviz as a separate process and comparing what it prints and renders: shared by
the tests of the frozen bundle (test_bundle.py) and of the installed wheel (test_wheel.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from gpuviz import catalog

ROOT = Path(__file__).resolve().parent.parent

# One figure from every lesson that has figures (the first one).
FIRST_FIGURES = [lesson.figures[0].number for lesson in catalog.LESSONS if lesson.figures]


def offscreen_env(home: Path) -> dict[str, str]:
    """Offscreen, with settings and caches in a throw-away home shared by both runs."""
    return {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"), "XDG_CACHE_HOME": str(home / "cache")}


def run(command: list[str], env: dict[str, str], cwd: Path | None = None) -> str:
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stderr}"
    return done.stdout


def run_source(env: dict[str, str], *args: str) -> str:
    return run([sys.executable, "-m", "gpuviz", *args], env, cwd=ROOT)


def read_png(path: Path) -> np.ndarray:
    from PySide6.QtGui import QImage

    image = QImage(str(path))
    assert not image.isNull(), f"{path} is not a readable PNG"
    image = image.convertToFormat(QImage.Format.Format_RGBA8888)
    return np.frombuffer(image.constBits(), np.uint8).reshape(
        image.height(), image.width(), 4).copy()


def assert_same_figure(command: list[str], env: dict[str, str], number: str,
                       tmp_path: Path) -> None:
    """`command` (another build of gpuviz) prints the same readout as the source and renders
    the same picture, within anti-aliasing noise."""
    other_png, source_png = tmp_path / "other.png", tmp_path / "source.png"
    common = ("--figure", number, "--readout", "--theme", "dark", "--size", "1280x800")
    other = json.loads(run([*command, *common, "--screenshot", str(other_png)], env,
                           cwd=tmp_path))
    source = json.loads(run_source(env, *common, "--screenshot", str(source_png)))
    assert other == source

    a, b = read_png(other_png), read_png(source_png)
    assert a.shape == b.shape == (800, 1280, 4)
    differ = np.abs(a.astype(np.int16) - b.astype(np.int16)).max(axis=2) > 8
    # Same fonts and Qt here, so normally identical; allow a little anti-aliasing noise.
    assert differ.mean() < 0.005, f"{differ.mean():.2%} of the pixels differ"
    assert a[..., :3].std() > 5, "the screenshot is blank"
