"""A real window on a real (virtual) X server: it maps, has our title, and can be
screenshotted. Needs the Debian packages xvfb, xauth, x11-utils (xwininfo), x11-apps (xwd)
and the xcb libraries Qt's xcb plugin loads; skipped with the reason when they are missing."""

from __future__ import annotations

import os
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


@pytest.mark.skipif(bool(MISSING), reason=f"needs {', '.join(MISSING)} (apt-get install "
                    "xvfb xauth x11-utils x11-apps and the libxcb packages Qt needs)")
def test_real_window_maps_and_can_be_screenshotted(tmp_path):
    env = {key: value for key, value in os.environ.items()
           if key not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    env.update(QT_QPA_PLATFORM="xcb", PYTHON=sys.executable, SHOT=str(tmp_path / "root.xwd"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    result = subprocess.run(
        ["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", "bash", "-c", SCRIPT],
        capture_output=True, text=True, env=env, timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "gpuviz — 1.3" in result.stdout  # xwininfo listed the mapped window
    assert "Traceback" not in result.stderr
    shot = tmp_path / "root.xwd"
    # An XWD dump of a 1280x800 24-bit screen: header plus 4 bytes per pixel.
    assert shot.stat().st_size >= 1280 * 800 * 4
    data = shot.read_bytes()[-1280 * 800 * 4:]
    assert len(set(data[::4097])) > 3  # not one flat colour: the window was drawn
