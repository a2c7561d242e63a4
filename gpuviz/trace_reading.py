"""Opening a trace for figure 13.1 (File > Open trace, `--open-trace`): the file read and
analysed off the UI thread, so a large or broken file never freezes the window; a
progress dialog with Cancel while it reads; one line when it cannot be read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QThread, Signal
from PySide6.QtWidgets import QProgressDialog, QWidget

from gpuviz.core.trace import ProgressCallback, read_trace
from gpuviz.models.profiling.trace_analysis import Profile, analyse

PUZZLE_FIGURE = "13.1"  # the figure that shows an opened trace
PROGRESS_STEPS = 1000


class TraceError(Exception):
    """A trace file that cannot be shown, with the one line that says why."""


def read_profile(path: str | Path, progress: ProgressCallback | None = None) -> Profile:
    """The analysis of a trace file; TraceError naming the file and what is wrong."""
    path = Path(path)
    try:
        trace = read_trace(path, progress)
    except OSError as error:
        raise TraceError(f"cannot read '{path}': {error.strerror or error}") from None
    except ValueError as error:
        raise TraceError(f"{path.name}: {error} (expected a Chrome trace JSON as "
                         f"torch.profiler writes it)") from None
    if not trace.schedule.tasks:
        raise TraceError(f"{path.name}: no complete (\"X\") events, so nothing to show "
                         f"(expected a Chrome trace JSON as torch.profiler writes it)")
    return analyse(trace)


class _Cancelled(Exception):
    pass


class TraceJob(QThread):
    """Reads and analyses one file in its own thread; `finished_reading(profile)` or
    `failed(line)` when done, nothing after `cancel()`."""

    progressed = Signal(int)  # of PROGRESS_STEPS
    finished_reading = Signal(object)
    failed = Signal(str)

    def __init__(self, path: Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.path = path

    def run(self) -> None:
        try:
            profile = read_profile(self.path, self._report)
        except _Cancelled:
            return
        except TraceError as error:
            self.failed.emit(str(error))
            return
        if not self.isInterruptionRequested():
            self.finished_reading.emit(profile)

    def _report(self, share: float) -> None:
        if self.isInterruptionRequested():
            raise _Cancelled
        self.progressed.emit(round(share * PROGRESS_STEPS))

    def cancel(self) -> None:
        self.requestInterruption()


def start_reading(path: Path, parent: QWidget, shown: Callable[[Profile], None],
                  failed: Callable[[str], None]) -> TraceJob:
    """Read `path` in a job with a progress dialog over `parent` (Cancel stops it), then
    `shown(profile)`, or `failed(line)` for a file that cannot be read."""
    job = TraceJob(path, parent)
    job.finished_reading.connect(shown)
    job.failed.connect(failed)
    dialog = QProgressDialog(f"Reading {path.name}…", "Cancel", 0, PROGRESS_STEPS, parent)
    dialog.setWindowTitle("Open trace")
    dialog.setWindowModality(Qt.WindowModal)
    dialog.setMinimumDuration(300)  # ms: a small file shows no dialog at all
    dialog.setAttribute(Qt.WA_DeleteOnClose)
    job.progressed.connect(dialog.setValue)
    dialog.canceled.connect(job.cancel)
    job.finished.connect(dialog.close)
    job.finished.connect(job.deleteLater)
    job.start()
    return job
