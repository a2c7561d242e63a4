"""Figure 12.2: static against continuous batching of the same requests.

A GPU decodes up to `slots` sequences per step. Every request is queued at the start; it
takes one prefill step (its prompt, and its first output token) and then one decode step
per further output token, so a request of n output tokens holds a slot for n steps.

  static      the queue is cut into batches of `slots` requests in arrival order; a batch
              starts when every request of the one before has ended, so a slot whose
              request is done waits, idle, for the longest request of its batch;
  continuous  a slot takes the next queued request as soon as its own ends (iteration-
              level scheduling, Orca): the step after.

Both are built as tasks for the shared scheduler (a prefill and a decode task per request,
on its slot; a static batch `after` every task of the batch before). Time is in steps;
a step takes roughly as long whatever batch fits (figure 12.1), so both are priced
at the 12.1 step of a full batch (Llama-3-8B on an H100, 2,048 tokens):
tokens per second = output tokens / (steps × step time).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from gpuviz.core.model import FigureModel, Parameter, Readout
from gpuviz.core.schedule import Schedule, Task, schedule, schedule_at
from gpuviz.core.trace import Lane, Trace
from gpuviz.data.hardware import DEFAULT_GPU
from gpuviz.models.serving.costs import decode_steps
from gpuviz.models.serving.decode_batch import DEFAULT_PRESET

POLICIES = (("static", "Static batching"), ("continuous", "Continuous batching"))
PREFILL, DECODE = "prefill", "decode"
STEP_CONTEXT = 2048  # tokens per cache for the price of a step


def slot_name(policy: str, slot: int) -> str:
    return f"{policy} slot {slot + 1}"


def request_outputs(requests: int, longest: int, seed: int) -> np.ndarray:
    """Output tokens of each request: uniform from 1 to `longest`, seeded."""
    return np.random.default_rng(seed).integers(1, longest + 1, size=requests)


def request_tasks(request: int, slot: str, outputs: int, after: tuple[str, ...] = ()
                  ) -> list[Task]:
    """A prefill step, then a decode step per further output token, on one slot."""
    label = f"R{request + 1}"
    tasks = [Task(f"{slot} {label} prefill", slot, 1.0, after, PREFILL, label)]
    if outputs > 1:
        tasks.append(Task(f"{slot} {label} decode", slot, float(outputs - 1),
                          (tasks[0].name,), DECODE, label))
    return tasks


def static_tasks(outputs: np.ndarray, slots: int) -> list[Task]:
    tasks: list[Task] = []
    previous: tuple[str, ...] = ()
    for first in range(0, len(outputs), slots):
        batch: list[Task] = []
        for i in range(first, min(first + slots, len(outputs))):
            batch += request_tasks(i, slot_name("static", i - first), int(outputs[i]),
                                   previous)
        tasks += batch
        previous = tuple(task.name for task in batch)
    return tasks


def continuous_tasks(outputs: np.ndarray, slots: int) -> list[Task]:
    """Each request, in arrival order, on the slot that frees first (lowest number on a
    tie); the scheduler then runs each slot's requests back to back."""
    free = [(0, slot) for slot in range(slots)]  # (step it frees at, slot)
    tasks: list[Task] = []
    for i, n in enumerate(outputs):
        at, slot = heapq.heappop(free)
        tasks += request_tasks(i, slot_name("continuous", slot), int(n))
        heapq.heappush(free, (at + int(n), slot))
    return tasks


@dataclass(frozen=True)
class Policy:
    """One policy's schedule, in steps, priced at `step_time` seconds a step."""

    name: str
    schedule: Schedule
    lanes: tuple[str, ...]
    tokens: int
    step_time: float

    @property
    def steps(self) -> int:
        return round(self.schedule.step_time)

    @property
    def slot_use(self) -> float:
        """Busy slot-steps over all slot-steps."""
        total = self.steps * len(self.lanes)
        return sum(self.schedule.busy(lane) for lane in self.lanes) / total if total else 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / (self.steps * self.step_time)


@dataclass(frozen=True)
class BatchingOut:
    outputs: np.ndarray
    static: Policy
    continuous: Policy

    @property
    def speedup(self) -> float:
        return self.static.steps / self.continuous.steps


class BatchingModel(FigureModel):
    """Figure 12.2: the same seeded requests batched statically and continuously."""

    slots = Parameter(4, label="Batch slots", minimum=2, maximum=16, step=1,
                      help="Sequences the GPU decodes per step")
    requests = Parameter(16, label="Requests", minimum=4, maximum=48, step=1,
                         help="Requests waiting at the start, served in arrival order")
    longest = Parameter(32, label="Longest output", unit="tokens", minimum=2, maximum=128,
                        step=1, help="Output lengths are drawn uniformly from 1 to this")
    seed = Parameter(1, label="Random seed", minimum=0, maximum=9999, step=1,
                     help="The random output lengths (New random requests draws others)")

    def compute(self) -> BatchingOut:
        outputs = request_outputs(self.requests, self.longest, self.seed)
        step_time = float(decode_steps(DEFAULT_PRESET, DEFAULT_GPU, STEP_CONTEXT, "bf16",
                                       self.slots).time[0])
        tokens = int(outputs.sum())
        policies = []
        for name, build in (("static", static_tasks), ("continuous", continuous_tasks)):
            lanes = tuple(slot_name(name, s) for s in range(self.slots))
            policies.append(Policy(name, schedule(build(outputs, self.slots)), lanes,
                                   tokens, step_time))
        return BatchingOut(outputs, *policies)

    def trace(self) -> Trace:
        """Both schedules, a process per policy and a thread per slot; a step lasts the
        12.1 step time."""
        out = self.out
        tasks = out.static.schedule.tasks + out.continuous.schedule.tasks
        start = np.concatenate([out.static.schedule.start, out.continuous.schedule.start])
        both = schedule_at(tasks, start)
        lanes = tuple(Lane(label, lane, f"slot {s + 1}")
                      for (policy, label) in POLICIES
                      for s, lane in enumerate(getattr(out, policy).lanes))
        return Trace(both, lanes, seconds=out.static.step_time)

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        found = {}
        for policy, word in (("static", "Static"), ("continuous", "Continuous")):
            p: Policy = getattr(out, policy)
            found |= {
                f"{policy}_steps": Readout(f"{word}: steps", p.steps),
                f"{policy}_use": Readout(f"{word}: slot use", 100 * p.slot_use, "%",
                                         decimals=0),
                f"{policy}_rate": Readout(f"{word}: tokens per second",
                                          p.tokens_per_second, "tokens/s"),
            }
        return found | {
            "speedup": Readout("Continuous / static", out.speedup, "×"),
            "tokens": Readout("Output tokens", int(out.outputs.sum())),
        }
