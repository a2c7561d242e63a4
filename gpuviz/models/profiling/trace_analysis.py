"""What a profile says about a step, as Holistic Trace Analysis (HTA) reads a
torch.profiler trace: the numbers figure 13.1 shows for its puzzle and for a trace opened.

A `Trace` (gpuviz.core.trace: a schedule with its lanes, each on the CPU, compute or
communication row) is read as one training step: the window from its first event's start
to its last event's end is the step time. On the GPU (compute kernels, NCCL kernels and
memory copies of every GPU lane, merged: a device's streams count once):
  compute        time some compute kernel runs
  communication  time some NCCL kernel runs and no compute kernel does
  memcpy         time only copies run
  idle           the rest of the step; compute + communication + memcpy + idle = step
  overlap        share of the NCCL kernels' time during which a compute kernel runs too
The idle time is split by what the GPU waits for (after HTA's idle time breakdown): a gap
ends when a kernel starts; until the CPU call that launched that kernel returned, the GPU
waited for the host, and from then on for another kernel, stream or rank (a gap no kernel
ends, or whose kernel has no launch in the trace, is all host or all kernel wait). HTA
calls a gap a host wait when the launch call began after the previous kernel ended, and
splits no gap. A launch gap is a gap that waits for the host at all. Kernel counts are of
the step's GPU events. HTA measures idle time per stream and within the kernels' span;
here the GPU's streams are merged and the whole step counts, so the time before the first
kernel is idle too, as a profile of one step shows it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import Readout, time_readout
from gpuviz.core.schedule import Schedule, Task, schedule_at
from gpuviz.core.trace import COMMUNICATION, COMPUTE, CPU, Trace, profile_kind

ROWS = (CPU, COMPUTE, COMMUNICATION)  # the rows a profile is drawn on, top to bottom
GPU_KINDS = ("compute", "nccl", "memcpy")

Intervals = list[tuple[float, float]]


@dataclass(frozen=True)
class Profile:
    """One step's numbers (seconds), and its tasks on the three rows (`rows`: resources
    named by `ROWS`, kinds from `PROFILE_KINDS`, times in seconds from the step's start;
    operators that only enclose CPU calls drawn first, so their calls paint over them)."""

    step_time: float
    compute: float
    communication: float
    memcpy: float
    idle: float
    host_wait: float
    kernel_wait: float
    nccl_time: float  # all of the NCCL kernels' time, overlapped or not
    overlap: float | None  # share of nccl_time with compute running; None with no NCCL time
    kernels: int  # compute kernels
    nccl_kernels: int
    memcpys: int
    launch_gaps: int
    rows: Schedule


def analyse(trace: Trace) -> Profile:
    """The step's numbers (module docstring) of a trace."""
    result = trace.schedule
    row_of = {lane.resource: lane.row for lane in trace.lanes}
    shown = [i for i, task in enumerate(result.tasks) if task.resource in row_of]
    kinds = {i: profile_kind(result.tasks[i].kind, row_of[result.tasks[i].resource])
             for i in shown}
    seconds = trace.seconds
    if not shown:
        return Profile(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, None, 0, 0, 0, 0,
                       schedule_at([], []))
    begin = float(result.start[shown].min())
    end = float(result.end[shown].max())
    on_gpu = {kind: _union([(result.start[i], result.end[i]) for i in shown
                            if kinds[i] == kind]) for kind in GPU_KINDS}
    compute, nccl = on_gpu["compute"], on_gpu["nccl"]
    gpu = _union(compute + nccl + on_gpu["memcpy"])
    overlapped = _length(_intersection(nccl, compute))
    busy = _length(gpu)
    host, other, gaps = _idle_split(result, shown, kinds, row_of, gpu, begin, end)
    counts = {kind: sum(1 for i in shown if kinds[i] == kind) for kind in GPU_KINDS}
    return Profile(
        (end - begin) * seconds, _length(compute) * seconds,
        (_length(nccl) - overlapped) * seconds,
        (busy - _length(_union(compute + nccl))) * seconds,
        (end - begin - busy) * seconds, host * seconds, other * seconds,
        _length(nccl) * seconds, overlapped / _length(nccl) if _length(nccl) else None,
        counts["compute"], counts["nccl"], counts["memcpy"], gaps,
        _rows(result, shown, kinds, row_of, begin, seconds))


def _idle_split(result: Schedule, shown: list[int], kinds: dict[int, str],
                row_of: dict[str, str], gpu: Intervals, begin: float, end: float
                ) -> tuple[float, float, int]:
    """(waiting for the host, waiting for another kernel, gaps waiting for the host)."""
    kernels = sorted((i for i in shown if kinds[i] in GPU_KINDS),
                     key=lambda i: result.start[i])
    starts = result.start[kernels] if kernels else np.zeros(0)
    host = other = 0.0
    gaps = 0
    free_from = begin
    for a, b in [*gpu, (end, end)]:
        if a > free_from:
            host_until = a  # no kernel comes after the gap: the host still works
            if a < end:
                first = kernels[int(np.searchsorted(starts, a))]
                launch = _launch(result, first, row_of)
                launched = result.end[launch] if launch is not None else free_from
                host_until = min(a, max(free_from, float(launched)))
            host += host_until - free_from
            other += a - host_until
            gaps += host_until > free_from
        free_from = b
    return host, other, gaps


def _launch(result: Schedule, kernel: int, row_of: dict[str, str]) -> int | None:
    """The CPU task a kernel waits for (its launch), if the trace links them."""
    for name in result.tasks[kernel].after:
        i = result.index(name)
        if row_of.get(result.tasks[i].resource) == CPU:
            return i
    return None


def _rows(result: Schedule, shown: list[int], kinds: dict[int, str],
          row_of: dict[str, str], begin: float, seconds: float) -> Schedule:
    """The shown tasks on the three rows, from the step's start, in seconds."""
    order = sorted(shown, key=lambda i: (kinds[i] != "cpu", result.start[i]))
    tasks = [Task(result.tasks[i].name, row_of[result.tasks[i].resource],
                  result.tasks[i].duration * seconds, kind=kinds[i],
                  label=result.tasks[i].label) for i in order]
    return schedule_at(tasks, [(result.start[i] - begin) * seconds for i in order])


def _union(intervals: Intervals) -> Intervals:
    """Sorted, disjoint intervals covering the same time."""
    merged: Intervals = []
    for a, b in sorted((float(a), float(b)) for a, b in intervals):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _intersection(first: Intervals, second: Intervals) -> Intervals:
    """The time covered by both of two unions."""
    both, i, j = [], 0, 0
    while i < len(first) and j < len(second):
        a, b = max(first[i][0], second[j][0]), min(first[i][1], second[j][1])
        if a < b:
            both.append((a, b))
        if first[i][1] < second[j][1]:
            i += 1
        else:
            j += 1
    return both


def _length(intervals: Intervals) -> float:
    return sum(b - a for a, b in intervals)


def profile_readouts(profile: Profile) -> dict[str, Readout]:
    """The numbers figure 13.1 reads out for a step (a puzzle's or a trace's)."""
    step = profile.step_time

    def share(label: str, seconds: float) -> Readout:
        return Readout(label, 100 * seconds / step if step else 0.0, "%", decimals=1)

    overlap = (Readout("NCCL time overlapped", 100 * profile.overlap, "%", decimals=1)
               if profile.overlap is not None else
               Readout("NCCL time overlapped", shown="no NCCL kernels"))
    return {
        "step_time": time_readout("Step time", step, digits=4),
        "compute": share("Compute", profile.compute),
        "communication": share("NCCL, not overlapped", profile.communication),
        "memcpy": share("Memory copies", profile.memcpy),
        "idle": share("GPU idle", profile.idle),
        "host_wait": _wait_readout("Idle, waiting for the host", profile.host_wait),
        "kernel_wait": _wait_readout("Idle, waiting for a kernel", profile.kernel_wait),
        "overlap": overlap,
        "launch_gaps": Readout("Gaps waiting for a launch", profile.launch_gaps),
        "kernels": Readout("Compute kernels", profile.kernels),
        "nccl_kernels": Readout("NCCL kernels", profile.nccl_kernels),
    }



def _wait_readout(label: str, seconds: float) -> Readout:
    """An idle time; none at all in µs (not "0 ns"), as the step's times read."""
    return time_readout(label, seconds) if seconds else Readout(label, 0, "µs")
