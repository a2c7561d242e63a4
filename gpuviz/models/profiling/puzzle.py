"""Figure 13.1: the profiler puzzle. Five profiles of one data-parallel training step,
each with one problem to name, and a trace of the learner's own opened on the same rows.

A step is tasks on a GPU's rows, timed by the shared scheduler (gpuviz.core.schedule):
  CPU       each kernel, copy and all-reduce is launched in program order, LAUNCH_US of
            CPU time each (figure 13.2's launch cost); a blocking call (a wait) lasts from
            when the CPU makes it until what it waits for has ended
  compute   the batch's host-to-device copy, the forward kernels, the backward kernels,
            the optimizer's kernels; a kernel starts once launched and once the stream is
            free (stream order)
  NCCL      one all-reduce per gradient bucket, after the backward kernels that fill it
            (and, across ranks, after the slowest rank's); the optimizer waits for the last
Around them: the data loader hands over the batch `loader_us` after the step starts (0
when it prefetched it during the previous step); a sync makes the CPU wait for the
forward pass (`loss.item()`) before its Python work (logging) and the backward launches;
the slowest rank runs its kernels `slowest_rank` times slower. A fix changes these inputs
(fused kernels, no sync, a prefetching loader, buckets that overlap the backward pass,
balanced ranks) and the step is scheduled again. Durations in µs (assumed, round numbers
chosen so each problem shows); the numbers read out are trace_analysis's.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from gpuviz.core.model import FigureModel, Parameter, Readout
from gpuviz.core.schedule import Schedule, Task, schedule, schedule_at
from gpuviz.core.trace import COMMUNICATION, COMPUTE, CPU, Lane, Trace
from gpuviz.models.profiling.regime import LAUNCH_US
from gpuviz.models.profiling.trace_analysis import Profile, analyse, profile_readouts

US = 1e-6
LOADER, SLOWEST_RANK = "data loader", "slowest rank"  # resources with no row of their own
LANES = (Lane("Host", CPU, "CPU", CPU), Lane("GPU 0", COMPUTE, "Compute", COMPUTE),
         Lane("GPU 0", COMMUNICATION, "NCCL", COMMUNICATION))


@dataclass(frozen=True)
class StepInputs:
    """One step's work (µs)."""

    forward: tuple[float, ...]  # each forward kernel
    backward: tuple[float, ...]  # each backward kernel, filling the buckets in order
    optimizer: tuple[float, ...]  # each optimizer kernel
    copy_us: float  # the batch's host-to-device copy
    allreduce_us: float  # all gradients' all-reduce, split evenly over the buckets
    buckets: int  # gradient buckets (each a whole number of backward kernels)
    loader_us: float = 0.0  # the batch is ready this long after the step starts
    sync: bool = False  # the CPU waits for the forward pass before its Python work
    python_us: float = 0.0  # the CPU's work between the forward and backward launches
    slowest_rank: float = 1.0  # how much slower the slowest rank's kernels are


def step_tasks(step: StepInputs) -> list[Task]:
    """The step's tasks in program order (module docstring)."""
    tasks: list[Task] = []

    def launch(name: str, resource: str, duration: float, kind: str,
               after: tuple[str, ...] = (), label: str = "") -> None:
        tasks.append(Task(f"launch {name}", CPU, LAUNCH_US, kind="launch"))
        tasks.append(Task(name, resource, duration, (f"launch {name}", *after), kind,
                          label))

    if step.loader_us > 0:
        tasks.append(Task("load batch", LOADER, step.loader_us))
        tasks.append(Task("next batch", CPU, 0.0, ("load batch",), "wait", "DataLoader"))
    launch("H2D", COMPUTE, step.copy_us, "memcpy")
    for i, duration in enumerate(step.forward):
        launch(f"F{i + 1}", COMPUTE, duration, "compute")
    if step.sync:
        tasks.append(Task("sync", CPU, 0.0, (f"F{len(step.forward)}",), "wait", ".item()"))
    if step.python_us:
        tasks.append(Task("python", CPU, step.python_us, kind="cpu", label="Python"))
    per_bucket = len(step.backward) // step.buckets
    slowest = _slowest_rank(step)
    tasks += slowest
    for i, duration in enumerate(step.backward):
        launch(f"B{i + 1}", COMPUTE, duration, "compute")
        if (i + 1) % per_bucket == 0:
            bucket = (i + 1) // per_bucket
            peer = (f"{SLOWEST_RANK} B{i + 1}",) if slowest else ()
            launch(f"AR{bucket}", COMMUNICATION, step.allreduce_us / step.buckets, "nccl",
                   (f"B{i + 1}", *peer))
    for i, duration in enumerate(step.optimizer):
        launch(f"O{i + 1}", COMPUTE, duration, "compute",
               (f"AR{step.buckets}",) if i == 0 else (), "Adam")
    return tasks


def _slowest_rank(step: StepInputs) -> list[Task]:
    """The slowest other rank's copy, forward and backward (none when ranks are even):
    it starts as rank 0 does, after one launch."""
    if step.slowest_rank == 1.0:
        return []
    works = [("H2D", step.copy_us)] + [
        (f"F{i + 1}", d) for i, d in enumerate(step.forward)] + [
        (f"B{i + 1}", d) for i, d in enumerate(step.backward)]
    return [Task(f"{SLOWEST_RANK} {name}", SLOWEST_RANK, duration * step.slowest_rank,
                 kind="compute", release=LAUNCH_US) for name, duration in works]


def step_schedule(step: StepInputs) -> Schedule:
    """The step timed by the scheduler, each blocking call on the CPU stretched back to
    when the CPU made it (the scheduler times when it returns); times in µs."""
    result = schedule(step_tasks(step))
    tasks, starts = list(result.tasks), result.start.copy()
    free_from = 0.0
    for i in result.on(CPU):
        if tasks[i].kind == "wait":
            tasks[i] = replace(tasks[i], duration=float(result.end[i]) - free_from)
            starts[i] = free_from
        free_from = float(result.end[i])
    return schedule_at(tasks, starts)


def fused(kernels: tuple[float, ...], count: int) -> tuple[float, ...]:
    """`count` kernels doing the work of `kernels` (consecutive groups, GPU time kept)."""
    size = len(kernels) // count
    return tuple(float(sum(kernels[i:i + size])) for i in range(0, len(kernels), size))


@dataclass(frozen=True)
class Problem:
    name: str
    button: str  # the button's short label
    hint: str  # said when another problem is named for this one
    why: str  # said when it is named
    fix: str  # what Apply the fix changes


PROBLEMS = {
    "launch": Problem(
        "Launch-bound (small kernels)", "Launches",
        "Compare the CPU row with the compute row: which one is busy all the time?",
        "The kernels are shorter than their launches, so the GPU waits for the CPU "
        "between every two of them.",
        "Fuse them: four forward and four backward kernels and one fused optimizer kernel "
        "do the same GPU work with fewer launches."),
    "sync": Problem(
        "Host sync", "Sync",
        "Look at the pink box on the CPU row, and at what the GPU does after it.",
        "The CPU waits for the forward pass (.item() of the loss), so it loses its head "
        "start: the GPU then waits while the Python work and the next launches run.",
        "Drop the sync (keep the loss on the GPU, read it every few steps): the same "
        "Python work then runs while the GPU computes."),
    "loader": Problem(
        "Data-loader stall", "Loader",
        "What is the CPU doing at the very start of the step?",
        "The CPU waits for the data loader to hand over the batch, and the GPU has "
        "nothing to do meanwhile.",
        "A prefetching loader (more workers, pinned memory) prepares the batch during the "
        "previous step, so it is ready at once."),
    "comm": Problem(
        "Exposed communication", "Comm",
        "Look at when the NCCL row runs compared with the compute row.",
        "One all-reduce of all gradients starts only after the backward pass, and the "
        "compute stream waits for it.",
        "Four gradient buckets: each bucket's all-reduce runs during the rest of the "
        "backward pass, and only the last one is exposed."),
    "straggler": Problem(
        "Straggler rank", "Straggler",
        "The GPU is idle although every launch was made in time: what are the "
        "all-reduces waiting for?",
        "Another rank computes more slowly, so each all-reduce starts only when that rank "
        "is ready: this GPU idles, with its kernels already launched.",
        "Balance the ranks (find why one is slow: a throttled GPU, a busier host, "
        "uneven batches): every all-reduce then starts when this rank is ready."),
}
FIXES = {
    "launch": lambda step: replace(step, forward=fused(step.forward, 4),
                                   backward=fused(step.backward, 4),
                                   optimizer=fused(step.optimizer, 1)),
    "sync": lambda step: replace(step, sync=False),
    "loader": lambda step: replace(step, loader_us=0.0),
    "comm": lambda step: replace(step, buckets=4),
    "straggler": lambda step: replace(step, slowest_rank=1.0),
}
# A model of a few billion parameters on one GPU of a data-parallel group, and a small
# model at a small batch (the launch-bound case).
LARGE = StepInputs(forward=(50.0,) * 4, backward=(100.0,) * 4, optimizer=(40.0,),
                   copy_us=20.0, allreduce_us=320.0, buckets=4, python_us=150.0)
SMALL = StepInputs(forward=(2.0,) * 16, backward=(3.0,) * 16, optimizer=(1.0,) * 8,
                   copy_us=2.0, allreduce_us=20.0, buckets=4)
# The cases in an order that does not give the answers away.
CASES = {
    "A": ("sync", replace(LARGE, sync=True)),
    "B": ("launch", SMALL),
    "C": ("comm", replace(LARGE, buckets=1)),
    "D": ("straggler", replace(LARGE, slowest_rank=1.3)),
    "E": ("loader", replace(LARGE, loader_us=250.0)),
}
UNNAMED = "none"


@dataclass(frozen=True)
class PuzzleOut:
    problem: str  # the key in PROBLEMS
    before: Trace  # the step with its problem
    after: Trace  # the step with the fix
    profile_before: Profile
    profile_after: Profile


@functools.cache  # five cases, each the same every time: computed once
def case_traces(case: str) -> tuple[Trace, Trace]:
    """A case's step with its problem and with the fix (µs)."""
    problem, step = CASES[case]
    return (Trace(step_schedule(step), LANES, US),
            Trace(step_schedule(FIXES[problem](step)), LANES, US))


@functools.cache
def puzzle_case(case: str) -> PuzzleOut:
    """A case's steps and their numbers."""
    before, after = case_traces(case)
    return PuzzleOut(CASES[case][0], before, after, analyse(before), analyse(after))


class PuzzleModel(FigureModel):
    """Figure 13.1: name the problem of each case, apply its fix; or read an opened trace
    (`open_trace`) with the same numbers."""

    case = Parameter("A", label="Timeline", choices=[(key, key) for key in CASES],
                     help="Five steps, each with one problem")
    diagnosis = Parameter(UNNAMED, label="The problem is",
                          choices=[(UNNAMED, "")] + [(key, problem.button)
                                                     for key, problem in PROBLEMS.items()],
                          help="What slows this step down? Too many launches, the CPU "
                               "syncing, the loader, all-reduces not overlapped, or a "
                               "slow rank")
    fixed = Parameter(False, label="Apply the fix",
                      help="Change the step's inputs to remove its problem and schedule it "
                           "again; the dashed line marks the old step time")

    opened: tuple[str, Profile] | None = None  # a trace's file name and numbers, if open

    def parameter_changed(self, name: str) -> None:
        self.opened = None  # any control goes back to the puzzle
        if name == "case":
            with self.batch():
                self.set("diagnosis", UNNAMED)
                self.set("fixed", False)

    def open_trace(self, name: str, profile: Profile) -> None:
        """Show an opened trace (its file name and its analysis) instead of the puzzle."""
        self.opened = (name, profile)
        self._notify()

    def close_trace(self) -> None:
        if self.opened is not None:
            self.opened = None
            self._notify()

    def reset_state(self) -> None:
        self.opened = None

    def compute(self) -> PuzzleOut:
        return puzzle_case(self.case)

    @property
    def profile(self) -> Profile:
        """The numbers of what is shown: the opened trace, or the step (fixed or not)."""
        if self.opened is not None:
            return self.opened[1]
        return self.out.profile_after if self.fixed else self.out.profile_before

    @property
    def answered(self) -> bool | None:
        """Whether the problem named is the case's; None before one is named."""
        return None if self.diagnosis == UNNAMED else self.diagnosis == self.out.problem

    def trace(self) -> Trace:
        """What is shown: the opened trace's rows (s) or the step."""
        if self.opened is not None:
            return Trace(self.profile.rows, LANES)
        return self.out.after if self.fixed else self.out.before

    def readouts(self) -> dict[str, Readout]:
        rows = profile_readouts(self.profile)
        if self.opened is not None:
            return {"source": Readout("Showing", name=self.opened[0]), **rows}
        before = self.out.profile_before.step_time
        answered = self.answered
        return {
            "source": Readout("Showing", name=f"timeline {self.case}"),
            "answer": Readout("Your answer", name="none yet" if answered is None else
                              "right" if answered else "not quite"),
            "speedup": (Readout("Speed-up of the fix", before / self.profile.step_time, "×")
                        if self.fixed else Readout("Speed-up of the fix",
                                                   shown="apply the fix")),
            **rows,
        }

    def comment(self) -> str:
        """The sentence under the timeline: what to do, the hint, or why and the fix."""
        if self.opened is not None:
            return ("An opened trace, read as one step on the puzzle's rows. Back to the "
                    "puzzle, or a timeline's button, returns to the puzzle.")
        problem = PROBLEMS[self.out.problem]
        answered = self.answered
        if answered is None:
            told = "Name the problem of this step with the buttons."
        elif answered:
            told = f"Right: {problem.name.lower()}. {problem.why}"
        else:
            told = f"Not {PROBLEMS[self.diagnosis].name.lower()}. {problem.hint}"
        if self.fixed:
            told += f" Fixed: {problem.fix}"
        return told
