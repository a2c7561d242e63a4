"""Pipeline schedules as tasks in their order per stage, timed by the shared scheduler
(`gpuviz.core.schedule`), not drawn from a formula.

p stages (one GPU each, resource `stage_lane(i)`, i = 0 first), m micro-batches. A
micro-batch's forward on a stage takes f, its backward b (ZB-H1 splits the backward into
the input gradient B, time b, and the weight gradient W, time w). A forward waits for the
same micro-batch's forward on the stage before; a backward for its backward on the stage
after (on the last stage: for its own forward); W for its B on the same stage.

    GPipe        every forward, then every backward (Huang et al. 2019)
    1F1B         p − 1 − i forwards to warm up, then one forward and one backward in
                 turn, then the backwards left (PipeDream-Flush; Narayanan et al. 2021)
    interleaved  v chunks per GPU, chunk c of stage i being virtual stage c p + i, each
                 pass taking f / v and b / v; micro-batches go in groups of p, and each
                 GPU warms up with 2 (p − 1 − i) + (v − 1) p chunk forwards (Megatron-LM's
                 order); m must be a multiple of p
    ZB-H1        1F1B's memory limit (at most p − i micro-batches between F and B on stage
                 i), B before F before W whenever each is ready: the W passes fill what
                 would be bubbles (Qi et al. 2023)

What the scheduler gives, and the tests check for every p ≤ 8, m ≤ 32, v ≤ 4:
    GPipe, 1F1B     step (m + p − 1)(f + b): each stage idles (p − 1)(f + b), a share
                    (p − 1)/(m + p − 1) of the step, for any f and b
    interleaved     idle (p − 1)(f + b)/v: share (p − 1)/(v m + p − 1)
    ZB-H1           with f = b = w (the paper's case) and m ≥ p: idle (p − 1) f, a third
                    of 1F1B's (p − 1)(f + b + w), a share (p − 1)/(3 m + p − 1); with
                    w = 0 it is 1F1B. Otherwise the greedy order has no closed form (it
                    can even trail 1F1B when b is many times f); every stage idles at
                    least (p − 1) f, as every stage does the same work
The stash (micro-batches whose activations a stage holds, from the start of their forward
to the end of their backward; W keeps only a layer's inputs and output gradients, as the
ZB paper counts it) peaks at m on every stage for GPipe and min(m, p − i) on stage i for
1F1B and ZB-H1; interleaved holds at most min(v m, 2 (p − 1 − i) + (v − 1) p + 1) chunks,
each 1/v of a micro-batch.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpuviz.core.schedule import Schedule, Task

PIPELINES = ("gpipe", "1f1b", "interleaved", "zb_h1")
FORWARD, BACKWARD, WEIGHT = "forward", "backward", "weight"  # task kinds
_PASS = {FORWARD: "F", BACKWARD: "B", WEIGHT: "W"}
_SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def stage_lane(stage: int) -> str:
    return f"stage {stage}"


def task_name(kind: str, micro_batch: int, stage: int, chunk: int = 0) -> str:
    """E.g. "F3c0@1": the forward of micro-batch 3, chunk 0, on stage 1 (all from 0)."""
    return f"{_PASS[kind]}{micro_batch}c{chunk}@{stage}"


def pipeline_tasks(pipeline: str, stages: int, micro_batches: int, forward: float,
                   backward: float, weight: float = 0.0, chunks: int = 1) -> list[Task]:
    """The tasks of one step in each stage's order (see the module docstring); `weight`
    is used by ZB-H1 only, `chunks` by the interleaved schedule only. Labels are the
    micro-batch from 1, with the chunk from 1 as a subscript when there are chunks.
    Raises ValueError for an unknown pipeline, fewer than one stage or micro-batch,
    or interleaving with m not a multiple of p."""
    p, m = stages, micro_batches
    if pipeline not in PIPELINES:
        raise ValueError(f"unknown pipeline {pipeline!r}; known: {', '.join(PIPELINES)}")
    if p < 1 or m < 1 or chunks < 1:
        raise ValueError(f"need at least one stage, micro-batch and chunk, got {p}, {m}, "
                         f"{chunks}")
    v = chunks if pipeline == "interleaved" else 1
    if v > 1 and m % p:
        raise ValueError(f"interleaving needs the micro-batches ({m}) to be a multiple of "
                         f"the stages ({p})")
    orders = _ORDERS[pipeline](p, m, v, forward, backward, weight)
    durations = {FORWARD: forward / v, BACKWARD: backward / v, WEIGHT: weight}
    tasks = []
    for i, order in enumerate(orders):
        for kind, j, c in order:
            tasks.append(Task(task_name(kind, j, i, c), stage_lane(i), durations[kind],
                              _needs(kind, j, i, c, p, v), kind, _label(j, c, v)))
    return tasks


def _label(micro_batch: int, chunk: int, chunks: int) -> str:
    text = str(micro_batch + 1)
    return text + str(chunk + 1).translate(_SUBSCRIPT) if chunks > 1 else text


def _needs(kind: str, j: int, i: int, c: int, p: int, v: int) -> tuple[str, ...]:
    """What a pass waits for on other stages (or, at the turn, its own forward)."""
    virtual = c * p + i  # chunk c of stage i is virtual stage c p + i of p v
    if kind == WEIGHT:
        return (task_name(BACKWARD, j, i, c),)
    if kind == FORWARD:
        if virtual == 0:
            return ()
        before = virtual - 1
        return (task_name(FORWARD, j, before % p, before // p),)
    if virtual == p * v - 1:
        return (task_name(FORWARD, j, i, c),)
    after = virtual + 1
    return (task_name(BACKWARD, j, after % p, after // p),)


Order = list[list[tuple[str, int, int]]]  # per stage: (kind, micro-batch, chunk)


def _gpipe(p: int, m: int, v: int, f: float, b: float, w: float) -> Order:
    return [[(FORWARD, j, 0) for j in range(m)] + [(BACKWARD, j, 0) for j in range(m)]
            for _ in range(p)]


def _one_f_one_b(p: int, m: int, v: int, f: float, b: float, w: float) -> Order:
    orders = []
    for i in range(p):
        warm = min(p - 1 - i, m)
        order = [(FORWARD, j, 0) for j in range(warm)]
        for k in range(m - warm):
            order += [(FORWARD, warm + k, 0), (BACKWARD, k, 0)]
        order += [(BACKWARD, k, 0) for k in range(m - warm, m)]
        orders.append(order)
    return orders


def _interleaved(p: int, m: int, v: int, f: float, b: float, w: float) -> Order:
    total = m * v  # chunk passes of each kind per stage

    def step(n: int, kind: str) -> tuple[str, int, int]:
        """The n-th forward (or backward) of a stage: groups of p micro-batches go through
        chunk 0, then chunk 1, ... (backwards through the last chunk first)."""
        chunk = n % (p * v) // p
        micro_batch = n // (p * v) * p + n % p
        return kind, micro_batch, (chunk if kind == FORWARD else v - 1 - chunk)

    orders = []
    for i in range(p):
        warm = min(2 * (p - 1 - i) + (v - 1) * p, total)
        order = [step(n, FORWARD) for n in range(warm)]
        for k in range(total - warm):
            order += [step(warm + k, FORWARD), step(k, BACKWARD)]
        order += [step(k, BACKWARD) for k in range(total - warm, total)]
        orders.append(order)
    return orders


def _zb_h1(p: int, m: int, v: int, f: float, b: float, w: float) -> Order:
    """Each stage, whenever it is free, starts the first of: its next B if ready, its
    next F if ready and fewer than p − i micro-batches are between F and B, its oldest
    W waiting. Simulated event by event; the scheduler then times the order it gives
    (the same times)."""
    ends: dict[tuple[str, int, int], float] = {}  # (kind, micro-batch, stage) -> end
    next_f, next_b = [0] * p, [0] * p
    weights: list[list[int]] = [[] for _ in range(p)]
    free = [0.0] * p
    orders: Order = [[] for _ in range(p)]
    t = 0.0

    def ready(key: tuple[str, int, int]) -> bool:
        return ends.get(key, np.inf) <= t

    while any(len(order) < 3 * m for order in orders):
        started = False
        for i in range(p):
            if free[i] > t:
                continue
            j, k = next_f[i], next_b[i]
            if k < m and k < j and ready((BACKWARD, k, i + 1) if i < p - 1
                                         else (FORWARD, k, i)):
                choice, duration = (BACKWARD, k), b
                next_b[i] += 1
                weights[i].append(k)
            elif j < m and j - k < p - i and (i == 0 or ready((FORWARD, j, i - 1))):
                choice, duration = (FORWARD, j), f
                next_f[i] += 1
            elif weights[i]:
                choice, duration = (WEIGHT, weights[i].pop(0)), w
            else:
                continue
            ends[(choice[0], choice[1], i)] = free[i] = t + duration
            orders[i].append((*choice, 0))
            started = True
        if not started:  # nothing more starts now: on to the next end
            t = min(end for end in free if end > t)
    return orders


_ORDERS: dict[str, Callable[..., Order]] = {
    "gpipe": _gpipe, "1f1b": _one_f_one_b, "interleaved": _interleaved, "zb_h1": _zb_h1}


def stash_spans(pipeline: str, stage: int, micro_batches: int, chunks: int = 1
                ) -> list[tuple[str, str]]:
    """(forward, backward) of each micro-batch (and chunk) on a stage, for
    `Schedule.level`: activations are held from the start of the forward to the end of
    the backward (B for ZB-H1)."""
    v = chunks if pipeline == "interleaved" else 1
    return [(task_name(FORWARD, j, stage, c), task_name(BACKWARD, j, stage, c))
            for j in range(micro_batches) for c in range(v)]


def stash(result: Schedule, pipeline: str, stage: int, micro_batches: int,
          chunks: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Step curve (times, micro-batches held) of one stage; a chunk counts 1/v (counted
    in chunks, then divided: exact at 0 and at whole micro-batches)."""
    v = chunks if pipeline == "interleaved" else 1
    times, held = result.level(stash_spans(pipeline, stage, micro_batches, chunks))
    return (times, held) if v == 1 else (times, held / v)


def bubble_share(pipeline: str, stages: int, micro_batches: int, chunks: int = 1) -> float:
    """The textbook idle share of a stage: (p − 1)/(m + p − 1) for GPipe and 1F1B (any
    f and b), (p − 1)/(v m + p − 1) interleaved, (p − 1)/(3 m + p − 1) for ZB-H1 (with
    f = b = w and m ≥ p: a third of 1F1B's idle time, over a shorter step)."""
    p, m = stages, micro_batches
    v = chunks if pipeline == "interleaved" else 1
    if pipeline == "zb_h1":
        return (p - 1) / (3 * m + p - 1)
    return (p - 1) / (v * m + p - 1)


def peak_stash(pipeline: str, stages: int, micro_batches: int, stage: int,
               chunks: int = 1) -> float:
    """Most micro-batches stage i holds at once: m (GPipe), min(m, p − i) (1F1B, ZB-H1),
    min(v m, 2 (p − 1 − i) + (v − 1) p + 1) / v (interleaved)."""
    p, m = stages, micro_batches
    if pipeline == "gpipe":
        return m
    if pipeline == "interleaved":
        return min(chunks * m, 2 * (p - 1 - stage) + (chunks - 1) * p + 1) / chunks
    return min(m, p - stage)
