"""Test set-up: offscreen Qt, settings and user data in throw-away folders, no clock left
running."""

import os
import tempfile

os.environ["QT_QPA_PLATFORM"] = "offscreen"
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="gpuviz-test-config-")
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="gpuviz-test-data-")  # no user GPUs

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

settings.register_profile("gpuviz", deadline=None, max_examples=60)
settings.load_profile("gpuviz")


@pytest.fixture(autouse=True)
def no_widget_left_behind():
    """Really delete what qtbot closed: its deleteLater waits for an event loop, which
    most tests never run, so every page built stayed alive, and each look change of a
    later test restyled them all (thousands of widgets by the end of a worker's run)."""
    yield
    from PySide6.QtCore import QCoreApplication, QEvent

    QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)


@pytest.fixture(autouse=True)
def no_clock_left_running():
    yield
    from gpuviz.clock import CLOCKS

    running = []
    for clock in list(CLOCKS):
        try:
            if clock.running:
                running.append(clock)
        except RuntimeError:  # its window, and so the clock, is already deleted
            continue
    for clock in running:
        clock.stop()
    assert not running, "a test left the animation clock running"


@pytest.fixture
def themed(qapp):
    from gpuviz import theme

    theme.apply("dark", qapp)
    return qapp
