"""A real window on a real (virtual) X server: it maps, has our title, and can be
screenshotted; kiosk and lecture mode cover the whole screen with no window manager running
(X started straight into the app). Needs the Debian packages xvfb, xauth, x11-utils
(xwininfo), x11-apps (xwd) and the xcb libraries Qt's xcb plugin loads; skipped with the
reason when they are missing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

TOOLS = ("xvfb-run", "xwininfo", "xwd")
MISSING = [tool for tool in TOOLS if shutil.which(tool) is None]

SCRIPT = textwrap.dedent("""
    set -u
    "$PYTHON" -m gpuviz --figure 1.3 --theme dark &
    app=$!
    for _ in $(seq 1 150); do
        if xwininfo -root -tree | grep -q '"gpuviz — 1.3'; then break; fi
        sleep 0.2
    done
    xwininfo -root -tree | grep '"gpuviz' || { echo "window never mapped"; kill $app; exit 3; }
    sleep 0.5
    xwd -root -silent -out "$SHOT" || { kill $app; exit 4; }
    kill $app
    wait $app
    exit 0
""")


# Starts gpuviz with $GPUVIZ_OPTIONS, waits for figure 2.1's window and prints the mapped
# windows (xwininfo: '0x200007 "gpuviz — 2.1 ...": (...)  1920x1080+0+0  +0+0').
COVER_SCRIPT = textwrap.dedent("""
    set -u
    "$PYTHON" -m gpuviz $GPUVIZ_OPTIONS &
    app=$!
    for _ in $(seq 1 150); do
        if xwininfo -root -tree | grep -q '"gpuviz — 2.1'; then break; fi
        sleep 0.2
    done
    sleep 1  # the window may still be given its final geometry
    xwininfo -root -tree | grep '"gpuviz — ' || { echo "window never mapped"; kill $app; exit 3; }
    kill $app
    wait $app
    exit 0
""")
needs_x = pytest.mark.skipif(bool(MISSING), reason=f"needs {', '.join(MISSING)} (apt-get "
                             "install xvfb xauth x11-utils x11-apps and the libxcb packages "
                             "Qt needs)")


def run_under_xvfb(tmp_path, script: str, screen: str, **extra: str):  # noqa: ANN201
    """`script` under a fresh X server with no window manager, the app on Qt's xcb."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    env.update(QT_QPA_PLATFORM="xcb", PYTHON=sys.executable,
               XDG_CONFIG_HOME=str(tmp_path / "config"), **extra)
    return subprocess.run(
        ["xvfb-run", "-a", "-s", f"-screen 0 {screen}x24", "bash", "-c", script],
        capture_output=True, text=True, env=env, timeout=90)


@needs_x
def test_real_window_maps_and_can_be_screenshotted(tmp_path):
    result = run_under_xvfb(tmp_path, SCRIPT, "1280x800", SHOT=str(tmp_path / "root.xwd"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "gpuviz — 1.3" in result.stdout  # xwininfo listed the mapped window
    assert "Traceback" not in result.stderr
    shot = tmp_path / "root.xwd"
    # An XWD dump of a 1280x800 24-bit screen: header plus 4 bytes per pixel.
    assert shot.stat().st_size >= 1280 * 800 * 4
    data = shot.read_bytes()[-1280 * 800 * 4:]
    assert len(set(data[::4097])) > 3  # not one flat colour: the window was drawn


@needs_x
@pytest.mark.parametrize("screen", ["1920x1080", "1600x900"])
@pytest.mark.parametrize("options", ["--kiosk --figure 2.1", "--present --figure 2.1"])
def test_kiosk_and_lecture_mode_cover_the_screen_without_a_window_manager(
        tmp_path, screen, options):
    result = run_under_xvfb(tmp_path, COVER_SCRIPT, screen, GPUVIZ_OPTIONS=options)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    windows = re.findall(r'"gpuviz — (\S+) [^"]*":.*?\s(\d+x\d+)\+(-?\d+)\+(-?\d+)\s',
                         result.stdout)
    assert windows == [("2.1", screen, "0", "0")], result.stdout
